/* glibc's cached scheduling fields in a thread's struct pthread. */
#ifndef WEFT_HOST_SCHED_CACHE_H
#define WEFT_HOST_SCHED_CACHE_H

/* Records in the TCB the policy (unless `policy` < 0) and the priority
   weft just gave the thread, for glibc code that reads them. */
void host_sched_cache_store(char *tcb, int policy, int priority);

#endif
