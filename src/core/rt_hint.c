/* The real-time hint (rt_hint.h). */
#include <sched.h>
#include <stdint.h>
#include "rt_hint.h"
#include "kernel/sched.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

int rt_hint_state;

/* Every change weft sees moves the generation on; a thread keeps the
   priority it last asked the kernel for, with the generation it was
   valid in, so that waits ask again only after a change (a new thread
   starts with an invalid cache: static TLS begins zeroed). */
static unsigned generation;
static __thread struct {
	unsigned generation;
	int prio;
	int valid;
} self_cache __attribute__((tls_model("initial-exec")));

static int is_rt_policy(long policy)
{
	policy &= ~(long)SCHED_RESET_ON_FORK;
	return policy == SCHED_FIFO || policy == SCHED_RR ||
	       policy == SCHED_DEADLINE;
}

void rt_hint_note(int policy, int prio)
{
	if (is_rt_policy(policy) || (policy < 0 && prio > 0))
		__atomic_store_n(&rt_hint_state, RT_HINT_ON, __ATOMIC_RELAXED);
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

/* The first question: the process may have started under a real-time
   policy (chrt), which its threads inherit.  A note meanwhile wins. */
static int hint_now(void)
{
	int h = __atomic_load_n(&rt_hint_state, __ATOMIC_RELAXED);

	if (h == RT_HINT_UNKNOWN) {
		int v = is_rt_policy(sys_sched_getscheduler(0)) ? RT_HINT_ON
								: RT_HINT_OFF;
		if (!__atomic_compare_exchange_n(&rt_hint_state, &h, v, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			return h;
		h = v;
	}
	return h;
}

static int ask_kernel(void)
{
	struct sched_attr_v0 a;

	if (sys_sched_getattr(0, &a) < 0)
		return 0;
	if (a.sched_policy == SCHED_DEADLINE)
		return 100;
	if (a.sched_policy == SCHED_FIFO || a.sched_policy == SCHED_RR)
		return (int)a.sched_priority;
	return 0;
}

int rt_hint_self_priority_slow(void)
{
	unsigned g;

	if (hint_now() != RT_HINT_ON)
		return 0;
	g = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
	if (!self_cache.valid || self_cache.generation != g) {
		self_cache.prio = ask_kernel();
		self_cache.generation = g;
		self_cache.valid = 1;
	}
	return self_cache.prio;
}
