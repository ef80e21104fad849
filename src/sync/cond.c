/* Condition variables.  Two designs (docs/sync.md):

   Process-private: a FIFO list of waiter nodes, each on its waiter's
   stack with its own futex word.  signal/broadcast pick nodes under the
   small internal lock; a picked waiter then never touches the condvar
   again, so "broadcast, destroy, free" is safe.

   Nobody is woken into a held mutex.  When the signaller holds the
   waiter's mutex, the picked waiters are hung in the mutex and woken by
   whoever releases it next (FreeBSD libthr's deferred wake-up, kept in
   the mutex rather than the thread; no system call until then).  A
   broadcast's waiters form a chain: only the first is woken; it takes
   the rest over and wakes the next when it releases the mutex in turn,
   so one waiter at a time runs and none wakes just to block on the
   mutex (the wait morphing that requeueing gives, without the
   broadcaster making a system call per waiter).

   Process-shared: nodes on stacks cannot be reached from another
   process, so waiters sleep on one sequence word; signal and broadcast
   both advance it and wake every sleeper (spurious wake-ups, never a
   lost one). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include "../core/cancel.h"
#include "cond.h"
#include "../core/thread.h"

/* A waiter node's state, its futex word. */
enum {
	CN_WAITING = 0,	  /* linked, asleep or about to be */
	CN_SIGNALLED = 1, /* picked by pthread_cond_signal */
	CN_BROADCAST = 2, /* picked by pthread_cond_broadcast */
	CN_CLAIMED = 3,	  /* picked, waking deferred: wait for `kind` */
	CN_LEAVING = 4,	  /* timed out or cancelled, unlinks itself */
};

struct cnode {
	struct cnode *prev, *next; /* list links, under the internal lock */
	/* While CLAIMED: the next picked waiter of the same chain (NULL:
	   the last), and, in a chain's first node, the chain's last node.
	   A released waiter takes the rest of its chain over from them. */
	struct cnode *bnext, *btail;
	struct wmutex *mutex;
	char *tcb;		   /* the waiter's thread, see cond_signal */
	int state;
	int kind;		   /* CN_SIGNALLED or CN_BROADCAST once picked */
};

/* The waiter's context, for the cleanup run when cancellation unwinds
   the wait. */
struct wait_ctx {
	struct wcond *c;
	struct wmutex *m;
	struct cnode node;
	unsigned depth;
	int armed; /* mutex released, wait in progress */
};

static int cas_state(int *p, int expect, int val)
{
	return __atomic_compare_exchange_n(p, &expect, val, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
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

static void list_append(struct wcond *c, struct cnode *n)
{
	n->next = NULL;
	n->prev = c->tail;
	if (c->tail)
		c->tail->next = n;
	else
		__atomic_store_n(&c->head, n, __ATOMIC_RELAXED);
	c->tail = n;
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

static void unlink_self(struct wcond *c, struct cnode *n)
{
	weft_lock(&c->lock);
	list_unlink(c, n->prev, n->next);
	weft_unlock(&c->lock);
}

/* ------------------------------------------------------- waking a node */

/* Whether the caller holds `mx`: then the waiters it picks would only
   block on it, so their wake-up is deferred to its release. */
static int holds(struct wmutex *mx, int self)
{
	return mx && __atomic_load_n(&mx->owner, __ATOMIC_RELAXED) == self;
}

/* Releases the first waiter of a chain of picked (CLAIMED) nodes, linked
   through bnext; the waiter takes the rest over.  The node may be gone
   once its state is stored, so only its address is used after that (a
   stale futex wake is harmless). */
void cond_release_chain(struct cnode *head)
{
	__atomic_store_n(&head->state, head->kind, __ATOMIC_RELEASE);
	futex_wake(&head->state, 1, WEFT_FUTEX_PRIVATE);
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
		cond_release_chain(head);
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
   their mutex, else its first waiter is woken now. */
static void pass_chain(struct cnode *head, struct cnode *tail)
{
	tail->bnext = NULL;
	head->btail = tail;
	if (holds(head->mutex, host_self_tid()))
		defer_or_release(head);
	else
		cond_release_chain(head);
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

/* Waits on the node's own word until it is picked, times out, or the
   deadline passes.  Returns 0 (picked) or ETIMEDOUT (left the list). */
static int node_sleep(struct wait_ctx *x, int clock,
		      const struct timespec *abstime)
{
	struct cnode *n = &x->node;

	for (;;) {
		int st = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);
		if (st == CN_SIGNALLED || st == CN_BROADCAST)
			return 0;
		if (st == CN_CLAIMED) {
			/* A broadcast is finishing with us: a brief wait,
			   and it may no longer be cancelled or time out. */
			futex_wait(&n->state, CN_CLAIMED, WEFT_FUTEX_PRIVATE);
			continue;
		}
		long k = futex_wait_until_cp(&n->state, CN_WAITING, clock,
					     abstime, WEFT_FUTEX_PRIVATE);
		if (k == -ETIMEDOUT &&
		    cas_state(&n->state, CN_WAITING, CN_LEAVING)) {
			unlink_self(x->c, n);
			return ETIMEDOUT;
		}
	}
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
	if (cas_state(&n->state, CN_WAITING, CN_LEAVING)) {
		unlink_self(x->c, n);
		mutex_reacquire_after_wait(x->m, x->depth, 0);
		return;
	}
	while ((st = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE)) ==
	       CN_CLAIMED)
		futex_wait(&n->state, CN_CLAIMED, WEFT_FUTEX_PRIVATE);
	mutex_reacquire_after_wait(x->m, x->depth, 0);
	adopt_chain(n);
	if (st == CN_SIGNALLED)
		cond_signal(x->c);
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
	x.node.state = CN_WAITING;
	x.node.bnext = NULL;
	weft_lock(&c->lock);
	if (list_foreign(c)) {
		/* Joining would link our stack into a list another process
		   walks, and theirs into ours. */
		weft_unlock(&c->lock);
		x.armed = 0;
		return EINVAL;
	}
	c->pid = weft_self_pid();
	list_append(c, &x.node);
	weft_unlock(&c->lock);
	x.depth = mutex_release_for_wait(m);
	x.armed = 1;
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
		if (cas_state(&n->state, CN_WAITING, CN_CLAIMED)) {
			list_unlink(c, prev, next);
			n->kind = CN_SIGNALLED;
			picked = n;
			break;
		}
		n = next; /* LEAVING: it unlinks itself */
	}
	weft_unlock(&c->lock);
	if (picked)
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

int cond_broadcast(struct wcond *c)
{
	struct cnode *n, *batch = NULL, *last = NULL;

	if (c->flags & CF_PSHARED)
		return shared_signal(c);
	if (!__atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
		return 0;
	/* Claim every waiting node under the lock; CLAIMED keeps each on
	   its waiter's stack until its turn to be woken. */
	weft_lock(&c->lock);
	for (n = list_foreign(c) ? NULL : c->head; n; ) {
		struct cnode *prev = n->prev, *next = n->next;
		if (cas_state(&n->state, CN_WAITING, CN_CLAIMED)) {
			list_unlink(c, prev, next);
			n->kind = CN_BROADCAST;
			n->bnext = NULL;
			if (last)
				last->bnext = n;
			else
				batch = n;
			last = n;
		}
		n = next;
	}
	weft_unlock(&c->lock);

	if (batch)
		release_batch(batch);
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
   the internal lock.  Picked waiters are off the list already and do
   not touch the condvar any more.  Process-shared: waiters cannot be
   counted without touching the condvar after a wake-up, so nothing is
   detected. */
int cond_destroy(struct wcond *c)
{
	if (c->flags & CF_PSHARED)
		return 0;
	for (;;) {
		int busy = 0, leaving = 0;
		weft_lock(&c->lock);
		if (list_foreign(c)) {
			weft_unlock(&c->lock);
			return EBUSY; /* another process's threads wait */
		}
		for (struct cnode *n = c->head; n; n = n->next) {
			if (__atomic_load_n(&n->state, __ATOMIC_ACQUIRE) ==
			    CN_LEAVING)
				leaving = 1;
			else
				busy = 1;
		}
		weft_unlock(&c->lock);
		if (busy)
			return EBUSY;
		if (!leaving)
			return 0;
		sched_yield();
	}
}
