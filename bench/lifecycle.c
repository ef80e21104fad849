/* bench/lifecycle.c - thread life-cycle cost.
 *
 * The measured loop starts a thread whose start routine returns at once
 * and then reaps it.  Two variants:
 *
 *   joinable (default): pthread_create + pthread_join, one thread at a time.
 *   detached (-d):      threads are created with PTHREAD_CREATE_DETACHED;
 *                       a counting semaphore bounds how many may be in
 *                       flight (-W, default 1), the thread posts it just
 *                       before returning.
 *
 * Usage: lifecycle [-n iterations] [-d] [-W window] [-w warmup] [-s stack]
 * Output: RESULT bench=lifecycle variant=... n=... sec=... ops_per_s=...
 */
#include "common.h"

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

static sem_t slots;
static long stack_use; /* -u: bytes of stack each thread touches */

/* Touches `n` bytes of the thread's stack, one write per page, so a
   thread that really uses its stack can be measured (what becomes of
   those pages when it dies is a library decision). */
static void __attribute__((noinline)) use_stack(long n)
{
	if (n <= 0)
		return;
	char buf[n];
	for (long i = 0; i < n; i += 4096)
		buf[i] = (char)i;
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static void *noop(void *arg)
{
	use_stack(stack_use);
	return arg;
}

static void *noop_post(void *arg)
{
	use_stack(stack_use);
	sem_post(&slots);
	return arg;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n iterations] [-d] [-W window] [-w warmup] [-s stacksize] [-u bytes]\n"
		"  -n N   measured create/reap cycles (default 100000; 10k, 1m suffixes ok)\n"
		"  -d     detached variant (reap via thread exit, bounded by -W)\n"
		"  -W K   detached variant: at most K threads alive at once (default 1)\n"
		"  -w N   unmeasured warm-up cycles (default 1000)\n"
		"  -s B   stack size in bytes for the threads (default: library default)\n"
		"  -u B   each thread touches B bytes of its stack (default 0)\n",
		prog);
	exit(2);
}

static void run_joinable(long n, const pthread_attr_t *attr)
{
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int rc = pthread_create(&t, attr, noop, NULL);
		if (rc != 0)
			bench_die("pthread_create", rc);
		rc = pthread_join(t, NULL);
		if (rc != 0)
			bench_die("pthread_join", rc);
	}
}

static void run_detached(long n, const pthread_attr_t *attr)
{
	for (long i = 0; i < n; i++) {
		pthread_t t;
		while (sem_wait(&slots) != 0) {
			if (errno != EINTR)
				bench_die("sem_wait", errno);
		}
		int rc = pthread_create(&t, attr, noop_post, NULL);
		if (rc != 0)
			bench_die("pthread_create", rc);
	}
}

/* Wait until every in-flight detached thread has posted its slot. */
static void drain_slots(long window)
{
	for (long i = 0; i < window; i++) {
		while (sem_wait(&slots) != 0) {
			if (errno != EINTR)
				bench_die("sem_wait", errno);
		}
	}
}

int main(int argc, char **argv)
{
	long n = 100000, warm = 1000, window = 1, stack = 0;
	int detached = 0, opt;

	while ((opt = getopt(argc, argv, "n:dW:w:s:u:h")) != -1) {
		switch (opt) {
		case 'n': n = bench_arg_long("-n", optarg); break;
		case 'd': detached = 1; break;
		case 'W': window = bench_arg_long("-W", optarg); break;
		case 'w': warm = bench_arg_long("-w", optarg); break;
		case 's': stack = bench_arg_long("-s", optarg); break;
		case 'u': stack_use = bench_arg_long("-u", optarg); break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || n == 0 || window < 1 || window > 100000)
		usage(argv[0]);

	pthread_attr_t attr;
	int rc = 0;
	bench_attr_init(&attr, stack);
	if (detached) {
		rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (rc != 0)
			bench_die("pthread_attr_setdetachstate", rc);
		if (sem_init(&slots, 0, (unsigned)window) != 0)
			bench_die("sem_init", errno);
	}

	void (*loop)(long, const pthread_attr_t *) = detached ? run_detached : run_joinable;

	if (warm > 0) {
		loop(warm, &attr);
		if (detached) {
			drain_slots(window);
			for (long i = 0; i < window; i++)
				sem_post(&slots);
		}
	}

	double t0 = bench_now();
	loop(n, &attr);
	if (detached) {
		/* Count a cycle only once its thread has finished its work:
		 * take every slot back before stopping the clock. */
		drain_slots(window);
	}
	double sec = bench_now() - t0;

	printf("RESULT bench=lifecycle variant=%s n=%ld window=%ld use=%ld sec=%.6f "
	       "ops_per_s=%.1f ns_per_op=%.1f pthread_lib=%s\n",
	       detached ? "detached" : "joinable", n, detached ? window : 1L,
	       stack_use, sec, (double)n / sec, sec * 1e9 / (double)n,
	       bench_pthread_lib());
	pthread_attr_destroy(&attr);
	return 0;
}
