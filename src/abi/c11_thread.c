/* C11 <threads.h> thread functions.  They share weft's threads and
   handles with POSIX threads: thrd_t is a pthread_t.  (thrd_equal is in pthread_equal.c.) */
#include <errno.h>
#include <sched.h>
#include <threads.h>
#include <time.h>

#include "kernel/sched.h"
#include "c11_result.h"
#include "export.h"


WEFT_EXPORT int thrd_create(thrd_t *thr, thrd_start_t func, void *arg)
{
	pthread_t t;
	int err;

	if (!weft_serving() || !weft_threads_ready())
		return host_real.thrd_create(thr, func, arg);
	weft_self();
	err = thread_create_c11(&t, func, arg);
	if (err == 0)
		*thr = t;
	/* C11 has no "try again": running out of threads is out of memory. */
	return c11_result(err == EAGAIN ? ENOMEM : err);
}

WEFT_EXPORT int thrd_join(thrd_t thr, int *res)
{
	void *r;
	int err = pthread_join(thr, &r);

	if (err == 0 && res)
		*res = (int)(intptr_t)r;
	return c11_result(err);
}

WEFT_EXPORT int thrd_detach(thrd_t thr)
{
	return c11_result(pthread_detach(thr));
}

WEFT_EXPORT thrd_t thrd_current(void)
{
	return pthread_self();
}

WEFT_EXPORT void thrd_exit(int res)
{
	pthread_exit((void *)(intptr_t)res);
}

/* 0 when the whole time passed, -1 when a signal cut it short (*rem
   then holds what was left), another negative value on error. */
WEFT_EXPORT int thrd_sleep(const struct timespec *dur, struct timespec *rem)
{
	int err = clock_nanosleep(CLOCK_REALTIME, 0, dur, rem);

	return err == 0 ? 0 : err == EINTR ? -1 : -2;
}

WEFT_EXPORT void thrd_yield(void)
{
	sys_sched_yield();
}
