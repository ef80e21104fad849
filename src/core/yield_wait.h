/* Yielding instead of sleeping: the waiter that keeps its CPU awake.

   A mutex waiter whose holder cannot release soon (the holder sleeps
   itself, or a spin for a running one ran out) would sleep in the
   kernel, and the holder's release would wake it with a futex call.
   When the other CPUs are idle, that wake-up lands on an idle CPU: on a
   virtual machine whose idle CPUs halt (no halt polling), the host must
   first run that CPU again, tens of microseconds, and the waiter runs
   only then.  The lock ring with more threads than CPUs is a chain of
   such wake-ups: on the 2-CPU KVM guest of bench/RESULTS.md
   "2026-12-03-yield" a step took 13-22 us unpinned, but 4-5 us with all
   threads on one CPU, where a wake-up is only a switch.

   So a waiter first yields its CPU, up to WEFT_YIELD_WAIT times
   (core/tunables.h) and for at most YIELD_WAIT_NS, and looks at the
   lock after each yield.  A yield hands the CPU to any thread that is
   ready on it (the holder among them, if it waits for this CPU), and
   returns at once when there is none, so the CPU never halts while the
   yielder waits, and a release with nobody asleep makes no futex call.
   Only as many waiters yield at once as the yielder may use CPUs
   (spin_policy_cpus): more would take turns with each other on every
   CPU and with the threads that could make progress; with all walkers
   of the ring yielding and none capped, the ring on one CPU ran at
   0.6x its speed with sleeps.  Real-time threads never yield (a yield
   would pass the CPU only to threads of their own priority, and their
   order in the kernel's futex queue is the priority order).

   Untimed condition variable and semaphore waiters free to run on two
   or more CPUs yield the same way before their first sleep (sync/cond.c
   node_yield, sync/sem.c sem_yield), within the same cap: a signal, a
   broadcast or a post to a sleeper on an idle CPU pays the same
   wake-up.  The three share the frame of a turn of yields
   (yield_turn_begin, below).

   Where a VM's vCPUs share the host's capacity, a turn that fails
   slows the one thread that can move; a mutex waiter whose turns run
   out just before its lock comes backs off (sync/mutex.c, struct
   yield_record). */
#ifndef WEFT_CORE_YIELD_WAIT_H
#define WEFT_CORE_YIELD_WAIT_H

#include "kernel/sched.h"
#include "rt_hint.h"
#include "spin_policy.h"
#include "tunables.h"

/* The longest a waiter keeps yielding, from its first yield
   (CLOCK_MONOTONIC): a yield that handed the CPU to other threads for
   their time slices makes it stop and sleep, so that a busy machine
   does not keep it away from a lock freed meanwhile. */
#ifndef YIELD_WAIT_NS
#define YIELD_WAIT_NS 50000
#endif

/* Waiters yielding now, process-wide: every yielder's entry and exit
   writes it, so it has a cache line of its own (the type's size is 64). */
struct yield_waiters {
	int n;
} __attribute__((aligned(64)));
extern struct yield_waiters yield_waiters;

/* Takes a yielder's place: 1 when this thread may yield now (fewer
   waiters than its CPUs yield already), 0 when it must sleep.  Only
   after spin_worthwhile in the same slow path. */
static inline int yield_wait_enter(void)
{
	int cap = (int)spin_policy_cpus();

	if (__atomic_load_n(&yield_waiters.n, __ATOMIC_RELAXED) >= cap)
		return 0;
	if (__atomic_fetch_add(&yield_waiters.n, 1, __ATOMIC_RELAXED) < cap)
		return 1;
	__atomic_fetch_sub(&yield_waiters.n, 1, __ATOMIC_RELAXED);
	return 0;
}

static inline void yield_wait_leave(void)
{
	__atomic_fetch_sub(&yield_waiters.n, 1, __ATOMIC_RELAXED);
}

/* A waiter's turn of yields, the frame the yielding waiters share:

	struct yield_turn t;

	if (!yield_turn_begin(&t))
		sleep at once;
	while (yield_turn_yield(&t))
		if (what we wait for happened)
			break;
	yield_turn_end(&t);

   Between begin and end the thread holds a yielder's place and counts
   as blocked for spinners (core/runstate.h: a spinner stops waiting for
   it, as for a sleeper). */
struct yield_turn {
	unsigned made, max; /* yields made, allowed (WEFT_YIELD_WAIT) */
	long start;	    /* spin_clock_ns when the turn began */
};

/* 1 when the caller may yield now (WEFT_YIELD_WAIT is not 0, the
   thread has no real-time policy, and a yielder's place is free:
   yield_wait_enter, with its contract); then yield_turn_end must
   follow. */
static inline int yield_turn_begin(struct yield_turn *t)
{
	t->made = 0;
	t->max = weft_tunables.yield_waits;
	if (t->max == 0 || rt_hint_self_priority() > 0 || !yield_wait_enter())
		return 0;
	runstate_blocked(1);
	t->start = spin_clock_ns();
	return 1;
}

/* yield_turn_begin for a waiter that another thread's signal, broadcast
   or post wakes (condvar, semaphore), and only when it may run on two
   or more CPUs: confined to one, its waker runs on its own CPU, a
   wake-up there is only a switch, and yielding measured slower
   (docs/sync.md, "A condvar waiter yields too").  spin_worthwhile also
   refreshes the cached CPU count that the yielders' cap reads (a thread
   that never waited for a mutex has none yet). */
static inline int yield_turn_begin_woken(struct yield_turn *t)
{
	return spin_worthwhile() && yield_turn_begin(t);
}

/* Yields once, and returns 1, unless the turn is over: WEFT_YIELD_WAIT
   yields made, or YIELD_WAIT_NS passed since the turn began (not asked
   before the first yield: the clock was read just before, and a
   waiter woken at its first look, as in a forced alternation, pays
   for no second read). */
static inline int yield_turn_yield(struct yield_turn *t)
{
	if (t->made == t->max ||
	    (t->made && spin_clock_ns() - t->start >= YIELD_WAIT_NS))
		return 0;
	t->made++;
	sys_sched_yield();
	return 1;
}

static inline void yield_turn_end(struct yield_turn *t)
{
	(void)t;
	runstate_blocked(0);
	yield_wait_leave();
}

#endif
