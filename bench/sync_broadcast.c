/* bench/sync_broadcast.c - broadcast throughput, in the spirit of glibc's
 * cond-perf test used in seed 002 §5 (our own code and protocol).
 *
 * W waiters (default 10) sleep on one condition variable.  A round:
 *
 *   master: wait until all W waiters are asleep on `cond`
 *           lock; round++; ready = 0
 *           plain:  unlock; broadcast(cond)      (default)
 *           -k:     broadcast(cond); unlock      (broadcast under the lock)
 *   waiter: lock; loop { ready++; if ready == W: signal(all_in)
 *                        seen = round; while round == seen: wait(cond) }
 *
 * Every broadcast wakes W threads that all need the same mutex, which is
 * what requeueing ("wait morphing") and deferred wake-ups are meant to make
 * cheap; with -k a naive implementation wakes them into a held mutex.
 * The headline metric is rounds_per_s.
 *
 * Usage: sync_broadcast [-w waiters] [-r rounds] [-k]
 */
#include "sync_common.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER, all_in = PTHREAD_COND_INITIALIZER;
static long round_no, rounds = 20000;
static int ready, nwaiters = 10, stop;
static long wakeups; /* waiter returns that saw a new round, checked at the end */

static void *waiter(void *arg)
{
	(void)arg;
	SYNC_OK(pthread_mutex_lock(&lock));
	for (;;) {
		if (++ready == nwaiters)
			SYNC_OK(pthread_cond_signal(&all_in));
		long seen = round_no;
		while (round_no == seen && !stop)
			SYNC_OK(pthread_cond_wait(&cond, &lock));
		if (stop)
			break;
		wakeups++;
	}
	SYNC_OK(pthread_mutex_unlock(&lock));
	return NULL;
}

static void broadcast_round(int keep, int last)
{
	SYNC_OK(pthread_mutex_lock(&lock));
	while (ready < nwaiters)
		SYNC_OK(pthread_cond_wait(&all_in, &lock));
	ready = 0;
	if (last)
		stop = 1;
	else
		round_no++;
	if (keep) {
		SYNC_OK(pthread_cond_broadcast(&cond));
		SYNC_OK(pthread_mutex_unlock(&lock));
	} else {
		SYNC_OK(pthread_mutex_unlock(&lock));
		SYNC_OK(pthread_cond_broadcast(&cond));
	}
}

int main(int argc, char **argv)
{
	int opt, keep = 0;
	while ((opt = getopt(argc, argv, "w:r:kh")) != -1) {
		switch (opt) {
		case 'w': nwaiters = (int)bench_arg_long("-w", optarg); break;
		case 'r': rounds = bench_arg_long("-r", optarg); break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: %s [-w waiters] [-r rounds] [-k]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc || nwaiters < 1 || nwaiters > 10000 || rounds < 1) {
		fprintf(stderr, "%s: need 1 <= waiters <= 10000, rounds >= 1\n", argv[0]);
		return 2;
	}
	pthread_t *tid = calloc((size_t)nwaiters, sizeof *tid);
	if (tid == NULL)
		bench_die("calloc", ENOMEM);
	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	for (int i = 0; i < nwaiters; i++)
		SYNC_OK(pthread_create(&tid[i], &attr, waiter, NULL));

	/* round 0 is a warm-up: it waits for every thread to start */
	broadcast_round(keep, 0);
	double t0 = bench_now();
	for (long r = 0; r < rounds; r++)
		broadcast_round(keep, 0);
	/* the clock stops when all waiters are asleep after the last round */
	SYNC_OK(pthread_mutex_lock(&lock));
	while (ready < nwaiters)
		SYNC_OK(pthread_cond_wait(&all_in, &lock));
	SYNC_OK(pthread_mutex_unlock(&lock));
	double sec = bench_now() - t0;
	broadcast_round(keep, 1);
	for (int i = 0; i < nwaiters; i++)
		SYNC_OK(pthread_join(tid[i], NULL));

	long expect = (rounds + 1) * nwaiters;
	if (wakeups != expect) {
		fprintf(stderr, "FATAL %ld wake-ups, expected %ld\n", wakeups, expect);
		return 1;
	}
	printf("RESULT bench=broadcast variant=%s-w%d metric=rounds_per_s waiters=%d "
	       "under_lock=%d rounds=%ld sec=%.6f rounds_per_s=%.1f us_per_round=%.3f",
	       keep ? "locked" : "plain", nwaiters, nwaiters, keep, rounds, sec,
	       (double)rounds / sec, sec * 1e6 / (double)rounds);
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
					     "pthread_cond_broadcast", "pthread_create", NULL };
	sync_print_libs(libs);
	printf("\n");
	pthread_attr_destroy(&attr);
	return 0;
}
