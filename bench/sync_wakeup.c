/* bench/sync_wakeup.c - condition variable wake-up round trips (seed 001
 * §3.6, "wakeup").
 *
 * One master and W workers (default 10) share a queue of Q slots.  The
 * master fills the queue and signals one worker; that worker empties it
 * and signals the master back, which refills it:
 *
 *   master: lock; while (full) wait(room); fill; full = 1; signal(work); unlock
 *   worker: lock; while (!full) wait(work); drain; full = 0; signal(room); unlock
 *
 * One round trip = one fill + one drain = two condition-variable wake-ups
 * (master -> a worker, worker -> master).  round_trips_per_s is reported.
 * At the end the master sets a stop flag and broadcasts to the workers.
 *
 * -m futex is the floor: the same protocol on two futex words and no
 * mutex or condition variable.  Workers FUTEX_WAIT on `state` (0 empty,
 * 1 full, 2 being drained, 3 stop) and claim a full queue by CAS; the
 * master FUTEX_WAITs on `done`, a count the draining worker increments.
 * Each side wakes exactly one waiter, as the condvar version does.
 *
 * Usage: sync_wakeup [-m cond|futex] [-w workers] [-q queue slots] [-n round trips]
 */
#include "sync_common.h"

static long rounds = 200000;
static int nworkers = 10, qslots = 16;
static const char *mode = "cond";

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, room = PTHREAD_COND_INITIALIZER;
static int full, stop;
static long *queue;
static long drained;                /* items taken out, checked at the end */

static atomic_int state;            /* futex mode: 0 empty, 1 full, 2 draining, 3 stop */
static atomic_int done;             /* futex mode: drains so far */
static atomic_long fdrained;

static void fill(long round)
{
	for (int i = 0; i < qslots; i++)
		queue[i] = round;
}

static long drain(void)
{
	long taken = 0;
	for (int i = 0; i < qslots; i++) {
		if (queue[i] != 0)
			taken++;
		queue[i] = 0;
	}
	return taken;
}

static void *worker_cond(void *arg)
{
	(void)arg;
	SYNC_OK(pthread_mutex_lock(&lock));
	for (;;) {
		while (!full && !stop)
			SYNC_OK(pthread_cond_wait(&work, &lock));
		if (!full)
			break; /* stop, nothing left */
		drained += drain();
		full = 0;
		SYNC_OK(pthread_cond_signal(&room));
	}
	SYNC_OK(pthread_mutex_unlock(&lock));
	return NULL;
}

static void master_cond(void)
{
	for (long r = 1; r <= rounds; r++) {
		SYNC_OK(pthread_mutex_lock(&lock));
		while (full)
			SYNC_OK(pthread_cond_wait(&room, &lock));
		fill(r);
		full = 1;
		SYNC_OK(pthread_cond_signal(&work));
		SYNC_OK(pthread_mutex_unlock(&lock));
	}
	SYNC_OK(pthread_mutex_lock(&lock));
	while (full)
		SYNC_OK(pthread_cond_wait(&room, &lock));
	stop = 1;
	SYNC_OK(pthread_cond_broadcast(&work));
	SYNC_OK(pthread_mutex_unlock(&lock));
}

static void *worker_futex(void *arg)
{
	(void)arg;
	for (;;) {
		int v = atomic_load(&state);
		if (v == 3)
			return NULL;
		if (v != 1) {
			sync_futex_wait(&state, v); /* empty or someone draining */
			continue;
		}
		if (!atomic_compare_exchange_strong(&state, &v, 2))
			continue; /* another worker got it */
		atomic_fetch_add(&fdrained, drain());
		atomic_store(&state, 0);
		atomic_fetch_add(&done, 1);
		sync_futex_wake(&done, 1);
	}
}

static void master_futex(void)
{
	for (long r = 1; r <= rounds; r++) {
		int seen = atomic_load(&done);
		fill(r);
		atomic_store(&state, 1);
		sync_futex_wake(&state, 1);
		sync_futex_await_change(&done, seen); /* until a worker drained */
	}
	atomic_store(&state, 3);
	sync_futex_wake(&state, INT_MAX);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "m:w:q:n:h")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'w': nworkers = (int)bench_arg_long("-w", optarg); break;
		case 'q': qslots = (int)bench_arg_long("-q", optarg); break;
		case 'n': rounds = bench_arg_long("-n", optarg); break;
		default: goto usage;
		}
	}
	int futex = strcmp(mode, "futex") == 0;
	if (optind != argc || rounds < 1 || nworkers < 1 || nworkers > 10000 || qslots < 1 ||
	    (!futex && strcmp(mode, "cond") != 0))
		goto usage;
	queue = calloc((size_t)qslots, sizeof *queue);
	pthread_t *tid = calloc((size_t)nworkers, sizeof *tid);
	if (queue == NULL || tid == NULL)
		bench_die("calloc", ENOMEM);

	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	for (int i = 0; i < nworkers; i++)
		SYNC_OK(pthread_create(&tid[i], &attr, futex ? worker_futex : worker_cond, NULL));
	double t0 = bench_now();
	if (futex)
		master_futex();
	else
		master_cond();
	double sec = bench_now() - t0;
	for (int i = 0; i < nworkers; i++)
		SYNC_OK(pthread_join(tid[i], NULL));

	/* every item filled must have been drained exactly once */
	long got = futex ? atomic_load(&fdrained) : drained;
	if (got != rounds * qslots) {
		fprintf(stderr, "FATAL drained %ld items, expected %ld\n", got, rounds * qslots);
		return 1;
	}
	printf("RESULT bench=wakeup variant=%s metric=round_trips_per_s workers=%d slots=%d "
	       "rounds=%ld sec=%.6f round_trips_per_s=%.1f us_per_round_trip=%.3f",
	       mode, nworkers, qslots, rounds, sec, (double)rounds / sec, sec * 1e6 / (double)rounds);
	static const char *const cond_libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
						  "pthread_cond_signal", "pthread_create", NULL };
	static const char *const raw_libs[] = { "pthread_create", NULL };
	sync_print_libs(futex ? raw_libs : cond_libs);
	printf("\n");
	pthread_attr_destroy(&attr);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-m cond|futex] [-w workers] [-q slots] [-n round trips]\n",
		argv[0]);
	return 2;
}
