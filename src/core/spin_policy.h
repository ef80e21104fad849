/* Whether a waiter should spin before it sleeps.

   Spinning pays only when the thread that holds the lock can run at the
   same time as the spinner, that is when the spinner may run on two or
   more CPUs, or when the holder is known to run on another CPU than
   the spinner's one (spin_worthwhile_for).  A thread confined to one
   CPU (taskset, a one-CPU cgroup or machine) that spins for a holder on
   that same CPU only burns the time slice the holder needs: on the lock
   ring pinned to one CPU, 100 spins per contended lock made every
   hand-over twice as slow as glibc's (which never spins).  The affinity
   answer is cached per thread.  It is looked up again
   after any thread changed an affinity through weft
   (pthread_setaffinity_np bumps a process-wide generation), and every
   SPIN_POLICY_RECHECK slow paths, for the changes made behind weft's
   back (taskset -p, sched_setaffinity, a cpuset cgroup): those are
   noticed within that many contended waits.  A stale answer only ever
   costs speed (at most SPIN_POLICY_RECHECK spins of 2 us on one CPU, or
   that many sleeps without a spin). */
#ifndef WEFT_CORE_SPIN_POLICY_H
#define WEFT_CORE_SPIN_POLICY_H

#include "arch/syscall_arch.h"
#include "runstate.h"

#define SPIN_POLICY_RECHECK 1024

/* Bumped after every affinity change made through weft. */
extern unsigned spin_policy_gen;

int spin_policy_refresh(void);

/* Called once per slow path, before a spin. */
static inline int spin_worthwhile(void)
{
	if (__builtin_expect(weft_runstate_self.policy.left != 0 &&
			     weft_runstate_self.policy.gen ==
				     __atomic_load_n(&spin_policy_gen,
						     __ATOMIC_RELAXED), 1)) {
		weft_runstate_self.policy.left--;
		return weft_runstate_self.policy.cpus >= 2;
	}
	return spin_policy_refresh();
}

/* The number of CPUs this thread may run on, as of the last look-up:
   valid after spin_worthwhile in the same slow path (at least 1). */
static inline unsigned spin_policy_cpus(void)
{
	unsigned cpus = weft_runstate_self.policy.cpus;

	return cpus ? cpus : 1;
}

/* Spinning for a lock held by the thread `holder` (a tid; 0 or any
   thread weft does not know: unknown): worthwhile when this thread may
   run on two or more CPUs, and also, confined to one, when the holder
   is known to be awake on another CPU (core/runstate.h), as threads
   pinned one to a CPU each are: their holder runs beside them, and
   only a holder on the spinner's own CPU needs its time slice.  Like
   spin_worthwhile, called once per slow path, before the spin. */
static inline int spin_worthwhile_for(int holder)
{
	return spin_worthwhile() || runstate_runs_elsewhere(holder);
}

/* How long a waiter spins at most before it sleeps.  A short critical
   section of a running holder is likely to end within it, and a sleep
   plus a wake-up costs two system calls and a context switch (3-10 us
   on the 2-CPU VM of bench/RESULTS.md); spinning longer than that only
   burns a CPU.  Counted in time, not in pauses: a pause takes 10 to 140
   cycles on x86 CPUs, and 75 ns on that VM's AMD EPYC (where the 100
   pauses weft spun before were 7.5 us, longer than a sleep). */
#ifndef SPIN_NS
#define SPIN_NS 2000
#endif

/* How long a mutex spinner, or a writer spinning on a write-held
   rwlock, waits before it marks the word as slept on, so that the
   holder's release takes its slow path (a futex wake) and the spinner
   gets in meanwhile (sync/mutex.c, spin; sync/rwlock.c,
   spin_then_try). */
#ifndef SPIN_MARK_NS
#define SPIN_MARK_NS 500
#endif

/* A spinner pauses 1, 2, 4 ... and at most 2^SPIN_BACKOFF_MAX times
   between two looks at the lock.  A look fetches the lock's cache line
   from the holder's CPU, and the holder's next atomic operation on it
   must fetch it back: looking at every pause made two threads taking
   turns at a lock hand it over about twice as often as glibc, each
   hand-over a transfer of the lock's and the critical section's lines,
   and ran at 0.87-0.94x glibc's speed on a write lock with one thread
   pinned to each CPU (0.78-1.01x on a mutex).  With the backoff:
   1.3-1.7x and 0.94-1.48x (bench/RESULTS.md, 2026-11-29-pairs).
   glibc 2.36's adaptive mutex (PTHREAD_MUTEX_ADAPTIVE_NP) backs off
   the same way, with jitter. */
#define SPIN_BACKOFF_MAX 4

/* A spin in progress (spin_round); zero to start. */
struct spin {
	unsigned round;
	long start; /* clock at the first look, 0 before */
	long spun;  /* ns spun as of the last look */
};

long spin_look_now(const int *holder, long *start);

/* CLOCK_MONOTONIC in nanoseconds: the clock of spins and yields. */
long spin_clock_ns(void);

/* One round of a spin, after a look at the lock that did not get it:
   -1 to stop spinning, else how long it has spun (as of the last look
   at the clock).  Now and then (the first round, then every round once
   the pauses are long) the holder, the tid in *holder (0: unknown), is
   looked at: a spin goes on only while the holder may be running
   (runstate.h: not asleep in a weft wait, not waiting for our own
   CPU), and for at most SPIN_NS.  Then the round's pauses. */
static inline long spin_round(struct spin *s, const int *holder)
{
	unsigned r = s->round++;

	if ((r % 4 == 0 || r >= SPIN_BACKOFF_MAX) &&
	    (s->spun = spin_look_now(holder, &s->start)) < 0)
		return -1;
	for (unsigned k = 1u << (r < SPIN_BACKOFF_MAX ? r : SPIN_BACKOFF_MAX);
	     k; k--)
		arch_spin_pause();
	return s->spun;
}

/* Pause `i` of a spin without backoff (a waiter that watches a word
   only it and the holder's release write): the same looks, every 4
   pauses; -1 to stop, else how long it has spun. */
static inline long spin_look(const int *holder, unsigned i, long *start,
			     long spun)
{
	if (i % 4 != 0)
		return spun;
	return spin_look_now(holder, start);
}

/* After a thread of this process had its affinity changed. */
static inline void spin_policy_forget(void)
{
	__atomic_fetch_add(&spin_policy_gen, 1, __ATOMIC_RELAXED);
}

#endif
