/* The cancellable system call out of line (docs/cancel.md): the futex
   waits of condvars, joins and semaphores that are cancellation points.
   They are the inline version (cancel_inline.h) expanded here, so they
   share one window mechanism and one mark with the interposed libc
   points; this file is built with -mno-red-zone (Makefile) like them. */
#include <errno.h>

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

long futex_wait_bits_until_cp(volatile int *addr, int expect, unsigned bits,
			      clockid_t clock, const struct timespec *abstime,
			      int priv)
{
	int op = futex_wait_op(FUTEX_WAIT_BITSET, clock, abstime, priv);

	if (op < 0)
		return op;
	return cancel_syscall(SYS_futex, (long)addr, op, expect, (long)abstime,
			      0, bits);
}

long futex_wait_until_cp(volatile int *addr, int expect, clockid_t clock,
			 const struct timespec *abstime, int priv)
{
	return futex_wait_bits_until_cp(addr, expect, FUTEX_BITSET_MATCH_ANY,
					clock, abstime, priv);
}

long futex_wait_requeue_pi_cp(volatile int *addr, int expect, clockid_t clock,
			      const struct timespec *abstime,
			      volatile int *mutex, int priv)
{
	int op = futex_wait_op(FUTEX_WAIT_REQUEUE_PI, clock, abstime, priv);

	if (op < 0)
		return op;
	return cancel_syscall(SYS_futex, (long)addr, op, expect, (long)abstime,
			      (long)mutex, 0);
}
