/* glibc's thread lists and live-thread count (threads.c). */
#ifndef WEFT_HOST_THREADS_H
#define WEFT_HOST_THREADS_H

#include "layout.h"

/* Membership of glibc's list of threads on user stacks: add before
   clone, started in the new thread (a set*id call may signal it from
   then on), unlist at the end of the thread, del when clone failed. */
static inline int host_threads_listed(void)
{
	return host_layout.stack_user != NULL;
}
void host_list_add(char *tcb);
void host_list_started(char *tcb);
void host_list_del(char *tcb);
void host_thread_unlist(char *tcb);

/* glibc's live-thread count (G4); returns the new value. */
static inline int host_nthreads_add(int delta)
{
	return (int)__atomic_add_fetch(host_layout.nthreads, delta,
				       __ATOMIC_ACQ_REL);
}

/* In a fork child, for the surviving thread: glibc's fork rebuilt its
   lists with only this thread; a listed weft thread stays there, an
   unlisted one must leave (P2). */
void host_fork_child(char *tcb);

#endif
