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
 * Usage: sync_ring [-t N] [-i steps per thread]
 */
#include "sync_common.h"

static int nthreads = 2, nmutex;
static long steps = 20000;
static pthread_mutex_t *ring;
static struct sync_gate gate;

static void *walker(void *arg)
{
	int held = (int)(intptr_t)arg;
	SYNC_OK(pthread_mutex_lock(&ring[held]));
	sync_gate_pass(&gate);
	int next = held + 1;
	for (long s = 0; s < steps; s++) {
		if (next == nmutex)
			next = 0;
		SYNC_OK(pthread_mutex_lock(&ring[next]));
		SYNC_OK(pthread_mutex_unlock(&ring[held]));
		held = next++;
	}
	SYNC_OK(pthread_mutex_unlock(&ring[held]));
	return NULL;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "t:i:h")) != -1) {
		switch (opt) {
		case 't': nthreads = (int)bench_arg_long("-t", optarg); break;
		case 'i': steps = bench_arg_long("-i", optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t threads] [-i steps per thread]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > 100000 || steps < 1) {
		fprintf(stderr, "usage: %s [-t threads (1..100000)] [-i steps per thread (>= 1)]\n", argv[0]);
		return 2;
	}
	nmutex = nthreads + 1;
	ring = calloc((size_t)nmutex, sizeof *ring);
	pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
	if (ring == NULL || tid == NULL)
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
	       "steps_per_thread=%ld sec=%.6f us_per_step=%.4f steps_per_s=%.1f",
	       nthreads, nthreads, nmutex, steps, sec, sec * 1e6 / total, total / sec);
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
					     "pthread_create", NULL };
	sync_print_libs(libs);
	printf("\n");
	pthread_attr_destroy(&attr);
	free(ring);
	free(tid);
	return 0;
}
