/* Issue 17: many threads on one mutex with a short critical section,
   more threads than CPUs: the case where a waiter's futex_wait finds
   the word changed (EAGAIN) nearly every time, because the holder
   releases and takes the mutex back before the waiter's system call
   reaches the kernel (bench/RESULTS.md, 2026-11-29-pairs: 711,557 of
   712,489 waits in such a run).  Such a waiter marks the word and waits
   again while it stays counted as a sleeper, and takes a free word with
   that mark (src/sync/mutex.c, retake_or_mark; 2026-12-01-counted).

   32 threads take one mutex ENTRIES times each; inside, a flag says
   someone is in and a counter in the mutex's cache line (the layout of
   Figure 3's benchmark) is advanced with work between.  A quarter of
   the threads use pthread_mutex_timedlock with a deadline far ahead,
   so the same path runs with a deadline.  Checks: every entry counted,
   no two threads inside at once, every timed lock 0, the mutex free at
   the end with its sleeper count (__nusers, weft's for a private
   mutex) back at 0, which a wait path that leaves without uncounting
   itself would break; then the same with an error-checking mutex, whose owner
   checks would catch a take that skipped the owner.  Bounded by counts
   and a 60 s alarm, which reports a hang (a lost wake-up) as a
   failure. */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define THREADS 32
#define ENTRIES 100000

static struct {
	pthread_mutex_t m;
	volatile long counter; /* in the mutex's line, as in Figure 3 */
	volatile int inside;
} region __attribute__((aligned(64)));

static volatile int overlaps, timed_errors, unlock_errors;
static pthread_barrier_t start;
static struct timespec far_deadline;

static void *worker(void *arg)
{
	int timed = (int)(long)arg % 4 == 0;

	CHECK_WEFT_THREAD();
	pthread_barrier_wait(&start);
	for (int i = 0; i < ENTRIES; i++) {
		if (timed) {
			int r = pthread_mutex_timedlock(&region.m, &far_deadline);

			if (r != 0) {
				__atomic_fetch_add(&timed_errors, 1, __ATOMIC_RELAXED);
				continue;
			}
		} else {
			pthread_mutex_lock(&region.m);
		}
		if (region.inside)
			overlaps++;
		region.inside = 1;
		for (int k = 0; k < 20; k++)
			region.counter++;
		region.inside = 0;
		if (pthread_mutex_unlock(&region.m) != 0)
			__atomic_fetch_add(&unlock_errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void run(const char *kind, int type)
{
	pthread_mutexattr_t a;
	pthread_t t[THREADS];

	CHECK_EQ(pthread_mutexattr_init(&a), 0);
	CHECK_EQ(pthread_mutexattr_settype(&a, type), 0);
	CHECK_EQ(pthread_mutex_init(&region.m, &a), 0);
	CHECK_EQ(pthread_mutexattr_destroy(&a), 0);
	region.counter = 0;
	overlaps = timed_errors = unlock_errors = 0;
	CHECK_EQ(clock_gettime(CLOCK_REALTIME, &far_deadline), 0);
	far_deadline.tv_sec += 3600;
	pthread_barrier_init(&start, NULL, THREADS);
	for (long i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	CHECK(region.counter == 20L * THREADS * ENTRIES,
	      "%s: expected %ld increments, got %ld", kind,
	      20L * THREADS * ENTRIES, region.counter);
	CHECK(overlaps == 0, "%s: expected no overlap, got %d", kind, overlaps);
	CHECK(timed_errors == 0, "%s: expected every timed lock 0, got %d failures",
	      kind, timed_errors);
	CHECK(unlock_errors == 0, "%s: expected every unlock 0, got %d failures",
	      kind, unlock_errors);
	CHECK(region.m.__data.__nusers == 0,
	      "%s: expected the sleeper count (__nusers) back at 0, got %#x",
	      kind, region.m.__data.__nusers);
	CHECK_EQ(pthread_mutex_trylock(&region.m), 0);
	CHECK_EQ(pthread_mutex_unlock(&region.m), 0);
	CHECK_EQ(pthread_mutex_destroy(&region.m), 0);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_timedlock);
	harness_watchdog("t_mutex_crowd", 60);
	run("normal mutex", PTHREAD_MUTEX_NORMAL);
	run("error-checking mutex", PTHREAD_MUTEX_ERRORCHECK);
	TEST_DONE();
}
