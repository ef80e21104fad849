/* The mutex kinds with a lock-word protocol of their own.  mutex.c
   sends every call on such a mutex here:

   - robust and priority-inheritance mutexes (mutex_tid.c) keep the
     owner's tid in the lock word, glibc's protocol, so that the kernel
     can mark a dead owner's robust mutexes and boost a PI owner;
   - priority-protect mutexes (mutex_pp.c) keep their ceiling in the
     lock word's high bits, glibc's place, and raise the holder to it.

   Each family's functions have the meaning of the mutex.h function of
   the same name.  `attr` is the pthread_mutexattr_t word; init clears
   the mutex and sets its kind itself, or returns an error having
   touched nothing. */
#ifndef WEFT_SYNC_MUTEX_KINDS_H
#define WEFT_SYNC_MUTEX_KINDS_H

#include "mutex.h"

#define MK_TID_KINDS (MK_ROBUST | MK_PI)

int tidmutex_init(struct wmutex *w, int kind, unsigned attr);
int tidmutex_lock(struct wmutex *w, clockid_t clock,
		  const struct timespec *abstime);
int tidmutex_trylock(struct wmutex *w);
int tidmutex_unlock(struct wmutex *w);
int tidmutex_check_owner(struct wmutex *w);
unsigned tidmutex_release_for_wait(struct wmutex *w);
int tidmutex_reacquire_after_wait(struct wmutex *w, unsigned depth);
int tidmutex_destroy(struct wmutex *w);
int tidmutex_consistent(struct wmutex *w);

/* Requeue-PI, for a condvar wait on a PI mutex (cond.c): the waiter
   sleeps so that the signaller moves it onto the mutex word, and the
   kernel, not tidmutex_lock, makes it the owner.  requeue_flag: the
   futex flag both sides must use (the mutex's), or -1 when the mutex
   is not PI.  begin, before the sleep: a robust mutex is named pending
   on the robust list, so that a death between the kernel's hand-over
   and took() still marks it.  took: the kernel made the caller the
   owner; the bookkeeping of a lock (robust list, owner, EOWNERDEAD),
   the depth restored; what the wait returns.  abandon: the caller
   was not made the owner and takes the ordinary reacquire path. */
int tidmutex_requeue_flag(const struct wmutex *w);
/* Whether a requeue onto `w` may wait for the caller's release of it:
   a PI mutex, not robust, that the caller holds. */
int tidmutex_requeue_deferrable(const struct wmutex *w);
void tidmutex_requeue_begin(struct wmutex *w);
int tidmutex_requeue_took(struct wmutex *w, unsigned depth);
void tidmutex_requeue_abandon(struct wmutex *w);

int ppmutex_init(struct wmutex *w, int kind, unsigned attr);
int ppmutex_lock(struct wmutex *w, clockid_t clock,
		 const struct timespec *abstime);
int ppmutex_trylock(struct wmutex *w);
int ppmutex_unlock(struct wmutex *w);
int ppmutex_check_owner(struct wmutex *w);
unsigned ppmutex_release_for_wait(struct wmutex *w);
int ppmutex_reacquire_after_wait(struct wmutex *w, unsigned depth);
int ppmutex_destroy(struct wmutex *w);
int ppmutex_getprioceiling(const struct wmutex *w, int *ceiling);
int ppmutex_setprioceiling(struct wmutex *w, int ceiling, int *old);

#endif
