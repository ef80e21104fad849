/* The scheduling side of priority-protect mutexes (mutex_pp.c), for
   pthread_setschedparam / setschedprio / getschedparam: a thread that
   holds PP mutexes runs at least at the highest of their ceilings, and
   the priority it was given (its base) takes effect when it releases
   them (docs/mutex-pp.md).

   `tcb` names the thread (its thread pointer; the state lives in its
   initial-exec TLS), `tid` is its kernel tid (0: the caller). */
#ifndef WEFT_SYNC_MUTEX_PP_H
#define WEFT_SYNC_MUTEX_PP_H

#include <sched.h>

/* Gives the thread the base `policy` (< 0: keep its policy, as
   pthread_setschedprio) and priority `prio`: the kernel gets `prio`
   raised to the highest held ceiling.  0 or the kernel's error. */
int pp_sched_set(char *tcb, int tid, int policy, int prio);

/* While the thread holds ceilings its kernel priority is not its base:
   stores the base and returns 1; 0 when the kernel's view is the base. */
int pp_sched_base(char *tcb, int *policy, int *prio);

/* glibc's own pthread_setschedparam / setschedprio (policy < 0) gave
   the thread this base: recorded, so that releasing ceilings restores
   it.  glibc does not see weft's ceilings: a boost in force is lost
   until the thread's highest ceiling changes. */
void pp_sched_note(char *tcb, int policy, int prio);
/* fork child handler: resets the forking thread's lock (abi/atfork.c). */
void pp_fork_child(void);

#endif
