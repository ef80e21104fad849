#include <errno.h>
#include "futex.h"
#include "syscall_cp.h"

/* The waiting operation `base` (FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI)
   for an absolute deadline on `clock`; -EINVAL or -ETIMEDOUT when no
   wait is needed. */
static int wait_op(int base, clockid_t clock, const struct timespec *abstime,
		   int priv)
{
	int op = base | priv;

	if (abstime) {
		if (clock == CLOCK_REALTIME)
			op |= FUTEX_CLOCK_REALTIME;
		else if (clock != CLOCK_MONOTONIC)
			return -EINVAL;
		if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000)
			return -EINVAL;
		if (abstime->tv_sec < 0)
			return -ETIMEDOUT;
	}
	return op;
}


long futex_wait_bits_until_cp(volatile int *addr, int expect, unsigned bits,
			      clockid_t clock, const struct timespec *abstime,
			      int priv)
{
	int op = wait_op(FUTEX_WAIT_BITSET, clock, abstime, priv);

	if (op < 0)
		return op;
	return sys_cp6(SYS_futex, addr, op, expect, abstime, NULL, bits);
}

long futex_wait_until_cp(volatile int *addr, int expect, clockid_t clock,
			 const struct timespec *abstime, int priv)
{
	return futex_wait_bits_until_cp(addr, expect, FUTEX_BITSET_MATCH_ANY,
					clock, abstime, priv);
}

long futex_wait_bits_until(volatile int *addr, int expect, unsigned bits,
			   clockid_t clock, const struct timespec *abstime,
			   int priv)
{
	int op = wait_op(FUTEX_WAIT_BITSET, clock, abstime, priv);

	if (op < 0)
		return op;
	return sys_call6(SYS_futex, addr, op, expect, abstime, NULL, bits);
}

long futex_wait_until(volatile int *addr, int expect, clockid_t clock,
		      const struct timespec *abstime, int priv)
{
	return futex_wait_bits_until(addr, expect, FUTEX_BITSET_MATCH_ANY,
				     clock, abstime, priv);
}

long futex_lock_pi(volatile int *addr, clockid_t clock,
		   const struct timespec *abstime, int priv)
{
	int op = FUTEX_LOCK_PI | priv;
	long r;

	if (abstime && clock != CLOCK_REALTIME)
		op = FUTEX_LOCK_PI2 | priv; /* monotonic deadline */
	r = sys_call4(SYS_futex, addr, op, 0, abstime);
	return r == -ENOSYS ? -EINVAL : r;
}

long futex_wait_requeue_pi_cp(volatile int *addr, int expect, clockid_t clock,
			      const struct timespec *abstime,
			      volatile int *mutex, int priv)
{
	int op = wait_op(FUTEX_WAIT_REQUEUE_PI, clock, abstime, priv);

	if (op < 0)
		return op;
	return sys_cp5(SYS_futex, addr, op, expect, abstime, mutex);
}
