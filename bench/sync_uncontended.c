/* bench/sync_uncontended.c - cost of an uncontended lock + unlock pair.
 *
 * Seed 001 §3.5 ("uncontested"): how often one thread can take and
 * release a lock nobody else wants, i.e. the fast path.  glibc's fast path
 * differs between single- and multi-threaded processes, so an idle second
 * thread is created first (it blocks in read(2) on a pipe until the end).
 *
 * Three figures per run, all for one pair:
 *   ns_per_pair     wall time (CLOCK_MONOTONIC) over n pairs / n
 *   cpu_ns_per_pair the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) / n:
 *                   leaves out the time the thread was preempted, which on
 *                   a busy machine inflates the wall figure
 *   tsc_per_pair    rdtsc ticks over n pairs / n (reference cycles)
 *   instr_per_pair, cycles_per_pair
 *                   from perf_event_open: hardware counters of the calling
 *                   thread only, user space only.  "NA" with the reason in
 *                   perf= when the machine has no PMU (common in VMs).
 *   step_instr      (-S) instructions of exactly one pair counted by
 *                   single-stepping it under ptrace in a forked child:
 *                   exact, and works without a PMU.  The count includes
 *                   the call through the PLT but not the loop.
 *
 * Modes (-m):
 *   mutex   pthread_mutex_lock + pthread_mutex_unlock (default mutex type)
 *   cas     the floor: one compare-and-swap to take a private lock word and
 *           one release store to free it, no library at all.
 *   key     pthread_key_create + pthread_key_delete: under weft each takes
 *           the library's internal key lock once, nobody else wanting it.
 *   rdlock, wrlock  pthread_rwlock_rdlock (wrlock) + pthread_rwlock_unlock
 *   signal  pthread_cond_signal of a condvar nobody waits on (one call)
 *   once    pthread_once of a routine that has run (one call)
 *   condwait pthread_cond_timedwait on a private condvar with a deadline
 *           already past (tv_sec -1), holding the mutex: the waiter joins
 *           and leaves the waiter list, under weft each step under the
 *           condvar's internal lock; no system call in either library.
 *
 * Usage: sync_uncontended [-m mutex|cas|key|condwait] [-n pairs] [-S]
 */
#include "sync_common.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#if __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#else
/* musl-gcc has no kernel headers: the first, version-0 part of the
 * kernel's perf_event_attr (64 bytes), which the kernel accepts when
 * .size says so, and the two constants used below. */
#define PERF_TYPE_HARDWARE 0
#define PERF_COUNT_HW_CPU_CYCLES 0
#define PERF_COUNT_HW_INSTRUCTIONS 1
#define PERF_EVENT_IOC_ENABLE 0x2400 /* _IO('$', 0) */
#define PERF_IOC_FLAG_GROUP 1
struct perf_event_attr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format;
	uint64_t disabled : 1, inherit : 1, pinned : 1, exclusive : 1,
		exclude_user : 1, exclude_kernel : 1, exclude_hv : 1, rest : 57;
	uint32_t wakeup_events, bp_type;
	uint64_t config1;
};
#endif

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static atomic_int cas_word;
static int idle_pipe[2];

/* The measured operations.  noinline + called through a pointer, so the
 * single-step count of one call is the same shape for both modes. */
static __attribute__((noinline)) void pair_mutex(void)
{
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
}

static __attribute__((noinline)) void pair_cas(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&cas_word, &expect, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		abort(); /* uncontended by construction */
	atomic_store_explicit(&cas_word, 0, memory_order_release);
}

static __attribute__((noinline)) void pair_key(void)
{
	pthread_key_t k;

	SYNC_OK(pthread_key_create(&k, NULL));
	SYNC_OK(pthread_key_delete(k));
}

static pthread_cond_t cnd = PTHREAD_COND_INITIALIZER;

static __attribute__((noinline)) void pair_condwait(void)
{
	static const struct timespec past = { -1, 0 };

	pthread_mutex_lock(&mtx);
	if (pthread_cond_timedwait(&cnd, &mtx, &past) != ETIMEDOUT)
		abort(); /* nobody signals */
	pthread_mutex_unlock(&mtx);
}

static pthread_rwlock_t rwl = PTHREAD_RWLOCK_INITIALIZER;

static __attribute__((noinline)) void pair_rdlock(void)
{
	pthread_rwlock_rdlock(&rwl);
	pthread_rwlock_unlock(&rwl);
}

static __attribute__((noinline)) void pair_wrlock(void)
{
	pthread_rwlock_wrlock(&rwl);
	pthread_rwlock_unlock(&rwl);
}

static __attribute__((noinline)) void pair_signal(void)
{
	pthread_cond_signal(&cnd);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void once_routine(void)
{
}

static __attribute__((noinline)) void pair_once(void)
{
	pthread_once(&once, once_routine);
}

static __attribute__((noinline)) void pair_empty(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static void *idle_thread(void *arg)
{
	char c;
	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static pthread_t start_idle(void)
{
	pthread_t t;
	if (pipe(idle_pipe) != 0)
		bench_die("pipe", errno);
	SYNC_OK(pthread_create(&t, NULL, idle_thread, NULL));
	return t;
}

static void stop_idle(pthread_t t)
{
	close(idle_pipe[1]);
	SYNC_OK(pthread_join(t, NULL));
	close(idle_pipe[0]);
}

/* ------------------------------------------------------ perf counters */

static int perf_open(uint64_t config, int group)
{
	struct perf_event_attr pa;
	memset(&pa, 0, sizeof pa);
	pa.size = sizeof pa;
	pa.type = PERF_TYPE_HARDWARE;
	pa.config = config;
	pa.disabled = group < 0; /* the group leader starts disabled */
	pa.exclude_kernel = 1;   /* user space only: allowed at paranoid 2 */
	pa.exclude_hv = 1;
	/* pid 0, cpu -1: this thread only, wherever it runs; no inherit. */
	return (int)syscall(SYS_perf_event_open, &pa, 0, -1, group, 0);
}

struct counters {
	int lead, cyc;       /* fds, -1 if unavailable */
	const char *why;     /* reason when unavailable */
};

static struct counters counters_open(void)
{
	struct counters c = { -1, -1, "ok" };
	c.lead = perf_open(PERF_COUNT_HW_INSTRUCTIONS, -1);
	if (c.lead < 0) {
		c.why = errno == ENOENT || errno == EOPNOTSUPP ? "no-hw-counters"
			: errno == EACCES || errno == EPERM ? "not-permitted" : "open-failed";
		return c;
	}
	c.cyc = perf_open(PERF_COUNT_HW_CPU_CYCLES, c.lead);
	return c;
}

static uint64_t counter_read(int fd)
{
	uint64_t v = 0;
	if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v)
		return 0;
	return v;
}

/* ------------------------------------------------------ single-step */

/* Instructions executed between two SIGSTOPs the child sends itself,
 * counted by PTRACE_SINGLESTEP.  Returns -1 on error. */
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

/* Child side: with an idle thread alive (multi-threaded process) and the
 * code warmed up (lazy PLT binding resolved), run the pair once and an
 * empty call once, each bracketed by self-sent SIGSTOPs. */
static void step_child(void (*pair)(void))
{
	void (*volatile fn)(void);
	pthread_t idle = start_idle();
	for (int i = 0; i < 1000; i++)
		pair();
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		_exit(3);
	fn = pair;
	raise(SIGSTOP);
	fn();
	raise(SIGSTOP);
	fn = pair_empty;
	raise(SIGSTOP);
	fn();
	raise(SIGSTOP);
	stop_idle(idle);
	_exit(0);
}

/* Parent side: the difference of the two step counts is the pair itself
 * (everything else, including raise(), is the same in both brackets). */
static long step_count(void (*pair)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		step_child(pair);
	int st;
	long a = -1, b = -1;
	if (waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st)) {
		a = steps_to_next_stop(pid);             /* pair + raise */
		if (a >= 0 && ptrace(PTRACE_CONT, pid, NULL, NULL) == 0 &&
		    waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st))
			b = steps_to_next_stop(pid);     /* empty + raise */
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

/* ------------------------------------------------------ main */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-m mutex|cas|key|condwait|rdlock|wrlock|signal|once]\n"
		"          [-n pairs] [-S]\n"
		"  -m M   mutex (default), cas (raw one-CAS floor), key (key\n"
		"         create + delete), condwait (a timed wait already due),\n"
		"         rdlock, wrlock (rwlock + unlock), signal (no waiter),\n"
		"         once (done already)\n"
		"  -n N   measured pairs (default 20m)\n"
		"  -S     also count the instructions of one pair by single-stepping\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 20000000;
	int opt, step = 0;
	const char *mode = "mutex";

	while ((opt = getopt(argc, argv, "m:n:Sh")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'n': n = bench_arg_long("-n", optarg); break;
		case 'S': step = 1; break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || n < 1000)
		usage(argv[0]);
	void (*pair)(void);
	if (strcmp(mode, "mutex") == 0)
		pair = pair_mutex;
	else if (strcmp(mode, "cas") == 0)
		pair = pair_cas;
	else if (strcmp(mode, "key") == 0)
		pair = pair_key;
	else if (strcmp(mode, "condwait") == 0)
		pair = pair_condwait;
	else if (strcmp(mode, "rdlock") == 0)
		pair = pair_rdlock;
	else if (strcmp(mode, "wrlock") == 0)
		pair = pair_wrlock;
	else if (strcmp(mode, "signal") == 0)
		pair = pair_signal;
	else if (strcmp(mode, "once") == 0) {
		pthread_once(&once, once_routine);
		pair = pair_once;
	}
	else
		usage(argv[0]);

	long step_instr = step ? step_count(pair) : -2;
	pthread_t idle = start_idle();
	struct counters pc = counters_open();
	double tsc_ns = sync_tsc_per_ns();

	for (long i = 0; i < n / 10; i++) /* warm-up: caches, branch predictors */
		pair();
	if (pc.lead >= 0)
		ioctl(pc.lead, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	uint64_t i0 = counter_read(pc.lead), c0 = counter_read(pc.cyc);
	struct timespec c0ts, c1ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0ts);
	double t0 = bench_now();
	uint64_t k0 = sync_rdtsc();
	for (long i = 0; i < n; i++)
		pair();
	uint64_t k1 = sync_rdtsc();
	double sec = bench_now() - t0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1ts);
	double cpu = (double)(c1ts.tv_sec - c0ts.tv_sec) + (double)(c1ts.tv_nsec - c0ts.tv_nsec) * 1e-9;
	uint64_t i1 = counter_read(pc.lead), c1 = counter_read(pc.cyc);
	stop_idle(idle);

	double dn = (double)n;
	printf("RESULT bench=uncontended variant=%s metric=cpu_ns_per_pair n=%ld sec=%.6f "
	       "ns_per_pair=%.3f cpu_ns_per_pair=%.3f tsc_per_pair=%.2f tsc_per_ns=%.4f",
	       mode, n, sec, sec * 1e9 / dn, cpu * 1e9 / dn, (double)(k1 - k0) / dn, tsc_ns);
	if (pc.lead >= 0)
		printf(" instr_per_pair=%.2f", (double)(i1 - i0) / dn);
	else
		printf(" instr_per_pair=NA");
	if (pc.cyc >= 0)
		printf(" cycles_per_pair=%.2f", (double)(c1 - c0) / dn);
	else
		printf(" cycles_per_pair=NA");
	printf(" perf=%s", pc.lead >= 0 && pc.cyc < 0 ? "no-cycle-counter" : pc.why);
	if (step_instr >= 0)
		printf(" step_instr=%ld", step_instr);
	else if (step_instr == -1)
		printf(" step_instr=NA");
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
					     "pthread_create", "pthread_key_create",
					     "pthread_cond_timedwait", NULL };
	sync_print_libs(libs);
	printf("\n");
	return 0;
}
