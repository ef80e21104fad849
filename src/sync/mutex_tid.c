/* Robust and priority-inheritance mutexes (mutex_kinds.h), in glibc's
   layout and lock-word protocol so that glibc peers, the kernel's
   robust-list walk at thread death and the kernel's PI futexes all read
   the same word: the owner's tid in bits 0-29, FUTEX_OWNER_DIED and
   FUTEX_WAITERS above it.  Design, diagrams and limits:
   docs/mutex-robust-pi.md.

   A robust mutex is linked, while held, on its holder's robust list
   (glibc's head in the TCB, host_robust_head), which the kernel walks
   when the thread dies: it marks every word still holding the dead tid
   with FUTEX_OWNER_DIED and wakes a waiter.  The head's
   `list_op_pending` names the mutex being locked or unlocked, so that a
   death between the word and the list being updated is caught too.

   A PI mutex is taken by a CAS 0 -> tid and freed by a CAS tid -> 0;
   any other state goes to the kernel (FUTEX_LOCK_PI, FUTEX_UNLOCK_PI),
   which queues waiters by priority and boosts the owner. */
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "mutex_kinds.h"
#include "cond.h"
#include "core/stats.h"

/* glibc's __owner values for a robust mutex whose owner died: taken
   but not yet made consistent, and given up on (pthreadP.h). */
#define OWNER_INCONSISTENT INT_MAX
#define OWNER_NOTRECOVERABLE (INT_MAX - 1)

#define W_WAITERS ((int)FUTEX_WAITERS)
#define W_DIED FUTEX_OWNER_DIED
#define W_TID FUTEX_TID_MASK

static int is_robust(const struct wmutex *w)
{
	return (w->kind & MK_ROBUST) != 0;
}

static int is_pi(const struct wmutex *w)
{
	return (w->kind & MK_PI) != 0;
}

static int type_of(const struct wmutex *w)
{
	return w->kind & MK_TYPE_MASK;
}

/* A robust mutex's futex is always the shared kind, as under glibc:
   the kernel wakes a dead owner's waiter with a shared wake. */
static int futex_flag(const struct wmutex *w)
{
	return is_robust(w) ? WEFT_FUTEX_SHARED : mutex_futex_flag(w);
}

static int cas(int *p, int *expect, int val)
{
	return __atomic_compare_exchange_n(p, expect, val, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_RELAXED);
}

/* ---------------------------------------------------- the robust list

   The kernel walks the list of the thread that dies, which is the
   thread that writes it: program order suffices, a compiler barrier
   keeps it (signal fence).  Entries are the mutexes' __list.__next
   slots; a PI mutex's entry is named with bit 0 set. */

static void *entry_of(struct wmutex *w)
{
	return (void *)((uintptr_t)&w->list[1] | (is_pi(w) ? 1 : 0));
}

/* A list node's `next` slot from a tagged pointer; its `prev` slot is
   the word before. */
static void **slot(void *tagged)
{
	return (void **)((uintptr_t)tagged & ~(uintptr_t)1);
}

static void barrier(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void pending_set(struct host_robust_head *h, struct wmutex *w)
{
	h->list_op_pending = entry_of(w);
	barrier();
}

static void pending_clear(struct host_robust_head *h)
{
	barrier();
	h->list_op_pending = NULL;
}

/* Pushes a mutex the caller has just taken at the head of its list. */
static void enqueue(struct host_robust_head *h, struct wmutex *w)
{
	barrier();
	slot(h->list)[-1] = &w->list[1];
	w->list[1] = h->list;
	w->list[0] = h;
	barrier();
	h->list = entry_of(w);
}

static void dequeue(struct wmutex *w)
{
	slot(w->list[1])[-1] = w->list[0];
	slot(w->list[0])[0] = w->list[1];
	barrier();
	w->list[0] = w->list[1] = NULL;
}

/* ---------------------------------------------------------------- lock */

/* The caller's tid is in the word already: an error-checking mutex
   refuses (EDEADLK, from trylock too, as glibc for these kinds), a
   recursive one counts; -1 for the others (a normal mutex deadlocks,
   as under glibc). */
static int relock(struct wmutex *w)
{
	if (type_of(w) == PTHREAD_MUTEX_ERRORCHECK)
		return EDEADLK;
	if (type_of(w) != PTHREAD_MUTEX_RECURSIVE)
		return -1;
	if (w->count == UINT_MAX)
		return EAGAIN;
	w->count++;
	return 0;
}

/* The deadline checks glibc makes when the caller is about to block. */
static int deadline_check(const struct timespec *abstime)
{
	if (!abstime)
		return 0;
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000)
		return EINVAL;
	if (abstime->tv_sec < 0)
		return ETIMEDOUT;
	return 0;
}

/* The word is ours.  Robust: a dead owner's word makes the mutex
   inconsistent (EOWNERDEAD); a mutex given up on is released again
   (ENOTRECOVERABLE).  `users`: count the holder in __nusers, glibc's
   user count (a condvar's reacquire does not). */
static int took(struct wmutex *w, struct host_robust_head *h, int self,
		int died, int users)
{
	w->count = 1;
	if (died) {
		w->owner = OWNER_INCONSISTENT;
		if (h) {
			enqueue(h, w);
			pending_clear(h);
		}
		return EOWNERDEAD;
	}
	if (h && w->owner == OWNER_NOTRECOVERABLE) {
		int flag = futex_flag(w); /* read before the release */

		w->count = 0;
		if (is_pi(w))
			futex_unlock_pi(&w->lock, flag);
		else if (__atomic_exchange_n(&w->lock, 0, __ATOMIC_RELEASE) &
			 W_WAITERS)
			futex_wake(&w->lock, 1, flag);
		pending_clear(h);
		return ENOTRECOVERABLE;
	}
	if (h) {
		enqueue(h, w);
		pending_clear(h);
	}
	w->owner = self;
	if (users)
		w->nusers++;
	return 0;
}

/* Robust, not PI: glibc's protocol.  `waiters` is FUTEX_WAITERS once
   this thread has slept: others may sleep too, so the word it takes
   must keep the bit or their wake-up would be lost.  *t0: the start of
   the wait, for WEFT_STATS (stats_wait_begins). */
static int robust_lock(struct wmutex *w, int self, int trying,
		       clockid_t clock, const struct timespec *abstime,
		       long *t0)
{
	int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	int waiters = 0, r;

	for (;;) {
		if (v == 0) {
			if (cas(&w->lock, &v, self | waiters))
				return 0;
			continue;
		}
		if (v & W_DIED) {
			if (cas(&w->lock, &v, self | (v & W_WAITERS) | waiters))
				return EOWNERDEAD;
			continue;
		}
		if ((v & W_TID) == self && (r = relock(w)) >= 0)
			return -r - 1;
		if (trying)
			return -EBUSY - 1;
		if ((r = deadline_check(abstime)) != 0)
			return -r - 1;
		if (!(v & W_WAITERS)) {
			if (!cas(&w->lock, &v, v | W_WAITERS))
				continue;
			v |= W_WAITERS;
		}
		waiters = W_WAITERS;
		stats_wait_begins(t0);
		long k = futex_wait_until(&w->lock, v, clock, abstime,
					  WEFT_FUTEX_SHARED);
		if (k == -ETIMEDOUT || k == -EINVAL)
			return (int)k - 1;
		v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	}
}

/* Sleeps until the deadline, for a PI lock the kernel refuses because
   its owner is gone or is the caller (glibc does the same): ETIMEDOUT,
   or never without a deadline. */
static int sleep_until(clockid_t clock, const struct timespec *abstime)
{
	int never = 0;

	for (;;) {
		long k = futex_wait_until(&never, 0, clock, abstime,
					  WEFT_FUTEX_PRIVATE);
		if (k == -ETIMEDOUT || k == -EINVAL)
			return (int)-k;
	}
}

/* PI: CAS 0 -> tid, else the kernel. */
static int pi_lock(struct wmutex *w, int self, int trying, clockid_t clock,
		   const struct timespec *abstime, long *t0)
{
	int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	int zero = 0, r;
	long k;

	if ((v & W_TID) == self && (r = relock(w)) >= 0)
		return -r - 1;
	if (cas(&w->lock, &zero, self))
		return 0;
	if (trying) {
		/* Only a dead owner's word is worth asking the kernel. */
		if (!is_robust(w) || !(zero & W_DIED) ||
		    futex_trylock_pi(&w->lock, futex_flag(w)) != 0)
			return -EBUSY - 1;
	} else {
		if ((r = deadline_check(abstime)) != 0)
			return -r - 1;
		stats_wait_begins(t0);
		do
			k = futex_lock_pi(&w->lock, clock, abstime,
					  futex_flag(w));
		while (k == -EAGAIN || k == -EINTR);
		if (k == -ESRCH || k == -EDEADLK)
			return -sleep_until(clock, abstime) - 1;
		if (k != 0)
			return (int)k - 1;
	}
	v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	if (is_robust(w) && (v & W_DIED)) {
		__atomic_fetch_and(&w->lock, ~W_DIED, __ATOMIC_RELAXED);
		return EOWNERDEAD;
	}
	return 0;
}

/* Lock, trylock and the condvar's reacquire.  The word-level functions
   return 0 (taken), EOWNERDEAD (taken from a dead owner), or -err-1 for
   a result that leaves the word alone (an error, or a recursive
   relock).  A wait (a sleep, or the kernel's PI lock) is recorded for
   WEFT_STATS like a normal mutex's, whatever its end. */
static int lock_any(struct wmutex *w, int trying, clockid_t clock,
		    const struct timespec *abstime, int users)
{
	struct host_robust_head *h = is_robust(w) ? host_robust_head() : NULL;
	int self = host_self_tid();
	long t0 = 0;
	int r;

	if (h)
		pending_set(h, w);
	if (is_pi(w))
		r = pi_lock(w, self, trying, clock, abstime, &t0);
	else
		r = robust_lock(w, self, trying, clock, abstime, &t0);
	if (t0)
		lockstat_record(w, LS_MUTEX, t0);
	if (r < 0) {
		if (h)
			pending_clear(h);
		return -r - 1;
	}
	return took(w, h, self, r == EOWNERDEAD, users);
}

int tidmutex_lock(struct wmutex *w, clockid_t clock,
		  const struct timespec *abstime)
{
	return lock_any(w, 0, clock, abstime, 1);
}

int tidmutex_trylock(struct wmutex *w)
{
	return lock_any(w, 1, CLOCK_REALTIME, NULL, 1);
}

/* -------------------------------------------------------------- unlock

   Everything is read before the store that frees the word (docs/sync.md,
   "No touch after release"); after it only a futex call by address.
   Robust: glibc's order, so that the kernel finds the mutex either on
   the list or in list_op_pending whatever instant the thread dies. */

static int held_by(const struct wmutex *w, int self)
{
	int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);

	return v != 0 && (v & W_TID) == self;
}

/* The holder frees the word; `next_owner` is what __owner says after
   (0, or "not recoverable"). */
static void release(struct wmutex *w, int next_owner, int users)
{
	struct host_robust_head *h = is_robust(w) ? host_robust_head() : NULL;
	int flag = futex_flag(w), self = host_self_tid();
	int v;

	if (h) {
		pending_set(h, w);
		dequeue(w);
	}
	w->owner = next_owner;
	if (users)
		w->nusers--;
	if (is_pi(w)) {
		v = self;
		if (!__atomic_compare_exchange_n(&w->lock, &v, 0, 0,
						 __ATOMIC_RELEASE,
						 __ATOMIC_RELAXED))
			futex_unlock_pi(&w->lock, flag);
		/* Condvar waiters this thread picked while holding it
		   (cond.c): by address only, they go on waiting for it. */
		cond_pi_released(w);
	} else if (__atomic_exchange_n(&w->lock, 0, __ATOMIC_RELEASE) &
		   W_WAITERS) {
		/* Never WAITERS alone in a free word (glibc BZ 20985). */
		futex_wake(&w->lock, 1, flag);
	}
	if (h)
		pending_clear(h);
}

/* The owner check and the recursion count of an unlock: 0 when the
   word must be released (with *next_owner), else what unlock returns. */
static int unlock_check(struct wmutex *w, int self, int *next_owner)
{
	int inconsistent = is_robust(w) && w->owner == OWNER_INCONSISTENT;

	*next_owner = 0;
	if (type_of(w) == PTHREAD_MUTEX_RECURSIVE) {
		if (inconsistent && held_by(w, self)) {
			*next_owner = OWNER_NOTRECOVERABLE;
			return --w->count ? ENOTRECOVERABLE : 0;
		}
		if (w->owner != self)
			return EPERM;
		return --w->count ? -1 : 0;
	}
	if (!held_by(w, self))
		return EPERM;
	if (inconsistent)
		*next_owner = OWNER_NOTRECOVERABLE;
	return 0;
}

int tidmutex_unlock(struct wmutex *w)
{
	int next_owner;
	int r = unlock_check(w, host_self_tid(), &next_owner);

	if (r)
		return r < 0 ? 0 : r;
	release(w, next_owner, 1);
	return 0;
}

/* --------------------------------------------------- condvar, others */

int tidmutex_check_owner(struct wmutex *w)
{
	return held_by(w, host_self_tid()) ? 0 : EPERM;
}

/* Drops the mutex whatever its depth (returned), without counting the
   user out, as glibc's condvar does.  A robust mutex still
   inconsistent becomes not recoverable, as an unlock would make it. */
unsigned tidmutex_release_for_wait(struct wmutex *w)
{
	unsigned depth = type_of(w) == PTHREAD_MUTEX_RECURSIVE ? w->count : 0;
	int next_owner = 0;

	if (is_robust(w) && w->owner == OWNER_INCONSISTENT)
		next_owner = OWNER_NOTRECOVERABLE;
	release(w, next_owner, 0);
	return depth;
}

int tidmutex_reacquire_after_wait(struct wmutex *w, unsigned depth)
{
	int r = lock_any(w, 0, CLOCK_REALTIME, NULL, 0);

	if ((r == 0 || r == EOWNERDEAD) && depth)
		w->count = depth;
	return r;
}

/* ------------------------------------------------------- requeue-PI */

int tidmutex_requeue_flag(const struct wmutex *w)
{
	return is_pi(w) ? futex_flag(w) : -1;
}

int tidmutex_requeue_deferrable(const struct wmutex *w)
{
	return is_pi(w) && !is_robust(w) && held_by(w, host_self_tid());
}

void tidmutex_requeue_begin(struct wmutex *w)
{
	if (is_robust(w))
		pending_set(host_robust_head(), w);
}

void tidmutex_requeue_abandon(struct wmutex *w)
{
	if (is_robust(w))
		pending_clear(host_robust_head());
}

/* The word holds our tid (and maybe FUTEX_WAITERS, FUTEX_OWNER_DIED
   from a dead previous owner), as after pi_lock's kernel path. */
int tidmutex_requeue_took(struct wmutex *w, unsigned depth)
{
	struct host_robust_head *h = is_robust(w) ? host_robust_head() : NULL;
	int died = 0, r;

	if (h && (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & W_DIED)) {
		__atomic_fetch_and(&w->lock, ~W_DIED, __ATOMIC_RELAXED);
		died = 1;
	}
	r = took(w, h, host_self_tid(), died, 0);
	if ((r == 0 || r == EOWNERDEAD) && depth)
		w->count = depth;
	return r;
}

int tidmutex_init(struct wmutex *w, int kind, unsigned attr)
{
	(void)attr;
	memset(w, 0, sizeof *w);
	/* As glibc: every robust mutex is process-shared to the futex,
	   because the kernel wakes a dead owner's waiter with a shared
	   wake, and a glibc peer would use shared futex calls anyway. */
	if (kind & MK_ROBUST)
		kind |= MK_PSHARED;
	w->kind = kind;
	return 0;
}

/* glibc: no busy check on a robust mutex (its owner may be dead); a PI
   mutex is busy while its word names an owner. */
int tidmutex_destroy(struct wmutex *w)
{
	if (!is_robust(w) && (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & W_TID))
		return EBUSY;
	return 0;
}

int tidmutex_consistent(struct wmutex *w)
{
	if (!is_robust(w) || w->owner != OWNER_INCONSISTENT)
		return EINVAL;
	w->owner = host_self_tid();
	return 0;
}
