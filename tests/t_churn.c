/* Churn from many creators: 20 threads each create 10,000 threads,
   alternating joinable (joined in small batches) and detached, 200,000
   in all.  Every thread runs and is reclaimed; stacks are reused (at
   most 1 % of the creations map one), RSS stays bounded once the first
   tenth is done and every mapping added after it is a stack's (how many
   threads are alive at once, and so how many stacks the cache holds,
   depends on the scheduling: under load the detached ones run late);
   nothing is left alive at the end. */
#include "harness.h"

#define CREATORS 20
#define PER_CREATOR 10000
#define BATCH 8

static int ran, detached_done;
static long rss_mark = -1;
static int maps_mark = -1;
static struct weft_stats stats_mark;
static int created_total;

static void *child(void *arg)
{
	__atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
	if (arg)
		__atomic_add_fetch(&detached_done, 1, __ATOMIC_RELEASE);
	return arg;
}

static void *creator(void *arg)
{
	pthread_attr_t det;
	pthread_t batch[BATCH];
	int n = 0, fails = 0;

	(void)arg;
	pthread_attr_init(&det);
	pthread_attr_setdetachstate(&det, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < PER_CREATOR; i++) {
		pthread_t t;

		if (i % 2) {
			if (pthread_create(&t, &det, child, (void *)1L) != 0)
				fails++;
		} else {
			if (pthread_create(&batch[n], NULL, child, NULL) != 0)
				fails++;
			else if (++n == BATCH) {
				for (int j = 0; j < n; j++)
					if (pthread_join(batch[j], NULL) != 0)
						fails++;
				n = 0;
			}
		}
		if (__atomic_add_fetch(&created_total, 1, __ATOMIC_RELAXED) ==
		    CREATORS * PER_CREATOR / 10) {
			rss_mark = rss_kib();
			maps_mark = maps_count();
			weft_get_stats(&stats_mark);
		}
	}
	for (int j = 0; j < n; j++)
		if (pthread_join(batch[j], NULL) != 0)
			fails++;
	pthread_attr_destroy(&det);
	return (void *)(long)fails;
}

int main(void)
{
	pthread_t c[CREATORS];
	struct weft_stats s0, s1;
	long fails = 0, rss_end;
	int maps_end;

	WEFT_REQUIRE();
	weft_get_stats(&s0);
	for (int i = 0; i < CREATORS; i++)
		CHECK_ERR(pthread_create(&c[i], NULL, creator, NULL), 0);
	for (int i = 0; i < CREATORS; i++) {
		void *r;
		CHECK_ERR(pthread_join(c[i], &r), 0);
		fails += (long)r;
	}
	/* The detached ones may still be finishing: wait until each ran. */
	while (__atomic_load_n(&detached_done, __ATOMIC_ACQUIRE) <
	       CREATORS * PER_CREATOR / 2)
		sched_yield();
	rss_end = rss_kib();
	maps_end = maps_count();
	weft_get_stats(&s1);
	fprintf(stderr, "RSS %ld -> %ld KiB, mappings %d -> %d after 10%% / "
			"at the end; mapped %lu, reused %lu, unmapped %lu\n",
		rss_mark, rss_end, maps_mark, maps_end,
		s1.stacks_mapped - s0.stacks_mapped,
		s1.stacks_reused - s0.stacks_reused,
		s1.stacks_unmapped - s0.stacks_unmapped);
	CHECK_EQ(fails, 0);
	CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), CREATORS * PER_CREATOR);
	CHECK_EQ(s1.threads_created - s0.threads_created,
		 CREATORS * PER_CREATOR + CREATORS);
	CHECK(rss_end - rss_mark < 16 * 1024,
	      "RSS grew by %ld KiB after the first 10%%, limit 16 MiB",
	      rss_end - rss_mark);
	CHECK(s1.stacks_mapped - s0.stacks_mapped < CREATORS * PER_CREATOR / 100,
	      "%lu stacks mapped for %d creations, limit 1 %%",
	      s1.stacks_mapped - s0.stacks_mapped, CREATORS * PER_CREATOR);
	/* A stack is at most three mappings (stack, guard, and a split
	   where a cached stack was trimmed); 64 for everything else. */
	CHECK(maps_end - maps_mark <=
		      3 * (long)(s1.stacks_mapped - stats_mark.stacks_mapped) + 64,
	      "mappings grew by %d after the first 10%%, with %lu stacks "
	      "mapped since: limit 3 a stack + 64",
	      maps_end - maps_mark, s1.stacks_mapped - stats_mark.stacks_mapped);
	/* Only main remains (detached threads finishing their last
	   instructions are already out of the registry). */
	CHECK(s1.threads_live <= 1 + (unsigned long)0, "live threads at the "
	      "end: expected 1 (main), got %lu", s1.threads_live);
	TEST_DONE();
}
