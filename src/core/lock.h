/* weft's internal lock, for its own short critical sections (thread
   registry, stack cache, keys, the condvar's waiter list, the default
   attribute, a thread's priority-ceiling counts, the named semaphore
   table).  A real-time thread can block on any of them, so it is a
   priority-inheritance lock: while a thread sleeps on it, the kernel
   runs the holder at the sleeper's priority (docs/sync.md, "Internal
   locks and waits").

   The word is the kernel's PI futex word: 0 when free, else the
   holder's kernel tid, with FUTEX_WAITERS once someone sleeps on it
   (set by the kernel).  Taking a free lock is one CAS 0 -> tid, freeing
   it with nobody asleep one CAS tid -> 0: no system call either way.
   Anything else goes out of line (lock.c) to FUTEX_LOCK_PI and
   FUTEX_UNLOCK_PI, which queue sleepers by priority, boost the holder
   and hand the word over.  Private futexes: the lock never lives in
   memory shared with another process.  Never recursive. */
#ifndef WEFT_CORE_LOCK_H
#define WEFT_CORE_LOCK_H

#include "host/tid.h"
#include "kernel/futex.h"

typedef struct {
	volatile int word;
} weft_lock_t;

#define WEFT_LOCK_INIT {0}

/* The tid is glibc's tid field of the caller's TCB (host/tid.h), which
   is current in weft's threads, glibc's, the main thread and a fork
   child (the kernel writes the child's before it returns to user
   space); gettid gives it during start-up. */

void weft_lock_slow(weft_lock_t *l, int self);
void weft_unlock_slow(weft_lock_t *l, int self);

static inline void weft_lock(weft_lock_t *l)
{
	int self = host_self_tid_any(), free = 0;

	if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &free, self,
							 0, __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED),
			     1))
		return;
	weft_lock_slow(l, self);
}

/* Only the holder unlocks, so the word's tid is the caller's: no need
   to read it from the TCB again.  The CAS fails when FUTEX_WAITERS is
   set (or the kernel sets it meanwhile): the kernel then hands the lock
   to its best sleeper. */
static inline void weft_unlock(weft_lock_t *l)
{
	int held = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	if (__builtin_expect(!(held & FUTEX_WAITERS), 1) &&
	    __builtin_expect(__atomic_compare_exchange_n(&l->word, &held, 0, 0,
							 __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED),
			     1))
		return;
	weft_unlock_slow(l, held & FUTEX_TID_MASK);
}

/* In a fork child only the forking thread exists: whoever held the lock
   in the parent is gone, so the lock is simply reset (a child that
   unlocked a lock its parent took would name the parent's tid, which
   the kernel refuses). */
static inline void weft_lock_reset(weft_lock_t *l)
{
	if (l->word) /* no write, no copy of a page the parent shares */
		l->word = 0;
}

#endif
