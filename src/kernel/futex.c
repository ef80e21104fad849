#include <errno.h>
#include "futex.h"

long futex_wait_until(volatile int *addr, int expect, clockid_t clock,
		      const struct timespec *abstime, int priv)
{
	int op = FUTEX_WAIT_BITSET | priv;

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
	return sys_call6(SYS_futex, addr, op, expect, abstime, NULL,
			 FUTEX_BITSET_MATCH_ANY);
}
