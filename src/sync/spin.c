/* Spin locks: the int is 0 when free and 1 when held, as in glibc, so a
   spin lock in shared memory works between a weft and a glibc process.

   Test-and-test-and-set: the exchange is tried only when the lock looks
   free, so waiters spin on a cached line instead of bouncing it.  There
   is no fairness and no owner: a relock by the holder spins forever and
   an unlock by another thread succeeds, as in glibc (POSIX lets both be
   undefined).  After a long spin the waiter yields the CPU once per
   round, so a holder preempted on a busy machine gets to run. */
#include <errno.h>
#include <sched.h>

#include "../arch/x86_64/syscall_arch.h"
#include "../kernel/syscall.h"
#include "spin.h"

#define SPIN_BEFORE_YIELD 4096

int spin_lock(pthread_spinlock_t *l)
{
	unsigned n = 0;

	for (;;) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return 0;
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			arch_spin_pause();
			if (++n >= SPIN_BEFORE_YIELD) {
				sys_call0(SYS_sched_yield);
				n = 0;
			}
		}
	}
}

int spin_trylock(pthread_spinlock_t *l)
{
	int free = 0;

	if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
	    __atomic_compare_exchange_n(l, &free, 1, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return 0;
	return EBUSY;
}

int spin_unlock(pthread_spinlock_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
	return 0;
}
