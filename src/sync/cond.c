/* Condition variables.  Two designs (docs/sync.md):

   Process-private: a FIFO list of waiter nodes, each on its waiter's
   stack with its own futex word.  signal/broadcast pick nodes under the
   small internal lock; a picked waiter then never touches the condvar
   again, so "broadcast, destroy, free" is safe.  When the signaller
   holds the waiter's mutex the waiter is requeued onto the mutex word
   instead of woken: it runs only once the signaller unlocks, and
   broadcast wakes nobody (no thundering herd).

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
	CN_CLAIMED = 3,	  /* being picked by a broadcast: wait for 2 */
	CN_LEAVING = 4,	  /* timed out or cancelled, unlinks itself */
};

struct cnode {
	struct cnode *prev, *next; /* list links, under the internal lock */
	struct cnode *bnext;	   /* a broadcast's batch, while CLAIMED */
	struct wmutex *mutex;
	char *tcb;		   /* the waiter's thread, see cond_signal */
	int state;
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

/* Whether picked waiters of `mx` should move to the mutex rather than
   wake: only when the caller holds it (so the word cannot be released
   between marking it contended and the requeue) and it is private, as
   the node words are (a requeue keeps the futex key's kind). */
static int should_requeue(struct wmutex *mx, int self)
{
	return mx && !(mx->kind & MK_PSHARED) &&
	       __atomic_load_n(&mx->owner, __ATOMIC_RELAXED) == self;
}

/* The node's word already holds its final state `val`; the node may be
   gone, so only its address is used (a stale futex call is harmless). */
static void release_node(int *word, int val, struct wmutex *mx, int requeue)
{
	if (requeue)
		futex_cmp_requeue(word, 0, 1, &mx->lock, val,
				  WEFT_FUTEX_PRIVATE);
	else
		futex_wake(word, 1, WEFT_FUTEX_PRIVATE);
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
	int res = 0;
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
	mutex_reacquire_after_wait(m, x.depth, 1);
	return res;
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
	mutex_reacquire_after_wait(x->m, x->depth, 1);
	if (st == CN_SIGNALLED)
		cond_signal(x->c);
}

static int cond_wait_deferred(struct wcond *c, struct wmutex *m, int clock,
	      const struct timespec *abstime)
{
	int r;

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
	/* A picked waiter takes the word as contended: others may have
	   been requeued onto it behind us. */
	mutex_reacquire_after_wait(m, x.depth, r == 0);
	return r;
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
	struct wmutex *mx = NULL;

	if (c->flags & CF_PSHARED)
		return shared_signal(c);
	if (!__atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
		return 0;
	weft_lock(&c->lock);
	/* Another process's waiters: out of reach, as a private futex wake
	   would be; nothing to do here. */
	for (n = list_foreign(c) ? NULL : c->head; n; ) {
		struct cnode *prev = n->prev, *next = n->next;
		struct wmutex *m = n->mutex;
		/* A waiter about to be cancelled would only have to pass
		   the signal on; give it to the next one directly. */
		if (host_cancel_requested(n->tcb)) {
			n = next;
			continue;
		}
		if (cas_state(&n->state, CN_WAITING, CN_SIGNALLED)) {
			list_unlink(c, prev, next);
			picked = n;
			mx = m;
			break;
		}
		n = next; /* LEAVING: it unlinks itself */
	}
	weft_unlock(&c->lock);
	if (picked) {
		int rq = should_requeue(mx, host_self_tid());
		if (rq)
			mutex_mark_contended(mx);
		release_node(&picked->state, CN_SIGNALLED, mx, rq);
	}
	return 0;
}

/* Moves a broadcast's batch to the mutex.  Holding the (private) mutex
   of the first waiter: every waiter of that mutex is requeued onto it
   and nobody runs until we unlock.  Not holding it: the word could be
   released between marking it and requeueing, stranding the requeued;
   so the others are requeued first and the first waiter is woken last.
   Until then it is CLAIMED and cannot take the mutex; when it does, as
   contended, its unlock finds the others queued behind it and wakes
   the next, and so on: still one runnable waiter at a time.  Waiters of
   another mutex (undefined behaviour in POSIX) are simply woken. */
static void release_batch(struct cnode *batch)
{
	struct wmutex *m0 = batch->mutex;
	int held = should_requeue(m0, host_self_tid());
	int chain = !held && !(m0->kind & MK_PSHARED);
	struct cnode *n = chain ? batch->bnext : batch;

	if (held)
		mutex_mark_contended(m0);
	while (n) {
		struct cnode *next = n->bnext;
		struct wmutex *mx = n->mutex;
		__atomic_store_n(&n->state, CN_BROADCAST, __ATOMIC_RELEASE);
		/* Wakes a waiter parked on CLAIMED, or moves/wakes it. */
		release_node(&n->state, CN_BROADCAST, mx,
			     mx == m0 && (held || chain));
		n = next;
	}
	if (chain) {
		__atomic_store_n(&batch->state, CN_BROADCAST, __ATOMIC_RELEASE);
		futex_wake(&batch->state, 1, WEFT_FUTEX_PRIVATE);
	}
}

int cond_broadcast(struct wcond *c)
{
	struct cnode *n, *batch = NULL, *last = NULL;

	if (c->flags & CF_PSHARED)
		return shared_signal(c);
	if (!__atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
		return 0;
	/* Claim every waiting node under the lock; CLAIMED keeps them on
	   their stacks while we walk the batch outside it. */
	weft_lock(&c->lock);
	for (n = list_foreign(c) ? NULL : c->head; n; ) {
		struct cnode *prev = n->prev, *next = n->next;
		if (cas_state(&n->state, CN_WAITING, CN_CLAIMED)) {
			list_unlink(c, prev, next);
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
