/* Condition variables.  Two designs (docs/sync.md):

   Process-private: a FIFO list of waiter nodes, each on its waiter's
   stack with its own futex word.  signal/broadcast pick nodes under the
   small internal lock; a picked waiter then never touches the condvar
   again, so "broadcast, destroy, free" is safe.

   Nobody is woken into a held mutex.  When the signaller holds the
   waiter's mutex, the picked waiters are hung in the mutex and woken by
   whoever releases it next (FreeBSD libthr's deferred wake-up, kept in
   the mutex rather than the thread; no system call until then).  A
   broadcast's waiters are released once the mutex is free: as a herd
   (all at once, one FUTEX_WAKE for all, see "Herd release") when the
   condvar's waiters sleep as one, else as a chain (only the first is
   woken; it takes the rest over and wakes the next when it releases
   the mutex in turn).

   A wait on a priority-inheritance mutex is PI-aware: the waiter sleeps
   with FUTEX_WAIT_REQUEUE_PI on its node's word, and signal/broadcast
   move it onto the mutex with FUTEX_CMP_REQUEUE_PI: the kernel hands it
   the mutex if free, else queues it there by priority and boosts the
   holder.  No deferred chain is needed: nobody wakes into a held mutex.

   The list is kept in priority order (real-time waiters first, highest
   first, arrival order within a priority; core/rt_hint.h), so signal
   picks the highest-priority waiter and broadcast releases them in
   that order.

   Process-shared: nodes on stacks cannot be reached from another
   process, so waiters sleep on one sequence word; signal and broadcast
   both advance it and wake every sleeper (spurious wake-ups, never a
   lost one).  Their wake-ups are not PI-aware (docs/sync.md). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include "core/cancel.h"
#include "core/rt_hint.h"
#include "core/runstate.h"
#include "core/stats.h"
#include "core/yield_wait.h"
#include "cond.h"
#include "mutex_kinds.h"
#include "core/thread.h"

/* A waiter node's state, its futex word: the low bits below, and, for
   a requeue-PI waiter, a ticket above them (see pi_ticket). */
enum {
	CN_WAITING = 0,	  /* linked, asleep or about to be */
	CN_SIGNALLED = 1, /* picked by pthread_cond_signal */
	CN_BROADCAST = 2, /* picked by pthread_cond_broadcast */
	CN_CLAIMED = 3,	  /* picked; ordinary waiter: waking deferred, wait
			     for `kind`; requeue-PI waiter: final */
	CN_LEAVING = 4,	  /* timed out or cancelled, unlinks itself */
	CN_DEFERRED = 5,  /* requeue-PI waiter picked by the mutex's holder:
			     requeued when it releases the mutex; may not
			     leave meanwhile */
	CN_CLAIMED_ASLEEP = 6, /* CLAIMED, and its herd waiter sleeps on the
				  node's word: the release wakes it there */
};
#define CN_STATE 7
#define CN_TICKET_ONE 8

/* What a broadcast reads and writes of each node (links, state, kind,
   bnext, the herd bit) lies in its first 64 bytes, and the node is
   aligned to them: one cache line per waiter to fetch. */
struct cnode {
	struct cnode *prev, *next; /* list links, under the internal lock */
	/* While CLAIMED: the next picked waiter of the same chain (NULL:
	   the last), and, in a chain's first node, the chain's last node
	   (btail, below).  A released waiter takes the rest of its chain
	   over from them. */
	struct cnode *bnext;
	struct wmutex *mutex;
	char *tcb;		   /* the waiter's thread, see cond_signal */
	int state;
	int kind;		   /* CN_SIGNALLED or CN_BROADCAST once picked */
	int prio;		   /* queue order: rt_hint_self_priority() */
	int pi_flag;		   /* requeue-PI waiter: the futex flag; else -1 */
	unsigned herd_bit;	   /* herd waiter: its bit on the mutex's
				      herd_seq ("Herd release"); else 0 */
	struct cnode *btail;
};
_Static_assert(__builtin_offsetof(struct cnode, herd_bit) + sizeof(unsigned) <= 64,
	       "a broadcast touches one cache line per node");

/* What a signaller needs to requeue a claimed PI waiter, copied from
   its node before the claim: once claimed, the waiter may return and
   its node be gone. */
struct requeue {
	int *word;
	int *mutex_word;
	int expect;
	int flag;
};

/* The waiter's context, for the cleanup run when cancellation unwinds
   the wait. */
struct wait_ctx {
	struct wcond *c;
	struct wmutex *m;
	struct cnode node __attribute__((aligned(64)));
	unsigned depth;
	int armed; /* mutex released, wait in progress */
	int first; /* joined an empty list, or a herd: may yield (node_yield) */
};

static int cas_state(int *p, int expect, int val)
{
	return __atomic_compare_exchange_n(p, &expect, val, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

static int state_of(const struct cnode *n)
{
	return __atomic_load_n(&n->state, __ATOMIC_ACQUIRE) & CN_STATE;
}

/* The waiter gives up (timeout, cancellation): WAITING -> LEAVING, its
   ticket kept; fails once a signaller has claimed it. */
static int try_leave(struct cnode *n)
{
	int v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);

	return (v & CN_STATE) == CN_WAITING &&
	       cas_state(&n->state, v, (v & ~CN_STATE) | CN_LEAVING);
}

static void requeue_data(struct cnode *n, int ticket, struct requeue *rq)
{
	rq->word = &n->state;
	rq->mutex_word = &n->mutex->lock;
	rq->flag = n->pi_flag;
	rq->expect = ticket | CN_CLAIMED;
}

/* A signaller picks a linked node (under the internal lock): WAITING ->
   `to` (CLAIMED or DEFERRED), with `kind` published by the same step.
   A requeue-PI waiter's requeue data is copied to *rq first (rq NULL:
   not needed). */
static int claim(struct cnode *n, int kind, int to, struct requeue *rq)
{
	int v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);

	if ((v & CN_STATE) != CN_WAITING)
		return 0; /* LEAVING: it unlinks itself */
	if (rq)
		requeue_data(n, v & ~CN_STATE, rq);
	n->kind = kind;
	return cas_state(&n->state, v, (v & ~CN_STATE) | to);
}

static int clock_of(const struct wcond *c)
{
	return (c->flags & CF_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

/* ------------------------------------------------------------ the list */

/* Whether the list holds another process's waiters: a private condvar
   placed in shared memory and used from two processes (undefined in
   POSIX; PTS pthread_cond_init/1-3 does it).  Its nodes are on the
   other process's stacks, so they must not be followed here.  Called
   under the internal lock. */
static int list_foreign(const struct wcond *c)
{
	return c->head && c->pid != weft_self_pid();
}

/* Links a node behind every waiter of its priority or higher: arrival
   order within a priority.  A waiter with no real-time priority goes to
   the tail at once, and without a load from the tail node: that node
   lies on another thread's stack, most likely out of this CPU's cache
   and TLB, and a store to it need not wait for its line
   (bench/RESULTS.md, 2026-11-27-bcast). */
static void list_insert(struct wcond *c, struct cnode *n)
{
	struct cnode *after = c->tail;

	if (n->prio)
		while (after && after->prio < n->prio)
			after = after->prev;
	n->prev = after;
	n->next = after == c->tail ? NULL : after ? after->next : c->head;
	if (n->next)
		n->next->prev = n;
	else
		c->tail = n;
	if (after)
		after->next = n;
	else
		__atomic_store_n(&c->head, n, __ATOMIC_RELAXED);
}

/* Unlinks the node that sat between prev and next (its own fields may
   no longer be read: it may be gone). */
static void list_unlink(struct wcond *c, struct cnode *prev,
			struct cnode *next)
{
	if (prev)
		prev->next = next;
	else
		__atomic_store_n(&c->head, next, __ATOMIC_RELAXED);
	if (next)
		next->prev = prev;
	else
		c->tail = prev;
}

/* A leaving waiter (timed out, cancelled) unlinks itself; a destroy
   that waits for leavers (cond_destroy) is woken, by address only once
   the internal lock is let go: the condvar may be gone after that. */
static void unlink_self(struct wcond *c, struct cnode *n)
{
	int destroy_waits;

	weft_lock(&c->lock);
	list_unlink(c, n->prev, n->next);
	destroy_waits = c->shared_waiters;
	if (destroy_waits) {
		c->shared_waiters = 0;
		__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELAXED);
	}
	weft_unlock(&c->lock);
	if (destroy_waits)
		futex_wake((int *)&c->seq, INT_MAX, WEFT_FUTEX_PRIVATE);
}

/* ------------------------------------------------------- waking a node */

/* Whether the caller holds `mx`: then the waiters it picks would only
   block on it, so their wake-up is deferred to its release. */
static int holds(struct wmutex *mx, int self)
{
	return mx && __atomic_load_n(&mx->owner, __ATOMIC_RELAXED) == self;
}

/* ------------------------------------------------------- herd release

   A herd is the waiters of a condvar that has been broadcast to several
   waiters at once (the condvar's `herd`, set by such a broadcast), on a
   mutex that can carry deferred wake-ups.  They sleep on one word of
   their mutex, herd_seq, each with its own bit (FUTEX_WAIT_BITSET), so
   that one FUTEX_WAKE releases a whole broadcast: one system call for
   all, and every CPU free to run them at once.  Other waiters sleep on
   their node's own word, which needs no extra step, and are woken one
   by one.

   The mutex outlives every wait on it (a waiter takes it again before
   returning; destroying it meanwhile is undefined), so a herd waiter
   may read herd_seq whenever it likes; it never reads the condvar, which
   a released waiter's program may destroy at once.  The protocol, for a
   node N of a herd waiter on mutex M:

     releaser (signal, broadcast)        waiter
     claim N: WAITING -> CLAIMED (1)     s = M.herd_seq           (a)
     M.herd_seq += 1            (2)      st = N.state             (b)
       ... (deferred to M's release)     st final: return
     old = xchg(N.state, final) (3)      st WAITING:  FUTEX_WAIT_BITSET(
     old CLAIMED_ASLEEP:                                 &M.herd_seq, s)
         FUTEX_WAKE(&N.state)            st CLAIMED: CAS it to
     FUTEX_WAKE_BITSET(&M.herd_seq,        CLAIMED_ASLEEP, FUTEX_WAIT(
                       the bits)  (4)      &N.state, CLAIMED_ASLEEP)
                                          then look again

   No wake-up is lost.  A waiter that read WAITING at (b) read it before
   the claim (1), so (2) comes after (a) (the bump is a release, the read
   of (a) an acquire): its FUTEX_WAIT compares a changed word and
   returns, or it was queued before (2), hence before (4), which wakes
   it.  A waiter that read CLAIMED either marks its node before (3) (the
   exchange then sees the mark and wakes the node's word) or its CAS
   fails because (3) happened.  The releaser touches the condvar only
   under its internal lock, before any release; after (3) it touches
   the node no more and the mutex only by address, in the wake (4).

   A broadcast made while its mutex is free releases its herd at once; one
   made by the holder hangs its nodes in the mutex and the release wakes
   them all after freeing the word (nobody is woken into a held mutex);
   one made while another thread holds the mutex releases the first
   node only, and that waiter, once it holds the mutex, defers the rest
   to its own release. */

/* Releases one picked node: stores its final state (the release: its
   waiter may return from here on, so the node is not read after) and
   wakes its word where its waiter may sleep there.  Returns the herd bit
   the caller must wake on herd_seq (0: none). */
static unsigned release_node(struct cnode *n)
{
	unsigned bit = n->herd_bit;
	int kind = n->kind;

	if (!bit) {
		__atomic_store_n(&n->state, kind, __ATOMIC_RELEASE);
		futex_wake(&n->state, 1, WEFT_FUTEX_PRIVATE);
		return 0;
	}
	if (__atomic_exchange_n(&n->state, kind, __ATOMIC_ACQ_REL) ==
	    CN_CLAIMED_ASLEEP)
		futex_wake(&n->state, 1, WEFT_FUTEX_PRIVATE);
	return bit;
}

/* Wakes the herd waiters of `bits` asleep on the mutex's herd_seq (by
   address: the mutex may be gone by now). */
static void wake_herd(int *herd_seq, unsigned bits)
{
	if (bits)
		futex_wake_bits(herd_seq, INT_MAX, bits, WEFT_FUTEX_PRIVATE);
}

/* Step (2) for a chain of claimed nodes of one mutex, before any of
   them is released. */
static void herd_bump(struct cnode *head)
{
	for (struct cnode *n = head; n; n = n->bnext) {
		if (n->herd_bit) {
			__atomic_fetch_add(&n->mutex->herd_seq, 1,
					   __ATOMIC_SEQ_CST);
			return;
		}
	}
}

/* Releases the first node of a chain of picked nodes, linked through
   bnext; its waiter takes the rest over once it holds the mutex. */
static void release_first(struct cnode *head)
{
	int *herd_seq = &head->mutex->herd_seq;

	wake_herd(herd_seq, release_node(head));
}

/* Releases a chain of picked nodes of one mutex, the caller not holding
   it (a release of the mutex, or a signaller while it is free): the herd
   waiters all at once, the others as a chain (the first now, the next
   when that one releases the mutex). */
void cond_release_chain(struct cnode *head)
{
	struct cnode *chain = NULL, *tail = NULL, *n, *next;
	int *herd_seq = &head->mutex->herd_seq;
	unsigned bits = 0;

	for (n = head; n; n = next) {
		next = n->bnext;
		__builtin_prefetch(next, 1);
		if (n->herd_bit) {
			n->bnext = NULL;
			bits |= release_node(n); /* n may be gone */
			continue;
		}
		if (tail)
			tail->bnext = n;
		else
			chain = n;
		tail = n;
	}
	wake_herd(herd_seq, bits);
	if (chain) {
		tail->bnext = NULL;
		chain->btail = tail;
		release_first(chain);
	}
}

/* ------------------------------------------- deferred wake-ups (per mutex)

   Chains of picked waiters whose wake-up waits for the mutex they use
   to be released.  The chain hangs in the mutex itself (mutex.h), so
   whoever releases the mutex wakes it, even a thread other than the
   signaller, and it survives the signaller's exit. */

/* Appends a chain (head->btail its last node) to the wake-ups due when
   the caller releases `m`, which it holds. */
static void defer_chain(struct wmutex *m, struct cnode *head)
{
	struct cnode *first = mutex_deferred(m);

	if (first) {
		first->btail->bnext = head;
		first->btail = head->btail;
	} else {
		mutex_set_deferred(m, head);
	}
}

/* Hands a chain on while the caller holds its mutex: deferred to the
   release, or woken at once where the mutex cannot carry it. */
static void defer_or_release(struct cnode *head)
{
	if (mutex_can_defer(head->mutex))
		defer_chain(head->mutex, head);
	else
		release_first(head);
}

/* A picked waiter, back with the mutex, takes the rest of its chain
   over: the next waiter is woken when this one releases the mutex, so
   exactly one of them is runnable at a time and none wakes into a held
   mutex.  (Waking the next at once, to overlap its wake-up with our
   critical section, measured slower: bench/RESULTS.md.) */
static void adopt_chain(struct cnode *n)
{
	struct cnode *rest = n->bnext;

	if (!rest)
		return;
	rest->btail = n->btail;
	defer_or_release(rest);
}

/* Hands a chain of picked nodes on: deferred while the caller holds
   their mutex; released now, herd waiters all at once, while it is
   free; else its first waiter is woken now (see "Herd release"). */
static void pass_chain(struct cnode *head, struct cnode *tail)
{
	struct wmutex *m = head->mutex;

	tail->bnext = NULL;
	head->btail = tail;
	herd_bump(head);
	if (holds(m, host_self_tid()))
		defer_or_release(head);
	else if (mutex_can_defer(m) && !mutex_held_now(m))
		cond_release_chain(head);
	else
		release_first(head);
}

/* ----------------------------------------------------------- requeue-PI

   A waiter on a PI mutex sleeps in FUTEX_WAIT_REQUEUE_PI on its node's
   word.  The signaller claims it under the internal lock (WAITING ->
   CLAIMED, which is the signal: a waiter that sees CLAIMED was
   signalled, whatever the kernel said) and then, without the lock,
   asks the kernel to move it onto the mutex.  The waiter may leave
   between the two (it was not asleep yet, or timed out, or a signal
   handler interrupted it): the requeue then finds nobody or a word that
   moved on, and is harmless.  Harmless also when the node is gone and
   its stack reused: the kernel compares the word with `expect` first,
   and each wait's ticket makes a stale match need 2^29 PI waits in the
   meantime. */

static int pi_ticket(void)
{
	static unsigned next;

	return (int)(__atomic_add_fetch(&next, CN_TICKET_ONE, __ATOMIC_RELAXED) &
		     ~(unsigned)CN_STATE);
}

/* Moves a claimed waiter onto its mutex (or gives it the mutex, if
   free).  Any refusal leaves the waiter to find CLAIMED itself: the
   kernel refuses only when the waiter is not asleep on the word (it
   will see CLAIMED when it returns or tries to sleep), or when the
   mutex word is corrupt (its owner gone without robustness: the waiter
   stays blocked, as a lock of that mutex would). */
static void requeue(const struct requeue *rq)
{
	futex_cmp_requeue_pi(rq->word, rq->mutex_word, rq->expect, rq->flag);
}

/* Deferred requeues.  A signaller holding the PI mutex could requeue
   the waiter at once: the waiter would boost it, but the unlock then
   makes the waiter only the pending owner, which any thread of higher
   priority than the waiter takes the mutex from before the waiter runs
   (the kernel's rt-mutex lock stealing): a signaller that needs the
   mutex again after the waiter's critical section would wait on, with
   no one boosted (bench/RESULTS.md, the inversion rows).  So a waiter
   of no higher priority than the signaller is requeued when the
   signaller releases the mutex: the mutex is free then, and the kernel
   makes the waiter its owner before it runs.  A waiter of higher
   priority is requeued at once, to boost the holder.  Robust mutexes
   are always requeued at once (their holder may die holding them).

   DEFERRED waiters wait in the releasing thread's list, in the order
   they were picked (appended at the tail: no walk); they cannot leave
   until requeued, so their nodes stay valid there. */
__thread struct cnode *weft_cond_deferred_pi
	__attribute__((tls_model("initial-exec")));
static __thread struct cnode *deferred_pi_tail
	__attribute__((tls_model("initial-exec")));

static void defer_requeue(struct cnode *n)
{
	n->bnext = NULL;
	if (weft_cond_deferred_pi)
		deferred_pi_tail->bnext = n;
	else
		weft_cond_deferred_pi = n;
	deferred_pi_tail = n;
}

/* Requeues this thread's deferred waiters of `m` (those of other
   mutexes it holds stay, in order, and the tail follows them). */
void cond_requeue_deferred(struct wmutex *m)
{
	struct cnode **p = &weft_cond_deferred_pi, *n, *kept = NULL;

	while ((n = *p)) {
		struct requeue rq;
		int v;

		if (n->mutex != m) {
			kept = n;
			p = &n->bnext;
			continue;
		}
		*p = n->bnext;
		v = __atomic_load_n(&n->state, __ATOMIC_RELAXED);
		requeue_data(n, v & ~CN_STATE, &rq);
		/* From here the waiter may leave: only rq. */
		__atomic_store_n(&n->state, rq.expect, __ATOMIC_RELEASE);
		requeue(&rq);
	}
	deferred_pi_tail = kept;
}

/* Whether a PI waiter picked by the caller waits for its release.
   `self_prio` is computed once per signal (-1: not yet). */
static int defer_pi(struct cnode *n, int *self_prio)
{
	if (!tidmutex_requeue_deferrable(n->mutex))
		return 0;
	if (*self_prio < 0)
		*self_prio = rt_hint_self_priority();
	return n->prio <= *self_prio;
}

/* How a requeue-PI wait ended. */
enum { PI_OWNER, PI_SIGNALLED, PI_TIMEDOUT, PI_SPURIOUS };

static int owns(const struct wmutex *m)
{
	return (__atomic_load_n(&m->lock, __ATOMIC_RELAXED) & FUTEX_TID_MASK) ==
	       host_self_tid();
}

/* Picked, requeue deferred to the mutex's release: sleep again until
   then, without deadline or cancellation (the signal has been taken). */
static int pi_sleep_deferred(struct cnode *n, struct wmutex *m)
{
	int v;

	while (((v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE)) &
		CN_STATE) == CN_DEFERRED) {
		long k = futex_wait_requeue_pi(&n->state, v, &m->lock,
					       n->pi_flag);
		if (k == 0 && owns(m))
			return PI_OWNER;
	}
	return PI_SIGNALLED;
}

static int pi_sleep(struct wait_ctx *x, int clock,
		    const struct timespec *abstime)
{
	struct cnode *n = &x->node;
	struct wmutex *m = x->m;
	/* Our ticket with WAITING, whatever the word says now: a signaller
	   that ran between our release of the mutex and this point (it may
	   have been handed the mutex and preempted us) has claimed us
	   already, and a sleep on the claimed value would never end. */
	int expect = (__atomic_load_n(&n->state, __ATOMIC_RELAXED) &
		      ~CN_STATE) | CN_WAITING;

	for (;;) {
		long k = futex_wait_requeue_pi_cp(&n->state, expect, clock,
						  abstime, &m->lock,
						  n->pi_flag);
		/* 0: the kernel made us the owner (checked: a word we do
		   not own would be taken again the ordinary way). */
		if (k == 0 && owns(m))
			return PI_OWNER;
		if (state_of(n) == CN_DEFERRED)
			return pi_sleep_deferred(n, m);
		if (state_of(n) == CN_CLAIMED)
			return PI_SIGNALLED;
		if (k == -EAGAIN || k == -EINTR || k == 0)
			continue; /* spurious: still waiting */
		/* Timed out, or the kernel refused the wait (-EINVAL: a
		   spurious wake-up then, POSIX allows them). */
		if (try_leave(n)) {
			unlink_self(x->c, n);
			return k == -ETIMEDOUT ? PI_TIMEDOUT : PI_SPURIOUS;
		}
		return PI_SIGNALLED; /* claimed meanwhile */
	}
}

/* ----------------------------------------------- process-shared design */

static int shared_signal(struct wcond *c)
{
	if (!__atomic_exchange_n(&c->shared_waiters, 0, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_fetch_add(&c->seq, 1, __ATOMIC_SEQ_CST);
	futex_wake((int *)&c->seq, INT_MAX, WEFT_FUTEX_SHARED);
	return 0;
}

static void shared_unwound(struct wait_ctx *x)
{
	if (!x->armed)
		return;
	mutex_reacquire_after_wait(x->m, x->depth, 1);
	/* We may have been the one woken: pass it on (docs/sync.md). */
	__atomic_store_n(&x->c->shared_waiters, 1, __ATOMIC_SEQ_CST);
	shared_signal(x->c);
}

static int shared_wait(struct wcond *c, struct wmutex *m, int clock,
		       const struct timespec *abstime)
{
	struct wait_ctx x __attribute__((cleanup(shared_unwound))) = {
		.c = c, .m = m};
	int res = 0, r;
	unsigned s = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);

	__atomic_store_n(&c->shared_waiters, 1, __ATOMIC_SEQ_CST);
	x.depth = mutex_release_for_wait(m);
	x.armed = 1;
	for (;;) {
		long k = futex_wait_until_cp((int *)&c->seq, (int)s, clock,
					     abstime, WEFT_FUTEX_SHARED);
		/* Woken, or the word moved on (or is gone: EFAULT). */
		if (k == -ETIMEDOUT)
			res = ETIMEDOUT;
		if (k != -EINTR)
			break;
	}
	x.armed = 0;
	r = mutex_reacquire_after_wait(m, x.depth, 1);
	return r ? r : res;
}

/* --------------------------------------------- process-private design */

static int claimed(int st)
{
	return st == CN_CLAIMED || st == CN_CLAIMED_ASLEEP;
}

/* Waits while the node is picked but not released (state `st`), without
   deadline or cancellation: the wake-up is ours already.  A herd
   waiter marks the node first, so that its release wakes this word
   ("Herd release"). */
static void claimed_wait(struct cnode *n, int st)
{
	if (n->herd_bit && st == CN_CLAIMED) {
		if (!cas_state(&n->state, CN_CLAIMED, CN_CLAIMED_ASLEEP))
			return; /* released meanwhile */
		st = CN_CLAIMED_ASLEEP;
	}
	futex_wait(&n->state, st, WEFT_FUTEX_PRIVATE);
}

/* Yields the CPU for a while before the first sleep; 1 when the node
   was picked meanwhile.  The reason is the mutex waiter's
   (core/yield_wait.h): a signal to a waiter asleep on an idle CPU
   waits for that CPU to wake, tens of microseconds on a guest whose
   idle CPUs halt, and the waiter that yields keeps its CPU awake and
   sees its node's state change at its next look.  It changes nothing in
   the protocol: the node stays WAITING on the list, and the yields only
   come before the first look-and-sleep of node_sleep, which reads its
   words again after them.  Untimed waits of threads of no real-time
   policy only (a real-time waiter's futex queue is its priority order),
   free to run on two or more CPUs (confined to one, the waker runs on
   the waiter's own CPU, and a wake-up there is only a switch: yielding
   measured slower, docs/sync.md), within the process-wide cap of
   yielders that mutex waiters share.  And only a waiter that is next
   in line (it joined an empty list) or a herd waiter (broadcasts pick
   the whole list): one queued behind others would yield while the
   signals go to those ahead of it, and take a yielder's place and CPU
   time from threads that could run (node_sleep's caller decides, from
   wait_ctx.first). */
static __attribute__((noinline)) int node_yield(const struct cnode *n)
{
	struct yield_turn t;
	int picked = 0;

	if (!yield_turn_begin_woken(&t))
		return 0;
	while (yield_turn_yield(&t)) {
		if (__atomic_load_n(&n->state, __ATOMIC_RELAXED) != CN_WAITING) {
			picked = 1;
			break;
		}
	}
	yield_turn_end(&t);
	if (stats_enabled())
		stats_count_cond_yield(picked);
	return picked;
}

/* Waits until the node is picked, or the deadline passes: on the node's
   own word, or a herd waiter on its mutex's herd_seq.  Returns 0
   (picked) or ETIMEDOUT (left the list). */
static int node_sleep(struct wait_ctx *x, int clock,
		      const struct timespec *abstime)
{
	struct cnode *n = &x->node;
	int *herd_seq = &n->mutex->herd_seq;
	int yielded = abstime != NULL || !x->first;

	for (;;) {
		int s = n->herd_bit ? __atomic_load_n(herd_seq, __ATOMIC_ACQUIRE)
				    : 0;
		int st = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);
		long k;

		if (st == CN_SIGNALLED || st == CN_BROADCAST)
			return 0;
		if (claimed(st)) {
			/* A signaller is finishing with us: a brief wait,
			   and it may no longer be cancelled or time out. */
			claimed_wait(n, st);
			continue;
		}
		if (!yielded) {
			yielded = 1;
			if (node_yield(n))
				continue;
		}
		runstate_blocked(1);
		if (n->herd_bit)
			k = futex_wait_bits_until_cp(herd_seq, s, n->herd_bit,
						     clock, abstime,
						     WEFT_FUTEX_PRIVATE);
		else
			k = futex_wait_until_cp(&n->state, CN_WAITING, clock,
						abstime, WEFT_FUTEX_PRIVATE);
		runstate_blocked(0);
		if (k == -ETIMEDOUT && try_leave(n)) {
			unlink_self(x->c, n);
			return ETIMEDOUT;
		}
	}
}

/* Takes the mutex back the ordinary way, out of a wait that was not
   handed the mutex by the kernel. */
static int reacquire(struct wait_ctx *x)
{
	if (x->node.pi_flag >= 0) {
		if (owns(x->m))
			return tidmutex_requeue_took(x->m, x->depth);
		tidmutex_requeue_abandon(x->m);
	}
	return mutex_reacquire_after_wait(x->m, x->depth, 0);
}

/* Cancellation unwound the wait: leave the list, or, if a signal got
   here first, hand it to another waiter; then take the mutex back so
   that the cleanup handlers run with it held. */
static void private_unwound(struct wait_ctx *x)
{
	struct cnode *n = &x->node;
	int st;

	if (!x->armed)
		return;
	runstate_blocked(0); /* unwound out of node_sleep's futex call */
	if (try_leave(n)) {
		unlink_self(x->c, n);
		reacquire(x);
		return;
	}
	if (n->pi_flag >= 0) {
		/* Claimed: a signal to pass on (the kernel never both
		   hands the mutex over and lets the cancellation act). */
		if (state_of(n) == CN_DEFERRED &&
		    pi_sleep_deferred(n, x->m) == PI_OWNER)
			tidmutex_requeue_took(x->m, x->depth);
		else
			reacquire(x);
		if (n->kind == CN_SIGNALLED)
			cond_signal(x->c);
		return;
	}
	while (claimed(st = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE)))
		claimed_wait(n, st);
	mutex_reacquire_after_wait(x->m, x->depth, 0);
	adopt_chain(n);
	if (st == CN_SIGNALLED)
		cond_signal(x->c);
}

/* The requeue-PI wait, from the release of the mutex to its return. */
static int pi_wait(struct wait_ctx *x, int clock,
		   const struct timespec *abstime)
{
	int how, k;

	tidmutex_requeue_begin(x->m);
	how = pi_sleep(x, clock, abstime);
	x->armed = 0;
	if (how == PI_OWNER)
		k = tidmutex_requeue_took(x->m, x->depth);
	else
		k = reacquire(x);
	return k ? k : how == PI_TIMEDOUT ? ETIMEDOUT : 0;
}

/* The waiter's bit if it joins a herd ("Herd release"), else 0.  Under
   the internal lock.  Bits in turn: any 32 waiters that joined one after
   the other have a bit each, so that a signal wakes only its own waiter
   (with more waiters, those sharing its bit wake too, and sleep
   again). */
static unsigned herd_bit(struct wcond *c, const struct wmutex *m,
			 int pi_flag)
{
	if (!c->herd || pi_flag >= 0 || !mutex_can_defer(m))
		return 0;
	return 1u << (c->herd_next++ & 31);
}

static int cond_wait_deferred(struct wcond *c, struct wmutex *m, int clock,
	      const struct timespec *abstime)
{
	int r, k;

	if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000))
		return EINVAL;
	if (clock < 0)
		clock = clock_of(c);
	r = mutex_check_owner(m);
	if (r)
		return r;
	if (c->flags & CF_PSHARED)
		return shared_wait(c, m, clock, abstime);

	struct wait_ctx x __attribute__((cleanup(private_unwound))) = {
		.c = c, .m = m};
	x.node.mutex = m;
	x.node.tcb = arch_thread_pointer();
	x.node.bnext = NULL;
	x.node.prio = rt_hint_self_priority();
	x.node.pi_flag = tidmutex_requeue_flag(m);
	x.node.state = x.node.pi_flag >= 0 ? pi_ticket() | CN_WAITING
					   : CN_WAITING;
	weft_lock(&c->lock);
	if (list_foreign(c)) {
		/* Joining would link our stack into a list another process
		   walks, and theirs into ours. */
		weft_unlock(&c->lock);
		x.armed = 0;
		return EINVAL;
	}
	c->pid = weft_self_pid();
	x.node.herd_bit = herd_bit(c, m, x.node.pi_flag);
	x.first = c->head == NULL || x.node.herd_bit != 0;
	list_insert(c, &x.node);
	weft_unlock(&c->lock);
	x.depth = mutex_release_for_wait(m);
	x.armed = 1;
	if (x.node.pi_flag >= 0)
		return pi_wait(&x, clock, abstime);
	r = node_sleep(&x, clock, abstime);
	x.armed = 0;
	k = mutex_reacquire_after_wait(m, x.depth, 0);
	if (r == 0)
		adopt_chain(&x.node);
	return k ? k : r;
}

/* The asynchronous type is deferred meanwhile (core/cancel.h). */
int cond_wait(struct wcond *c, struct wmutex *m, int clock,
	      const struct timespec *abstime)
{
	int was_async = cancel_defer_begin();
	int r = cond_wait_deferred(c, m, clock, abstime);

	cancel_defer_end(was_async);
	return r;
}

int cond_signal(struct wcond *c)
{
	struct cnode *n, *picked = NULL;
	struct requeue rq = {0};
	int pi = 0, defer = 0, self_prio = -1;

	if (c->flags & CF_PSHARED)
		return shared_signal(c);
	if (!__atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
		return 0;
	weft_lock(&c->lock);
	/* Another process's waiters: out of reach, as a private futex wake
	   would be; nothing to do here. */
	for (n = list_foreign(c) ? NULL : c->head; n; ) {
		struct cnode *prev = n->prev, *next = n->next;
		/* A waiter about to be cancelled would only have to pass
		   the signal on; give it to the next one directly. */
		if (host_cancel_requested(n->tcb)) {
			n = next;
			continue;
		}
		pi = n->pi_flag >= 0;
		defer = pi && defer_pi(n, &self_prio);
		if (claim(n, CN_SIGNALLED, defer ? CN_DEFERRED : CN_CLAIMED,
			  pi && !defer ? &rq : NULL)) {
			list_unlink(c, prev, next);
			picked = n;
			break;
		}
		n = next; /* LEAVING: it unlinks itself */
	}
	weft_unlock(&c->lock);
	/* A claimed PI waiter's node may be gone already: only `rq`. */
	if (picked && defer)
		defer_requeue(picked);
	else if (picked && pi)
		requeue(&rq);
	else if (picked)
		pass_chain(picked, picked);
	return 0;
}

/* Passes a broadcast's batch on as one chain per mutex (waiters of one
   condvar using different mutexes is undefined in POSIX, but each then
   still gets its wake-up). */
static void release_batch(struct cnode *batch)
{
	while (batch) {
		struct cnode *head = NULL, *tail = NULL, *rest = NULL,
			     *rest_tail = NULL, *n, *next;
		struct wmutex *m0 = batch->mutex;

		for (n = batch; n; n = next) {
			struct cnode **h = n->mutex == m0 ? &head : &rest;
			struct cnode **t = n->mutex == m0 ? &tail : &rest_tail;

			next = n->bnext;
			n->bnext = NULL;
			if (*t)
				(*t)->bnext = n;
			else
				*h = n;
			*t = n;
		}
		pass_chain(head, tail);
		batch = rest;
	}
}

/* Claims every waiting node, oldest first within a priority: ordinary
   waiters onto one batch (CLAIMED keeps each on its waiter's stack until
   its turn to be woken), PI waiters' requeue data into rq[] (at most
   `max`; *more says some were left for another round).  *tail is the
   batch's last node, *mixed says its nodes use more than one mutex
   (undefined in POSIX: see release_batch).  Under the internal lock. */
static struct cnode *claim_all(struct wcond *c, struct requeue *rq, int max,
			       int *nrq, int *more, struct cnode **tail,
			       int *mixed)
{
	struct cnode *n, *batch = NULL, *last = NULL, *back = c->tail;
	int self_prio = -1;

	*nrq = 0;
	*more = 0;
	*mixed = 0;
	for (n = list_foreign(c) ? NULL : c->head; n; ) {
		struct cnode *prev = n->prev, *next = n->next;
		/* Each node is on another stack, most likely out of this
		   CPU's cache and TLB, and each is found from the one before:
		   one miss after the other.  A second walk from the tail,
		   one node a step until it meets this one, fetches the back
		   half meanwhile: two misses in flight at a time.  It only
		   reads linked nodes not yet looked at (the list is ours
		   under the internal lock), so none of them can be gone. */
		__builtin_prefetch(next, 1);
		if (back && back != n && back != next) {
			back = back->prev;
			__builtin_prefetch(back, 1);
		} else {
			back = NULL;
		}
		if (n->pi_flag >= 0 && defer_pi(n, &self_prio)) {
			if (claim(n, CN_BROADCAST, CN_DEFERRED, NULL)) {
				list_unlink(c, prev, next);
				defer_requeue(n);
			}
		} else if (n->pi_flag >= 0) {
			if (*nrq == max) {
				*more = 1;
				break;
			}
			if (claim(n, CN_BROADCAST, CN_CLAIMED, &rq[*nrq])) {
				list_unlink(c, prev, next);
				++*nrq;
			}
		} else if (claim(n, CN_BROADCAST, CN_CLAIMED, NULL)) {
			list_unlink(c, prev, next);
			n->bnext = NULL;
			if (last)
				last->bnext = n;
			else
				batch = n;
			if (n->mutex != batch->mutex)
				*mixed = 1;
			last = n;
		}
		n = next;
	}
	*tail = last;
	return batch;
}

/* PI waiters are requeued one system call each, a few at a time (their
   nodes cannot be kept; see requeue): a broadcast to more than a round
   claims the rest in another round, perhaps with waiters that came
   meanwhile (a spurious wake-up for them, which POSIX allows). */
#define REQUEUE_ROUND 16

int cond_broadcast(struct wcond *c)
{
	struct requeue rq[REQUEUE_ROUND];
	struct cnode *batch, *tail;
	int nrq, more, mixed;

	if (c->flags & CF_PSHARED)
		return shared_signal(c);
	do {
		if (!__atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
			return 0;
		weft_lock(&c->lock);
		batch = claim_all(c, rq, REQUEUE_ROUND, &nrq, &more, &tail,
				  &mixed);
		if (batch && batch->bnext)
			c->herd = 1; /* later waiters join the herd */
		weft_unlock(&c->lock);
		for (int i = 0; i < nrq; i++)
			requeue(&rq[i]);
		/* One mutex (the rule): no second walk to sort the nodes
		   out by mutex, each a miss again at a thousand waiters. */
		if (batch && mixed)
			release_batch(batch);
		else if (batch)
			pass_chain(batch, tail);
	} while (more);
	return 0;
}

/* A fresh starting value for a process-shared sequence word.  A waiter
   that released the mutex but has not yet gone to sleep when a broadcast
   comes compares the word with the value it read; if the program then
   destroys the condvar and reuses the memory (memset to 0, or init again,
   as PTS pthread_cond_destroy/2-1 does), a fixed start value of 0 would
   be back in the word and that waiter would sleep forever.  Starting each
   condvar from a value that no other init is likely to produce (time,
   process and a counter mixed; never 0 or all ones, the usual fill
   bytes) leaves a 1 in 2^32 chance instead. */
static unsigned fresh_seq(void)
{
	static unsigned counter;
	struct timespec ts;
	unsigned v;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (unsigned)ts.tv_nsec * 2654435761u ^ (unsigned)ts.tv_sec ^
	    (unsigned)weft_self_pid() << 16 ^
	    __atomic_add_fetch(&counter, 0x9e3779b9u, __ATOMIC_RELAXED);
	return v == 0 || v == ~0u ? 1 : v;
}

int cond_init(struct wcond *c, unsigned attr)
{
	__builtin_memset(c, 0, sizeof *c);
	c->flags = attr & (CF_PSHARED | CF_MONOTONIC);
	if (c->flags & CF_PSHARED)
		c->seq = fresh_seq();
	return 0;
}

/* EBUSY while a thread is blocked; waits out threads that are leaving
   (timed out or cancelled), which unlink themselves within one hold of
   the internal lock.  It sleeps meanwhile (a private condvar's `seq`,
   moved on by each leaver that finds `shared_waiters` set): a leaver of
   lower priority may need the destroyer's CPU to get that far, which a
   yield loop under SCHED_FIFO would never give it.  Picked waiters are
   off the list already and do not touch the condvar any more.
   Process-shared: waiters cannot be counted without touching the
   condvar after a wake-up, so nothing is detected. */
int cond_destroy(struct wcond *c)
{
	if (c->flags & CF_PSHARED)
		return 0;
	for (;;) {
		int busy = 0, leaving = 0;
		unsigned gen = 0;
		weft_lock(&c->lock);
		if (list_foreign(c)) {
			weft_unlock(&c->lock);
			return EBUSY; /* another process's threads wait */
		}
		for (struct cnode *n = c->head; n; n = n->next) {
			if (state_of(n) == CN_LEAVING)
				leaving = 1;
			else
				busy = 1;
		}
		if (!busy && leaving) {
			c->shared_waiters = 1;
			gen = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
		}
		weft_unlock(&c->lock);
		if (busy)
			return EBUSY;
		if (!leaving)
			return 0;
		futex_wait((int *)&c->seq, (int)gen, WEFT_FUTEX_PRIVATE);
	}
}
