/* Semaphore storm (issue 17, the waiter's yield in sync/sem.c): more
   threads than CPUs on one private semaphore, which is empty most of the
   time, so that waiters keep finding nothing and wait:
   - PRODUCERS threads post UNITS units each, a little work between two
     posts (no sleeps);
   - STRICT consumers take units with sem_wait and count them;
   - TIMED consumers take them with sem_timedwait or sem_clockwait,
     deadlines 0 to 1 ms away, and time out all the time;
   - CANCELLABLE consumers take them with sem_wait and are cancelled in
     the middle of their wait, and replaced, up to CANCELS times.

   Checked:
   - nothing lost or made twice: the units taken, counted by every
     consumer (a cancelled one included, up to its cancellation), add
     up to PRODUCERS x UNITS exactly, and the semaphore is empty then;
   - no lost wake-up: the units are all taken (a sleeper left asleep
     with a unit there would stall the count; the watchdog then reports
     it), and after the stop every strict consumer, asleep in sem_wait,
     takes one of the STRICT stop tokens posted and returns;
   - every wait returned 0, or ETIMEDOUT for a timed one, nothing else;
   - a cancelled consumer ends with PTHREAD_CANCELED;
   - sem_destroy then succeeds (nobody registered as a waiter).
   Bounded: a fixed count of units and cancellations, a 120 s watchdog. */
#include <semaphore.h>
#include <stdint.h>
#include "harness.h"

enum {
	PRODUCERS = 3,
	UNITS = 20000,
	STRICT = 4,
	TIMED = 2,
	CANCELLABLE = 2,
	CANCELS = 300,
	WORK = 3000, /* loop steps between two posts */
};

static sem_t sem;
static long taken;	 /* units taken, all consumers (atomic) */
static int stop;	 /* set once every unit is taken (atomic) */
static long stop_tokens; /* taken by strict consumers after the stop */
static long timed_outs, bad_returns;

static void count_unit(void)
{
	__atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
}

static void *producer(void *arg)
{
	volatile unsigned spin = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	for (int i = 0; i < UNITS; i++) {
		for (int k = 0; k < WORK; k++)
			spin++;
		int r = sem_post(&sem);
		CHECK(r == 0, "sem_post: expected 0, got %d (%s)", r,
		      strerror(errno));
	}
	return NULL;
}

/* Takes units until the stop; then one stop token, and returns. */
static void *strict_consumer(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (;;) {
		if (sem_wait(&sem) != 0) {
			__atomic_fetch_add(&bad_returns, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&stop_tokens, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		count_unit();
	}
}

static void *timed_consumer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;

	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		seed = seed * 1103515245u + 12345u;
		long ns = (long)(seed >> 8) % 1000000;
		int r;
		if (seed & 1) {
			struct timespec ts = deadline_in(CLOCK_REALTIME, ns);
			r = sem_timedwait(&sem, &ts);
		} else {
			struct timespec ts = deadline_in(CLOCK_MONOTONIC, ns);
			r = sem_clockwait(&sem, CLOCK_MONOTONIC, &ts);
		}
		if (r == 0)
			count_unit();
		else if (errno == ETIMEDOUT)
			__atomic_fetch_add(&timed_outs, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&bad_returns, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Takes units until cancelled (in sem_wait, its only cancellation
   point: a unit it took is counted before it can be cancelled). */
static void *cancellable_consumer(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (;;) {
		if (sem_wait(&sem) == 0)
			count_unit();
		else
			__atomic_fetch_add(&bad_returns, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void start(pthread_t *t, void *(*fn)(void *), long arg)
{
	int r = pthread_create(t, NULL, fn, (void *)arg);

	REQUIRE(r == 0, "pthread_create: expected 0, got %d", r);
}

int main(void)
{
	pthread_t pt[PRODUCERS], st[STRICT], tt[TIMED], ct[CANCELLABLE];
	const long total = (long)PRODUCERS * UNITS;
	long cancelled = 0;
	int value = -1, r;

	if (!getenv("WEFT_TEST_GLIBC")) {
		WEFT_REQUIRE();
		REQUIRE_SERVED(sem_wait);
		REQUIRE_SERVED(sem_post);
	}
	harness_watchdog("t_sem_storm", 120);
	REQUIRE(sem_init(&sem, 0, 0) == 0, "sem_init: %s", strerror(errno));
	for (int i = 0; i < STRICT; i++)
		start(&st[i], strict_consumer, i);
	for (int i = 0; i < TIMED; i++)
		start(&tt[i], timed_consumer, i);
	for (int i = 0; i < CANCELLABLE; i++)
		start(&ct[i], cancellable_consumer, i);
	for (int i = 0; i < PRODUCERS; i++)
		start(&pt[i], producer, i);

	/* Cancel and replace consumers while the units flow. */
	for (int i = 0; i < CANCELS &&
			__atomic_load_n(&taken, __ATOMIC_RELAXED) < total * 9 / 10;
	     i++) {
		void *res;
		int k = i % CANCELLABLE;

		pthread_cancel(ct[k]);
		r = pthread_join(ct[k], &res);
		CHECK(r == 0 && res == PTHREAD_CANCELED,
		      "cancelled consumer: expected join 0 and PTHREAD_CANCELED, "
		      "got %d and %p", r, res);
		cancelled++;
		start(&ct[k], cancellable_consumer, k);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	/* Every unit is taken, or the watchdog reports a stall. */
	while (__atomic_load_n(&taken, __ATOMIC_ACQUIRE) < total)
		sched_yield();
	for (int i = 0; i < CANCELLABLE; i++) {
		pthread_cancel(ct[i]);
		pthread_join(ct[i], NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < TIMED; i++)
		pthread_join(tt[i], NULL);
	CHECK(__atomic_load_n(&taken, __ATOMIC_RELAXED) == total,
	      "units taken: expected %ld, got %ld", total, taken);
	CHECK(sem_getvalue(&sem, &value) == 0 && value == 0,
	      "value once all units were taken: expected 0, got %d", value);
	for (int i = 0; i < STRICT; i++)
		REQUIRE(sem_post(&sem) == 0, "sem_post: %s", strerror(errno));
	for (int i = 0; i < STRICT; i++)
		pthread_join(st[i], NULL);
	CHECK(stop_tokens == STRICT,
	      "stop tokens taken: expected %d, got %ld", STRICT, stop_tokens);
	CHECK(sem_getvalue(&sem, &value) == 0 && value == 0,
	      "value at the end: expected 0, got %d", value);
	CHECK(bad_returns == 0,
	      "waits that returned neither 0 nor ETIMEDOUT: expected 0, got %ld",
	      bad_returns);
	r = sem_destroy(&sem);
	CHECK(r == 0, "sem_destroy: expected 0, got %d (%s)", r, strerror(errno));
	printf("t_sem_storm: %ld units taken, %ld timeouts, %ld consumers "
	       "cancelled\n", taken, timed_outs, cancelled);
	TEST_DONE();
}
