/* The two libgcc functions that code compiled with -fexceptions names
   (its landing pads call _Unwind_Resume; its unwind tables name the
   personality routine __gcc_personality_v0), defined in libweft,
   hidden, so that libweft needs no libgcc_s.so.1 at load: they forward
   to libgcc's, loaded when first needed (unwinder.c).  This file does
   not include <unwind.h>, which declares both with default visibility:
   the program's and libstdc++'s own calls must not bind to these. */
struct _Unwind_Exception;
struct _Unwind_Context;

void host_unwinder_resume(void *exc) __attribute__((noreturn));
int host_unwinder_personality(int version, int actions, unsigned long cls,
			      void *exc, void *ctx);

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN void _Unwind_Resume(struct _Unwind_Exception *exc)
	__attribute__((noreturn));
HIDDEN int __gcc_personality_v0(int version, int actions, unsigned long cls,
				struct _Unwind_Exception *exc,
				struct _Unwind_Context *ctx);

void _Unwind_Resume(struct _Unwind_Exception *exc)
{
	host_unwinder_resume(exc);
}

int __gcc_personality_v0(int version, int actions, unsigned long cls,
			 struct _Unwind_Exception *exc,
			 struct _Unwind_Context *ctx)
{
	return host_unwinder_personality(version, actions, cls, exc, ctx);
}
