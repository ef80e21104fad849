/* Spin locks in glibc's x86-64 encoding, so that a spin lock in shared
   memory works between a weft and a glibc process:

     value > 0   free      (pthread_spin_init and unlock store 1)
     value <= 0  held      (glibc's lockers decrement it, so it may go
                            negative while held; unlock stores 1 again)

   Note that zero-filled memory is therefore a *held* lock, as in glibc:
   pthread_spin_init is required.

   weft takes the lock with a compare-and-swap of a positive value to 0.
   The first try is that compare-and-swap alone, as glibc's `lock decl`
   is: a load before it would fetch the line shared and the CAS fetch it
   again to own it, two transfers from the holder's CPU where one does
   (two threads taking turns at one lock ran at 0.70x glibc with the
   load, bench/RESULTS.md 2026-11-29-pairs).  A waiter then retries
   only when the word looks free, so waiters spin on a cached line
   instead of bouncing it (test-and-test-and-set).  This mixes safely
   with glibc's decrementing lockers: whichever atomic operation reaches
   the positive value first owns the lock, the other sees <= 0.

   No fairness and no owner: a relock by the holder spins forever and an
   unlock by another thread succeeds, as in glibc (POSIX lets both be
   undefined).  After a long spin the waiter yields the CPU once per
   round, so a holder preempted on a busy machine gets to run. */
#include <errno.h>

#include "arch/syscall_arch.h"
#include "core/stats.h"
#include "kernel/syscall.h"
#include "spin.h"

#define SPIN_FREE 1
#define SPIN_BEFORE_YIELD 4096

/* Takes the lock if the word is `v` (> 0); else `v` is the word now. */
static inline int take_from(pthread_spinlock_t *l, int *v)
{
	return __atomic_compare_exchange_n(l, v, 0, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* One try, for a word that is free as unlock and init leave it. */
static inline int try_take(pthread_spinlock_t *l)
{
	int v = SPIN_FREE;

	return take_from(l, &v);
}

void spin_init(pthread_spinlock_t *l)
{
	__atomic_store_n(l, SPIN_FREE, __ATOMIC_RELEASE);
}

static void spin_wait(pthread_spinlock_t *l)
{
	unsigned n = 0;

	for (;;) {
		int v = __atomic_load_n(l, __ATOMIC_RELAXED);

		if (v > 0) {
			if (take_from(l, &v))
				return;
			continue;
		}
		arch_spin_pause();
		if (++n >= SPIN_BEFORE_YIELD) {
			sys_call0(SYS_sched_yield);
			n = 0;
		}
	}
}

/* A first attempt that fails is a contention: timed and recorded with
   WEFT_STATS on (src/core/stats.h). */
int spin_lock(pthread_spinlock_t *l)
{
	long t0;

	if (__builtin_expect(try_take(l), 1))
		return 0;
	if (!stats_enabled()) {
		spin_wait(l);
		return 0;
	}
	t0 = stats_now();
	spin_wait(l);
	lockstat_record(l, LS_SPIN, t0);
	return 0;
}

int spin_trylock(pthread_spinlock_t *l)
{
	return try_take(l) ? 0 : EBUSY;
}

int spin_unlock(pthread_spinlock_t *l)
{
	__atomic_store_n(l, SPIN_FREE, __ATOMIC_RELEASE);
	return 0;
}
