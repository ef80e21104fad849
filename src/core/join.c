/* Joining and detaching.  A join waits on glibc's tid word, which the
   kernel clears and futex-wakes when the thread has left the kernel
   (CLONE_CHILD_CLEARTID); the wake is a shared one, so the wait is too.

   pthread_join and its timed variants are cancellation points: the
   sleep is a cancellable futex wait (kernel/syscall_cp.h), and a joiner
   cancelled there gives its claim back, so the thread stays
   joinable (POSIX) and the joiner's cleanup handlers run as it unwinds.
   This file is compiled with -fexceptions for that (see the Makefile). */
#include <errno.h>

#include "cancel.h"
#include "kernel/futex.h"
#include "thread.h"

/* The state a claim moves to, from `s`; 0 when `s` cannot be claimed
   (detached, or another thread is joining it). */
static int claimed_state(int s)
{
	if (s == WEFT_JOINABLE)
		return WEFT_JOINING;
	if (s == WEFT_EXITING)
		return WEFT_JOINING_EXITED;
	return 0;
}

/* Claims the right to reclaim `t`.  Returns 0 or EINVAL. */
static int claim(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		int next = claimed_state(s);

		if (!next)
			return EINVAL;
		if (__atomic_compare_exchange_n(&t->join_state, &s, next, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0;
	}
}

/* Gives a claim back.  The thread may finish meanwhile (thread_finish
   moves JOINING to JOINING_EXITED), hence the loop; nobody else changes
   a claimed state. */
static void unclaim(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		int back = s == WEFT_JOINING_EXITED ? WEFT_EXITING
						    : WEFT_JOINABLE;

		if (__atomic_compare_exchange_n(&t->join_state, &s, back, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
}

/* Waits until the kernel has cleared the tid word, or the deadline.
   Only the futex sleep is a cancellation point (when `mode` says so): a
   thread that has already ended is joined even if a cancellation is
   pending, as in glibc. */
static int wait_dead(struct weft_thread *t, int clock,
		     const struct timespec *abstime, enum weft_join_mode mode)
{
	int tid;

	while ((tid = __atomic_load_n(t->tidp, __ATOMIC_ACQUIRE)) != 0) {
		long r;

		if (mode == WEFT_JOIN_TRY)
			return EBUSY;
		if (mode == WEFT_JOIN_WAIT)
			r = futex_wait_until_cp(t->tidp, tid, clock, abstime,
						WEFT_FUTEX_SHARED);
		else
			r = futex_wait_until(t->tidp, tid, clock, abstime,
					     WEFT_FUTEX_SHARED);
		if (r == -ETIMEDOUT || r == -EINVAL)
			return (int)-r;
	}
	return 0;
}

/* A claimed join being unwound by cancellation. */
struct join_claim {
	struct weft_thread *t;
	int armed;
};

static void join_unwound(struct join_claim *c)
{
	if (c->armed)
		unclaim(c->t);
}

/* Claims, then waits: a second joiner or a detach meanwhile gets EINVAL. */
static int claim_and_wait(struct weft_thread *t, enum weft_join_mode mode)
{
	struct join_claim c __attribute__((cleanup(join_unwound))) = {.t = t};
	int err;

	if ((err = claim(t)) != 0)
		return err;
	c.armed = 1;
	wait_dead(t, CLOCK_REALTIME, NULL, mode);
	c.armed = 0;
	return 0;
}

static int thread_join_deferred(struct weft_thread *t, void **result, int clock,
		const struct timespec *abstime, enum weft_join_mode mode)
{
	int err;

	if (t == weft_self())
		return EDEADLK;
	if (abstime || mode == WEFT_JOIN_TRY) {
		/* A join that may give up must not hold the claim while it
		   waits, or the thread could not tell it was abandoned. */
		if (__atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE) ==
		    WEFT_DETACHED)
			return EINVAL;
		if ((err = wait_dead(t, clock, abstime, mode)) != 0)
			return err;
		if ((err = claim(t)) != 0)
			return err;
	} else if ((err = claim_and_wait(t, mode)) != 0) {
		return err;
	}
	if (result)
		*result = t->result;
	thread_reclaim(t);
	return 0;
}

/* The asynchronous type is deferred meanwhile (core/cancel.h). */
int thread_join(struct weft_thread *t, void **result, int clock,
		const struct timespec *abstime, enum weft_join_mode mode)
{
	int was_async = cancel_defer_begin();
	int r = thread_join_deferred(t, result, clock, abstime, mode);

	cancel_defer_end(was_async);
	return r;
}

int thread_detach(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		int next;

		if (!claimed_state(s))
			return EINVAL;
		next = s == WEFT_EXITING ? WEFT_JOINING_EXITED : WEFT_DETACHED;
		if (__atomic_compare_exchange_n(&t->join_state, &s, next, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	/* Already finished: nobody else will reclaim it. */
	if (s == WEFT_EXITING)
		thread_reclaim(t);
	return 0;
}
