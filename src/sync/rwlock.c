/* Read-write locks.

   All of the lock's state that decides who may enter is one 32-bit word:

     state:  bits 31..2  number of readers holding the lock
             bit 1       unused
             bit 0       WRLOCKED: a writer holds the lock

   Sleepers never wait on `state` itself (a reader leaving would then
   wake writers and readers alike).  Readers sleep on `rd_seq`, writers
   on `wr_seq`; a waker changes `state`, then bumps the sequence word it
   wakes and calls FUTEX_WAKE.  A sleeper registers in rd_waiters /
   wr_waiters, reads the sequence word, looks at `state` once more and
   only then sleeps on the value it read, so a wake-up between its look
   and its sleep changes the word and the kernel refuses to sleep: no
   lost wake-up.  All of these accesses are sequentially consistent, so
   either the waker sees the registration or the sleeper sees the change.

   Wakes: a writer leaving wakes one writer (if any waits) and every
   reader (if any waits, unless writers are preferred and a writer
   waits); the last reader leaving wakes one writer.  A writer that gives
   up (time-out) wakes the readers it alone held back (writer
   preference), and, should the lock be free while writers still wait,
   one of them (defensive: every holder's unlock wakes a writer anyway,
   so a wake it swallowed is normally replaced).

   Preference (pthread_rwlockattr_setkind_np): by default, as in glibc, a
   reader enters whenever no writer holds the lock, so a stream of
   readers can starve writers.  With PREFER_WRITER_NONRECURSIVE_NP, a
   reader also stays out while any writer waits; the readers inside
   drain and the writer gets the lock next.  Read locks are then not
   recursive: a thread holding a read lock that asks for another one
   while a writer waits deadlocks (as in glibc; hence the name).

   Real-time threads (POSIX, Thread Execution Scheduling): when the
   threads involved run under SCHED_FIFO or SCHED_RR, (a) a reader does
   not take the lock while a writer of higher or equal priority is
   blocked on it, and (b) when the lock becomes free the waiters get it
   in priority order, a writer before a reader of equal priority.
   glibc ignores both; weft keeps them with one more word, `rt`: the
   highest real-time priority among the sleeping writers (bits 0-7) and
   among the sleeping readers (bits 8-15), 0 when none is real-time.

     (a) a real-time reader stays out while wr_top >= its priority,
         unless it already holds a read lock (of any rwlock): it would
         deadlock against the writer waiting for it to leave;
     (b) a writer leaving wakes only the writers when wr_top >= rd_top,
         only the readers when rd_top > wr_top (the kernel wakes futex
         waiters in priority order, so the woken writer is the highest);
         a sleeping writer does not grab a free lock ahead of readers of
         higher priority.

   A sleeper raises its half of `rt` each time before it sleeps; the top
   one, leaving (lock taken or timed out), clears it and wakes its kind,
   which raise it again: the word is exact except for that moment.  A
   program without real-time threads never sets `rt`; it pays one load
   per read lock and one sched_getscheduler per sleep. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "../arch/x86_64/syscall_arch.h"
#include "../core/stats.h"
#include "../host/glibc.h"
#include "../kernel/futex.h"
#include "../core/spin_policy.h"
#include "../kernel/sched.h"
#include "rwlock.h"

#define RW_WRLOCKED 1u
#define RW_READER 4u
#define RW_MAX_READERS (UINT32_MAX / RW_READER)
/* Brief spin before sleeping: a lock held for a few hundred cycles is
   cheaper to wait for than to sleep on (two system calls). */
#define RW_SPIN 100

/* Our view of pthread_rwlock_t.  Only three places must agree with
   glibc: all-zero memory is an unlocked reader-preferring private lock,
   `flags` sits where glibc's static initializers put the kind (so
   PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP works), and
   `owner_tid` sits where glibc keeps its __cur_writer. */
struct weft_rwlock {
	uint32_t state;
	uint32_t rd_seq;
	uint32_t wr_seq;
	uint32_t rd_waiters;
	uint32_t wr_waiters;
	uint32_t rt; /* real-time tops: writers bits 0-7, readers 8-15 */
	int owner_tid; /* tid of the writer holding it, 0 if none */
	int shared;    /* nonzero: process-shared futexes */
	uint32_t pad1[4];
	uint32_t flags; /* kind: PTHREAD_RWLOCK_PREFER_* */
	uint32_t pad2;
};

_Static_assert(sizeof(struct weft_rwlock) <= sizeof(pthread_rwlock_t),
	       "weft_rwlock does not fit");
_Static_assert(offsetof(struct weft_rwlock, flags) ==
		       offsetof(pthread_rwlock_t, __data.__flags),
	       "kind must be where glibc's initializers put it");
_Static_assert(offsetof(struct weft_rwlock, owner_tid) ==
		       offsetof(pthread_rwlock_t, __data.__cur_writer),
	       "writer tid where glibc keeps it");
_Static_assert(sizeof(struct weft_rwlockattr) == sizeof(pthread_rwlockattr_t),
	       "rwlockattr layout");

#define LD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define CAS(p, expp, v)                                                        \
	__atomic_compare_exchange_n(p, expp, v, 0, __ATOMIC_SEQ_CST,           \
				    __ATOMIC_SEQ_CST)

static inline struct weft_rwlock *rwl(pthread_rwlock_t *rw)
{
	return (struct weft_rwlock *)rw;
}

static inline int rw_priv(const struct weft_rwlock *l)
{
	return l->shared ? WEFT_FUTEX_SHARED : WEFT_FUTEX_PRIVATE;
}

static inline int prefer_writer(const struct weft_rwlock *l)
{
	return l->flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* ---- real-time priorities (rule (a) and (b) above) */
#define RT_WR 0 /* shift of the writers' top in `rt` */
#define RT_RD 8 /* shift of the readers' top */
#define PRIO_UNKNOWN (-1)

/* Read locks the calling thread holds, over all rwlocks. */
static __thread int rd_held __attribute__((tls_model("initial-exec")));

static inline int rt_top(struct weft_rwlock *l, int shift)
{
	return (int)((LD(&l->rt) >> shift) & 0xff);
}

/* The calling thread's priority under SCHED_FIFO/SCHED_RR, else 0. */
static int self_rt_prio(void)
{
	long pol = sys_sched_getscheduler(0);
	struct sched_param sp;

	if (pol < 0)
		return 0;
	pol &= ~(long)SCHED_RESET_ON_FORK;
	if (pol != SCHED_FIFO && pol != SCHED_RR)
		return 0;
	if (sys_sched_getparam(0, &sp) < 0)
		return 0;
	return sp.sched_priority;
}

static inline int my_prio(int *me)
{
	if (*me == PRIO_UNKNOWN)
		*me = self_rt_prio();
	return *me;
}

static void rt_raise(struct weft_rwlock *l, int shift, int prio)
{
	uint32_t v = LD(&l->rt);

	while ((int)((v >> shift) & 0xff) < prio &&
	       !CAS(&l->rt, &v, (v & ~(0xffu << shift)) | ((uint32_t)prio << shift)))
		;
}

/* Clears the top of one kind if it is `prio`; 1 if it did. */
static int rt_drop(struct weft_rwlock *l, int shift, int prio)
{
	uint32_t v = LD(&l->rt);

	while ((int)((v >> shift) & 0xff) == prio)
		if (CAS(&l->rt, &v, v & ~(0xffu << shift)))
			return 1;
	return 0;
}

/* The calling thread's kernel tid, from glibc's TCB (thread pointer). */
static int self_tid(void)
{
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return *host_tid_word(tp);
}

int rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
	const struct weft_rwlockattr *a = (const struct weft_rwlockattr *)attr;
	struct weft_rwlock *l = rwl(rw);

	__builtin_memset(rw, 0, sizeof *rw);
	if (a) {
		l->flags = (uint32_t)a->kind;
		l->shared = a->pshared == PTHREAD_PROCESS_SHARED;
	}
	return 0;
}

/* Busy when held, or when a thread is still inside a lock call. */
int rwlock_destroy(pthread_rwlock_t *rw)
{
	struct weft_rwlock *l = rwl(rw);

	if (LD(&l->state) || LD(&l->rd_waiters) || LD(&l->wr_waiters))
		return EBUSY;
	return 0;
}

static void wake_readers(struct weft_rwlock *l)
{
	__atomic_fetch_add(&l->rd_seq, 1, __ATOMIC_SEQ_CST);
	futex_wake((volatile int *)&l->rd_seq, INT_MAX, rw_priv(l));
}

static void wake_writers(struct weft_rwlock *l, int n)
{
	__atomic_fetch_add(&l->wr_seq, 1, __ATOMIC_SEQ_CST);
	futex_wake((volatile int *)&l->wr_seq, n, rw_priv(l));
}

static void wake_writer(struct weft_rwlock *l)
{
	wake_writers(l, 1);
}

/* Rule (a): a real-time reader yields to a writer of higher or equal
   priority blocked on the lock.  `me` caches the caller's priority. */
static inline int rt_reader_blocked(struct weft_rwlock *l, int *me)
{
	int top = rt_top(l, RT_WR);

	return top && rd_held == 0 && my_prio(me) > 0 && top >= *me;
}

/* Must a reader stay out, given `state` s? */
static inline int rd_blocked(struct weft_rwlock *l, uint32_t s, int *me)
{
	return (s & RW_WRLOCKED) || (prefer_writer(l) && LD(&l->wr_waiters)) ||
	       rt_reader_blocked(l, me);
}

/* One attempt to enter as a reader: 0, EBUSY or EAGAIN (count full). */
static int rd_try(struct weft_rwlock *l, int *me)
{
	uint32_t s = LD(&l->state);

	for (;;) {
		if (rd_blocked(l, s, me))
			return EBUSY;
		if (s / RW_READER == RW_MAX_READERS)
			return EAGAIN;
		if (CAS(&l->state, &s, s + RW_READER)) {
			rd_held++;
			return 0;
		}
	}
}

static int wr_try(struct weft_rwlock *l)
{
	uint32_t s = 0;

	if (!CAS(&l->state, &s, RW_WRLOCKED))
		return EBUSY;
	l->owner_tid = self_tid();
	return 0;
}

static int rd_slow(struct weft_rwlock *l, clockid_t clock,
		   const struct timespec *abstime, int *me)
{
	uint32_t left;
	int r;

	for (int i = spin_worthwhile() ? 0 : RW_SPIN; i < RW_SPIN; i++) {
		arch_spin_pause();
		if (!rd_blocked(l, LD(&l->state), me) && (r = rd_try(l, me)) != EBUSY)
			return r;
	}
	my_prio(me);
	__atomic_fetch_add(&l->rd_waiters, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t seq = LD(&l->rd_seq);

		/* After reading seq: a top that leaves and clears `rt`
		   after this raise also bumps seq, and we raise again. */
		if (*me > 0)
			rt_raise(l, RT_RD, *me);
		r = rd_try(l, me);
		if (r != EBUSY)
			break;
		if (futex_wait_until((volatile int *)&l->rd_seq, (int)seq,
				     clock, abstime, rw_priv(l)) == -ETIMEDOUT) {
			r = ETIMEDOUT;
			break;
		}
	}
	/* Reader wakes go to all readers: a reader giving up eats none. */
	left = __atomic_sub_fetch(&l->rd_waiters, 1, __ATOMIC_SEQ_CST);
	if (*me > 0 && rt_drop(l, RT_RD, *me) && left)
		wake_readers(l); /* the others raise the top again */
	/* Rule (b) can hand a free lock to the readers alone: if they all
	   give up, the writers must not be left asleep. */
	if (r == ETIMEDOUT && LD(&l->state) == 0 && LD(&l->wr_waiters))
		wake_writer(l);
	return r;
}

/* Rule (b) for a sleeping writer: a free lock is left to real-time
   readers of higher priority (not with writer preference, where those
   readers wait for the writers: both would wait forever). */
static inline int wr_defers(struct weft_rwlock *l, int me)
{
	return !prefer_writer(l) && rt_top(l, RT_RD) > me &&
	       LD(&l->rd_waiters);
}

static int wr_slow(struct weft_rwlock *l, clockid_t clock,
		   const struct timespec *abstime)
{
	uint32_t left;
	int r, me;

	for (int i = spin_worthwhile() ? 0 : RW_SPIN; i < RW_SPIN; i++) {
		arch_spin_pause();
		if (LD(&l->state) == 0 && wr_try(l) == 0)
			return 0;
	}
	me = self_rt_prio();
	__atomic_fetch_add(&l->wr_waiters, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t seq = LD(&l->wr_seq);

		if (me > 0)
			rt_raise(l, RT_WR, me);
		r = wr_defers(l, me) ? EBUSY : wr_try(l);
		if (r == 0)
			break;
		if (futex_wait_until((volatile int *)&l->wr_seq, (int)seq,
				     clock, abstime, rw_priv(l)) == -ETIMEDOUT) {
			r = ETIMEDOUT;
			break;
		}
	}
	left = __atomic_sub_fetch(&l->wr_waiters, 1, __ATOMIC_SEQ_CST);
	if (me > 0 && rt_drop(l, RT_WR, me)) {
		/* The other writers raise the top again; readers held
		   back by us (rule (a)) may enter if the lock is free. */
		if (left)
			wake_writers(l, INT_MAX);
		if (LD(&l->rd_waiters) && !(LD(&l->state) & RW_WRLOCKED))
			wake_readers(l);
	}
	if (r == ETIMEDOUT) {
		/* Defensive: a wake we swallowed, with nobody left to
		   unlock, must not strand the other writers. */
		if (left && LD(&l->state) == 0)
			wake_writer(l);
		/* Readers held back for our sake may enter now. */
		if (!left && prefer_writer(l) && LD(&l->rd_waiters) &&
		    !(LD(&l->state) & RW_WRLOCKED))
			wake_readers(l);
	}
	return r;
}

/* With WEFT_STATS on: the same waits, timed and recorded as
   contentions (src/core/stats.h).  Kept out of line so that the common
   case carries no clock code. */
__attribute__((noinline)) static int rd_slow_timed(struct weft_rwlock *l,
						   clockid_t clock,
						   const struct timespec *abstime,
						   int *me)
{
	long t0 = stats_now();
	int r = rd_slow(l, clock, abstime, me);

	lockstat_record(l, LS_RWLOCK_RD, t0);
	return r;
}

__attribute__((noinline)) static int wr_slow_timed(struct weft_rwlock *l,
						   clockid_t clock,
						   const struct timespec *abstime)
{
	long t0 = stats_now();
	int r = wr_slow(l, clock, abstime);

	lockstat_record(l, LS_RWLOCK_WR, t0);
	return r;
}

/* Does the calling thread hold the write lock?  Asked only after a try
   failed: a thread that holds it always fails the try, so the answer
   (EDEADLK, glibc's) is the same as asking first, minus a load on the
   fast path.  The tid is written by the owner itself, so a stale value
   is never our own. */
static int held_by_self(struct weft_rwlock *l)
{
	int owner = __atomic_load_n(&l->owner_tid, __ATOMIC_RELAXED);

	return owner && owner == self_tid();
}

int rwlock_rdlock(pthread_rwlock_t *rw, clockid_t clock,
		  const struct timespec *abstime)
{
	struct weft_rwlock *l = rwl(rw);
	int r, me = PRIO_UNKNOWN;

	if (abstime && (r = futex_abstime_check(clock, abstime)))
		return r;
	r = rd_try(l, &me);
	if (r != EBUSY)
		return r;
	if (held_by_self(l))
		return EDEADLK;
	if (stats_enabled())
		return rd_slow_timed(l, clock, abstime, &me);
	return rd_slow(l, clock, abstime, &me);
}

int rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	int me = PRIO_UNKNOWN;

	return rd_try(rwl(rw), &me);
}

int rwlock_wrlock(pthread_rwlock_t *rw, clockid_t clock,
		  const struct timespec *abstime)
{
	struct weft_rwlock *l = rwl(rw);
	int r;

	if (abstime && (r = futex_abstime_check(clock, abstime)))
		return r;
	if (wr_try(l) == 0)
		return 0;
	if (held_by_self(l))
		return EDEADLK;
	if (stats_enabled())
		return wr_slow_timed(l, clock, abstime);
	return wr_slow(l, clock, abstime);
}

int rwlock_trywrlock(pthread_rwlock_t *rw)
{
	return wr_try(rwl(rw));
}

static int wr_unlock(struct weft_rwlock *l)
{
	uint32_t writers, readers;

	if (l->owner_tid != self_tid())
		return EPERM;
	l->owner_tid = 0;
	__atomic_fetch_and(&l->state, ~RW_WRLOCKED, __ATOMIC_SEQ_CST);
	writers = LD(&l->wr_waiters);
	readers = LD(&l->rd_waiters);
	/* Rule (b): the higher top alone.  Not with writer preference,
	   where readers wait for every writer anyway. */
	if (LD(&l->rt) && !prefer_writer(l)) {
		int w = rt_top(l, RT_WR), r = rt_top(l, RT_RD);

		if (writers && w >= r) {
			wake_writer(l);
			return 0;
		}
		if (readers && r > w) {
			wake_readers(l);
			return 0;
		}
	}
	if (writers)
		wake_writer(l);
	if (readers && !(writers && prefer_writer(l)))
		wake_readers(l);
	return 0;
}

/* EPERM when the lock is not held at all, or write-held by another
   thread (a reader cannot be told apart from a non-holder). */
int rwlock_unlock(pthread_rwlock_t *rw)
{
	struct weft_rwlock *l = rwl(rw);
	uint32_t s = LD(&l->state);

	if (s & RW_WRLOCKED)
		return wr_unlock(l);
	if (s < RW_READER)
		return EPERM;
	/* A reader leaving: one atomic subtract (readers only come and go
	   while no writer holds the lock, so the count cannot be stale in a
	   way that matters for a correct caller). */
	s = __atomic_sub_fetch(&l->state, RW_READER, __ATOMIC_SEQ_CST);
	if (rd_held > 0)
		rd_held--;
	if (s == 0 && LD(&l->wr_waiters))
		wake_writer(l);
	return 0;
}
