/* bench/sync_ring.c - the lock ring contention test (seed 003, after
 * Bradford's csfast5a): N threads walk around a ring of N+1 mutexes.
 *
 *   ring of N+1 mutexes:   [0] [1] [2] ... [N]      (index wraps to 0)
 *   thread i starts holding [i], then repeatedly
 *       lock [next]; unlock [held]; held = next; next = next + 1
 *
 * so each thread always holds one mutex and reaches for the one ahead,
 * which its predecessor in the ring may be holding: hand-over-hand
 * locking, where every step can contend.  Unlike the original, all threads
 * first take their starting mutex and meet at a gate (seed 003 notes that
 * without it the first threads race around the ring alone), and the clock
 * runs from the gate opening to the last join.
 *
 * One step = one lock of the next mutex + one unlock of the held one by
 * one thread.  us_per_step = wall time / (N * steps per thread): the
 * average time the ring needs per step, all threads together.
 *
 * -m futex is the floor: the same walk over the simplest futex lock there
 * is (0 free, 1 held, 2 held with sleepers; no spinning, no fairness), with
 * raw system calls and no thread library in the lock path.  It shows what
 * the kernel's sleep and wake-up cost per step.
 *
 * -r serves rounds for a driver that needs finer resolution than separate
 * runs give (bench/ring_rotate.py): the process stays up, and each line
 * read on stdin runs one round - threads created, gated, timed, joined -
 * and prints its RESULT line at once.  A line may hold a thread count for
 * that round; an empty one keeps -t.  The process ends at end of input.
 * Keeping processes alive lets a driver trigger glibc, weft and the floor
 * round by round in a rotating order, so that the VM's slow and fast
 * phases fall on all of them alike.
 *
 * Usage: sync_ring [-t N] [-i steps per thread] [-m mutex|futex] [-r]
 */
#include "sync_common.h"

static int nthreads = 2, nmutex, raw;
static long steps = 20000;
static pthread_mutex_t *ring;
static atomic_int *raw_ring; /* -m futex */
static struct sync_gate gate;

static void raw_lock(atomic_int *w)
{
	int c = 0;

	if (atomic_compare_exchange_strong(w, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(w, 2);
	while (c != 0) {
		sync_futex_wait(w, 2);
		c = atomic_exchange(w, 2);
	}
}

static void raw_unlock(atomic_int *w)
{
	if (atomic_exchange(w, 0) == 2)
		sync_futex_wake(w, 1);
}

static void ring_lock(int i)
{
	if (raw)
		raw_lock(&raw_ring[i]);
	else
		SYNC_OK(pthread_mutex_lock(&ring[i]));
}

static void ring_unlock(int i)
{
	if (raw)
		raw_unlock(&raw_ring[i]);
	else
		SYNC_OK(pthread_mutex_unlock(&ring[i]));
}

static void *walker(void *arg)
{
	int held = (int)(intptr_t)arg;
	ring_lock(held);
	sync_gate_pass(&gate);
	int next = held + 1;
	for (long s = 0; s < steps; s++) {
		if (next == nmutex)
			next = 0;
		ring_lock(next);
		ring_unlock(held);
		held = next++;
	}
	ring_unlock(held);
	return NULL;
}

/* One round with n walkers: every mutex is free before and after it. */
static void run_round(int n)
{
	nthreads = n;
	nmutex = n + 1;
	ring = calloc((size_t)nmutex, sizeof *ring);
	raw_ring = calloc((size_t)nmutex, sizeof *raw_ring);
	pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
	if (ring == NULL || raw_ring == NULL || tid == NULL)
		bench_die("calloc", ENOMEM);
	for (int i = 0; i < nmutex; i++)
		SYNC_OK(pthread_mutex_init(&ring[i], NULL));
	sync_gate_init(&gate);

	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	for (int i = 0; i < nthreads; i++)
		SYNC_OK(pthread_create(&tid[i], &attr, walker, (void *)(intptr_t)i));
	/* every walker now holds its first mutex before anyone moves */
	sync_gate_await(&gate, nthreads);
	double t0 = bench_now();
	sync_gate_open(&gate);
	for (int i = 0; i < nthreads; i++)
		SYNC_OK(pthread_join(tid[i], NULL));
	double sec = bench_now() - t0;

	double total = (double)nthreads * (double)steps;
	printf("RESULT bench=ring variant=N%d metric=us_per_step threads=%d mutexes=%d "
	       "lock=%s steps_per_thread=%ld sec=%.6f us_per_step=%.4f steps_per_s=%.1f",
	       nthreads, nthreads, nmutex, raw ? "futex" : "mutex", steps, sec,
	       sec * 1e6 / total, total / sec);
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
					     "pthread_create", NULL };
	sync_print_libs(libs);
	printf("\n");
	fflush(stdout);
	pthread_attr_destroy(&attr);
	for (int i = 0; i < nmutex; i++)
		SYNC_OK(pthread_mutex_destroy(&ring[i]));
	SYNC_OK(pthread_cond_destroy(&gate.cond));
	SYNC_OK(pthread_mutex_destroy(&gate.lock));
	free(ring);
	free(raw_ring);
	free(tid);
}

/* -r: a round per line of stdin, with the line's thread count if it has one. */
static int serve_rounds(int default_n)
{
	char line[64];

	while (fgets(line, sizeof line, stdin) != NULL) {
		char *end;
		long n = strtol(line, &end, 10);
		if (end == line)
			n = default_n;
		else if (n < 1 || n > 100000 || (*end != '\n' && *end != '\0')) {
			fprintf(stderr, "sync_ring -r: bad thread count line: %s", line);
			return 2;
		}
		run_round((int)n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int opt, serve = 0;
	while ((opt = getopt(argc, argv, "t:i:m:rh")) != -1) {
		switch (opt) {
		case 't': nthreads = (int)bench_arg_long("-t", optarg); break;
		case 'i': steps = bench_arg_long("-i", optarg); break;
		case 'm':
			if (strcmp(optarg, "futex") == 0)
				raw = 1;
			else if (strcmp(optarg, "mutex") != 0) {
				fprintf(stderr, "%s: -m mutex or -m futex\n", argv[0]);
				return 2;
			}
			break;
		case 'r': serve = 1; break;
		default:
			fprintf(stderr, "usage: %s [-t threads] [-i steps per thread] [-m mutex|futex] [-r]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > 100000 || steps < 1) {
		fprintf(stderr, "usage: %s [-t threads (1..100000)] [-i steps per thread (>= 1)]\n", argv[0]);
		return 2;
	}
	if (serve)
		return serve_rounds(nthreads);
	run_round(nthreads);
	return 0;
}
