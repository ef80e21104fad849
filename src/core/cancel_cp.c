/* weft_syscall_cp: the cancellable system call, out of line
   (kernel/syscall_cp.h, docs/cancel.md), for callers below the core
   layer (the futex waits of condvars, joins and semaphores).  It is the
   inline version (cancel_inline.h) expanded once, so both share one
   window mechanism and one mark; this file is built with -mno-red-zone
   (Makefile) like the interposed points. */
#include <errno.h>

#include "../kernel/syscall_cp.h"
#include "cancel_inline.h"

/* After -EINTR: the call did nothing, so a due cancellation acts
   (close excepted: the descriptor is released anyway). */
__attribute__((noinline)) long weft_cp_interrupted(long nr)
{
	if (nr != SYS_close && cancel_due(__atomic_load_n(cancel_self_word(),
							   __ATOMIC_ACQUIRE)))
		cancel_act();
	return -EINTR;
}

long weft_syscall_cp(long a1, long a2, long a3, long a4, long a5, long a6,
		     long nr)
{
	return cancel_syscall(nr, a1, a2, a3, a4, a5, a6);
}
