/* 100,000 detached threads, at most 64 in flight: the memory of detached
   threads must be reclaimed.  RSS and the number of mappings are
   measured after the first 10,000 threads and at the end. */
#include "harness.h"

#include <malloc.h>
#include <stdint.h>
#include <time.h>

#define TOTAL 100000
#define WARMUP 10000
#define INFLIGHT 64
#define RSS_LIMIT_KIB (16 * 1024)
#define MAPS_LIMIT 200
#define HEAP_LIMIT (1L << 20) /* bytes in use by malloc (glibc: ~0) */
#define TIME_LIMIT_S 45.0

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int inflight;		/* created and not yet finished */
static long finished;		/* threads that ran to their end */
static long sum;		/* sum of the arguments seen by threads */
static int not_weft;		/* threads whose origin was wrong */

static void *worker(void *arg)
{
	/* CHECK_WEFT_THREAD() in every thread, counted rather than
	   reported 100,000 times. */
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_fetch_add(&not_weft, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mu);
	sum += (long)(uintptr_t)arg;
	finished++;
	inflight--;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until every thread created so far has finished. */
static void wait_all(long created)
{
	pthread_mutex_lock(&mu);
	while (finished < created)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

int main(void)
{
	WEFT_REQUIRE();

	pthread_attr_t det;
	CHECK_ERR(pthread_attr_init(&det), 0);
	CHECK_ERR(pthread_attr_setdetachstate(&det, PTHREAD_CREATE_DETACHED), 0);

	struct weft_stats st0, st1;
	CHECK_EQ(weft_get_stats(&st0), 0);

	long rss_warm = 0, maps_warm = 0, created = 0;
	size_t heap_warm = 0;
	long expect_sum = 0;
	int max_inflight = 0;
	double t0 = now();

	for (long i = 0; i < TOTAL; i++) {
		pthread_mutex_lock(&mu);
		while (inflight >= INFLIGHT)
			pthread_cond_wait(&cv, &mu);
		inflight++;
		if (inflight > max_inflight)
			max_inflight = inflight;
		pthread_mutex_unlock(&mu);

		pthread_t t;
		int e;
		/* Half detached by attribute, half by pthread_detach. */
		if (i & 1) {
			e = pthread_create(&t, &det, worker, (void *)(uintptr_t)(i & 0xff));
		} else {
			e = pthread_create(&t, NULL, worker, (void *)(uintptr_t)(i & 0xff));
			if (e == 0) {
				int d = pthread_detach(t);
				/* The thread may already have finished: detach
				   must still succeed (it is not yet joined). */
				if (d != 0) {
					FAIL("pthread_detach #%ld: expected 0, got %d (%s)",
					     i, d, strerror(d));
					break;
				}
			}
		}
		if (e != 0) {
			FAIL("pthread_create #%ld: expected 0, got %d (%s)", i, e,
			     strerror(e));
			pthread_mutex_lock(&mu);
			inflight--;
			pthread_mutex_unlock(&mu);
			break;
		}
		created++;
		expect_sum += i & 0xff;

		if (created == WARMUP) {
			wait_all(created);
			rss_warm = rss_kib();
			maps_warm = maps_count();
			heap_warm = mallinfo2().uordblks;
		}
		if ((i & 1023) == 0 && now() - t0 > TIME_LIMIT_S) {
			FAIL("time limit: only %ld of %d threads in %.0f s", created,
			     TOTAL, TIME_LIMIT_S);
			break;
		}
	}
	wait_all(created);
	long rss_end = rss_kib();
	long maps_end = maps_count();
	size_t heap_end = mallinfo2().uordblks;
	double secs = now() - t0;

	CHECK_EQ(created, TOTAL);
	CHECK_EQ(finished, created);
	CHECK_EQ(sum, expect_sum);
	CHECK_EQ(not_weft, 0);
	CHECK(max_inflight <= INFLIGHT, "in flight: %d", max_inflight);

	printf("threads=%ld in %.2fs\n", created, secs);
	printf("rss after %d: %ld KiB, at end: %ld KiB, growth %ld KiB (limit %d)\n",
	       WARMUP, rss_warm, rss_end, rss_end - rss_warm, RSS_LIMIT_KIB);
	printf("maps lines after %d: %ld, at end: %ld (limit growth %d)\n",
	       WARMUP, maps_warm, maps_end, MAPS_LIMIT);
	printf("malloc in use (mallinfo2 uordblks) after %d: %zu, at end: %zu "
	       "(limit growth %ld)\n", WARMUP, heap_warm, heap_end, HEAP_LIMIT);
	CHECK(rss_warm > 0 && rss_end > 0, "rss unreadable");
	/* Nothing in this test keeps memory: heap growth is a leak (for
	   example of each thread's DTV or per-thread libc buffers). */
	CHECK((long)(heap_end - heap_warm) < HEAP_LIMIT,
	      "malloc'd bytes in use grew by %ld between thread %d and %d",
	      (long)(heap_end - heap_warm), WARMUP, TOTAL);
	CHECK(rss_end - rss_warm < RSS_LIMIT_KIB,
	      "RSS grew by %ld KiB between thread %d and %d (%ld -> %ld)",
	      rss_end - rss_warm, WARMUP, TOTAL, rss_warm, rss_end);
	CHECK(maps_end - maps_warm < MAPS_LIMIT,
	      "/proc/self/maps grew by %ld lines (%ld -> %ld)",
	      maps_end - maps_warm, maps_warm, maps_end);

	CHECK_EQ(weft_get_stats(&st1), 0);
	CHECK_EQ(st1.threads_created - st0.threads_created, created);
	printf("stats: created=%lu live=%lu mapped=%lu reused=%lu unmapped=%lu "
	       "malloc_handoffs=%lu\n",
	       st1.threads_created, st1.threads_live, st1.stacks_mapped,
	       st1.stacks_reused, st1.stacks_unmapped, st1.malloc_handoffs);
	pthread_attr_destroy(&det);
	TEST_DONE();
}
