/* The per-thread spin decision (see spin_policy.h). */
#include <sched.h>
#include <time.h>
#include "kernel/sched.h"
#include "spin_policy.h"

unsigned spin_policy_gen;

/* CPUs in the first `bytes` of a mask the kernel filled, counted here
   and not with CPU_COUNT_S (glibc's __sched_cpucount): a dying thread
   refreshes its policy after it has left glibc's thread list, and
   libweft's calls into libc are bound lazily (Makefile), so no call
   there may be a first call through the PLT (docs/glibc-host.md,
   "Binding of libweft's own calls"). */
static int cpus_in_mask(const cpu_set_t *set, size_t bytes)
{
	const unsigned long *w = (const unsigned long *)set;
	int cpus = 0;

	for (size_t i = 0; i < bytes / sizeof *w; i++)
		cpus += __builtin_popcountl(w[i]);
	return cpus;
}

/* Raw system call: slow paths run in signal handlers and fork children
   too.  A mask larger than cpu_set_t (EINVAL) means a big machine. */
int spin_policy_refresh(void)
{
	cpu_set_t set;
	/* Read before the look-up: a change made meanwhile bumps it again
	   and is looked up at the next slow path. */
	unsigned gen = __atomic_load_n(&spin_policy_gen, __ATOMIC_RELAXED);
	long n = sys_sched_getaffinity(0, sizeof set, &set);
	int cpus = n < 0 ? 2 : cpus_in_mask(&set, (size_t)n);

	weft_runstate_self.policy.cpus = cpus > 0xffff ? 0xffff : (unsigned short)cpus;
	weft_runstate_self.policy.left = SPIN_POLICY_RECHECK;
	weft_runstate_self.policy.gen = gen;
	return cpus >= 2;
}

long spin_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* spin_look's look at the holder and the clock. */
long spin_look_now(const int *holder, long *start)
{
	long now;

	if (!runstate_may_run(__atomic_load_n(holder, __ATOMIC_RELAXED)))
		return -1;
	now = spin_clock_ns();
	if (!*start)
		*start = now;
	return now - *start < SPIN_NS ? now - *start : -1;
}
