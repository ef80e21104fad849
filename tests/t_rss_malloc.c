/* Per-thread malloc state: 100,000 threads (batches of 8 at a time,
   joined), each doing 20 malloc/free of sizes 16..4096 so that its
   thread cache fills.  glibc frees a dead thread's cache; weft hands it
   to a new thread.  Either way memory must stay flat: RSS after 10,000
   threads vs after 100,000 grows < 8 MiB, bytes in use by malloc
   (mallinfo2().uordblks) grow < 4 MiB. */
#include "harness.h"

#include <malloc.h>
#include <stdint.h>
#include <time.h>

#define TOTAL 100000
#define WARMUP 10000
#define BATCH 8
#define RSS_LIMIT_KIB (8 * 1024)
#define HEAP_LIMIT (4L << 20)
#define TIME_LIMIT_S 50.0

static int bad_origin, bad_content;

static void *worker(void *arg)
{
	/* 8 chunks of 64 bytes and 8 of 512 (so the tcache bins for these
	   sizes fill up: 7 each), and 4 others from 16 to 4096. */
	static const size_t sizes[20] = {64, 64, 64, 64, 64, 64, 64, 64,
					 512, 512, 512, 512, 512, 512, 512, 512,
					 16, 200, 1500, 4096};
	unsigned char *p[20];
	uintptr_t seed = (uintptr_t)arg;

	if (weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_fetch_add(&bad_origin, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 20; i++) {
		p[i] = malloc(sizes[i]);
		if (!p[i]) {
			__atomic_fetch_add(&bad_content, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		memset(p[i], (int)((seed + i) & 0xff), sizes[i]);
	}
	for (int i = 0; i < 20; i++) {
		unsigned char want = (unsigned char)((seed + i) & 0xff);
		if (p[i][0] != want || p[i][sizes[i] - 1] != want)
			__atomic_fetch_add(&bad_content, 1, __ATOMIC_RELAXED);
		free(p[i]);
	}
	return (void *)(seed + 1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	WEFT_REQUIRE();

	long rss_warm = 0;
	size_t heap_warm = 0;
	long done = 0;
	double t0 = now();
	struct weft_stats st0, st1;

	CHECK_EQ(weft_get_stats(&st0), 0);
	while (done < TOTAL) {
		pthread_t t[BATCH];
		int n = 0;
		for (; n < BATCH; n++) {
			int e = pthread_create(&t[n], NULL, worker,
					       (void *)(uintptr_t)(done + n));
			if (e) {
				FAIL("pthread_create #%ld: %d (%s)", done + n, e,
				     strerror(e));
				break;
			}
		}
		for (int i = 0; i < n; i++) {
			void *r = NULL;
			int e = pthread_join(t[i], &r);
			if (e || (uintptr_t)r != (uintptr_t)(done + i) + 1)
				FAIL("join #%ld: expected 0 and %ld, got %d and %ld",
				     done + i, done + i + 1, e, (long)(uintptr_t)r);
		}
		if (n < BATCH || harness_failures)
			break;
		done += n;
		if (done == WARMUP) {
			rss_warm = rss_kib();
			heap_warm = mallinfo2().uordblks;
		}
		if (now() - t0 > TIME_LIMIT_S) {
			FAIL("time limit: %ld of %d threads in %.0f s", done, TOTAL,
			     TIME_LIMIT_S);
			break;
		}
	}
	long rss_end = rss_kib();
	size_t heap_end = mallinfo2().uordblks;
	CHECK_EQ(weft_get_stats(&st1), 0);

	CHECK_EQ(done, TOTAL);
	CHECK_EQ(bad_origin, 0);
	CHECK_EQ(bad_content, 0);
	printf("threads=%ld in %.2fs\n", done, now() - t0);
	printf("rss after %d: %ld KiB, at end: %ld KiB, growth %ld KiB (limit %d)\n",
	       WARMUP, rss_warm, rss_end, rss_end - rss_warm, RSS_LIMIT_KIB);
	printf("malloc in use after %d: %zu, at end: %zu, growth %ld (limit %ld)\n",
	       WARMUP, heap_warm, heap_end, (long)(heap_end - heap_warm),
	       HEAP_LIMIT);
	printf("stats: created=%lu mapped=%lu reused=%lu unmapped=%lu "
	       "malloc_handoffs=%lu\n",
	       st1.threads_created - st0.threads_created, st1.stacks_mapped,
	       st1.stacks_reused, st1.stacks_unmapped, st1.malloc_handoffs);
	if (done == TOTAL) {
		CHECK(rss_end - rss_warm < RSS_LIMIT_KIB,
		      "RSS grew by %ld KiB between thread %d and %d (%ld -> %ld)",
		      rss_end - rss_warm, WARMUP, TOTAL, rss_warm, rss_end);
		CHECK((long)(heap_end - heap_warm) < HEAP_LIMIT,
		      "malloc'd bytes in use grew by %ld between thread %d and %d",
		      (long)(heap_end - heap_warm), WARMUP, TOTAL);
	}
	TEST_DONE();
}
