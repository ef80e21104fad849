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

#include "runstate.h"

#define SPIN_POLICY_RECHECK 1024

struct spin_policy {
	unsigned short may_spin;	/* valid while `left` > 0 ... */
	unsigned short left;	/* slow paths until the next look-up */
	unsigned gen;		/* ... and `gen` is spin_policy_gen */
};

/* Bumped after every affinity change made through weft. */
extern unsigned spin_policy_gen;

extern __thread struct spin_policy weft_spin_policy
	__attribute__((tls_model("initial-exec")));

int spin_policy_refresh(void);

/* Called once per slow path, before a spin. */
static inline int spin_worthwhile(void)
{
	struct spin_policy *p = &weft_spin_policy;

	if (__builtin_expect(p->left != 0 &&
			     p->gen == __atomic_load_n(&spin_policy_gen,
						       __ATOMIC_RELAXED), 1)) {
		p->left--;
		return p->may_spin;
	}
	return spin_policy_refresh();
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

/* After a thread of this process had its affinity changed. */
static inline void spin_policy_forget(void)
{
	__atomic_fetch_add(&spin_policy_gen, 1, __ATOMIC_RELAXED);
}

#endif
