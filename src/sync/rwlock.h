/* Read-write locks (pthread_rwlock_t) on futexes.  See rwlock.c and
   docs/sync-other.md for the protocol. */
#ifndef WEFT_SYNC_RWLOCK_H
#define WEFT_SYNC_RWLOCK_H

#include <pthread.h>
#include <time.h>

int rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr);
int rwlock_destroy(pthread_rwlock_t *rw);
/* abstime NULL: wait forever; `clock` is then ignored. */
int rwlock_rdlock(pthread_rwlock_t *rw, clockid_t clock,
		  const struct timespec *abstime);
int rwlock_wrlock(pthread_rwlock_t *rw, clockid_t clock,
		  const struct timespec *abstime);
int rwlock_tryrdlock(pthread_rwlock_t *rw);
int rwlock_trywrlock(pthread_rwlock_t *rw);
int rwlock_unlock(pthread_rwlock_t *rw);

/* pthread_rwlockattr_t in glibc's layout. */
struct weft_rwlockattr {
	int kind;
	int pshared;
};

#endif
