/* A tiny internal lock for weft's own short critical sections (thread
   registry, stack cache).  Word states: 0 free, 1 held, 2 held with
   sleepers.  It is private (never shared between processes), never
   recursive, and held for a few instructions only, so contention is
   rare and the uncontended path is one compare-and-swap. */
#ifndef WEFT_CORE_LOCK_H
#define WEFT_CORE_LOCK_H

#include "../kernel/futex.h"
#include "spin_policy.h"

typedef struct {
	volatile int word;
} weft_lock_t;

#define WEFT_LOCK_INIT {0}

static inline void weft_lock(weft_lock_t *l)
{
	int c = 0;

	if (__atomic_compare_exchange_n(&l->word, &c, 1, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	for (int spin = spin_worthwhile() ? 0 : 100; spin < 100 && c == 1; spin++) {
		arch_spin_pause();
		c = 0;
		if (__atomic_compare_exchange_n(&l->word, &c, 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
	while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
		futex_wait(&l->word, 2, WEFT_FUTEX_PRIVATE);
}

static inline void weft_unlock(weft_lock_t *l)
{
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2)
		futex_wake(&l->word, 1, WEFT_FUTEX_PRIVATE);
}

/* In a fork child only the forking thread exists: whoever held the lock
   in the parent is gone, so the lock is simply reset. */
static inline void weft_lock_reset(weft_lock_t *l)
{
	l->word = 0;
}

#endif
