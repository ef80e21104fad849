/* libgcc's unwinder, loaded when first needed, as glibc loads it
   (unwinder.c): libgcc_s.so.1 is no dependency of libweft, so a program
   that never makes, cancels or exits a thread does not map it. */
#ifndef WEFT_HOST_UNWINDER_H
#define WEFT_HOST_UNWINDER_H

#include <unwind.h>

struct host_unwinder {
	_Unwind_Reason_Code (*forced_unwind)(struct _Unwind_Exception *,
					     _Unwind_Stop_Fn, void *);
	_Unwind_Word (*get_cfa)(struct _Unwind_Context *);
	void (*resume)(struct _Unwind_Exception *);
	_Unwind_Reason_Code (*personality)(int, _Unwind_Action,
					   _Unwind_Exception_Class,
					   struct _Unwind_Exception *,
					   struct _Unwind_Context *);
};

extern struct host_unwinder host_unwinder;

/* Loads libgcc_s.so.1 once (dlopen: not from a signal handler, nor while
   a thread is torn down); 0 when the unwinder is there, else -1.  Called
   before anything can unwind: at the first thread creation, by
   pthread_cancel before it signals, by pthread_exit. */
int host_unwinder_load(void);

/* What weft's own landing pads call (unwind_stubs.c): libgcc's
   _Unwind_Resume and __gcc_personality_v0, through the pointers. */
void host_unwinder_resume(void *exc) __attribute__((noreturn));
int host_unwinder_personality(int version, int actions, unsigned long cls,
			      void *exc, void *ctx);

#endif
