/* Spin locks in glibc's x86-64 encoding, so that a spin lock in shared
   memory works between a weft and a glibc process:

     value > 0   free      (pthread_spin_init and unlock store 1)
     value <= 0  held      (glibc's lockers decrement it, so it may go
                            negative while held; unlock stores 1 again)

   Note that zero-filled memory is therefore a *held* lock, as in glibc:
   pthread_spin_init is required.

   weft takes the lock with a compare-and-swap of a positive value to 0.
   The first try is the compare-and-swap of 1 alone, as glibc's trylock
   (its lock is a `lock decl`): a load before it would fetch a contended
   line shared and the CAS fetch it again to own it, two transfers where
   one does.  (Two threads taking turns at one spin lock could not tell
   the difference: that pattern's speed swings with nanoseconds of code
   layout, bench/RESULTS.md 2026-11-29-pairs.)  A waiter then retries
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

#define SPIN_BEFORE_YIELD 4096

/* After a failed first try (spin_lock, spin.h). */
static void spin_wait(pthread_spinlock_t *l)
{
	unsigned n = 0;

	for (;;) {
		int v = __atomic_load_n(l, __ATOMIC_RELAXED);

		if (v > 0) {
			if (spin_take_from(l, &v))
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
void spin_lock_wait(pthread_spinlock_t *l)
{
	long t0;

	if (!stats_enabled()) {
		spin_wait(l);
		return;
	}
	t0 = stats_now();
	spin_wait(l);
	lockstat_record(l, LS_SPIN, t0);
}
