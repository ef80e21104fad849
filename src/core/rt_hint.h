/* Whether a thread of this process may run under a real-time policy,
   so that queues weft keeps itself (a private condvar's waiter list)
   can order their waiters by priority without asking the kernel for
   the caller's priority on every wait of a program that never uses one.

   The hint turns on, for good, when the process started under a
   real-time policy (checked once, at the first question) or when weft
   or the program sets one through a call weft sees: thread attributes,
   pthread_setschedparam/setschedprio, a priority-protect ceiling,
   sched_setscheduler/sched_setparam (abi/sched.c).  A policy set behind
   weft's back on a running thread (chrt -p, a raw sched_setattr) is not
   seen: such waiters queue in arrival order (docs/sync.md). */
#ifndef WEFT_CORE_RT_HINT_H
#define WEFT_CORE_RT_HINT_H

/* `policy` (SCHED_RESET_ON_FORK allowed) is being given to a thread;
   -1 with `prio` > 0: a priority is, under the thread's policy. */
void rt_hint_note(int policy, int prio);

/* The hint's state: RT_HINT_UNKNOWN until the first question. */
enum { RT_HINT_UNKNOWN, RT_HINT_OFF, RT_HINT_ON };
extern int rt_hint_state;

int rt_hint_self_priority_slow(void);

/* The calling thread's priority for queue order: its real-time
   priority (1..99), 100 under SCHED_DEADLINE, 0 otherwise or while the
   hint is off.  Asked of the kernel (one system call) the first time
   and after each change weft sees; else the thread's cached answer.
   Inline for the answer of a program that never uses a real-time
   policy: it is on the path of every contended lock. */
static inline int rt_hint_self_priority(void)
{
	if (__builtin_expect(__atomic_load_n(&rt_hint_state, __ATOMIC_RELAXED) ==
				     RT_HINT_OFF, 1))
		return 0;
	return rt_hint_self_priority_slow();
}

#endif
