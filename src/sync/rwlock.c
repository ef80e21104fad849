/* Read-write locks.

   Who holds the lock and who sleeps on it share one 64-bit word, so
   that unlocking is a single atomic operation:

     word, low half (state):   bits 31..2  number of readers holding it
                               bit 1       WR_QUEUED: writers registered
                               bit 0       WRLOCKED: a writer holds it
     word, high half (sleep):  bits 31..2  generation
                               bit 1       writers sleep (or are about to)
                               bit 0       readers sleep (or are about to)

   The high half is the futex word.  Readers and writers sleep on it with
   different bitsets (FUTEX_WAIT_BITSET), so a wake reaches one kind only:
   a writer leaving wakes every reader but only one writer, and nobody is
   woken just to go back to sleep.

   A sleeper reads the word, finds it must wait, and sets its kind's bit
   with a compare-and-swap from the value it read (a failed one means the
   word changed: it looks again), then sleeps on the high half it wrote.
   An unlock clears the state bits, the bits of the kinds it wakes, and
   bumps the generation when it wakes anyone, in the same compare-and-
   swap; so a sleeper still on its way to FUTEX_WAIT finds the word
   changed and the kernel refuses to sleep: no lost wake-up.

   No touch after release (docs/sync.md): that compare-and-swap is what
   lets another thread in, and the thread let in may unlock, destroy and
   free the lock at once.  So an unlock reads everything it needs (shared
   flag, kind, real-time tops) before it, learns who sleeps from the
   word it replaced, and afterwards only calls FUTEX_WAKE on the
   address.  A wake that clears the writers' bit wakes one writer only;
   the others may still sleep, so a writer that got in after sleeping
   sets the bit again when other writers are registered (wr_waiters),
   and one that times out does the same.  Wakes made from inside a lock
   call (the lock is then still in use, so the word may be written) bump
   the generation without clearing bits.

   The uncontended lock and unlock (rwlock.h, inline in the exported
   functions) read the word and make one compare-and-swap, nothing else:
   a reader enters when neither WRLOCKED nor WR_QUEUED is set, a writer
   when no one holds the lock, and an unlock with nobody asleep just
   clears its part.  Everything a reader must respect beyond WRLOCKED
   (writer preference, real-time writers: below) concerns registered
   writers, and WR_QUEUED is set while any writer is registered
   (wr_waiters > 0), so the fast reader needs no other load; the slow
   path checks the real conditions.  A writer registers by counting
   itself in wr_waiters and then changing the word (setting WR_QUEUED,
   or bumping the generation when it is set already); the writer whose
   leaving brings wr_waiters to 0 clears the bit with a compare-and-swap
   from a word it read before seeing wr_waiters at 0.  A writer that
   registers in between changes the word, so that clear fails and is
   tried again: the bit is never clear while a writer is registered.
   (It may be set with none for a moment: readers then take the slow
   path, which lets them in.)  The same word, single-threaded or not:
   nothing to convert when a second thread appears, in a signal handler
   or in a fork child.

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

   A sleeper raises its half of `rt` each time before it sleeps (after
   reading the word); the top one, leaving (lock taken or timed out),
   clears it and wakes its kind with a new generation, so they raise it
   again: the word is exact except for that moment.  A program without
   real-time threads never sets `rt`; it pays one load per read lock and
   one memory read per sleep (core/rt_hint.h: a policy set behind weft's
   back is not seen, docs/sync.md). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/syscall_arch.h"
#include "core/stats.h"
#include "host/glibc.h"
#include "kernel/futex.h"
#include "core/rt_hint.h"
#include "core/spin_policy.h"
#include "kernel/sched.h"
#include "rwlock.h"

#define RW_MAX_READERS (UINT32_MAX / RW_READER)
#define SLEEP_RD RW_SLEEP_RD
#define SLEEP_WR RW_SLEEP_WR
#define SLEEP_STEP ((uint64_t)4 << 32) /* one generation */
/* Futex bitsets of the two kinds of sleepers. */
#define BITS_RD 1u
#define BITS_WR 2u
_Static_assert(sizeof(struct weft_rwlock) <= sizeof(pthread_rwlock_t),
	       "weft_rwlock does not fit");
_Static_assert(_Alignof(pthread_rwlock_t) >= _Alignof(uint64_t),
	       "the word needs 64-bit atomics");
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
	return rwlock_of(rw);
}

static inline uint32_t state_of(uint64_t w)
{
	return (uint32_t)w;
}

/* Held by anyone (readers or a writer), from the word `w`. */
static inline uint32_t held(uint64_t w)
{
	return state_of(w) & ~RW_WR_QUEUED;
}

/* The futex: the high half of the word (little-endian).  Computing the
   address reads nothing, so it may be done after a release. */
static inline volatile int *sleep_word(struct weft_rwlock *l)
{
	return (volatile int *)&l->word + 1;
}

static inline int sleep_value(uint64_t w)
{
	return (int)(uint32_t)(w >> 32);
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

/* Read locks the calling thread holds, over all rwlocks (declared in
   rwlock.h: the inline paths count them too). */
__thread int rwlock_rd_held;
#define rd_held rwlock_rd_held

static inline int rt_half(uint32_t rt, int shift)
{
	return (int)((rt >> shift) & 0xff);
}

static inline int rt_top(struct weft_rwlock *l, int shift)
{
	return rt_half(LD(&l->rt), shift);
}

/* The calling thread's real-time priority (1..99; 100 under
   SCHED_DEADLINE, above them all as in the kernel's futex queues), else
   0: core/rt_hint.h, from memory in a program without real-time threads
   and from a per-thread cache otherwise. */
static int self_rt_prio(void)
{
	return rt_hint_self_priority();
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

	if (held(LD(&l->word)) || LD(&l->rd_waiters) || LD(&l->wr_waiters))
		return EBUSY;
	return 0;
}

/* The wakes of an unlock, after its release: by address only (the
   memory may hold something else by now; a stray wake is spurious). */
static void wake_released(volatile int *futex, uint64_t kinds, int priv)
{
	if (kinds & SLEEP_WR)
		futex_wake_bits(futex, 1, BITS_WR, priv);
	if (kinds & SLEEP_RD)
		futex_wake_bits(futex, INT_MAX, BITS_RD, priv);
}

/* A wake from inside a lock call, where the lock is still in use: a new
   generation makes the sleepers of that kind on their way to sleep look
   again, and up to `n` sleeping ones are woken.  Bits are left set. */
static void rouse(struct weft_rwlock *l, unsigned bits, int n)
{
	__atomic_fetch_add(&l->word, SLEEP_STEP, __ATOMIC_SEQ_CST);
	futex_wake_bits(sleep_word(l), n, bits, rw_priv(l));
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
	uint64_t w = LD(&l->word);

	for (;;) {
		uint32_t s = state_of(w);

		if (rd_blocked(l, s, me))
			return EBUSY;
		if (s / RW_READER == RW_MAX_READERS)
			return EAGAIN;
		if (CAS(&l->word, &w, w + RW_READER)) {
			rd_held++;
			return 0;
		}
	}
}

/* The high half may change under a free lock (a sleeper marking it):
   only a held lock is busy. */
static int wr_try(struct weft_rwlock *l)
{
	uint64_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	do {
		if (held(w))
			return EBUSY;
	} while (!CAS(&l->word, &w, w | RW_WRLOCKED));
	l->owner_tid = self_tid();
	return 0;
}

/* A try as a reader (kind SLEEP_RD; `me` as for rd_try) or a writer
   (SLEEP_WR) on the word `w` just read: 0, EBUSY or EAGAIN. */
static int try_as(struct weft_rwlock *l, uint64_t w, uint64_t kind, int *me)
{
	if (kind == SLEEP_WR)
		return held(w) ? EBUSY : wr_try(l);
	return rd_blocked(l, state_of(w), me) ? EBUSY : rd_try(l, me);
}

/* Sets the writers' sleep bit in a write-held word (spin_then_try).  A
   failed compare-and-swap means the word changed: the holder left or
   someone else marked it, and either way the spin goes on. */
static void mark_writer_waits(struct weft_rwlock *l)
{
	uint64_t w = LD(&l->word);

	if ((state_of(w) & RW_WRLOCKED) && !(w & SLEEP_WR))
		CAS(&l->word, &w, w | SLEEP_WR);
}

/* Before a waiter sleeps, it spins and tries as the mutex does
   (core/spin_policy.h): when this thread may run on two CPUs, or the
   writer holding the lock runs on another CPU than ours (threads pinned
   one to a CPU each), while the holder may run, for at most SPIN_NS,
   with the backoff between looks.  A read-held lock has no holder to
   look at (owner_tid 0): the spin is bounded by time only.

   A spinning writer marks a write-held word as slept on by writers
   after SPIN_MARK_NS, as the mutex's spinner does (mutex.c, spin): a
   holder that writes again right after its unlock otherwise wins
   nearly every race for the word (its CPU has the line), the spinner
   gives up and sleeps, and every unlock then wakes it just to sleep
   again.  With the mark that unlock makes its futex wake (for nobody,
   or for a real sleeper: the bit only says "may sleep") and the
   spinner takes the word meanwhile.  Readers do not mark: a writer
   leaving wakes every reader, and no benchmark row showed a loss there.
   Returns what the last try gave: 0 (taken), EBUSY (go to sleep),
   EAGAIN. */
static int spin_then_try(struct weft_rwlock *l, uint64_t kind, int *me)
{
	struct spin s = { 0 };
	int marked = kind != SLEEP_WR; /* readers never mark */
	long spun;

	if (!spin_worthwhile_for(__atomic_load_n(&l->owner_tid,
						 __ATOMIC_RELAXED)))
		return EBUSY;
	for (;;) {
		int r = try_as(l, LD(&l->word), kind, me);

		if (r != EBUSY || (spun = spin_round(&s, &l->owner_tid)) < 0)
			return r;
		if (!marked && spun >= SPIN_MARK_NS) {
			mark_writer_waits(l);
			marked = 1;
		}
	}
}

static int rd_slow(struct weft_rwlock *l, clockid_t clock,
		   const struct timespec *abstime, int *me)
{
	int priv = rw_priv(l);
	uint32_t left;
	int r;

	if ((r = spin_then_try(l, SLEEP_RD, me)) != EBUSY)
		return r;
	my_prio(me);
	__atomic_fetch_add(&l->rd_waiters, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint64_t w = LD(&l->word);

		/* After reading the word: a top that leaves and clears `rt`
		   after this raise also bumps the generation, and we raise
		   again. */
		if (*me > 0)
			rt_raise(l, RT_RD, *me);
		r = rd_try(l, me);
		if (r != EBUSY)
			break;
		/* Mark, unless the word changed since we read it. */
		if (!(w & SLEEP_RD) && !CAS(&l->word, &w, w | SLEEP_RD))
			continue;
		if (futex_wait_bits_until(sleep_word(l), sleep_value(w | SLEEP_RD),
					  BITS_RD, clock, abstime,
					  priv) == -ETIMEDOUT) {
			r = ETIMEDOUT;
			break;
		}
	}
	/* Reader wakes go to all readers: a reader giving up eats none. */
	left = __atomic_sub_fetch(&l->rd_waiters, 1, __ATOMIC_SEQ_CST);
	if (*me > 0 && rt_drop(l, RT_RD, *me) && left)
		rouse(l, BITS_RD, INT_MAX); /* the others raise the top again */
	/* Rule (b) can hand a free lock to the readers alone: if they all
	   give up, the writers must not be left asleep. */
	if (r == ETIMEDOUT && held(LD(&l->word)) == 0 && LD(&l->wr_waiters))
		rouse(l, BITS_WR, 1);
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

/* A registered writer takes a free lock from the word `w` it read.  The
   wake that woke it cleared the writers' bit, while other writers may
   still sleep: it sets the bit again if any other is registered, so
   that its own unlock wakes one. */
static int wr_take_registered(struct weft_rwlock *l, uint64_t w)
{
	uint64_t mark = LD(&l->wr_waiters) > 1 ? SLEEP_WR : 0;

	if (!CAS(&l->word, &w, w | RW_WRLOCKED | mark))
		return EBUSY;
	l->owner_tid = self_tid();
	return 0;
}

/* A writer just counted in wr_waiters (and its real-time top raised):
   from now until it leaves, fast readers must stay out.  The word
   changes, always: a queue_clear that read it before and saw no writer
   then fails its compare-and-swap. */
static void queue_mark(struct weft_rwlock *l)
{
	uint64_t w = LD(&l->word);

	while (!CAS(&l->word, &w,
		    (w & RW_WR_QUEUED) ? w + SLEEP_STEP : w | RW_WR_QUEUED))
		;
}

/* The last registered writer left: readers may use the fast path again
   unless another writer registered since (see queue_mark). */
static void queue_clear(struct weft_rwlock *l)
{
	uint64_t w = LD(&l->word);

	while ((w & RW_WR_QUEUED) && LD(&l->wr_waiters) == 0 &&
	       !CAS(&l->word, &w, w & ~(uint64_t)RW_WR_QUEUED))
		;
}

static int wr_slow(struct weft_rwlock *l, clockid_t clock,
		   const struct timespec *abstime)
{
	int priv = rw_priv(l);
	uint32_t left;
	int r, me;

	if (spin_then_try(l, SLEEP_WR, NULL) == 0)
		return 0;
	me = self_rt_prio();
	__atomic_fetch_add(&l->wr_waiters, 1, __ATOMIC_SEQ_CST);
	if (me > 0)
		rt_raise(l, RT_WR, me);
	queue_mark(l);
	for (;;) {
		uint64_t w = LD(&l->word);

		if (me > 0)
			rt_raise(l, RT_WR, me);
		if (held(w) == 0 && !wr_defers(l, me)) {
			if ((r = wr_take_registered(l, w)) == 0)
				break;
			continue;
		}
		if (!(w & SLEEP_WR) && !CAS(&l->word, &w, w | SLEEP_WR))
			continue;
		if (futex_wait_bits_until(sleep_word(l), sleep_value(w | SLEEP_WR),
					  BITS_WR, clock, abstime,
					  priv) == -ETIMEDOUT) {
			r = ETIMEDOUT;
			break;
		}
	}
	left = __atomic_sub_fetch(&l->wr_waiters, 1, __ATOMIC_SEQ_CST);
	if (!left)
		queue_clear(l);
	if (me > 0 && rt_drop(l, RT_WR, me)) {
		/* The other writers raise the top again; readers held
		   back by us (rule (a)) may enter if the lock is free. */
		if (left)
			rouse(l, BITS_WR, INT_MAX);
		if (LD(&l->rd_waiters) && !(state_of(LD(&l->word)) & RW_WRLOCKED))
			rouse(l, BITS_RD, INT_MAX);
	}
	if (r == ETIMEDOUT) {
		/* The wake we swallowed may have cleared the writers' bit
		   while others sleep: set it back for the holder's unlock,
		   and with nobody left to unlock, wake one now. */
		if (left && !held(__atomic_fetch_or(&l->word, SLEEP_WR,
						     __ATOMIC_SEQ_CST)))
			rouse(l, BITS_WR, 1);
		/* Readers held back for our sake may enter now. */
		if (!left && prefer_writer(l) && LD(&l->rd_waiters) &&
		    !(state_of(LD(&l->word)) & RW_WRLOCKED))
			rouse(l, BITS_RD, INT_MAX);
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

/* Whom a writer leaving wakes, given the word `w` it replaces and the
   real-time tops `rt`: SLEEP_WR (one writer), SLEEP_RD (every reader),
   both, or none. */
static uint64_t writer_wakes(uint64_t w, uint32_t rt, int pw,
			     uint32_t wr_registered)
{
	uint64_t writers = w & SLEEP_WR, readers = w & SLEEP_RD;

	/* Rule (b): the higher top alone.  Not with writer preference,
	   where readers wait for every writer anyway. */
	if (rt && !pw) {
		int wt = rt_half(rt, RT_WR), rd = rt_half(rt, RT_RD);

		if (writers && wt >= rd)
			return SLEEP_WR;
		if (readers && rd > wt)
			return SLEEP_RD;
	}
	/* Readers woken while a writer waits would only sleep again. */
	if (pw && (writers || wr_registered))
		return writers;
	return writers | readers;
}

/* The compare-and-swap releases: the thread it lets in may unlock,
   destroy and free the lock.  Everything is read before it; after it,
   only wakes by address. */
static int wr_unlock(struct weft_rwlock *l)
{
	volatile int *futex = sleep_word(l);
	int priv = rw_priv(l), pw = prefer_writer(l);
	uint64_t w, next, wake;

	if (l->owner_tid != self_tid())
		return EPERM;
	l->owner_tid = 0;
	w = LD(&l->word);
	do {
		wake = w & (SLEEP_RD | SLEEP_WR)
			       ? writer_wakes(w, LD(&l->rt), pw,
					      LD(&l->wr_waiters))
			       : 0;
		next = (w & ~(uint64_t)RW_WRLOCKED & ~wake) +
		       (wake ? SLEEP_STEP : 0);
	} while (!CAS(&l->word, &w, next));
	wake_released(futex, wake, priv);
	return 0;
}

/* A reader leaving: the last one out wakes a writer.  As for the
   writer, the compare-and-swap releases and nothing but the wake by
   address follows it. */
static int rd_unlock(struct weft_rwlock *l, uint64_t w)
{
	volatile int *futex = sleep_word(l);
	uint64_t next, wake;
	int priv = 0;

	do {
		if (state_of(w) < RW_READER || (state_of(w) & RW_WRLOCKED))
			return EPERM;
		next = w - RW_READER;
		wake = held(next) == 0 ? next & SLEEP_WR : 0;
		if (wake) {
			priv = rw_priv(l); /* still ours to read */
			next = (next & ~wake) + SLEEP_STEP;
		}
	} while (!CAS(&l->word, &w, next));
	if (rd_held > 0)
		rd_held--;
	wake_released(futex, wake, priv);
	return 0;
}

/* EPERM when the lock is not held at all, or write-held by another
   thread (a reader cannot be told apart from a non-holder). */
int rwlock_unlock(pthread_rwlock_t *rw)
{
	struct weft_rwlock *l = rwl(rw);
	uint64_t w = LD(&l->word);

	if (state_of(w) & RW_WRLOCKED)
		return wr_unlock(l);
	if (state_of(w) < RW_READER)
		return EPERM;
	return rd_unlock(l, w);
}
