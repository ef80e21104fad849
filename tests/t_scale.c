/* Threads by the tens of thousands: 30,000 threads (32 KiB stacks) alive
   at once, all joined.  When the kernel supports guard pages by advice
   (MADV_GUARD_INSTALL), each thread's block beyond the first 1,024 (whose
   guards are mappings of their own by default, for debuggers: two
   entries each) costs at most one entry of the mapping table, two
   otherwise, so vm.max_map_count (65530) does not stop weft before the
   kernel's thread limit does.
   If a creation fails, the threads already made are released and
   joined before the test reports the failure. */
#include "harness.h"

#define N 30000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_ready = PTHREAD_COND_INITIALIZER;
static int go, ready;
static pthread_t th[N];

static void *worker(void *arg)
{
	pthread_mutex_lock(&mu);
	ready++;
	pthread_cond_signal(&cv_ready);
	while (!go)
		pthread_cond_wait(&cv_go, &mu);
	pthread_mutex_unlock(&mu);
	return arg;
}

int main(void)
{
	pthread_attr_t a;
	int made = 0, err = 0, maps0, maps1, joined = 0;
	long rss0, rss1;

	WEFT_REQUIRE();
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 32 * 1024);
	maps0 = maps_count();
	rss0 = rss_kib();
	for (; made < N; made++)
		if ((err = pthread_create(&th[made], &a, worker, (void *)(long)made)) != 0)
			break;
	pthread_mutex_lock(&mu);
	while (ready < made)
		pthread_cond_wait(&cv_ready, &mu);
	pthread_mutex_unlock(&mu);
	maps1 = maps_count();
	rss1 = rss_kib();
	fprintf(stderr, "%d threads alive; mappings %d -> %d; RSS %ld -> %ld KiB "
			"(%.1f KiB per thread)\n",
		made, maps0, maps1, rss0, rss1, (double)(rss1 - rss0) / (made ? made : 1));

	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv_go);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < made; i++) {
		void *r;
		if (pthread_join(th[i], &r) == 0 && r == (void *)(long)i)
			joined++;
	}
	CHECK_ERR(err, 0);
	CHECK_EQ(made, N);
	CHECK_EQ(joined, made);
	if (guard_advice_supported())
		CHECK(maps1 - maps0 <= made / 4,
		      "%d threads added %d mappings; expected guard pages by "
		      "advice and merged blocks (<= %d)",
		      made, maps1 - maps0, made / 4);
	else
		CHECK(maps1 - maps0 <= 2 * made + 16,
		      "%d threads added %d mappings, expected <= 2 per thread",
		      made, maps1 - maps0);
	pthread_attr_destroy(&a);
	TEST_DONE();
}
