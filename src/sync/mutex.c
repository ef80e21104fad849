/* Mutex slow paths: spinning, sleeping, the starvation hand-off, the
   owner-checked types, and attributes.  The fast paths are inline in
   mutex.h.  Design and fairness rule: docs/sync.md. */
#include <limits.h>
#include <sched.h>
#include <string.h>
#include "cond.h"
#include "mutex.h"
#include "../core/spin_policy.h"
#include "../core/stats.h"

/* Attempts to take a held lock by spinning before sleeping (musl's
   figure): a short critical section of a running holder is likely to
   end within the spin, and a sleep plus wake-up costs two system calls
   and a context switch.  Only when the holder can be running at the same
   time (../core/spin_policy.h). */
#define SPIN_TRIES 100

/* A private-mutex waiter that has waited this long asks for a direct
   hand-off (the fairness rule). */
#define HANDOFF_AFTER_NS 1000000L

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Newcomers spin only while nobody sleeps (they would otherwise jump
   the queue of sleepers, and spinning behind a queue rarely pays).  A
   private mutex counts its sleepers exactly in the nusers field, which
   weft does not otherwise use; a process-shared one has only the lock
   word, whose 2 ("maybe sleepers") is sticky, and glibc peers keep
   nusers for themselves. */
static int has_sleepers(struct wmutex *w)
{
	if (w->kind & MK_PSHARED)
		return __atomic_load_n(&w->lock, __ATOMIC_RELAXED) == 2;
	return __atomic_load_n(&w->nusers, __ATOMIC_RELAXED) != 0;
}

/* Sequentially consistent: an unlocker that reads 0 here after freeing
   the word may skip the wake-up (mutex_wake_after_release), because a
   sleeper counted later finds the word no longer 2 when the kernel
   compares it. */
static void sleepers_add(struct wmutex *w, int d)
{
	if (!(w->kind & MK_PSHARED))
		__atomic_fetch_add(&w->nusers, (unsigned)d, __ATOMIC_SEQ_CST);
}

static int cas(int *p, int expect, int val)
{
	return __atomic_compare_exchange_n(p, &expect, val, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* The starving waiter: registers in w->handoff and sleeps on that word
   until an unlocker hands it the mutex (owner set, handoff cleared) or
   it takes the mutex itself.  Returns 0 (owned), a positive error, or
   -1 when another waiter is registered already.  The registration is
   the negated tid: glibc keeps small non-negative numbers in these
   bytes (__spins, __elision), which must never look like a request if
   glibc used the mutex before weft became active. */
static int wait_for_handoff(struct wmutex *w, int self, clockid_t clock,
			    const struct timespec *abstime)
{
	int tag = -self;

	if (!cas(&w->handoff, 0, tag))
		return -1;
	for (;;) {
		/* Keeps the word at 2 so that every unlock takes the slow
		   path, which looks at w->handoff. */
		if (__atomic_exchange_n(&w->lock, 2, __ATOMIC_ACQUIRE) == 0) {
			/* No unlocker can grant now: granting needs the lock. */
			__atomic_store_n(&w->handoff, 0, __ATOMIC_RELAXED);
			return 0;
		}
		sleepers_add(w, 1);
		long r = futex_wait_until(&w->handoff, tag, clock, abstime,
					  WEFT_FUTEX_PRIVATE);
		sleepers_add(w, -1);
		if (__atomic_load_n(&w->handoff, __ATOMIC_ACQUIRE) != tag)
			return 0; /* granted */
		if (r == -ETIMEDOUT || r == -EINVAL) {
			if (cas(&w->handoff, tag, 0))
				return (int)-r;
			return 0; /* granted while leaving */
		}
	}
}

/* The lock word was taken when we looked: spin briefly, then sleep.
   0 or ETIMEDOUT / EINVAL.  `contended`: others may sleep on the word
   (a process-shared condvar waiter), so no spinning, the word goes to 2. */
static int lock_word_wait(struct wmutex *w, int self, clockid_t clock,
			  const struct timespec *abstime, int contended)
{
	int priv = mutex_futex_flag(w);
	long start = 0;

	if (!contended) {
		int tries = spin_worthwhile() ? SPIN_TRIES : 0;
		for (int i = 0; i < tries && !has_sleepers(w); i++) {
			int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
			if (v == 0 && cas(&w->lock, 0, 1))
				return 0;
			arch_spin_pause();
		}
	}
	for (;;) {
		if (__atomic_exchange_n(&w->lock, 2, __ATOMIC_ACQUIRE) == 0)
			return 0;
		if (priv == WEFT_FUTEX_PRIVATE && start &&
		    now_ns() - start >= HANDOFF_AFTER_NS) {
			int r = wait_for_handoff(w, self, clock, abstime);
			if (r >= 0)
				return r;
			start = now_ns(); /* someone else is served first */
		}
		if (!start && priv == WEFT_FUTEX_PRIVATE)
			start = now_ns();
		sleepers_add(w, 1);
		long r = futex_wait_until(&w->lock, 2, clock, abstime, priv);
		sleepers_add(w, -1);
		if (r == -ETIMEDOUT || r == -EINVAL)
			return (int)-r;
	}
}

/* Takes the lock word; 0 or ETIMEDOUT / EINVAL.  `contended`: the
   caller knows others may sleep on the word (a process-shared condvar
   waiter), so it takes the word as 2 straight away.  A first attempt
   that fails is a contention: with WEFT_STATS on, its wait is timed
   and recorded (src/core/stats.h); off, it costs the one test. */
static int lock_word(struct wmutex *w, int self, clockid_t clock,
		     const struct timespec *abstime, int contended)
{
	long t0;
	int r;

	if (contended ? __atomic_exchange_n(&w->lock, 2, __ATOMIC_ACQUIRE) == 0
		      : cas(&w->lock, 0, 1))
		return 0;
	if (!stats_enabled())
		return lock_word_wait(w, self, clock, abstime, contended);
	t0 = stats_now();
	r = lock_word_wait(w, self, clock, abstime, contended);
	lockstat_record(w, LS_MUTEX, t0);
	return r;
}

/* Hands the just-released mutex to the registered starving waiter
   (registration `tag` = -tid).  Returns 1 when no wake-up on the lock
   word is needed any more. */
static int grant(struct wmutex *w, int tag)
{
	for (;;) {
		int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
		if (v == 0 && cas(&w->lock, 0, 2))
			break;
		/* Someone took it in the instant it was free: make sure
		   its unlock comes this way too, and let it grant. */
		if (v == 2 || (v == 1 && cas(&w->lock, 1, 2)))
			return 1;
	}
	w->owner = -tag;
	if (__atomic_compare_exchange_n(&w->handoff, &tag, 0, 0,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		futex_wake(&w->handoff, 1, WEFT_FUTEX_PRIVATE);
		return 1;
	}
	/* It left (timed out) before we could grant: release again. */
	w->owner = 0;
	__atomic_store_n(&w->lock, 0, __ATOMIC_RELEASE);
	return 0;
}

/* The lock word read 2 when it was freed: condvar waiters whose wake-up
   the caller deferred to this release, a starving waiter to hand the
   mutex to, or sleepers to wake.  A private mutex counts its sleepers
   exactly, so a 2 left by a deferral or by waiters that are gone costs
   no system call. */
void mutex_wake_after_release(struct wmutex *w)
{
	int priv = mutex_futex_flag(w);

	cond_flush_deferred(w);
	if (priv == WEFT_FUTEX_PRIVATE) {
		int tag = __atomic_load_n(&w->handoff, __ATOMIC_ACQUIRE);
		if (tag < 0 && grant(w, tag))
			return;
		if (__atomic_load_n(&w->nusers, __ATOMIC_SEQ_CST) == 0)
			return;
	}
	futex_wake(&w->lock, 1, priv);
}

/* Owner checks shared by lock and trylock for the checked types.
   Returns -1 when the caller does not hold the mutex. */
static int relock_by_owner(struct wmutex *w, int type, int self, int trying)
{
	if (type != PTHREAD_MUTEX_RECURSIVE && type != PTHREAD_MUTEX_ERRORCHECK)
		return -1;
	if (__atomic_load_n(&w->owner, __ATOMIC_RELAXED) != self)
		return -1;
	if (type == PTHREAD_MUTEX_ERRORCHECK)
		return trying ? EBUSY : EDEADLK;
	if (w->count == UINT_MAX)
		return EOVERFLOW;
	w->count++;
	return 0;
}

static void took(struct wmutex *w, int type, int self)
{
	w->owner = self;
	if (type == PTHREAD_MUTEX_RECURSIVE)
		w->count = 1;
}

int mutex_lock_slow(struct wmutex *w, clockid_t clock,
		    const struct timespec *abstime)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;
	int self = host_self_tid();
	int r;

	if (kind & MK_UNSUPPORTED)
		return ENOTSUP;
	r = relock_by_owner(w, type, self, 0);
	if (r >= 0)
		return r;
	r = lock_word(w, self, clock, abstime, 0);
	if (r == 0)
		took(w, type, self);
	return r;
}

int mutex_trylock_slow(struct wmutex *w)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;
	int self = host_self_tid();
	int r;

	if (kind & MK_UNSUPPORTED)
		return ENOTSUP;
	r = relock_by_owner(w, type, self, 1);
	if (r >= 0)
		return r;
	if (!cas(&w->lock, 0, 1))
		return EBUSY;
	took(w, type, self);
	return 0;
}

static int release(struct wmutex *w)
{
	w->owner = 0;
	if (__atomic_exchange_n(&w->lock, 0, __ATOMIC_RELEASE) == 2)
		mutex_wake_after_release(w);
	return 0;
}

/* ENOTSUP for the kinds weft cannot make; EPERM when an owner-checked
   mutex (recursive, error-checking) is not held by the caller. */
int mutex_check_owner(struct wmutex *w)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;

	if (kind & MK_UNSUPPORTED)
		return ENOTSUP;
	if (type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) {
		if (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) == 0 ||
		    w->owner != host_self_tid())
			return EPERM;
	}
	return 0;
}

int mutex_unlock_slow(struct wmutex *w)
{
	int r = mutex_check_owner(w);

	if (r)
		return r;
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE &&
	    --w->count != 0)
		return 0;
	return release(w);
}

unsigned mutex_release_for_wait(struct wmutex *w)
{
	unsigned depth = 0;

	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE) {
		depth = w->count;
		w->count = 0;
	}
	release(w);
	return depth;
}

void mutex_reacquire_after_wait(struct wmutex *w, unsigned depth,
				int contended)
{
	int self = host_self_tid();

	lock_word(w, self, CLOCK_MONOTONIC, NULL, contended);
	w->owner = self;
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE)
		w->count = depth ? depth : 1;
}

void mutex_mark_contended(struct wmutex *w)
{
	int v = 1;

	/* Held by the caller: the word is 1 or 2, only ever raised. */
	__atomic_compare_exchange_n(&w->lock, &v, 2, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- init */

int mutex_init(struct wmutex *w, const pthread_mutexattr_t *attr)
{
	unsigned a = attr ? *(const unsigned *)attr : 0;
	int kind;

	if (a & MA_ROBUST)
		return ENOTSUP;
	if (((a & MA_PROTO_MASK) >> MA_PROTO_SHIFT) != PTHREAD_PRIO_NONE)
		return ENOTSUP;
	kind = (int)(a & MK_TYPE_MASK);
	if (a & MA_PSHARED)
		kind |= MK_PSHARED;
	memset(w, 0, sizeof *w);
	w->kind = kind;
	return 0;
}

int mutex_destroy(struct wmutex *w)
{
	if (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	return 0;
}

/* ---------------------------------------------------------- attributes */

int mutexattr_settype(unsigned *a, int type)
{
	if (type < PTHREAD_MUTEX_NORMAL || type > PTHREAD_MUTEX_ADAPTIVE_NP)
		return EINVAL;
	*a = (*a & ~(unsigned)MA_TYPE_MASK) | (unsigned)type;
	return 0;
}

int mutexattr_setprotocol(unsigned *a, int proto)
{
	if (proto != PTHREAD_PRIO_NONE && proto != PTHREAD_PRIO_INHERIT &&
	    proto != PTHREAD_PRIO_PROTECT)
		return EINVAL;
	*a = (*a & ~(unsigned)MA_PROTO_MASK) |
	     ((unsigned)proto << MA_PROTO_SHIFT);
	return 0;
}

int mutexattr_setprioceiling(unsigned *a, int ceil)
{
	if (ceil < sched_get_priority_min(SCHED_FIFO) ||
	    ceil > sched_get_priority_max(SCHED_FIFO) ||
	    ((unsigned)ceil << MA_CEIL_SHIFT) > MA_CEIL_MASK)
		return EINVAL;
	*a = (*a & ~(unsigned)MA_CEIL_MASK) | ((unsigned)ceil << MA_CEIL_SHIFT);
	return 0;
}

/* A fresh attribute stores 0, which is no SCHED_FIFO priority; POSIX
   says the ceiling lies in SCHED_FIFO's range, so 0 reads back as the
   lowest priority of that range (what a PP mutex made from it would
   use). */
int mutexattr_getprioceiling(unsigned a)
{
	int ceil = (int)((a & MA_CEIL_MASK) >> MA_CEIL_SHIFT);
	int lowest = sched_get_priority_min(SCHED_FIFO);

	return ceil < lowest ? lowest : ceil;
}

int mutexattr_setpshared(unsigned *a, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE &&
	    pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	*a = pshared ? (*a | MA_PSHARED) : (*a & ~MA_PSHARED);
	return 0;
}

int mutexattr_setrobust(unsigned *a, int robust)
{
	if (robust != PTHREAD_MUTEX_STALLED && robust != PTHREAD_MUTEX_ROBUST)
		return EINVAL;
	*a = robust ? (*a | MA_ROBUST) : (*a & ~(unsigned)MA_ROBUST);
	return 0;
}
