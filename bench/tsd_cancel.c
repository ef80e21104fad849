/* bench/tsd_cancel.c - the cost of thread-specific data and of a
 * cancellation point that does not cancel (issue 5, "Benchmark").
 *
 *   tsd_cancel [-n N]
 *
 * In one thread made by pthread_create (a weft thread when libweft is
 * preloaded, a glibc thread otherwise), times N calls of each of
 *   getspecific   pthread_getspecific of a key set in this thread
 *   getspecific_chain  the same, each call's key computed from the value
 *                 the call before returned (as code that uses the value
 *                 at once): the calls' latency, not their throughput
 *   setspecific   pthread_setspecific of that key (alternating values)
 *   testcancel    pthread_testcancel, nothing pending
 *   write         write(2) of 1 byte to /dev/null: a cancellation point
 *                 whose system call is as cheap as it gets
 *   read          read(2) of 1 byte from /dev/zero: likewise
 *   syscall_write the same write through syscall(SYS_write), which is
 *                 not a cancellation point: the difference to `write`
 *                 is what the cancellation point machinery costs
 * and prints the nanoseconds per call, each the best of 5 batches of N
 * (the minimum filters out interruptions; the driver takes medians over
 * runs).  Default N = 2,000,000 (200,000 for the system calls).
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common.h"

static long n_fast = 2000000, n_sys = 200000;
static pthread_key_t key;
static int fd_null, fd_zero;

static void op_get(long n)
{
	void *sink = NULL;

	for (long i = 0; i < n; i++) {
		sink = pthread_getspecific(key);
		__asm__ volatile("" : : "r"(sink) : "memory");
	}
}

/* The value is a small integer, so `value >> 63` is 0; the compiler
   cannot know it, so each call waits for the one before. */
static void op_get_chain(long n)
{
	pthread_key_t k = key;

	for (long i = 0; i < n; i++)
		k = key + (pthread_key_t)((uintptr_t)pthread_getspecific(k) >> 63);
	__asm__ volatile("" : : "r"(k) : "memory");
}

static void op_set(long n)
{
	for (long i = 0; i < n; i++)
		pthread_setspecific(key, (void *)(uintptr_t)(i | 1));
}

static void op_testcancel(long n)
{
	for (long i = 0; i < n; i++)
		pthread_testcancel();
}

static void op_write(long n)
{
	char c = 0;

	for (long i = 0; i < n; i++)
		if (write(fd_null, &c, 1) != 1)
			bench_die("write", errno);
}

static void op_read(long n)
{
	char c;

	for (long i = 0; i < n; i++)
		if (read(fd_zero, &c, 1) != 1)
			bench_die("read", errno);
}

static void op_raw_write(long n)
{
	char c = 0;

	for (long i = 0; i < n; i++)
		if (syscall(SYS_write, fd_null, &c, 1) != 1)
			bench_die("syscall write", errno);
}

static double res[7];

static void *bench_thread(void *arg)
{
	(void)arg;
	if (pthread_setspecific(key, (void *)1) != 0)
		bench_die("pthread_setspecific", EINVAL);
	res[0] = bench_best_of_5(op_get, n_fast);
	res[1] = bench_best_of_5(op_set, n_fast);
	res[2] = bench_best_of_5(op_testcancel, n_fast);
	res[3] = bench_best_of_5(op_write, n_sys);
	res[4] = bench_best_of_5(op_read, n_sys);
	res[5] = bench_best_of_5(op_raw_write, n_sys);
	if (pthread_setspecific(key, (void *)1) != 0)
		bench_die("pthread_setspecific", EINVAL);
	res[6] = bench_best_of_5(op_get_chain, n_fast);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int opt, err;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n') {
			n_fast = bench_arg_long("-n", optarg);
			n_sys = n_fast / 10 > 0 ? n_fast / 10 : 1;
		} else {
			fprintf(stderr, "usage: %s [-n N]\n", argv[0]);
			return 2;
		}
	}
	fd_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	fd_zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd_null < 0 || fd_zero < 0)
		bench_die("open", errno);
	if ((err = pthread_key_create(&key, NULL)) != 0)
		bench_die("pthread_key_create", err);
	if ((err = pthread_create(&t, NULL, bench_thread, NULL)) != 0)
		bench_die("pthread_create", err);
	pthread_join(t, NULL);
	printf("RESULT getspecific_ns=%.2f setspecific_ns=%.2f testcancel_ns=%.2f "
	       "write_ns=%.1f read_ns=%.1f syscall_write_ns=%.1f "
	       "getspecific_chain_ns=%.2f n=%ld pthread_lib=%s\n",
	       res[0], res[1], res[2], res[3], res[4], res[5], res[6], n_fast,
	       bench_pthread_lib());
	return 0;
}
