/* The per-thread spin decision (see spin_policy.h). */
#include <sched.h>
#include "kernel/sched.h"
#include "spin_policy.h"

__thread struct spin_policy weft_spin_policy
	__attribute__((tls_model("initial-exec")));
unsigned spin_policy_gen;

/* Raw system call: slow paths run in signal handlers and fork children
   too.  A mask larger than cpu_set_t (EINVAL) means a big machine. */
int spin_policy_refresh(void)
{
	cpu_set_t set;
	/* Read before the look-up: a change made meanwhile bumps it again
	   and is looked up at the next slow path. */
	unsigned gen = __atomic_load_n(&spin_policy_gen, __ATOMIC_RELAXED);
	long n = sys_sched_getaffinity(0, sizeof set, &set);
	int cpus = n < 0 ? 2 : CPU_COUNT_S((size_t)n, &set);

	weft_spin_policy.may_spin = cpus >= 2;
	weft_spin_policy.left = SPIN_POLICY_RECHECK;
	weft_spin_policy.gen = gen;
	return weft_spin_policy.may_spin;
}
