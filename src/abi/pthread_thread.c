/* Thread life-cycle entry points: pthread_create, _exit, _join (and the
   try/timed/clock variants), _detach, _self (pthread_equal is in pthread_equal.c). */
#include <errno.h>
#include <time.h>

#include "core/cancel.h"
#include "export.h"

WEFT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
			       void *(*start)(void *), void *arg)
{
	if (!weft_serving() || !weft_threads_ready())
		return host_real.pthread_create(th, attr, start, arg);
	weft_self(); /* a glibc-made creator is adopted first */
	return thread_create(th, attr, start, arg);
}

/* Unwinds the thread (docs/cancel.md), running cleanup handlers and
   C++ destructors, to its bottom buffer: weft's in cancel_run,
   glibc's for the main thread (whose start-up frame then keeps the
   process alive while other threads run) and glibc-made threads. */
WEFT_EXPORT void pthread_exit(void *value)
{
	if (!weft_serving())
		host_real.pthread_exit(value);
	weft_self(); /* the main thread's keys need its descriptor */
	cancel_exit(value);
}

/* Common part of the join family. */
static int join(pthread_t th, void **res, int clock,
		const struct timespec *abstime, int try_only)
{
	struct target x = target_of(th);

	if (x.err)
		return x.err;
	if (!x.t || x.origin == WEFT_ORIGIN_ADOPTED) {
		if (try_only)
			return host_real.pthread_tryjoin_np(x.glibc, res);
		if (abstime)
			return host_real.pthread_clockjoin_np(x.glibc, res,
							      clock, abstime);
		return host_real.pthread_join(x.glibc, res);
	}
	return thread_join(x.t, res, clock, abstime,
			   try_only ? WEFT_JOIN_TRY : WEFT_JOIN_WAIT);
}

WEFT_EXPORT int pthread_join(pthread_t th, void **res)
{
	if (!weft_serving())
		return host_real.pthread_join(th, res);
	return join(th, res, CLOCK_REALTIME, NULL, 0);
}

WEFT_EXPORT int pthread_tryjoin_np(pthread_t th, void **res)
{
	if (!weft_serving())
		return host_real.pthread_tryjoin_np(th, res);
	return join(th, res, CLOCK_REALTIME, NULL, 1);
}

WEFT_EXPORT int pthread_clockjoin_np(pthread_t th, void **res,
				     clockid_t clock,
				     const struct timespec *abstime)
{
	if (!weft_serving())
		return host_real.pthread_clockjoin_np(th, res, clock, abstime);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000))
		return EINVAL;
	return join(th, res, clock, abstime, 0);
}

WEFT_EXPORT int pthread_timedjoin_np(pthread_t th, void **res,
				     const struct timespec *abstime)
{
	if (!weft_serving())
		return host_real.pthread_timedjoin_np(th, res, abstime);
	return pthread_clockjoin_np(th, res, CLOCK_REALTIME, abstime);
}

WEFT_EXPORT int pthread_detach(pthread_t th)
{
	struct target x;

	if (!weft_serving())
		return host_real.pthread_detach(th);
	x = target_of(th);
	if (x.err)
		return x.err;
	if (!x.t || x.origin == WEFT_ORIGIN_ADOPTED)
		return host_real.pthread_detach(x.glibc);
	return thread_detach(x.t);
}

WEFT_EXPORT pthread_t pthread_self(void)
{
	if (!weft_serving())
		return host_real.pthread_self();
	return (pthread_t)weft_self()->handle;
}
