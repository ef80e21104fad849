/* bench/single_thread.c - a program that never creates a thread (issue
 * 16, "No tax on programs that never make a thread").
 *
 *   single_thread [-m WHAT] [-n N] [-f F] [-s S]
 *   single_thread -x          exit at once (the child of `start`)
 *
 * WHAT: mutex, malloc, fork, spawn, start, rdlock, wrlock, spin, signal,
 * broadcast, once, getspecific, setspecific or all (default all); the
 * RESULT line has the WHAT_ns or WHAT_us figures of the ones run.
 *
 * In the main thread of a process that makes no thread, times
 *   mutex   pthread_mutex_lock + unlock of a default mutex (ns a pair,
 *           best of 5 batches of N; glibc takes a plain-store path while
 *           the process has one thread)
 *   malloc  malloc(32) + free (ns a pair, best of 5 batches of N)
 *   rdlock, wrlock  pthread_rwlock_rdlock (wrlock) + unlock of a default
 *           rwlock (ns a pair, best of 5 batches of N)
 *   spin    pthread_spin_lock + unlock (ns a pair, best of 5 batches of N)
 *   signal, broadcast  pthread_cond_signal (broadcast) of a condvar
 *           nobody waits on (ns a call, best of 5 batches of N)
 *   once    pthread_once of a routine that has run (ns a call, ...)
 *   getspecific, setspecific  of a key made at start (ns a call, ...)
 *   fork    fork + waitpid of a child that _exits at once (µs each,
 *           median of F)
 *   spawn   posix_spawn of /bin/true + waitpid (µs each, median of F)
 *   start   posix_spawn of this program with -x (exits in main at once)
 *           + waitpid: process start to main and exit (µs each, median
 *           of S; default 1000)
 * Children inherit the environment, so under `weft run` (LD_PRELOAD)
 * /bin/true and the -x child load weft too.  The RESULT line also names
 * the library that served pthread_mutex_lock, and says whether the
 * process still had one thread at the end (glibc's
 * __libc_single_threaded, 1 under both libraries if weft keeps its
 * promise).
 */
#include <spawn.h>
#include <stdint.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

extern char **environ;

static long n_fast = 2000000, n_fork = 300, n_start = 1000;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static pthread_spinlock_t sl;
static int once_runs;

static void op_mutex(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&mu);
		pthread_mutex_unlock(&mu);
	}
}

static void op_rdlock(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
}

static void op_wrlock(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
}

static void op_spin(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_spin_lock(&sl);
		pthread_spin_unlock(&sl);
	}
}

static void op_signal(long n)
{
	for (long i = 0; i < n; i++)
		pthread_cond_signal(&cv);
}

static void op_broadcast(long n)
{
	for (long i = 0; i < n; i++)
		pthread_cond_broadcast(&cv);
}

static void once_routine(void)
{
	once_runs++;
}

static void op_once(long n)
{
	for (long i = 0; i < n; i++)
		pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE);
	pthread_once(&once, once_routine);
}

static void op_getspecific(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = pthread_getspecific(key);

		__asm__ volatile("" : : "r"(p) : "memory");
	}
}

static void op_setspecific(long n)
{
	for (long i = 0; i < n; i++)
		pthread_setspecific(key, (void *)(uintptr_t)(i | 1));
}

static void op_malloc(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(32);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n runs of fn, in µs. */
static double median_us(pid_t (*fn)(void), long n)
{
	double *t = malloc((size_t)n * sizeof *t), m;

	if (!t)
		bench_die("malloc", ENOMEM);
	for (long i = 0; i < n; i++) {
		double t0 = bench_now();
		int status;
		pid_t pid = fn();

		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bench_die("child", ECHILD);
		t[i] = (bench_now() - t0) * 1e6;
	}
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	m = t[n / 2];
	free(t);
	return m;
}

static pid_t do_fork(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid < 0)
		bench_die("fork", errno);
	return pid;
}

static char self_path[4096];

static pid_t spawn(char *path, char *arg)
{
	char *argv[] = {path, arg, NULL};
	pid_t pid;
	int err = posix_spawn(&pid, path, NULL, NULL, argv, environ);

	if (err)
		bench_die("posix_spawn", err);
	return pid;
}

static pid_t do_spawn_true(void)
{
	return spawn("/bin/true", NULL);
}

static pid_t do_start(void)
{
	return spawn(self_path, "-x");
}

static const char *lib_of(void *addr)
{
	Dl_info info;
	const char *slash;

	if (dladdr(addr, &info) == 0 || info.dli_fname == NULL)
		return "unknown";
	slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

/* The calls timed as "ns a call (pair)", best of 5 batches of N. */
static const struct {
	const char *name;
	void (*op)(long);
} fast[] = {
	{"rdlock", op_rdlock},		{"wrlock", op_wrlock},
	{"spin", op_spin},
	{"signal", op_signal},		{"broadcast", op_broadcast},
	{"once", op_once},		{"getspecific", op_getspecific},
	{"setspecific", op_setspecific},
};

static int want(const char *what, const char *m)
{
	return !strcmp(what, "all") || !strcmp(what, m);
}

int main(int argc, char **argv)
{
	const char *what = "all";
	ssize_t len;
	int opt;

	while ((opt = getopt(argc, argv, "xm:n:f:s:")) != -1) {
		switch (opt) {
		case 'x':
			return 0;
		case 'm':
			what = optarg;
			break;
		case 'n':
			n_fast = bench_arg_long("-n", optarg);
			break;
		case 'f':
			n_fork = bench_arg_long("-f", optarg);
			break;
		case 's':
			n_start = bench_arg_long("-s", optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-m WHAT] [-n N] [-f F] [-s S] | -x\n",
				argv[0]);
			return 2;
		}
	}
	pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE);
	pthread_once(&once, once_routine);
	if (pthread_key_create(&key, NULL) || once_runs != 1)
		bench_die("pthread_key_create or pthread_once", EINVAL);
	len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	if (len <= 0)
		bench_die("readlink /proc/self/exe", errno);
	self_path[len] = 0;
	printf("RESULT");
	if (want(what, "mutex"))
		printf(" mutex_ns=%.2f", bench_best_of_5(op_mutex, n_fast));
	if (want(what, "malloc"))
		printf(" malloc_ns=%.2f", bench_best_of_5(op_malloc, n_fast));
	for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
		if (want(what, fast[i].name))
			printf(" %s_ns=%.2f", fast[i].name,
			       bench_best_of_5(fast[i].op, n_fast));
	if (want(what, "fork"))
		printf(" fork_us=%.1f", median_us(do_fork, n_fork));
	if (want(what, "spawn"))
		printf(" spawn_us=%.1f", median_us(do_spawn_true, n_fork));
	if (want(what, "start"))
		printf(" start_us=%.1f", median_us(do_start, n_start));
	printf(" single_threaded=%d n=%ld lib_pthread_mutex_lock=%s\n",
	       __libc_single_threaded, n_fast,
	       lib_of((void *)(uintptr_t)&pthread_mutex_lock));
	return 0;
}
