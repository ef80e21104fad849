/* bench/sync_latency.c - real-time latencies in cycles (seed 002 §5).
 *
 * Two SCHED_FIFO threads, timed with rdtsc (TSC ticks, reported as
 * "cycles"; tsc_per_ns converts them to time).  Modes (-m):
 *
 *   handoff  lock hand-off: a low thread (priority 98) takes and releases
 *            one mutex in a loop; a high thread (priority 99) times each
 *            lock + unlock of the same mutex, n times.  The low thread has
 *            the lower priority so that it does not keep re-taking the
 *            lock ahead of the measuring thread ("lock stealing").
 *            Reports min/avg/max cycles of one lock + unlock.
 *   bcast    broadcast -> wake: two threads at priority 90.  The waiter
 *            says it is about to wait and waits; the broadcaster, holding
 *            the mutex, reads the TSC, calls pthread_cond_broadcast and
 *            unlocks; the waiter reads the TSC as its pthread_cond_wait
 *            returns.  Latency = broadcast entry -> wait exit, so it
 *            includes the unlock the waiter needs to return.
 *
 * Both need two CPUs to mean anything (with one CPU the high thread never
 * lets the low one run); the result line says how many CPUs were usable.
 * SCHED_FIFO needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 99;
 * without it the program prints "SKIP needs SCHED_FIFO" and exits with
 * BENCH_SKIP (77) rather than measuring something else, unless -O asks
 * for SCHED_OTHER (variant gets the suffix "-other").  Memory is
 * locked with mlockall when permitted (mlock=1/0 in the result line).
 * The kernel's real-time throttling (sched_rt_runtime_us) bounds what two
 * spinning FIFO threads can take from the machine; keep n modest.
 *
 * Usage: sync_latency [-m handoff|bcast] [-n measurements] [-O]
 */
#include "sync_common.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER, ack = PTHREAD_COND_INITIALIZER;
static long n = 200000;
static atomic_int done;
static uint64_t lat_min = UINT64_MAX, lat_max;
static double lat_sum;
static long lat_count;

/* bcast mode state, under lock */
static int waiting;
static long gen;
static uint64_t t_entry;

/* The kernel's view of the calling thread's policy must be the one asked
 * for: a library that ignored the creation attributes would otherwise
 * produce SCHED_OTHER numbers labelled SCHED_FIFO. */
static int want_policy = SCHED_FIFO;

static void check_policy(void)
{
	int got = (int)syscall(SYS_sched_getscheduler, 0); /* musl stubs the wrapper */
	if (got != want_policy) {
		fprintf(stderr, "FATAL sched: thread runs with policy %d, asked for %d\n",
			got, want_policy);
		exit(1);
	}
}

static void record(uint64_t d)
{
	if (d < lat_min)
		lat_min = d;
	if (d > lat_max)
		lat_max = d;
	lat_sum += (double)d;
	lat_count++;
}

static void *handoff_low(void *arg)
{
	(void)arg;
	check_policy();
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		SYNC_OK(pthread_mutex_lock(&lock));
		SYNC_OK(pthread_mutex_unlock(&lock));
	}
	return NULL;
}

static void *handoff_high(void *arg)
{
	(void)arg;
	check_policy();
	for (long i = 0; i < n; i++) {
		uint64_t a = sync_rdtsc();
		SYNC_OK(pthread_mutex_lock(&lock));
		SYNC_OK(pthread_mutex_unlock(&lock));
		record(sync_rdtsc() - a);
	}
	atomic_store(&done, 1);
	return NULL;
}

static void *bcast_waiter(void *arg)
{
	(void)arg;
	check_policy();
	SYNC_OK(pthread_mutex_lock(&lock));
	for (long i = 0; i < n; i++) {
		long seen = gen;
		waiting = 1;
		SYNC_OK(pthread_cond_signal(&ack));
		while (gen == seen)
			SYNC_OK(pthread_cond_wait(&cond, &lock));
		record(sync_rdtsc() - t_entry);
	}
	SYNC_OK(pthread_mutex_unlock(&lock));
	return NULL;
}

static void *bcast_sender(void *arg)
{
	(void)arg;
	check_policy();
	for (long i = 0; i < n; i++) {
		SYNC_OK(pthread_mutex_lock(&lock));
		while (!waiting)
			SYNC_OK(pthread_cond_wait(&ack, &lock));
		waiting = 0;
		gen++;
		t_entry = sync_rdtsc();
		SYNC_OK(pthread_cond_broadcast(&cond));
		SYNC_OK(pthread_mutex_unlock(&lock));
	}
	return NULL;
}

/* Skip (exit BENCH_SKIP) when this process may not use SCHED_FIFO at the
 * priorities the threads need: try it on the calling thread, then go back
 * to SCHED_OTHER (always allowed). */
static void require_fifo(void)
{
	struct sched_param sp = { .sched_priority = 99 };

	if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp) != 0) {
		fprintf(stderr, "SKIP needs SCHED_FIFO: sched_setscheduler: %s (needs root, "
			"CAP_SYS_NICE or RLIMIT_RTPRIO 99)\n", strerror(errno));
		exit(BENCH_SKIP);
	}
	sp.sched_priority = 0;
	if (syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &sp) != 0)
		bench_die("sched: back to SCHED_OTHER", errno);
}

static void start(pthread_t *t, void *(*fn)(void *), int prio, int fifo)
{
	pthread_attr_t attr;
	struct sched_param sp = { .sched_priority = fifo ? prio : 0 };
	SYNC_OK(pthread_attr_init(&attr));
	SYNC_OK(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED));
	SYNC_OK(pthread_attr_setschedpolicy(&attr, fifo ? SCHED_FIFO : SCHED_OTHER));
	SYNC_OK(pthread_attr_setschedparam(&attr, &sp));
	int rc = pthread_create(t, &attr, fn, NULL);
	if (rc == EPERM && fifo) {
		/* Not allowed to use SCHED_FIFO (no root, CAP_SYS_NICE or
		 * RLIMIT_RTPRIO): say so with the skip status 77 that the driver
		 * reports as "skipped", rather than measure SCHED_OTHER. */
		fprintf(stderr, "SKIP needs SCHED_FIFO: pthread_create: %s\n", strerror(rc));
		exit(BENCH_SKIP);
	}
	if (rc != 0)
		bench_die("sched: pthread_create with SCHED_FIFO", rc);
	pthread_attr_destroy(&attr);
}

int main(int argc, char **argv)
{
	int opt, fifo = 1;
	const char *mode = "handoff";
	while ((opt = getopt(argc, argv, "m:n:Oh")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'n': n = bench_arg_long("-n", optarg); break;
		case 'O': fifo = 0; break;
		default: goto usage;
		}
	}
	int bcast = strcmp(mode, "bcast") == 0;
	if (optind != argc || n < 1 || (!bcast && strcmp(mode, "handoff") != 0))
		goto usage;

	want_policy = fifo ? SCHED_FIFO : SCHED_OTHER;
	if (fifo)
		require_fifo();
	/* Lock memory only where no limit applies: under an RLIMIT_MEMLOCK,
	 * MCL_FUTURE would make later thread stacks fail to map (EAGAIN),
	 * which is not what this program measures. */
	struct rlimit ml;
	int mlocked = 0;
	if (geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &ml) == 0 && ml.rlim_cur == RLIM_INFINITY))
		mlocked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
	cpu_set_t cs;
	int ncpu = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : -1;
	double tsc_ns = sync_tsc_per_ns();

	pthread_t a, b;
	double t0 = bench_now();
	if (bcast) {
		start(&a, bcast_waiter, 90, fifo);
		start(&b, bcast_sender, 90, fifo);
	} else {
		start(&a, handoff_low, 98, fifo);
		start(&b, handoff_high, 99, fifo);
	}
	SYNC_OK(pthread_join(b, NULL));
	SYNC_OK(pthread_join(a, NULL));
	double sec = bench_now() - t0;

	double avg = lat_sum / (double)lat_count;
	printf("RESULT bench=latency variant=%s%s metric=avg_cycles n=%ld sec=%.6f "
	       "min_cycles=%llu avg_cycles=%.1f max_cycles=%llu avg_ns=%.1f max_ns=%.1f "
	       "tsc_per_ns=%.4f cpus=%d mlock=%d",
	       mode, fifo ? "" : "-other", lat_count, sec, (unsigned long long)lat_min, avg,
	       (unsigned long long)lat_max, avg / tsc_ns, (double)lat_max / tsc_ns, tsc_ns,
	       ncpu, mlocked);
	static const char *const hand_libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
						  "pthread_create", NULL };
	static const char *const bc_libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
						"pthread_cond_broadcast", "pthread_create", NULL };
	sync_print_libs(bcast ? bc_libs : hand_libs);
	printf("\n");
	return 0;
usage:
	fprintf(stderr, "usage: %s [-m handoff|bcast] [-n measurements] [-O]\n", argv[0]);
	return 2;
}
