/* Read-write locks (pthread_rwlock_t) on futexes.  See rwlock.c and
   docs/sync-other.md for the protocol.  The uncontended lock and unlock are
   inline here (one compare-and-swap each); everything else is in
   rwlock.c. */
#ifndef WEFT_SYNC_RWLOCK_H
#define WEFT_SYNC_RWLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include "host/tid.h"

/* The low half of `word` (rwlock.c has the whole picture). */
#define RW_WRLOCKED 1u /* a writer holds it */
#define RW_WR_QUEUED 2u /* writers are registered: readers go slow */
#define RW_READER 4u   /* one reader */
/* Readers are counted in bits 31..2: a count this high is full. */
#define RW_READERS_FULL (UINT32_MAX & ~(RW_READER - 1))
/* The high half (the futex word), seen as part of the 64-bit word. */
#define RW_SLEEP_RD ((uint64_t)1 << 32) /* readers sleep */
#define RW_SLEEP_WR ((uint64_t)2 << 32) /* writers sleep */

/* Our view of pthread_rwlock_t.  Only three places must agree with
   glibc: all-zero memory is an unlocked reader-preferring private lock,
   `flags` sits where glibc's static initializers put the kind (so
   PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP works), and
   `owner_tid` sits where glibc keeps its __cur_writer. */
struct weft_rwlock {
	uint64_t word; /* state (low half) | sleep word, the futex (high) */
	uint32_t unused; /* never read; the write lock stores 0 (spare store) */
	uint32_t rd_waiters; /* readers registered as sleeping */
	uint32_t wr_waiters; /* writers registered as sleeping */
	uint32_t rt; /* real-time tops: writers bits 0-7, readers 8-15 */
	int owner_tid; /* tid of the writer holding it, 0 if none */
	int shared;    /* nonzero: process-shared futexes */
	uint32_t pad1[4];
	uint32_t flags; /* kind: PTHREAD_RWLOCK_PREFER_* */
	uint32_t pad2;
};

/* Read locks the calling thread holds, over all rwlocks (rule (a) of
   rwlock.c). */
extern __thread int rwlock_rd_held
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline struct weft_rwlock *rwlock_of(pthread_rwlock_t *rw)
{
	return (struct weft_rwlock *)rw;
}

/* The inline fast paths, used by the exported functions.  Each reads
   the word once and tries one compare-and-swap; every other case (held
   the other way, writers registered or asleep, a count that would
   overflow, an error to report, a failed CAS) returns -1 and the caller
   takes the out-of-line path, which decides again from scratch.  The
   conditions a reader must respect beyond "no writer holds it" (writer
   preference, real-time writers waiting: rwlock.c) all mean a writer is
   registered, and a registered writer keeps RW_WR_QUEUED set, so the
   reader tests the one word. */
static inline int rwlock_rdlock_fast(struct weft_rwlock *l)
{
	uint64_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	if (__builtin_expect((uint32_t)w & (RW_WRLOCKED | RW_WR_QUEUED), 0) ||
	    __builtin_expect((uint32_t)w >= RW_READERS_FULL, 0))
		return -1;
	if (!__atomic_compare_exchange_n(&l->word, &w, w + RW_READER, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return -1;
	rwlock_rd_held++;
	return 0;
}

/* Writers may take a free lock ahead of registered ones (as from the
   slow path's first try): only a held lock sends them slow. */
static inline int rwlock_wrlock_fast(struct weft_rwlock *l)
{
	uint64_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	if (__builtin_expect((uint32_t)w & ~RW_WR_QUEUED, 0))
		return -1;
	if (!__atomic_compare_exchange_n(&l->word, &w, w | RW_WRLOCKED, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return -1;
	/* A spare store, for speed only: the mutex's fast lock has the
	   same one and the same reason (docs/sync.md, "The fast path's
	   spare store"); nothing reads `unused`. */
	l->unused = 0;
	l->owner_tid = host_self_tid();
	return 0;
}

/* Nobody asleep: the compare-and-swap releases and is the last touch
   (docs/sync.md).  A failed one leaves the lock as it was. */
static inline int rwlock_unlock_fast(struct weft_rwlock *l)
{
	uint64_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
	uint32_t s = (uint32_t)w;

	if (s & RW_WRLOCKED) {
		int self = host_self_tid();

		if (__builtin_expect((w & RW_SLEEP_RD) || (w & RW_SLEEP_WR), 0) ||
		    __builtin_expect(l->owner_tid != self, 0))
			return -1;
		l->owner_tid = 0;
		if (__builtin_expect(!__atomic_compare_exchange_n(
					     &l->word, &w, w & ~(uint64_t)RW_WRLOCKED,
					     0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED),
				     0)) {
			l->owner_tid = self; /* still ours: the slow path decides */
			return -1;
		}
		return 0;
	}
	/* Not held, or the last reader out with a writer asleep. */
	if (__builtin_expect(s < RW_READER, 0) ||
	    __builtin_expect(s < 2 * RW_READER && (w & RW_SLEEP_WR), 0))
		return -1;
	if (!__atomic_compare_exchange_n(&l->word, &w, w - RW_READER, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return -1;
	rwlock_rd_held -= rwlock_rd_held > 0;
	return 0;
}

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
