/* Barriers.

   Every arrival takes a ticket from the 64-bit counter `in`; ticket t
   belongs to round t / count, and the holder of the last ticket of a
   round (t % count == count - 1) completes it: it bumps the futex word
   `round` and wakes everyone sleeping on it, and returns
   PTHREAD_BARRIER_SERIAL_THREAD.  A waiter of round r sleeps until
   `round` has passed r.  Tickets make the barrier reusable at once: a
   thread leaving round r and arriving again simply takes a ticket of
   round r + 1, whatever the stragglers of round r are doing.

     in:     0 1 2 | 3 4 5 | 6 ...      (count = 3)
     round:  0 ---> 1 ----> 2           (bumped by tickets 2, 5, ...)

   Leaving: the very last access a waiter makes to the barrier is adding
   2 to `out` (bit 0 of `out` is DESTROYER: someone waits in destroy).
   pthread_barrier_destroy waits until `out` has counted every ticket
   taken, so destroying (and freeing) the barrier right after one's own
   wait returned is safe.  It fails with EBUSY while a round is
   incomplete, i.e. while threads are blocked in it.

   Waiting: a waiter spins on `round` before it sleeps, as a mutex
   waiter does (core/spin_policy.h), when that can pay: when it may run
   on two or more CPUs, or when the thread that completed the last round
   (`completer`) is awake on another CPU than its own.  The last
   arrivals are what a waiter waits for, and the completer is the one
   participant known by name; threads pinned one to a CPU each (where
   the affinity rule alone never spins) then meet without a sleep and
   a wake-up.  Two such threads meeting at a barrier in a loop slept in
   nearly every round, twice as often as with glibc (whose path to its
   sleep is longer), and ran at 0.85x glibc (bench/RESULTS.md,
   2026-11-29-pairs). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>

#include "arch/syscall_arch.h"
#include "kernel/futex.h"
#include "core/spin_policy.h"
#include "host/tid.h"
#include "barrier.h"

#define BAR_DESTROYER 1u
#define BAR_LEAVER 2u

struct weft_barrier {
	uint64_t in;	/* tickets taken */
	uint32_t round; /* futex: rounds completed (mod 2^32) */
	uint32_t count;
	uint32_t out; /* 2 * tickets whose holder left, | BAR_DESTROYER */
	int shared;
	int completer; /* tid of the thread that completed the last round */
};
_Static_assert(sizeof(struct weft_barrier) <= sizeof(pthread_barrier_t),
	       "weft_barrier does not fit");

static inline struct weft_barrier *bar(pthread_barrier_t *b)
{
	return (struct weft_barrier *)b;
}

/* glibc refuses counts of half the unsigned range and more. */
int barrier_init(pthread_barrier_t *b, unsigned count, int pshared)
{
	struct weft_barrier *w = bar(b);

	if (count == 0 || count >= UINT_MAX / 2)
		return EINVAL;
	__builtin_memset(b, 0, sizeof *b);
	w->count = count;
	w->shared = pshared == PTHREAD_PROCESS_SHARED;
	return 0;
}

/* Whether round `target` (mod 2^32) has been completed; *r: `round` as
   read. */
static int round_passed(struct weft_barrier *w, uint32_t target, uint32_t *r)
{
	*r = __atomic_load_n(&w->round, __ATOMIC_ACQUIRE);
	return (int32_t)(*r - target) >= 0;
}

/* Sleep until round `target` (mod 2^32) has been completed; spin first
   when that can pay (above).  Only the last arrival writes `round`, so
   the spin looks at every pause, without backoff.  A completer that is
   the caller itself names nobody to wait for: 0, unknown.  It changes
   only when the round is complete, which ends the wait: one read. */
static void wait_round(struct weft_barrier *w, uint32_t target, int priv)
{
	int other = __atomic_load_n(&w->completer, __ATOMIC_RELAXED);
	long start = 0, spun = 0;
	uint32_t r;

	if (other == host_self_tid())
		other = 0;
	if (spin_worthwhile_for(other))
		for (unsigned i = 0;
		     (spun = spin_look(&other, i, &start, spun)) >= 0; i++) {
			if (round_passed(w, target, &r))
				return;
			arch_spin_pause();
		}
	while (!round_passed(w, target, &r))
		futex_wait((volatile int *)&w->round, (int)r, priv);
}

int barrier_wait(pthread_barrier_t *b)
{
	struct weft_barrier *w = bar(b);
	int priv = w->shared ? WEFT_FUTEX_SHARED : WEFT_FUTEX_PRIVATE;
	uint32_t count = w->count;
	uint64_t t;
	int ret = 0;

	if (count == 0) /* never initialised, or destroyed and zeroed */
		return EINVAL;
	t = __atomic_fetch_add(&w->in, 1, __ATOMIC_ACQ_REL);

	if (t % count == count - 1) {
		__atomic_store_n(&w->completer, host_self_tid(),
				 __ATOMIC_RELAXED);
		__atomic_fetch_add(&w->round, 1, __ATOMIC_RELEASE);
		futex_wake((volatile int *)&w->round, INT_MAX, priv);
		ret = PTHREAD_BARRIER_SERIAL_THREAD;
	} else {
		wait_round(w, (uint32_t)(t / count + 1), priv);
	}
	/* Last touch of the barrier's memory (the wake below is a system
	   call on the address only). */
	if (__atomic_fetch_add(&w->out, BAR_LEAVER, __ATOMIC_ACQ_REL) &
	    BAR_DESTROYER)
		futex_wake((volatile int *)&w->out, INT_MAX, priv);
	return ret;
}

int barrier_destroy(pthread_barrier_t *b)
{
	struct weft_barrier *w = bar(b);
	int priv = w->shared ? WEFT_FUTEX_SHARED : WEFT_FUTEX_PRIVATE;
	uint64_t in = __atomic_load_n(&w->in, __ATOMIC_ACQUIRE);
	uint32_t want = (uint32_t)in * BAR_LEAVER, o;

	if (w->count == 0)
		return EINVAL;
	if (in % w->count)
		return EBUSY;
	/* Every waiter of a completed round is on its way out: wait. */
	while (((o = __atomic_load_n(&w->out, __ATOMIC_ACQUIRE)) &
		~BAR_DESTROYER) != want) {
		if (!(o & BAR_DESTROYER) &&
		    !__atomic_compare_exchange_n(&w->out, &o, o | BAR_DESTROYER,
						 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		futex_wait((volatile int *)&w->out, (int)(o | BAR_DESTROYER),
			   priv);
	}
	return 0;
}
