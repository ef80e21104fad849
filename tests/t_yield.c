/* sched_yield, pthread_yield and thrd_yield really give the CPU away:
   two SCHED_FIFO threads of equal priority share one CPU; the first
   spins calling the yield until the second has run.  Without a real
   yield the second never gets that CPU (FIFO threads are not preempted
   by equals) and the first gives up after 2 s.  Also
   pthread_setconcurrency/getconcurrency: the level is kept, negative is
   EINVAL. */
#include <threads.h>
#include <time.h>
#include "t_sched_worker.h"

static int (*yield_fn)(void);
static int which; /* 0 sched_yield, 1 pthread_yield, 2 thrd_yield */
static int spinning, other_ran;
static long yields;
static int timed_out; /* the yielder gave up before the other ran */

static int do_yield(void)
{
	switch (which) {
	case 0:
		return sched_yield();
	case 1:
		return yield_fn();
	default:
		thrd_yield();
		return 0;
	}
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *yielder(void *arg)
{
	long long end = now_ns() + 2000000000LL;

	(void)arg;
	CHECK_WEFT_THREAD();
	yields = 0;
	__atomic_store_n(&spinning, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&other_ran, __ATOMIC_ACQUIRE) && now_ns() < end) {
		CHECK_EQ(do_yield(), 0);
		yields++;
	}
	timed_out = !__atomic_load_n(&other_ran, __ATOMIC_ACQUIRE);
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	__atomic_store_n(&other_ran, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void one_round(int w)
{
	static const char *const names[] = {"sched_yield", "pthread_yield",
					    "thrd_yield"};
	struct sched_param sp = {.sched_priority = 1};
	pthread_attr_t a;
	pthread_t y, o;
	cpu_set_t cpu0;
	int err;

	which = w;
	spinning = other_ran = 0;
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof cpu0, &cpu0);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	err = pthread_create(&y, &a, yielder, NULL);
	REQUIRE(err != EPERM, "SCHED_FIFO refused (EPERM): this test needs "
			      "root or CAP_SYS_NICE");
	REQUIRE(err == 0, "create: %s", strerror(err));
	while (!__atomic_load_n(&spinning, __ATOMIC_ACQUIRE))
		sched_yield();
	CHECK_ERR(pthread_create(&o, &a, other, NULL), 0);
	pthread_join(y, NULL);
	pthread_join(o, NULL);
	pthread_attr_destroy(&a);
	CHECK(!timed_out, "%s did not let an equal FIFO thread run in 2 s "
			 "(%ld calls)", names[w], yields);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(sched_yield);
	REQUIRE_SERVED(pthread_yield);
	REQUIRE_SERVED(thrd_yield);
	REQUIRE_SERVED(pthread_setconcurrency);
	REQUIRE_SERVED(pthread_getconcurrency);
	yield_fn = (int (*)(void))dlsym(RTLD_DEFAULT, "pthread_yield");

	for (int w = 0; w < 3; w++)
		one_round(w);

	CHECK_EQ(pthread_getconcurrency(), 0);
	CHECK_ERR(pthread_setconcurrency(-1), EINVAL);
	CHECK_EQ(pthread_getconcurrency(), 0);
	CHECK_ERR(pthread_setconcurrency(7), 0);
	CHECK_EQ(pthread_getconcurrency(), 7);
	CHECK_ERR(pthread_setconcurrency(0), 0);
	CHECK_EQ(pthread_getconcurrency(), 0);
	TEST_DONE();
}
