/* Joins that may give up, signals to threads, and the end of a thread
   through pthread_exit and pthread_cancel:
   - pthread_tryjoin_np: EBUSY while running, 0 after;
   - pthread_timedjoin_np / pthread_clockjoin_np: ETIMEDOUT at a past or
     near deadline on both clocks, EINVAL for a bad clock or nanoseconds,
     and the thread stays joinable after a timeout;
   - pthread_kill: signal 0 as a liveness probe, a real signal delivered
     to that very thread, EINVAL for a bad signal, ESRCH once joined;
   - pthread_exit runs cleanup handlers (innermost first) and gives its
     value to the joiner; pthread_cancel of a thread blocked in read()
     runs its handler and yields PTHREAD_CANCELED. */
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

static int gate[2]; /* a thread blocks reading this until we write */

static void *blocked(void *arg)
{
	char c;

	CHECK_WEFT_THREAD();
	if (read(gate[0], &c, 1) != 1)
		return NULL;
	return arg;
}

static volatile pid_t got_sig_tid;
static void on_usr1(int s)
{
	(void)s;
	got_sig_tid = gettid();
}

static pid_t blocked_tid;
static void *blocked_report(void *arg)
{
	blocked_tid = gettid();
	return blocked(arg);
}

static int order[4], norder;
static void note(void *p)
{
	order[norder++] = (int)(long)p;
}

static void *exits_in_cleanup(void *arg)
{
	(void)arg;
	pthread_cleanup_push(note, (void *)1);
	pthread_cleanup_push(note, (void *)2);
	pthread_exit((void *)55);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

static int cancel_cleanup_ran;
static void cancel_cleanup(void *p)
{
	(void)p;
	cancel_cleanup_ran = 1;
}

static int cancel_gate[2];
static void *cancellable(void *arg)
{
	char c;

	(void)arg;
	pthread_cleanup_push(cancel_cleanup, NULL);
	for (;;)
		if (read(cancel_gate[0], &c, 1) <= 0) /* a cancellation point */
			break;
	pthread_cleanup_pop(0);
	return NULL;
}

static struct timespec in_ms(clockid_t clk, long ms)
{
	struct timespec ts;

	long long ns;

	clock_gettime(clk, &ts);
	ns = ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
	ts.tv_sec = ns / 1000000000LL;
	ts.tv_nsec = ns % 1000000000LL;
	return ts;
}

static double elapsed_ms(struct timespec a, struct timespec b)
{
	return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(void)
{
	pthread_t t;
	void *r = NULL;
	struct timespec ts, t0, t1;

	WEFT_REQUIRE();
	REQUIRE(pipe(gate) == 0, "pipe");

	/* try / timed / clock joins on a running thread */
	CHECK_ERR(pthread_create(&t, NULL, blocked, (void *)9), 0);
	CHECK_ERR(pthread_tryjoin_np(t, &r), EBUSY);
	ts = in_ms(CLOCK_REALTIME, -1000); /* already past */
	CHECK_ERR(pthread_timedjoin_np(t, &r, &ts), ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ts = in_ms(CLOCK_MONOTONIC, 50);
	CHECK_ERR(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(elapsed_ms(t0, t1) >= 49.0,
	      "clockjoin gave up after %.1f ms, expected >= 50", elapsed_ms(t0, t1));
	ts = in_ms(CLOCK_REALTIME, 20);
	CHECK_ERR(pthread_clockjoin_np(t, &r, CLOCK_REALTIME, &ts), ETIMEDOUT);
	ts = in_ms(CLOCK_MONOTONIC, 20);
	CHECK_ERR(pthread_clockjoin_np(t, &r, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	ts.tv_nsec = 1000000000L;
	CHECK_ERR(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &ts), EINVAL);
	ts.tv_nsec = -1;
	CHECK_ERR(pthread_timedjoin_np(t, &r, &ts), EINVAL);
	/* still joinable after all that: release it and join for real */
	CHECK_EQ(write(gate[1], "x", 1), 1);
	ts = in_ms(CLOCK_REALTIME, 10000);
	CHECK_ERR(pthread_timedjoin_np(t, &r, &ts), 0);
	CHECK(r == (void *)9, "timedjoin result: expected 9, got %p", r);
	CHECK_ERR(pthread_tryjoin_np(t, &r), ESRCH);

	/* tryjoin succeeds once the thread has ended */
	CHECK_ERR(pthread_create(&t, NULL, blocked, (void *)4), 0);
	CHECK_EQ(write(gate[1], "x", 1), 1);
	do
		r = NULL;
	while (pthread_tryjoin_np(t, &r) == EBUSY && (sched_yield(), 1));
	CHECK(r == (void *)4, "tryjoin result: expected 4, got %p", r);

	/* pthread_kill */
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, NULL);
		CHECK_ERR(pthread_create(&t, NULL, blocked_report, NULL), 0);
		while (!__atomic_load_n(&blocked_tid, __ATOMIC_ACQUIRE))
			sched_yield();
		CHECK_ERR(pthread_kill(t, 0), 0);
		CHECK_ERR(pthread_kill(t, SIGUSR1), 0);
		CHECK_ERR(pthread_kill(t, 12345), EINVAL);
		CHECK_ERR(pthread_kill(t, -1), EINVAL);
		CHECK_EQ(write(gate[1], "x", 1), 1);
		CHECK_ERR(pthread_join(t, NULL), 0);
		/* the handler ran in the target thread, before it returned */
		CHECK_EQ(got_sig_tid, blocked_tid);
		CHECK_ERR(pthread_kill(t, 0), ESRCH);
		CHECK_ERR(pthread_kill(t, SIGUSR1), ESRCH);
	}

	/* pthread_exit: cleanup handlers innermost first, value joined */
	CHECK_ERR(pthread_create(&t, NULL, exits_in_cleanup, NULL), 0);
	CHECK_ERR(pthread_join(t, &r), 0);
	CHECK(r == (void *)55, "pthread_exit value: expected 55, got %p", r);
	CHECK_EQ(norder, 2);
	CHECK_EQ(order[0], 2);
	CHECK_EQ(order[1], 1);

	/* pthread_cancel of a thread blocked in read() */
	REQUIRE(pipe(cancel_gate) == 0, "pipe");
	CHECK_ERR(pthread_create(&t, NULL, cancellable, NULL), 0);
	CHECK_ERR(pthread_cancel(t), 0);
	CHECK_ERR(pthread_join(t, &r), 0);
	CHECK(r == PTHREAD_CANCELED, "cancelled thread's value: expected "
				     "PTHREAD_CANCELED, got %p", r);
	CHECK_EQ(cancel_cleanup_ran, 1);
	CHECK_ERR(pthread_cancel(t), ESRCH);
	TEST_DONE();
}
