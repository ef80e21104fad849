/* Joining and detaching.  A join waits on glibc's tid word, which the
   kernel clears and futex-wakes when the thread has left the kernel
   (CLONE_CHILD_CLEARTID); the wake is a shared one, so the wait is too. */
#include <errno.h>

#include "../kernel/futex.h"
#include "thread.h"

/* Claims the right to reclaim `t`.  Returns 0 or EINVAL (detached, or
   another thread is joining it). */
static int claim(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		if (s == WEFT_DETACHED || s == WEFT_JOINING)
			return EINVAL;
		if (__atomic_compare_exchange_n(&t->join_state, &s,
						WEFT_JOINING, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0;
	}
}

/* Waits until the kernel has cleared the tid word, or the deadline. */
static int wait_dead(struct weft_thread *t, int clock,
		     const struct timespec *abstime, int try_only)
{
	int tid;

	while ((tid = __atomic_load_n(t->tidp, __ATOMIC_ACQUIRE)) != 0) {
		long r;

		if (try_only)
			return EBUSY;
		r = futex_wait_until(t->tidp, tid, clock, abstime,
				     WEFT_FUTEX_SHARED);
		if (r == -ETIMEDOUT || r == -EINVAL)
			return (int)-r;
	}
	return 0;
}

int thread_join(struct weft_thread *t, void **result, int clock,
		const struct timespec *abstime, int try_only)
{
	int err;

	if (t == weft_self())
		return EDEADLK;
	if (abstime || try_only) {
		/* A join that may give up must not hold the claim while it
		   waits, or the thread could not tell it was abandoned. */
		if (__atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE) ==
		    WEFT_DETACHED)
			return EINVAL;
		if ((err = wait_dead(t, clock, abstime, try_only)) != 0)
			return err;
		if ((err = claim(t)) != 0)
			return err;
	} else {
		if ((err = claim(t)) != 0)
			return err;
		wait_dead(t, clock, NULL, 0);
	}
	if (result)
		*result = t->result;
	thread_reclaim(t);
	return 0;
}

int thread_detach(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		int next;

		if (s == WEFT_DETACHED || s == WEFT_JOINING)
			return EINVAL;
		next = s == WEFT_EXITING ? WEFT_JOINING : WEFT_DETACHED;
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
