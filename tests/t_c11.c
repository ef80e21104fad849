/* C11 threads on weft: thrd_create/join with int results (negative
   too), thrd_exit from a nested call, thrd_detach, thrd_current and
   thrd_equal, thrd_yield, thrd_sleep (full sleep, interruption by a
   signal with the remaining time, invalid duration). */
#include <signal.h>
#include <threads.h>
#include <time.h>
#include "harness.h"

static int origin_in_thread = -1;
static thrd_t seen_current;

static int returns_arg(void *arg)
{
	origin_in_thread = weft_self_origin ? weft_self_origin() : -1;
	seen_current = thrd_current();
	return (int)(long)arg;
}

static int deep_exit(int n)
{
	if (n == 0)
		thrd_exit(-42);
	if (n > 100)
		return 0;
	return deep_exit(n - 1) + 1;
}

static int exits(void *arg)
{
	(void)arg;
	return deep_exit(5) + 7; /* thrd_exit: never returns */
}

static volatile int detached_ran;
static int detached(void *arg)
{
	(void)arg;
	__atomic_store_n(&detached_ran, 1, __ATOMIC_RELEASE);
	return 0;
}

static void on_usr1(int s)
{
	(void)s;
}

static volatile int sleeper_done, sleeper_ret = 99;
static struct timespec sleeper_rem;
static int sleeper(void *arg)
{
	struct timespec d = {5, 0};

	(void)arg;
	sleeper_ret = thrd_sleep(&d, &sleeper_rem);
	__atomic_store_n(&sleeper_done, 1, __ATOMIC_RELEASE);
	return 0;
}

int main(void)
{
	thrd_t t;
	int res = 0;
	struct timespec d, t0, t1;

	WEFT_REQUIRE();
	CHECK_EQ(thrd_create(&t, returns_arg, (void *)(long)-5), thrd_success);
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, -5);
	CHECK_EQ(origin_in_thread, WEFT_THREAD_CREATED);
	CHECK(thrd_equal(seen_current, t), "thrd_current in the thread != its handle");
	CHECK(!thrd_equal(thrd_current(), t), "main and a thread compare equal");
	CHECK_EQ(thrd_join(t, &res), thrd_error); /* already joined */

	CHECK_EQ(thrd_create(&t, exits, NULL), thrd_success);
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, -42);

	CHECK_EQ(thrd_create(&t, detached, NULL), thrd_success);
	CHECK_EQ(thrd_detach(t), thrd_success);
	while (!__atomic_load_n(&detached_ran, __ATOMIC_ACQUIRE))
		thrd_yield();

	/* thrd_sleep: the whole duration */
	d.tv_sec = 0;
	d.tv_nsec = 20 * 1000000L;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(thrd_sleep(&d, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >=
		      20 * 1000000L,
	      "thrd_sleep(20 ms) returned early");
	/* an invalid duration */
	d.tv_nsec = 1000000000L;
	CHECK(thrd_sleep(&d, NULL) < -1, "thrd_sleep with tv_nsec = 1e9: "
					 "expected a value below -1");

	/* interrupted by a signal: -1 and the time left */
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_usr1; /* no SA_RESTART */
		sigaction(SIGUSR1, &sa, NULL);
		CHECK_EQ(thrd_create(&t, sleeper, NULL), thrd_success);
		/* Signal until the sleeper reports back; a signal that lands
		   before the sleep starts is simply handled. */
		while (!__atomic_load_n(&sleeper_done, __ATOMIC_ACQUIRE)) {
			pthread_kill(t, SIGUSR1);
			thrd_yield();
		}
		CHECK_EQ(thrd_join(t, NULL), thrd_success);
		CHECK_EQ(sleeper_ret, -1);
		CHECK(sleeper_rem.tv_sec > 0 && sleeper_rem.tv_sec <= 5,
		      "remaining time after interruption: expected 0 < s <= 5, "
		      "got %ld s", (long)sleeper_rem.tv_sec);
	}
	TEST_DONE();
}
