/* bench/guard_cost.c - what a thread's guard pages cost with N threads
 * alive (docs/lifecycle.md, "Guards that debuggers can read").
 *
 * Creates N threads (default stack and guard) that sleep on a futex,
 * timing every pthread_create; then, with all N alive, times fork() +
 * _exit + waitpid (the kernel copies every mapping of the process); then
 * wakes and joins them.  Figures:
 *   create_med_us    median of the N creations (fresh stacks: N threads
 *                    alive at once never come from a cache)
 *   create_mean_us   their mean
 *   fork_med_us      median of F fork + _exit + waitpid
 *   maps_added       lines of /proc/self/maps added by the N threads
 *   maps_after_join  and what is left once they are joined (the cache)
 *
 * Not run by the driver.  Run it plainly for glibc and with
 * LD_PRELOAD=build/libweft.so (and WEFT_GUARD=auto|advise|mprotect) for
 * weft, interleaved; bench/RESULTS.md, "2026-11-26-guards", has the loop.
 *
 * Usage: guard_cost [-N threads] [-f forks]
 */
#include "common.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int gate;

static void *idle(void *arg)
{
	while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return arg;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = 1000, forks = 10;
	int opt;

	while ((opt = getopt(argc, argv, "N:f:h")) != -1) {
		switch (opt) {
		case 'N': n = bench_arg_long("-N", optarg); break;
		case 'f': forks = bench_arg_long("-f", optarg); break;
		default:
			fprintf(stderr, "usage: %s [-N threads] [-f forks]\n", argv[0]);
			return 2;
		}
	}
	if (n < 1 || forks < 1)
		return 2;

	pthread_t *t = calloc((size_t)n, sizeof *t);
	double *d = calloc((size_t)n, sizeof *d);
	double *f = calloc((size_t)forks, sizeof *f);
	double sum = 0;
	if (!t || !d || !f)
		bench_die("calloc", ENOMEM);
	long m0 = bench_maps_count();
	for (long i = 0; i < n; i++) {
		double a = bench_now();
		int rc = pthread_create(&t[i], NULL, idle, NULL);
		if (rc != 0)
			bench_die("pthread_create", rc);
		d[i] = bench_now() - a;
		sum += d[i];
	}
	long m1 = bench_maps_count();
	for (long i = 0; i < forks; i++) {
		double a = bench_now();
		pid_t p = fork();
		if (p < 0)
			bench_die("fork", errno);
		if (p == 0)
			_exit(0);
		waitpid(p, NULL, 0);
		f[i] = bench_now() - a;
	}
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, (int)n, NULL, NULL, 0);
	for (long i = 0; i < n; i++) {
		int rc = pthread_join(t[i], NULL);
		if (rc != 0)
			bench_die("pthread_join", rc);
	}
	qsort(d, (size_t)n, sizeof *d, by_value);
	qsort(f, (size_t)forks, sizeof *f, by_value);
	printf("RESULT bench=guard_cost N=%ld create_med_us=%.2f create_mean_us=%.2f "
	       "fork_med_us=%.0f maps_added=%ld maps_after_join=%ld pthread_lib=%s\n",
	       n, d[n / 2] * 1e6, sum / (double)n * 1e6, f[forks / 2] * 1e6, m1 - m0,
	       bench_maps_count() - m0, bench_pthread_lib());
	free(t);
	free(d);
	free(f);
	return 0;
}
