/* Common part of weft's libc cancellation points (docs/cancel.md,
   "Interposed cancellation points").

   glibc's own wrappers (read, nanosleep, accept ...) are cancellation
   points of glibc's kind: a cancellation that arrives after the system
   call has done its work still acts, and the work is lost (glibc bug
   12683: data read from a pipe, an accepted connection).  weft exports
   the same functions over the cancellable system call
   (core/cancel_inline.h), which keeps a completed
   call's result, with glibc's exact interface (errno, special cases).

   Until weft has finished starting a wrapper runs weft's own code with
   the plain system call (cancel_syscall): no weft cancellation can be
   pending then, start-up code calling them must not wait for the
   start-up it is part of, and a signal handler making the process's
   first call of one must not look up glibc's function (dlsym takes the
   loader's lock and may malloc; docs/glibc-host.md).  When weft forwards
   everything to glibc (decided at start-up) a wrapper calls glibc's
   function, found in the objects' symbol tables (host_next_sym). */
#ifndef WEFT_ABI_CANCEL_POINTS_CP_H
#define WEFT_ABI_CANCEL_POINTS_CP_H

#include <errno.h>

#include "core/cancel_inline.h"
#include "abi/export.h"

static inline int cp_serving(void)
{
	return __builtin_expect(
		__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) != 2 ||
			weft_is_active,
		1);
}

/* A kernel result the libc way: -1 with errno, or the value. */
static inline long cp_ret(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The kernel's sigset_t is 8 bytes on x86-64 (glibc's __NSIG_BYTES). */
#define CP_NSIG_BYTES 8

#endif
