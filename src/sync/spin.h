/* Spin locks (pthread_spinlock_t); see spin.c.  The paths that do not
   wait are inline in the exported functions: a lock and unlock is a few
   instructions, and the wrapper around them (is weft serving?) cost two
   loads and a jump each, a lock and unlock in one thread 0.83x glibc's
   speed against 1.00x without (bench/RESULTS.md, 2026-11-29-pairs).
   They need no start-up and no thread state: the encoding is glibc's,
   so they are right whether or not weft serves the process's other
   calls. */
#ifndef WEFT_SYNC_SPIN_H
#define WEFT_SYNC_SPIN_H

#include <errno.h>
#include <pthread.h>

#define SPIN_FREE 1

/* Takes the lock if the word is `v` (> 0); else `v` is the word now. */
static inline int spin_take_from(pthread_spinlock_t *l, int *v)
{
	return __atomic_compare_exchange_n(l, v, 0, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* One try, for a word that is free as unlock and init leave it. */
static inline int spin_trylock(pthread_spinlock_t *l)
{
	int v = SPIN_FREE;

	return spin_take_from(l, &v) ? 0 : EBUSY;
}

void spin_lock_wait(pthread_spinlock_t *l);

static inline int spin_lock(pthread_spinlock_t *l)
{
	if (__builtin_expect(spin_trylock(l) != 0, 0))
		spin_lock_wait(l);
	return 0;
}

/* Unlock and init are the same store, as in glibc. */
static inline int spin_unlock(pthread_spinlock_t *l)
{
	__atomic_store_n(l, SPIN_FREE, __ATOMIC_RELEASE);
	return 0;
}

#endif
