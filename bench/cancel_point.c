/* bench/cancel_point.c - cost of a cancellation point that is not
 * cancelled (issue 5): read(2) of one byte from /dev/zero.
 *
 * Figures for one call:
 *   ns_per_call   wall time over n calls / n (noisy on a loaded machine:
 *                 the system call itself dominates)
 *   step_instr    user-space instructions of exactly one call, counted
 *                 by single-stepping it under ptrace in a forked child
 *                 (the kernel's part counts as one step): exact, and
 *                 independent of the machine's load
 *
 * Modes: -t 1 single-threaded process; -t 2 (default) an idle second
 * thread exists, as in any threaded program (glibc's wrappers then set
 * and clear the asynchronous cancel type around the call).
 *
 * Run it plainly for glibc and with LD_PRELOAD=build/libweft.so for weft:
 *   make -C bench cancel
 *
 * Usage: cancel_point [-t 1|2] [-n calls]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fd, idle_pipe[2];

static void *idle(void *arg)
{
	char c;

	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void call_read(void)
{
	char c;

	if (read(fd, &c, 1) != 1)
		abort();
}

static void call_empty(void)
{
}

static long steps_to_next_stop(pid_t pid)
{
	long steps = 0;
	int st;

	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0)
			return -1;
		if (waitpid(pid, &st, __WALL) != pid || !WIFSTOPPED(st))
			return -1;
		if (WSTOPSIG(st) == SIGSTOP)
			return steps;
		if (WSTOPSIG(st) != SIGTRAP)
			return -1;
		steps++;
	}
}

/* The call and an empty call, each between two self-sent SIGSTOPs; the
 * difference of the step counts is the call itself. */
static long step_count(int threads)
{
	pid_t pid;
	int st;
	long a = -1, b = -1;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		void (*volatile fn)(void) = call_read;
		pthread_t th;

		/* The child of fork has one thread: make the idle one again. */
		if (threads > 1 && pthread_create(&th, NULL, idle, NULL) != 0)
			_exit(3);
		for (int i = 0; i < 1000; i++)
			call_read();
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(3);
		raise(SIGSTOP);
		fn();
		raise(SIGSTOP);
		fn = call_empty;
		raise(SIGSTOP);
		fn();
		raise(SIGSTOP);
		_exit(0);
	}
	if (waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st)) {
		a = steps_to_next_stop(pid);
		if (a >= 0 && ptrace(PTRACE_CONT, pid, NULL, NULL) == 0 &&
		    waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st))
			b = steps_to_next_stop(pid);
	}
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	if (a < 0 || b < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, __WALL);
		return -1;
	}
	waitpid(pid, &st, __WALL);
	return a - b;
}

int main(int argc, char **argv)
{
	long n = 1000000, steps;
	int threads = 2, opt;
	pthread_t th;
	struct timespec t0, t1;

	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'n')
			n = atol(optarg);
		else {
			fprintf(stderr, "usage: cancel_point [-t 1|2] [-n calls]\n");
			return 2;
		}
	}
	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0 || pipe(idle_pipe) != 0)
		return 1;
	if (threads > 1 && pthread_create(&th, NULL, idle, NULL) != 0)
		return 1;
	for (int i = 0; i < 10000; i++)
		call_read();
	steps = step_count(threads);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		call_read();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("threads=%d calls=%ld ns_per_call=%.1f", threads, n,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	if (steps >= 0)
		printf(" step_instr=%ld", steps);
	printf("\n");
	if (threads > 1) {
		if (write(idle_pipe[1], "x", 1) != 1)
			return 1;
		pthread_join(th, NULL);
	}
	return 0;
}
