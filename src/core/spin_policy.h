/* Whether a waiter should spin before it sleeps.

   Spinning pays only when the thread that holds the lock can run at the
   same time as the spinner, that is when the spinner may run on two or
   more CPUs.  A thread confined to one CPU (taskset, a one-CPU cgroup
   or machine) that spins only burns the time slice its lock holder
   needs: on the lock ring pinned to one CPU, 100 spins per contended
   lock made every hand-over twice as slow as glibc's (which never
   spins).  The answer is cached per thread and looked up again every
   SPIN_POLICY_RECHECK slow paths, so an affinity change made later (by
   taskset, another thread, sched_setaffinity) is noticed within that
   many contended waits; it only ever affects speed. */
#ifndef WEFT_CORE_SPIN_POLICY_H
#define WEFT_CORE_SPIN_POLICY_H

#define SPIN_POLICY_RECHECK 64

struct spin_policy {
	unsigned char may_spin;	/* valid while `left` > 0 */
	unsigned char left;	/* slow paths until the next look-up */
};

extern __thread struct spin_policy weft_spin_policy
	__attribute__((tls_model("initial-exec")));

int spin_policy_refresh(void);

/* Called once per slow path, before a spin. */
static inline int spin_worthwhile(void)
{
	struct spin_policy *p = &weft_spin_policy;

	if (__builtin_expect(p->left != 0, 1)) {
		p->left--;
		return p->may_spin;
	}
	return spin_policy_refresh();
}

/* After this thread changed its own affinity. */
static inline void spin_policy_forget(void)
{
	weft_spin_policy.left = 0;
}

#endif
