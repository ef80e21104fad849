/* A cheap clock for "has this waiter waited longer than D?" (the
   mutex's fairness rule: docs/sync.md).

   A stamp is taken before every first sleep of a contended lock, so its
   cost is on the contended path of every lock; the answer is needed
   only when a woken waiter lost the lock again, which is rare.  So the
   stamp is the CPU's cycle counter (arch_cycles), and the rate that
   turns cycles into time is learnt from CLOCK_MONOTONIC once the
   process has contended for WAITCLOCK_LEARN_NS (until then, and on a
   CPU without an invariant counter, stamps are CLOCK_MONOTONIC itself).
   A stamp says which clock it is from (bit 0), so a wait that began
   before the rate was known is measured on its own clock.  The limit in
   cycles is rounded up, with a margin for the error of the learning,
   so that waitclock_passed is never true before D has passed on
   CLOCK_MONOTONIC. */
#ifndef WEFT_CORE_WAITCLOCK_H
#define WEFT_CORE_WAITCLOCK_H

#include "arch/syscall_arch.h"

/* Cycles per millisecond, rounded up with the margin; 0: not known
   (yet, or never on this CPU). */
extern unsigned long waitclock_cycles_per_ms;

unsigned long waitclock_stamp_slow(void);
int waitclock_passed_slow(unsigned long stamp, long ns);

/* The stamp of now; never 0. */
static inline unsigned long waitclock_stamp(void)
{
	if (__builtin_expect(__atomic_load_n(&waitclock_cycles_per_ms,
					     __ATOMIC_RELAXED) != 0, 1))
		return arch_cycles() | 1;
	return waitclock_stamp_slow();
}

/* Whether at least `ms` milliseconds have passed since `stamp`. */
static inline int waitclock_passed_ms(unsigned long stamp, long ms)
{
	unsigned long per_ms = __atomic_load_n(&waitclock_cycles_per_ms,
					       __ATOMIC_RELAXED);

	if (__builtin_expect((stamp & 1) && per_ms != 0, 1))
		return (long)(arch_cycles() - stamp) >= (long)(per_ms * ms);
	return waitclock_passed_slow(stamp, ms * 1000000L);
}

#endif
