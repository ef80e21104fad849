/* Mutex slow paths: spinning, sleeping, the starvation hand-off, the
   owner-checked types, and attributes.  The fast paths are inline in
   mutex.h.  Design and fairness rule: docs/sync.md. */
#include <limits.h>
#include <sched.h>
#include <string.h>
#include "cond.h"
#include "mutex.h"
#include "mutex_kinds.h"
#include "core/runstate.h"
#include "core/spin_policy.h"
#include "core/stats.h"
#include "core/thread.h"
#include "core/waitclock.h"
#include "core/yield_wait.h"
#include "core/rt_hint.h"

/* A private-mutex waiter that has waited this long, in milliseconds
   since its first sleep, asks for a direct hand-off (the fairness
   rule; measured on core/waitclock.h's clock). */
#define HANDOFF_AFTER_MS 1

/* What a release that will not hand the mutex to its registrant leaves
   in the registration word, for the registrant to see and clear: a
   value no -tid can take (thread ids are positive). */
#define HANDOFF_DECLINED INT_MIN

/* A private mutex's nusers: the waiters asleep on the lock word in bits
   0-21 (thread ids fit in 22 bits, Linux's PID_MAX_LIMIT, so the count
   cannot overflow), and again the real-time ones among them in bits
   22-31 (modulo 1024). */
#define NU_SLEEPER 1u
#define NU_RT_SLEEPER (1u << 22)

/* Whether the calling thread runs under a real-time policy: the
   kernel's futex queue ranks it by priority, ahead of every SCHED_OTHER
   sleeper.  core/rt_hint.h answers without a system call in a program
   that never uses one, and from a per-thread cache otherwise (a system
   call before every sleep made the lock ring pinned to one CPU 3-7%
   slower). */
static int self_realtime(void)
{
	return rt_hint_self_priority() > 0;
}

static int is_shared(const struct wmutex *w)
{
	return (w->kind & MK_PSHARED) != 0;
}

/* A private mutex with no owner checks (normal, adaptive) and none of
   the real-time protocols: the kind the flat paths serve. */
static int plain_private(int kind)
{
	return kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP;
}

static int cas(int *p, int expect, int val)
{
	return __atomic_compare_exchange_n(p, &expect, val, 0, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

/* Newcomers spin only while nobody sleeps (they would otherwise jump
   the queue of sleepers, and spinning behind a queue rarely pays).  A
   private mutex counts its sleepers exactly in the nusers field, which
   weft does not otherwise use, and a starving waiter shows in the word;
   a process-shared one has only the lock word, whose 2 ("maybe
   sleepers") is sticky, and glibc peers keep nusers for themselves. */
static int has_sleepers(struct wmutex *w)
{
	if (is_shared(w))
		return __atomic_load_n(&w->lock, __ATOMIC_RELAXED) == 2;
	return __atomic_load_n(&w->nusers, __ATOMIC_RELAXED) != 0 ||
	       (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & LW_HANDOFF);
}

/* `rt`: the sleeper runs under a real-time policy; the kernel queues it
   ahead of every SCHED_OTHER sleeper, so the hand-off must not pass it
   over (hand_off).  `shared`: is_shared(w), which the caller knows. */
static void sleepers_add(struct wmutex *w, int d, int rt, int shared)
{
	unsigned one = NU_SLEEPER + (rt ? NU_RT_SLEEPER : 0);

	if (!shared)
		__atomic_fetch_add(&w->nusers, d > 0 ? one : -one,
				   __ATOMIC_SEQ_CST);
}

static int rt_sleepers(struct wmutex *w)
{
	return __atomic_load_n(&w->nusers, __ATOMIC_SEQ_CST) >= NU_RT_SLEEPER;
}

/* A private mutex just taken with LW_SLEEPERS set (the taker could not
   know whether others sleep) keeps the bit only if someone is counted
   asleep, so that its release makes no futex call for nobody.  The bit
   goes first, the count is read after, both sequentially consistent: a
   sleeper that the read misses counted itself later, so its futex_wait
   compares a word without the bit and returns at once, and it sets the
   bit again before it sleeps. */
static void settle_sleepers(struct wmutex *w)
{
	__atomic_fetch_and(&w->lock, ~LW_SLEEPERS, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->nusers, __ATOMIC_SEQ_CST) != 0)
		__atomic_fetch_or(&w->lock, LW_SLEEPERS, __ATOMIC_SEQ_CST);
}

/* Takes the word if it is free, else marks it as slept on.  Returns 0
   when taken, else the value to sleep on (never 0).  Process-shared
   (`shared`: is_shared(w), which the caller knows): glibc's exchange
   with 2.  Private: the other bits (hand-off request, deferred
   wake-ups) are kept. */
static inline __attribute__((always_inline)) int
take_or_mark(struct wmutex *w, int shared)
{
	int v;

	if (shared)
		return __atomic_exchange_n(&w->lock, 2, __ATOMIC_ACQUIRE) ? 2 : 0;
	v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	if (v == 0 && cas(&w->lock, 0, LW_HELD)) {
		/* The release left the word 0, without LW_SLEEPERS: the
		   bit is cleared before the count is read, as in
		   settle_sleepers, with one atomic step fewer. */
		if (__atomic_load_n(&w->nusers, __ATOMIC_SEQ_CST) != 0)
			__atomic_fetch_or(&w->lock, LW_SLEEPERS,
					  __ATOMIC_SEQ_CST);
		return 0;
	}
	v = __atomic_fetch_or(&w->lock, LW_HELD | LW_SLEEPERS, __ATOMIC_SEQ_CST);
	if (!(v & LW_HELD)) {
		settle_sleepers(w);
		return 0;
	}
	return v | LW_HELD | LW_SLEEPERS;
}

/* take_or_mark for a private-mutex waiter that is still counted in
   nusers (its futex_wait found the word changed): one fetch_or, which
   takes a free word with LW_SLEEPERS kept, as glibc's woken waiter takes
   its word with 2.  The settle would read the count that this waiter
   still holds; at worst the bit makes one release wake nobody.  0 when
   taken, else the value to sleep on. */
static inline int retake_or_mark(struct wmutex *w)
{
	int v = __atomic_fetch_or(&w->lock, LW_HELD | LW_SLEEPERS,
				  __ATOMIC_SEQ_CST);

	return (v & LW_HELD) ? v | LW_HELD | LW_SLEEPERS : 0;
}

/* Marks the held word `v` of a private mutex as slept on, as a waiter
   about to sleep does, so that its release takes the slow path (spin).
   Not a process-shared one: there the mark (glibc's 2) would also end
   the spin (has_sleepers), and glibc peers never spin. */
static void mark_waited_for(struct wmutex *w, int v)
{
	if (!is_shared(w) && (v & LW_HELD) && !(v & LW_SLEEPERS))
		cas(&w->lock, v, v | LW_SLEEPERS);
}

/* Spins while that can pay (spin_round, with its backoff); 1 when it
   took the word.  The caller has checked spin_may_pay.

   A newcomer spins only while nobody sleeps on the mutex (it must not
   jump their queue), and after SPIN_MARK_NS it marks the word as slept
   on.  A holder that takes the mutex again right after its release (a
   loop around a short critical section) otherwise wins nearly every
   time: its CPU holds the word's cache line, and the spinner's read of
   the free word arrives after the holder's next CAS.  The mark sends
   that release down the slow path (a futex wake that finds nobody
   asleep), and meanwhile the spinner takes the word.  With two threads
   each taking one mutex in a loop, weft ran at 0.3-0.5x glibc without
   the mark and 1.1-1.4x with it (bench/RESULTS.md, 2026-11-28-s29).

   A waiter whose futex_wait found the word changed (EAGAIN) does not
   spin again: it marks the word and waits again, as glibc's does.  A
   spin there (2026-11-29) took the mutex tens of thousands of times a
   run of `sync_contention -t 32 -k 1`, each time moving the mutex and
   the critical section's data to the other CPU while the holder, still
   running, came straight back for them; on the VM of bench/RESULTS.md
   "2026-12-01-full" that made weft 0.50-0.70x glibc in one phase of
   the machine and 1.05x in the other, against 1.01x and 1.24x without
   it.  Out of line, so that its state does not widen the frame of
   lock_plain (see there) in the threads that never spin. */
__attribute__((noinline, hot)) static int spin(struct wmutex *w)
{
	struct spin s = { 0 };
	int marked = 0;
	long spun;

	for (;;) {
		int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED);
		if (v == 0 && cas(&w->lock, 0, LW_HELD))
			return 1;
		if (has_sleepers(w) || (spun = spin_round(&s, &w->owner)) < 0)
			return 0;
		if (!marked && spun >= SPIN_MARK_NS) {
			mark_waited_for(w, __atomic_load_n(&w->lock,
							   __ATOMIC_RELAXED));
			marked = 1;
		}
	}
}

/* Whether a spin may pay: the spin policy says so for the holder
   (spin_worthwhile_for), and the holder is not asleep in a weft wait.
   The spin's first look would stop at a sleeping holder; asked here,
   inline, because the waiters of a lock ring nearly always find theirs
   asleep (docs/sync.md, "The contended path's footprint").

   A thread confined to one CPU spins also when the owner reads 0: the
   word was taken when it looked, so the holder is between its CAS and
   its owner store, or between its owner store and the freeing CAS of
   its release, a few instructions either way, running unless preempted
   right there.  The spin's looks read the owner again and stop for one
   on this CPU.  A holder that takes the mutex back right after each
   release shows 0 about as often as its tid: without this, a waiter
   pinned beside it went to futex_wait in more than half of its
   contended locks (docs/sync.md, "Nobody spins for a holder on its own
   CPU"). */
static inline int spin_may_pay(struct wmutex *w)
{
	int owner = __atomic_load_n(&w->owner, __ATOMIC_RELAXED);

	if (spin_worthwhile())
		return !runstate_asleep(owner);
	return owner == 0 || runstate_runs_elsewhere(owner);
}

/* A waiter's record of its mutex yields (per thread): `missed_at`, the
   spin_clock_ns at which its last turn ran out without the lock, until
   it takes that lock (0: no turn ran out); `misses`, its near misses
   in a row; `skip`, its coming waits that sleep without a turn.

   A near miss is a turn that ran out, followed by the lock within
   another turn's length (YIELD_WAIT_NS): the thread yielded through a
   wait it could not outlast, and its yields kept a CPU busy that the
   one thread able to move may share (on a host whose vCPUs share
   capacity, a busy sibling slows it; docs/sync.md "Near misses back off").
   Each near miss in a row doubles the waits that sleep at once after
   it; a lock taken in a turn, or long after one ran out, ends that. */
struct yield_record {
	long missed_at;
	unsigned short misses, skip;
};
static __thread struct yield_record yield_record
	__attribute__((tls_model("initial-exec")));

/* The longest backoff after near misses in a row: 2^YIELD_MISSES_MAX - 1
   waits without a turn (15; at most 15, so the count fits `skip`). */
#ifndef YIELD_MISSES_MAX
#define YIELD_MISSES_MAX 4
#endif
_Static_assert(YIELD_MISSES_MAX >= 0 && YIELD_MISSES_MAX <= 15,
	       "YIELD_MISSES_MAX: 0 to 15");

/* Yields the CPU instead of sleeping, while the holder cannot release
   soon (core/yield_wait.h says why); 1 when it took the word.  A
   private mutex, no deadline, a thread of no real-time policy, and
   nobody asleep on the mutex: a yielder is not queued, so it must not
   pass sleepers by.  It counts as blocked for spinners (runstate.h):
   a holder that waits for another lock cannot release soon.  The word
   is not marked while it yields, so a release with nobody asleep makes
   no futex call, and the yielder takes the free word at its next look;
   when someone sleeps meanwhile, it stops and queues behind them.  Out
   of line: lock_plain's frame stays as small as it was. */
static __attribute__((noinline)) int yield_wait(struct wmutex *w)
{
	struct yield_turn t;
	int took = 0, stopped = 0;	/* stopped: ended before it ran out */

	if (yield_record.skip) {
		yield_record.skip--;
		if (stats_enabled())
			stats_count_yield_skip();
		return 0;
	}
	if (has_sleepers(w) || !yield_turn_begin(&t))
		return 0;
	while (!stopped && yield_turn_yield(&t)) {
		/* Free (deferred condvar wake-ups may be in the word): take
		   it as any waiter does; one taken meanwhile is marked by
		   that and the caller sleeps. */
		if (!(__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & LW_HELD)) {
			took = take_or_mark(w, 0) == 0;
			stopped = 1;
		} else {
			stopped = has_sleepers(w);
		}
	}
	yield_turn_end(&t);
	if (took)
		yield_record.misses = 0;
	else if (!stopped)
		yield_record.missed_at = spin_clock_ns();
	if (stats_enabled())
		stats_count_yield_wait(took);
	return took;
}

/* The lock came after a turn that ran out: a near miss (it came within
   another turn's length) backs the thread's next turns off, a far one
   ends the backoff. */
static __attribute__((noinline)) void yield_miss_settle(void)
{
	struct yield_record *r = &yield_record;

	if (spin_clock_ns() - r->missed_at < YIELD_WAIT_NS) {
		if (r->misses < YIELD_MISSES_MAX)
			r->misses++;
		r->skip = (unsigned short)((1u << r->misses) - 1);
		if (stats_enabled())
			stats_count_yield_near_miss();
	} else {
		r->misses = 0;
	}
	r->missed_at = 0;
}

static inline void yield_taken(void)
{
	if (__builtin_expect(yield_record.missed_at != 0, 0))
		yield_miss_settle();
}

/* A registered starving waiter waits for the hand-off running while
   the holder runs (spin_look): its release is near then, and a
   hand-off to a thread that must first be woken and scheduled keeps the
   mutex held, and idle, until that thread runs, while others could
   have taken it. */
static void await_handoff_running(struct wmutex *w, int tag)
{
	long start = 0, spun = 0;

	if (!spin_worthwhile_for(__atomic_load_n(&w->owner, __ATOMIC_RELAXED)))
		return;
	for (unsigned i = 0;
	     __atomic_load_n(&w->handoff, __ATOMIC_ACQUIRE) == tag &&
	     (spun = spin_look(&w->owner, i, &start, spun)) >= 0;
	     i++)
		arch_spin_pause();
}

/* The starving waiter (private mutexes): registers its negated tid in
   w->handoff, then sets LW_HANDOFF in the held word, so that the
   holder's release hands the mutex over instead of freeing it; sleeps
   on the handoff word until the holder clears it.  Registration comes
   first and the release clears the bit before it reads the
   registration, so either the release sees the registrant or the
   registrant's bit lands after the release looked and the release's
   CAS fails (docs/sync.md).  Returns 0 (owned), a positive error, or
   -1 when another waiter is registered already or the release declined
   (real-time threads slept on the word: they come first).  The tag is
   negative: glibc keeps small non-negative numbers in these bytes
   (__spins, __elision), which must never look like a request. */
static int wait_for_handoff(struct wmutex *w, int self, clockid_t clock,
			    const struct timespec *abstime)
{
	int tag = -self;

	if (!cas(&w->handoff, 0, tag))
		return -1;
	for (;;) {
		int v = __atomic_load_n(&w->lock, __ATOMIC_SEQ_CST);
		if (v == 0 && cas(&w->lock, 0, LW_HELD | LW_SLEEPERS)) {
			/* Free: nobody can be granting (that needs the
			   mutex held), so the registration is ours to drop. */
			__atomic_store_n(&w->handoff, 0, __ATOMIC_RELAXED);
			settle_sleepers(w);
			return 0;
		}
		if (v != 0 && cas(&w->lock, v, v | LW_HANDOFF))
			break;
	}
	for (;;) {
		await_handoff_running(w, tag);
		runstate_blocked(1);
		long r = futex_wait_until(&w->handoff, tag, clock, abstime,
					  WEFT_FUTEX_PRIVATE);
		runstate_blocked(0);
		int h = __atomic_load_n(&w->handoff, __ATOMIC_ACQUIRE);

		if (r == -ETIMEDOUT || r == -EINVAL) {
			/* The bit may stay: the holder's release clears it. */
			if (h == tag && cas(&w->handoff, tag, 0))
				return (int)-r;
			h = __atomic_load_n(&w->handoff, __ATOMIC_ACQUIRE);
		}
		if (h == HANDOFF_DECLINED) {
			/* Only we clear it: nobody else registers meanwhile. */
			__atomic_store_n(&w->handoff, 0, __ATOMIC_RELAXED);
			return r == -ETIMEDOUT || r == -EINVAL ? (int)-r : -1;
		}
		if (h != tag)
			return 0; /* granted (also while timing out) */
	}
}

/* The lock word was taken when we looked: spin briefly, then sleep.
   0 or ETIMEDOUT / EINVAL.  `contended`: others may sleep on the word
   (a process-shared condvar waiter), so no spinning.  `shared`:
   is_shared(w).  Inline in its two callers: lock_word, and lock_plain
   with constant arguments. */
static inline __attribute__((always_inline)) int
lock_word_wait(struct wmutex *w, int self, clockid_t clock,
	       const struct timespec *abstime, int contended, int shared)
{
	int priv = shared ? WEFT_FUTEX_SHARED : WEFT_FUTEX_PRIVATE;
	int rt = 0; /* known at the first sleep (private mutexes) */
	unsigned long start = 0; /* waitclock stamp of the first sleep */
	int counted = 0; /* in nusers (private), kept over an EAGAIN */

	if (!contended && spin_may_pay(w) && spin(w))
		return 0;
	if (!contended && !shared && !abstime && yield_wait(w))
		return 0;
	for (;;) {
		int sleep_on = counted ? retake_or_mark(w)
				       : take_or_mark(w, shared);
		if (sleep_on == 0) {
			if (counted)
				sleepers_add(w, -1, rt, shared);
			yield_taken();
			return 0;
		}
		if (priv == WEFT_FUTEX_PRIVATE) {
			if (__builtin_expect(!start, 1)) {
				start = waitclock_stamp();
				rt = self_realtime();
			} else if (waitclock_passed_ms(start, HANDOFF_AFTER_MS)) {
				/* Uncounted first: rt may change here. */
				if (counted)
					sleepers_add(w, -1, rt, shared);
				counted = 0;
				/* Real-time waiters stay in the kernel's
				   queue, which is in priority order: a
				   hand-off would let them jump it. */
				if (!(rt = self_realtime())) {
					int r = wait_for_handoff(w, self, clock,
								 abstime);
					if (r >= 0) {
						yield_taken();
						return r;
					}
					/* another is served first */
					start = waitclock_stamp();
					continue;
				}
			}
		}
		if (!counted) {
			sleepers_add(w, 1, rt, shared);
			counted = !shared;
		}
		runstate_blocked(1);
		long r = abstime ? futex_wait_until(&w->lock, sleep_on, clock,
						    abstime, priv)
				 : futex_wait(&w->lock, sleep_on, priv);
		runstate_blocked(0);
		/* A wait that found the word changed (EAGAIN) stays counted:
		   it marks the word again at once, and leaving the count
		   and joining it again is two more atomic steps on the
		   mutex's line, which the running holder then fetches
		   back (docs/sync.md, "A waiter stays counted"). */
		if (r != -EAGAIN && counted) {
			sleepers_add(w, -1, rt, shared);
			counted = 0;
		}
		if (__builtin_expect(r == -ETIMEDOUT || r == -EINVAL, 0))
			return (int)-r;
	}
}

/* Takes the lock word; 0 or ETIMEDOUT / EINVAL.  `contended`: the
   caller knows others may sleep on the word (a process-shared condvar
   waiter), so it marks the word straight away.  A first attempt that
   fails is a contention: with WEFT_STATS on, its wait is timed and
   recorded (src/core/stats.h); off, it costs the one test. */
static int lock_word(struct wmutex *w, int self, clockid_t clock,
		     const struct timespec *abstime, int contended)
{
	long t0;
	int r;

	if (contended ? take_or_mark(w, is_shared(w)) == 0
		      : cas(&w->lock, 0, LW_HELD))
		return 0;
	if (!stats_enabled())
		return lock_word_wait(w, self, clock, abstime, contended,
				      is_shared(w));
	t0 = stats_now();
	r = lock_word_wait(w, self, clock, abstime, contended, is_shared(w));
	lockstat_record(w, LS_MUTEX, t0);
	return r;
}

/* The contended lock of a private normal or adaptive mutex with no
   deadline, the common case, kept flat: no second look at the kind, no
   deadline checks, and only this frame between the caller and the
   futex call.  A thread that slept returns through every frame below
   its caller, and those stack lines, like the rest of its data and the
   path's code, have often left the cache while other threads ran
   (docs/sync.md, "The contended path's footprint"). */
static __attribute__((noinline, hot)) int lock_plain(struct wmutex *w, int self)
{
	lock_word_wait(w, self, CLOCK_REALTIME, NULL, 0, 0);
	w->owner = self;
	return 0;
}

/* ------------------------------------------------------------ release

   The rule (docs/sync.md, "No touch after release"): everything the
   release needs from the mutex is read before the store that lets
   another thread take it, because that thread may destroy the mutex and
   reuse its memory at once.  After that store only a futex wake by
   address (harmless on reused memory) and the deferred condvar waiters,
   whose nodes live on their own stacks, are touched. */

/* Called by the holder with LW_HANDOFF seen in the word `v`: clears the
   bit, then looks for the registrant and hands the mutex to it (owner
   set, registration cleared: that store is the release, the word stays
   held for the new owner).  The registrant is never a real-time thread;
   if real-time threads sleep on the word, the hand-off would pass them
   over, so it is declined instead: the registrant is told so (we still
   hold the mutex, so the word may be written) and the caller frees the
   word and wakes the kernel's first sleeper, the highest-priority one.
   Returns 1 when handed over; 0 when the caller must look at the word
   again. */
static int hand_off(struct wmutex *w, int v)
{
	int tag;

	if (!cas(&w->lock, v, v & ~LW_HANDOFF))
		return 0;
	tag = __atomic_load_n(&w->handoff, __ATOMIC_SEQ_CST);
	if (tag >= 0 || tag == HANDOFF_DECLINED)
		return 0; /* it timed out and withdrew */
	if (rt_sleepers(w)) {
		if (cas(&w->handoff, tag, HANDOFF_DECLINED))
			futex_wake(&w->handoff, 1, WEFT_FUTEX_PRIVATE);
		return 0;
	}
	w->owner = -tag;
	if (cas(&w->handoff, tag, 0)) {
		futex_wake(&w->handoff, 1, WEFT_FUTEX_PRIVATE);
		return 1;
	}
	w->owner = 0; /* withdrew in the meantime */
	return 0;
}

/* Takes the chain of deferred condvar wake-ups out of the mutex (the
   caller still holds it).  A fork child's copy of a chain names the
   parent's threads: dropped. */
static struct cnode *take_deferred(struct wmutex *w)
{
	struct cnode *head = w->defer_head;

	if (!head)
		return NULL;
	w->defer_head = NULL;
	return w->defer_pid == weft_self_pid() ? head : NULL;
}

/* The release with a hand-off request or deferred wake-ups in the
   word (or a word that changed under the common release's CAS). */
static __attribute__((noinline)) int release_private_other(struct wmutex *w)
{
	int v = __atomic_load_n(&w->lock, __ATOMIC_ACQUIRE);
	struct cnode *chain = (v & LW_DEFERRED) ? take_deferred(w) : NULL;

	w->owner = 0;
	for (;;) {
		if ((v & LW_HANDOFF) && hand_off(w, v))
			goto wake_chain;
		if (!(v & LW_HANDOFF) && cas(&w->lock, v, 0))
			break; /* released: w is not touched any more */
		v = __atomic_load_n(&w->lock, __ATOMIC_SEQ_CST);
	}
	if (v & LW_SLEEPERS)
		futex_wake(&w->lock, 1, WEFT_FUTEX_PRIVATE);
wake_chain:
	if (chain)
		cond_release_chain(chain);
	return 0;
}

/* Returns 0, for mutex_unlock_slow's tail call.  The common release
   (held, maybe slept on) needs no stack frame. */
__attribute__((hot)) static int release_private(struct wmutex *w)
{
	int v = __atomic_load_n(&w->lock, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!(v & (LW_DEFERRED | LW_HANDOFF)), 1)) {
		w->owner = 0;
		if (__builtin_expect(cas(&w->lock, v, 0), 1)) {
			/* released: w is not touched any more */
			if (v & LW_SLEEPERS)
				futex_wake(&w->lock, 1, WEFT_FUTEX_PRIVATE);
			return 0;
		}
	}
	return release_private_other(w);
}

static void release(struct wmutex *w)
{
	if (!is_shared(w)) {
		release_private(w);
		return;
	}
	/* glibc's protocol, so that glibc peers share the mutex. */
	w->owner = 0;
	if (__atomic_exchange_n(&w->lock, 0, __ATOMIC_RELEASE) > 1)
		futex_wake(&w->lock, 1, WEFT_FUTEX_SHARED);
}

struct cnode *mutex_deferred(struct wmutex *w)
{
	if (!(__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & LW_DEFERRED) ||
	    w->defer_pid != weft_self_pid())
		return NULL;
	return w->defer_head;
}

void mutex_set_deferred(struct wmutex *w, struct cnode *head)
{
	w->defer_head = head;
	w->defer_pid = weft_self_pid();
	__atomic_fetch_or(&w->lock, LW_DEFERRED, __ATOMIC_RELEASE);
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
		return EAGAIN; /* POSIX and glibc */
	w->count++;
	return 0;
}

static void took(struct wmutex *w, int type, int self)
{
	w->owner = self;
	if (type == PTHREAD_MUTEX_RECURSIVE)
		w->count = 1;
}

static __attribute__((noinline)) int
lock_other(struct wmutex *w, clockid_t clock, const struct timespec *abstime)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;
	int self = host_self_tid();
	int r;

	if (kind & MK_TID_KINDS)
		return tidmutex_lock(w, clock, abstime);
	if (kind & MK_PP)
		return ppmutex_lock(w, clock, abstime);
	r = relock_by_owner(w, type, self, 0);
	if (r >= 0)
		return r;
	r = lock_word(w, self, clock, abstime, 0);
	if (r == 0)
		took(w, type, self);
	return r;
}

/* No stack frame: lock_plain's is the only one (see there). */
__attribute__((hot)) int mutex_lock_slow(struct wmutex *w, clockid_t clock,
		    const struct timespec *abstime)
{
	if (plain_private(w->kind) && !abstime && !stats_enabled())
		return lock_plain(w, host_self_tid());
	return lock_other(w, clock, abstime);
}

int mutex_trylock_slow(struct wmutex *w)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;
	int self = host_self_tid();
	int r;

	if (kind & MK_TID_KINDS)
		return tidmutex_trylock(w);
	if (kind & MK_PP)
		return ppmutex_trylock(w);
	r = relock_by_owner(w, type, self, 1);
	if (r >= 0)
		return r;
	if (!cas(&w->lock, 0, 1))
		return EBUSY;
	took(w, type, self);
	return 0;
}

/* EPERM when an owner-checked mutex (recursive, error-checking) is not
   held by the caller. */
int mutex_check_owner(struct wmutex *w)
{
	int kind = w->kind, type = kind & MK_TYPE_MASK;

	if (kind & MK_TID_KINDS)
		return tidmutex_check_owner(w);
	if (kind & MK_PP)
		return ppmutex_check_owner(w);
	if (type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) {
		if (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) == 0 ||
		    w->owner != host_self_tid())
			return EPERM;
	}
	return 0;
}

static __attribute__((noinline)) int unlock_other(struct wmutex *w)
{
	int r;

	if (w->kind & MK_TID_KINDS)
		return tidmutex_unlock(w);
	if (w->kind & MK_PP)
		return ppmutex_unlock(w);
	r = mutex_check_owner(w);
	if (r)
		return r;
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE &&
	    --w->count != 0)
		return 0;
	release(w);
	return 0;
}

/* A plain private mutex (no owner check) goes straight to its release,
   with no stack frame here. */
__attribute__((hot)) int mutex_unlock_slow(struct wmutex *w)
{
	if (plain_private(w->kind))
		return release_private(w);
	return unlock_other(w);
}

unsigned mutex_release_for_wait(struct wmutex *w)
{
	unsigned depth = 0;

	if (w->kind & MK_TID_KINDS)
		return tidmutex_release_for_wait(w);
	if (w->kind & MK_PP)
		return ppmutex_release_for_wait(w);
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE) {
		depth = w->count;
		w->count = 0;
	}
	release(w);
	return depth;
}

int mutex_reacquire_after_wait(struct wmutex *w, unsigned depth,
			       int contended)
{
	int self = host_self_tid();

	if (w->kind & MK_TID_KINDS)
		return tidmutex_reacquire_after_wait(w, depth);
	if (w->kind & MK_PP)
		return ppmutex_reacquire_after_wait(w, depth);
	lock_word(w, self, CLOCK_MONOTONIC, NULL, contended);
	w->owner = self;
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE)
		w->count = depth ? depth : 1;
	return 0;
}

/* ---------------------------------------------------------------- init */

int mutex_init(struct wmutex *w, const pthread_mutexattr_t *attr)
{
	unsigned a = attr ? *(const unsigned *)attr : 0;
	int proto = (int)((a & MA_PROTO_MASK) >> MA_PROTO_SHIFT);
	int kind = (int)(a & MK_TYPE_MASK);

	if (a & MA_PSHARED)
		kind |= MK_PSHARED;
	if (a & MA_ROBUST)
		kind |= MK_ROBUST;
	if (proto == PTHREAD_PRIO_INHERIT)
		kind |= MK_PI;
	if (proto == PTHREAD_PRIO_PROTECT) {
		if (kind & MK_ROBUST)
			return ENOTSUP; /* as glibc */
		return ppmutex_init(w, kind | MK_PP, a);
	}
	if (kind & MK_TID_KINDS)
		return tidmutex_init(w, kind, a);
	memset(w, 0, sizeof *w);
	w->kind = kind;
	return 0;
}

int mutex_destroy(struct wmutex *w)
{
	if (w->kind & MK_TID_KINDS)
		return tidmutex_destroy(w);
	if (w->kind & MK_PP)
		return ppmutex_destroy(w);
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
