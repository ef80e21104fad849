/* The waiters' cheap clock (see waitclock.h). */
#include <time.h>
#include "waitclock.h"

/* How long the process contends before the rate is learnt: the error
   of the two clock pairs below, at most 2 x PAIR_MAX_CYCLES (40,000
   cycles, 40 us at 1 GHz), is then at most 0.4% of the span. */
#define WAITCLOCK_LEARN_NS 10000000L
/* A pair (cycles, CLOCK_MONOTONIC) is kept only if the cycle counter
   moved less than this across the clock read (no preemption between). */
#define PAIR_MAX_CYCLES 20000ul

unsigned long waitclock_cycles_per_ms;

/* 0: nothing yet; 1: ref taken; 2: being taken; -1: no invariant
   counter, CLOCK_MONOTONIC for ever. */
static int state;
static long ref_ns;
static unsigned long ref_cycles;

static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* A pair read close together: 1, or 0 when something came between. */
static int pair(unsigned long *cycles, long *ns)
{
	unsigned long c0 = arch_cycles();
	long n = mono_ns();
	unsigned long c1 = arch_cycles();

	if (c1 - c0 > PAIR_MAX_CYCLES)
		return 0;
	*cycles = c0 + (c1 - c0) / 2;
	*ns = n;
	return 1;
}

/* The first pair, then, WAITCLOCK_LEARN_NS later, the rate.  Rounded
   up, plus 1% (the pairs' error, and NTP's slewing of CLOCK_MONOTONIC
   by up to 0.05%): cycles may only ever overstate nothing, so a wait
   measured in cycles is never shorter than on CLOCK_MONOTONIC. */
static void learn(long now)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	unsigned long c;
	long n;

	if (s == 0) {
		if (!__atomic_compare_exchange_n(&state, &s, 2, 0,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			return;
		if (!arch_cycles_invariant()) {
			__atomic_store_n(&state, -1, __ATOMIC_RELEASE);
			return;
		}
		if (!pair(&ref_cycles, &ref_ns)) {
			__atomic_store_n(&state, 0, __ATOMIC_RELEASE);
			return;
		}
		__atomic_store_n(&state, 1, __ATOMIC_RELEASE);
		return;
	}
	if (s != 1 || now - ref_ns < WAITCLOCK_LEARN_NS || !pair(&c, &n) ||
	    c <= ref_cycles || n <= ref_ns)
		return;
	unsigned __int128 per_ms =
		((unsigned __int128)(c - ref_cycles) * 1000000u +
		 (unsigned long)(n - ref_ns) - 1) / (unsigned long)(n - ref_ns);
	unsigned long v = (unsigned long)per_ms;
	unsigned long zero = 0;

	v += v / 100 + 1;
	__atomic_compare_exchange_n(&waitclock_cycles_per_ms, &zero, v, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Until the rate is known: CLOCK_MONOTONIC, doubled (bit 0 clear). */
unsigned long waitclock_stamp_slow(void)
{
	long now = mono_ns();

	learn(now);
	return (unsigned long)now << 1;
}

int waitclock_passed_slow(unsigned long stamp, long ns)
{
	long now = mono_ns();

	learn(now);
	if (stamp & 1) /* not reached: a cycle stamp has a rate */
		return 1;
	return now - (long)(stamp >> 1) >= ns;
}
