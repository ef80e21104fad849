/* Priority-protect (PTHREAD_PRIO_PROTECT) mutexes, glibc's protocol
   (docs/mutex-pp.md):

     lock word  bits 19-31  the ceiling, kept whether locked or not
                bits 0-18   0 free, 1 held, 2 held and maybe sleepers

   so an unlocked PP mutex has a non-zero word, and a process-shared
   one is shared with plain glibc processes.  `owner`, `count` (1 when
   held, the depth for the recursive type) and `nusers` (holders, not
   counting a condvar waiter's release) have glibc's meaning.

   Each thread counts the ceilings it holds, per priority level, in its
   own initial-exec TLS, and the kernel hears of a change only when the
   highest held ceiling changes and the thread's base priority is below
   the old or the new one. */
#include <limits.h>
#include <sched.h>
#include <string.h>
#include "core/rt_hint.h"
#include "mutex_kinds.h"
#include "mutex_pp.h"
#include "core/lock.h"
#include "core/spin_policy.h"
#include "core/stats.h"
#include "kernel/sched.h"

/* Tries of a word held by a running owner before sleeping on it
   (mutex.c's figure and reasons: a short critical section is likely to
   end within them, where a sleep and a wake-up cost two system calls
   and a context switch). */
#define PP_SPIN_TRIES 100

#define PP_SHIFT 19
#define PP_MASK 0xfff80000u
#define PP_STATE(v) ((unsigned)(v) & ~PP_MASK)

/* Linux's SCHED_FIFO priorities are 1..99 (the kernel's MAX_RT_PRIO is
   100, part of its ABI); a count per level, indexed by the ceiling. */
#define PP_LEVELS 100

#define PP_WORDS ((PP_LEVELS + 63) / 64)

struct pp_thread {
	weft_lock_t lock;  /* against pthread_setschedparam from others */
	int top;	   /* highest ceiling held, 0 when none */
	int known;	   /* policy and prio below are the thread's base */
	int policy, prio;
	unsigned held[PP_LEVELS];
	unsigned long long levels[PP_WORDS]; /* bit c: held[c] != 0 */
};

static __thread struct pp_thread pp_self __attribute__((tls_model("initial-exec")));

/* fork: another thread may hold the forking thread's lock (its
   pthread_setschedparam on this thread) at the instant of the fork.
   That thread does not exist in the child, and the lock's word names
   it: the child resets the lock.  Its counts stay: the child holds the
   same mutexes, at the same priority. */
void pp_fork_child(void)
{
	weft_lock_reset(&pp_self.lock);
}

/* Another thread's state.  Initial-exec TLS sits at the same offset
   from every thread's thread pointer (the ELF TLS ABI: the code reads
   it %fs-relative with a constant offset). */
static struct pp_thread *pp_of(char *tcb)
{
	char *tp = arch_thread_pointer();

	return (struct pp_thread *)(tcb + ((char *)&pp_self - tp));
}

static int fifo_min(void)
{
	static int v = -1;

	if (__atomic_load_n(&v, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&v, sched_get_priority_min(SCHED_FIFO),
				 __ATOMIC_RELAXED);
	return v;
}

static int fifo_max(void)
{
	static int v = -1;

	if (__atomic_load_n(&v, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&v, sched_get_priority_max(SCHED_FIFO),
				 __ATOMIC_RELAXED);
	return v;
}

static int ceiling_ok(int c)
{
	return c >= fifo_min() && c <= fifo_max() && c < PP_LEVELS &&
	       c <= (int)(PP_MASK >> PP_SHIFT);
}

static int ceiling_of(unsigned v)
{
	return (int)((v & PP_MASK) >> PP_SHIFT);
}

/* ------------------------------------------- the per-thread accounting */

/* Asks the kernel for the caller's policy and priority, once: with no
   ceiling held they are its base.  Later changes go through
   pp_sched_set / pp_sched_note (glibc caches them the same way). */
static int learn_base(struct pp_thread *s)
{
	struct sched_param p;
	long pol = sys_sched_getscheduler(0);
	long r = pol < 0 ? pol : sys_sched_getparam(0, &p);

	if (r < 0)
		return (int)-r;
	s->policy = (int)pol;
	s->prio = p.sched_priority;
	s->known = 1;
	return 0;
}

/* The highest level held, from the bitmap (no scan of the counts). */
static int highest_held(const struct pp_thread *s)
{
	for (int i = PP_WORDS - 1; i >= 0; i--)
		if (s->levels[i])
			return i * 64 + 63 - __builtin_clzll(s->levels[i]);
	return 0;
}

static void count_level(struct pp_thread *s, int c, int up)
{
	unsigned long long bit = 1ULL << (c % 64);

	if (up) {
		s->held[c]++;
		s->levels[c / 64] |= bit;
	} else if (--s->held[c] == 0) {
		s->levels[c / 64] &= ~bit;
	}
}

/* Tells the kernel the priority the thread must run at now, if it is
   not the one it ran at with `old_top`.  Caller holds s->lock. */
static int apply(struct pp_thread *s, int tid, int old_top)
{
	int was = s->prio > old_top ? s->prio : old_top;
	struct sched_param p = {.sched_priority = s->prio > s->top ? s->prio
								  : s->top};

	if (p.sched_priority == was)
		return 0;
	long r = sys_sched_setscheduler(tid, s->policy, &p);
	if (r == 0)
		rt_hint_note(s->policy, p.sched_priority);
	return r < 0 ? (int)-r : 0;
}

enum {
	PP_CHECK = 1, /* EINVAL when the base priority is above `to` */
	PP_UNDO = 2,  /* on failure nothing changes */
};

/* Moves one held ceiling of the caller from `from` to `to` (0: none):
   taking a PP mutex is (0, c), releasing it (c, 0).  Without PP_UNDO
   the counts change even when the kernel refuses the priority (a
   release, or a condvar's reacquire, must go on); the error is still
   returned. */
static int pp_move(int from, int to, int flags)
{
	struct pp_thread *s = &pp_self;
	int old_top, up, down, r = 0;

	if (to >= PP_LEVELS || from >= PP_LEVELS)
		return EINVAL;
	weft_lock(&s->lock);
	if (!s->known)
		r = learn_base(s);
	if (!r && (flags & PP_CHECK) && to > 0 && s->prio > to)
		r = EINVAL;
	if (!r && to > 0 && s->held[to] == UINT_MAX)
		r = EAGAIN;
	if (r && (flags & PP_UNDO))
		goto out;
	old_top = s->top;
	up = to > 0 && s->held[to] != UINT_MAX;
	down = from > 0 && s->held[from] > 0;
	if (up)
		count_level(s, to, 1);
	if (down)
		count_level(s, from, 0);
	s->top = highest_held(s);
	if (s->top != old_top && s->known) {
		int e = apply(s, 0, old_top);
		if (e && (flags & PP_UNDO)) {
			if (down)
				count_level(s, from, 1);
			if (up)
				count_level(s, to, 0);
			s->top = old_top;
		}
		r = r ? r : e;
	}
out:
	weft_unlock(&s->lock);
	return r;
}

/* What counting ceiling `c` would say, without counting it: EINVAL when
   the caller's base priority is above it (glibc's check) or its policy
   has no priorities (the kernel refuses such a raise with EINVAL); 0
   otherwise.  A refusal the kernel alone knows of (EPERM: a raise
   beyond what the thread may) is found when the ceiling is counted. */
static int pp_check(int c)
{
	struct pp_thread *s = &pp_self;
	int r = 0;

	weft_lock(&s->lock);
	if (!s->known)
		r = learn_base(s);
	if (!r && s->prio > c)
		r = EINVAL;
	if (!r && s->prio < c && (s->policy & ~SCHED_RESET_ON_FORK) != SCHED_FIFO &&
	    (s->policy & ~SCHED_RESET_ON_FORK) != SCHED_RR)
		r = EINVAL;
	weft_unlock(&s->lock);
	return r;
}

int pp_sched_set(char *tcb, int tid, int policy, int prio)
{
	struct pp_thread *s = pp_of(tcb);
	struct sched_param p = {.sched_priority = prio};
	long r;

	weft_lock(&s->lock);
	if (s->top > prio)
		p.sched_priority = s->top;
	if (policy >= 0)
		r = sys_sched_setscheduler(tid, policy, &p);
	else
		r = sys_sched_setparam(tid, &p);
	if (r == 0) {
		if (policy >= 0) {
			s->policy = policy;
			s->known = 1;
		}
		s->prio = prio;
	}
	weft_unlock(&s->lock);
	return r < 0 ? (int)-r : 0;
}

int pp_sched_base(char *tcb, int *policy, int *prio)
{
	struct pp_thread *s = pp_of(tcb);
	int held;

	weft_lock(&s->lock);
	held = s->top > 0 && s->known;
	if (held) {
		*policy = s->policy;
		*prio = s->prio;
	}
	weft_unlock(&s->lock);
	return held;
}

void pp_sched_note(char *tcb, int policy, int prio)
{
	struct pp_thread *s = pp_of(tcb);

	weft_lock(&s->lock);
	if (policy >= 0)
		s->policy = policy;
	s->prio = prio;
	weft_unlock(&s->lock);
}

/* ------------------------------------------------------- the lock word */

/* Sleepers.  The word's state 2 ("held, maybe sleepers") is sticky:
   a thread that slept takes the word with 2, since others may sleep
   too.  A private mutex also counts its sleepers exactly, in the field
   glibc calls __spins (unused by glibc for this kind; weft's hand-off
   field of normal mutexes), so that a thread that slept keeps 2 only
   while others sleep, and a newcomer spins only while nobody sleeps
   (otherwise it would take the word ahead of them, whom the kernel
   queues in priority order).  A process-shared mutex cannot count a
   glibc peer's sleepers: there 2 means "maybe", as in glibc. */
static int is_private(const struct wmutex *w)
{
	return mutex_futex_flag(w) == WEFT_FUTEX_PRIVATE;
}

static void sleepers_add(struct wmutex *w, int n)
{
	if (is_private(w))
		__atomic_add_fetch(&w->handoff, n, __ATOMIC_SEQ_CST);
}

/* Nobody sleeps on a word seen in state v: spinning jumps no queue. */
static int no_sleepers(struct wmutex *w, unsigned v)
{
	if (is_private(w))
		return __atomic_load_n(&w->handoff, __ATOMIC_SEQ_CST) == 0;
	return PP_STATE(v) == 1;
}

/* The state to take a free word with: 2 while others may sleep on it,
   so that the release wakes one.  `slept`: the caller was one of them
   (or, for a condvar's reacquire, others may be: glibc's rule). */
static unsigned take_state(struct wmutex *w, int slept)
{
	if (!slept)
		return 1;
	if (is_private(w))
		return __atomic_load_n(&w->handoff, __ATOMIC_SEQ_CST) ? 2 : 1;
	return 2;
}

/* Takes the word and counts its ceiling for the caller; the ceiling
   may change while we wait (setprioceiling), then the count follows
   it.  The ceiling is counted (the priority raised) before each try of
   a free word, as glibc does, so that the owner never runs below it;
   but not while the caller sleeps: the kernel queues futex waiters by
   the priority they have when they go to sleep, so at the ceiling all
   would rank equal and be woken first come first served (glibc's
   behaviour).  At its own priority a waiter is queued by it, highest
   first.  A word seen held is therefore waited for without counting
   (pp_check gives the EINVAL the count would), so that a contended
   lock changes the priority once, just before the try that takes the
   word; only a try lost after counting (the word taken in between)
   gives the count back, and only before sleeping.  A held word is
   first spun on while nobody sleeps on it and the owner can run
   meanwhile (core/spin_policy.h).  `flags` PP_CHECK|PP_UNDO for a lock
   (0 for a condvar's reacquire, which must take the mutex whatever the
   priority says); `slept` 1 for a condvar's reacquire (see
   take_state).  `counted`: the caller's ceiling count is moved
   (setprioceiling takes the word without the protocol).  *t0: the
   start of a wait, for WEFT_STATS (stats_wait_begins).  0, or an error
   with nothing taken. */
static int take_word_timed(struct wmutex *w, clockid_t clock,
			   const struct timespec *abstime, int flags,
			   int slept, int counted, long *t0)
{
	int priv = mutex_futex_flag(w), held = 0, checked = 0, spins = -1;

	for (;;) {
		unsigned v = (unsigned)__atomic_load_n(&w->lock, __ATOMIC_SEQ_CST);
		int c = ceiling_of(v);
		unsigned cv = v & PP_MASK;

		if (PP_STATE(v) == 0) {
			if (counted && c != held) {
				int r = pp_move(held, c, flags);
				if (r && (flags & PP_UNDO)) {
					if (held)
						pp_move(held, 0, 0);
					return r;
				}
				held = checked = c;
			}
			if (__atomic_compare_exchange_n(&w->lock, (int *)&v,
							(int)(cv | take_state(w, slept)),
							0, __ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
				return 0;
			continue;
		}
		if (counted && (flags & PP_CHECK) && !held && c != checked) {
			int r = pp_check(c);
			if (r)
				return r;
			checked = c;
		}
		stats_wait_begins(t0);
		if (spins != 0 && no_sleepers(w, v)) {
			if (spins < 0)
				spins = spin_worthwhile() ? PP_SPIN_TRIES : 0;
			if (spins > 0) {
				spins--;
				arch_spin_pause();
				continue;
			}
		}
		if (held) {
			pp_move(held, 0, 0); /* sleep at our own priority */
			held = 0;
		}
		sleepers_add(w, 1);
		if (PP_STATE(v) == 1 &&
		    !__atomic_compare_exchange_n(&w->lock, (int *)&v,
						 (int)(cv | 2), 0,
						 __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST)) {
			sleepers_add(w, -1);
			continue;
		}
		long k = futex_wait_until(&w->lock, (int)(cv | 2), clock,
					  abstime, priv);
		sleepers_add(w, -1);
		if (k == -ETIMEDOUT || k == -EINVAL)
			return (int)-k;
		slept = 1; /* others may sleep too */
		spins = 0;
	}
}

/* take_word_timed, with a wait recorded for WEFT_STATS as a normal
   mutex's, whatever its end. */
static int take_word(struct wmutex *w, clockid_t clock,
		     const struct timespec *abstime, int flags, int slept,
		     int counted)
{
	long t0 = 0;
	int r = take_word_timed(w, clock, abstime, flags, slept, counted, &t0);

	if (t0)
		lockstat_record(w, LS_MUTEX, t0);
	return r;
}

/* Frees the word, keeping the ceiling, and returns the ceiling.
   Everything is read before the store that frees it (docs/sync.md, "No
   touch after release"); only a wake by address comes after. */
static int release_word(struct wmutex *w, int users)
{
	int priv = mutex_futex_flag(w);
	int v = __atomic_load_n(&w->lock, __ATOMIC_RELAXED), free;

	w->owner = 0;
	if (users)
		w->nusers--;
	do
		free = (int)((unsigned)v & PP_MASK);
	while (!__atomic_compare_exchange_n(&w->lock, &v, free, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	if (PP_STATE(v) > 1)
		futex_wake(&w->lock, 1, priv);
	return ceiling_of((unsigned)free);
}

/* ------------------------------------------------------- the functions */

int ppmutex_init(struct wmutex *w, int kind, unsigned attr)
{
	int c = (int)((attr & MA_CEIL_MASK) >> MA_CEIL_SHIFT);

	if (c == 0)
		c = fifo_min(); /* a fresh attribute: glibc's default */
	if (!ceiling_ok(c))
		return EINVAL;
	memset(w, 0, sizeof *w);
	w->kind = kind;
	w->lock = (int)((unsigned)c << PP_SHIFT);
	return 0;
}

/* The caller already holds it: the checked types answer here (the
   normal type deadlocks, as glibc's).  -1 when the word must be taken. */
static int relock_by_owner(struct wmutex *w, int type, int self)
{
	if (w->owner != self)
		return -1;
	if (type == PTHREAD_MUTEX_ERRORCHECK)
		return EDEADLK;
	if (type != PTHREAD_MUTEX_RECURSIVE)
		return -1;
	if (w->count == UINT_MAX)
		return EAGAIN;
	w->count++;
	return 0;
}

static void took(struct wmutex *w, int self)
{
	w->owner = self;
	w->count = 1;
	w->nusers++;
}

int ppmutex_lock(struct wmutex *w, clockid_t clock,
		 const struct timespec *abstime)
{
	int self = host_self_tid();
	int r = relock_by_owner(w, w->kind & MK_TYPE_MASK, self);

	if (r >= 0)
		return r;
	r = take_word(w, clock, abstime, PP_CHECK | PP_UNDO, 0, 1);
	if (r == 0)
		took(w, self);
	return r;
}

/* One attempt; the ceiling is counted (and the priority raised) before
   the attempt, as glibc does, and dropped again if the word was held. */
int ppmutex_trylock(struct wmutex *w)
{
	int self = host_self_tid(), type = w->kind & MK_TYPE_MASK;
	int r;

	if (w->owner == self && type == PTHREAD_MUTEX_ERRORCHECK)
		return EBUSY; /* POSIX, weft's other types; glibc: EDEADLK */
	r = relock_by_owner(w, type, self);
	if (r >= 0)
		return r;
	for (;;) {
		unsigned v = (unsigned)__atomic_load_n(&w->lock, __ATOMIC_RELAXED);
		int c = ceiling_of(v);

		if (PP_STATE(v) != 0)
			return EBUSY;
		r = pp_move(0, c, PP_CHECK | PP_UNDO);
		if (r)
			return r;
		if (__atomic_compare_exchange_n(&w->lock, (int *)&v,
						(int)(v | 1), 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			took(w, self);
			return 0;
		}
		pp_move(c, 0, 0);
	}
}

int ppmutex_check_owner(struct wmutex *w)
{
	int type = w->kind & MK_TYPE_MASK;

	if (type != PTHREAD_MUTEX_RECURSIVE && type != PTHREAD_MUTEX_ERRORCHECK)
		return 0;
	if (w->owner != host_self_tid() ||
	    PP_STATE(__atomic_load_n(&w->lock, __ATOMIC_RELAXED)) == 0)
		return EPERM;
	return 0;
}

int ppmutex_unlock(struct wmutex *w)
{
	int r = ppmutex_check_owner(w);

	if (r)
		return r;
	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE &&
	    --w->count != 0)
		return 0;
	return pp_move(release_word(w, 1), 0, 0);
}

/* Like glibc's condvar wait, the holder count is left as it is while
   the waiter sleeps: the mutex is still in use (destroy says EBUSY).
   The priority drops while waiting. */
unsigned ppmutex_release_for_wait(struct wmutex *w)
{
	unsigned depth = 0;

	if ((w->kind & MK_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE)
		depth = w->count;
	w->count = 0;
	pp_move(release_word(w, 0), 0, 0);
	return depth;
}

/* The priority is raised again; a refusal by the kernel (or a base now
   above the ceiling) cannot stop the wait from returning with the
   mutex, so it is not reported. */
int ppmutex_reacquire_after_wait(struct wmutex *w, unsigned depth)
{
	take_word(w, CLOCK_MONOTONIC, NULL, 0, 1, 1);
	w->owner = host_self_tid();
	w->count = depth ? depth : 1;
	return 0;
}

/* glibc's rule is "no holders" (nusers); a held word says the same,
   with the ceiling masked out. */
int ppmutex_destroy(struct wmutex *w)
{
	if (__atomic_load_n(&w->nusers, __ATOMIC_RELAXED) != 0 ||
	    PP_STATE(__atomic_load_n(&w->lock, __ATOMIC_RELAXED)) != 0)
		return EBUSY;
	return 0;
}

int ppmutex_getprioceiling(const struct wmutex *w, int *ceiling)
{
	*ceiling = ceiling_of((unsigned)__atomic_load_n(&w->lock,
							__ATOMIC_RELAXED));
	return 0;
}

/* Locks the mutex without the protocol (no ceiling counted, no
   priority change), as glibc does, then stores the new ceiling: that
   store also releases it.  A recursive mutex the caller holds stays
   held, and the caller's count moves to the new ceiling.  Every
   sleeper is woken: it slept on the old ceiling's value and must count
   the new one. */
int ppmutex_setprioceiling(struct wmutex *w, int ceiling, int *old)
{
	int self = host_self_tid(), type = w->kind & MK_TYPE_MASK;
	int priv = mutex_futex_flag(w), held = 0, r;
	unsigned v, nv;

	if (!ceiling_ok(ceiling))
		return EINVAL;
	if (w->owner == self) {
		if (type == PTHREAD_MUTEX_ERRORCHECK)
			return EDEADLK;
		held = type == PTHREAD_MUTEX_RECURSIVE;
	}
	if (!held) {
		r = take_word(w, CLOCK_MONOTONIC, NULL, 0, 0, 0);
		if (r)
			return r;
	}
	v = (unsigned)__atomic_load_n(&w->lock, __ATOMIC_RELAXED);
	if (held) {
		r = pp_move(ceiling_of(v), ceiling, PP_UNDO);
		if (r)
			return r;
	}
	if (old)
		*old = ceiling_of(v);
	do
		nv = (unsigned)ceiling << PP_SHIFT | (held ? PP_STATE(v) : 0);
	while (!__atomic_compare_exchange_n(&w->lock, (int *)&v, (int)nv, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	futex_wake(&w->lock, INT_MAX, priv);
	return 0;
}
