/* bench/sync_latency.c - real-time latencies in cycles (seed 002 §5).
 *
 * SCHED_FIFO threads on two CPUs, timed with rdtsc (TSC ticks, reported
 * as "cycles"; tsc_per_ns converts them to time).  Every measurement is
 * kept, so the result line gives the distribution: min, median, p99,
 * p99.9, max (and the mean).  Modes (-m), each with a mutex kind (-k):
 *
 *   handoff    (-k normal|pi|pp) lock hand-off: a low thread (priority 98,
 *              first CPU) takes and releases one mutex in a loop; a high
 *              thread (priority 99, second CPU) times each of its own
 *              lock + unlock of the same mutex.  The low thread has the
 *              lower priority so that it does not keep re-taking the lock
 *              ahead of the measuring thread ("lock stealing").  pp: the
 *              ceiling is 99.
 *   bcast      (-k normal|pi) broadcast -> wake: two threads at priority
 *              90 on one CPU (the paper's set-up).  The waiter says it is
 *              about to wait and waits; the broadcaster reads the TSC,
 *              calls pthread_cond_broadcast, and the waiter reads the TSC
 *              as its pthread_cond_wait returns.  By default the mutex is
 *              held during the broadcast and released after it (so the
 *              latency includes that unlock); -r releases it first.
 *   inversion  (-k normal|pi|cond-pi) priority inversion, one figure per
 *              round: how long a high thread (priority 90, second CPU)
 *              needs the mutex before it holds it with a low thread's
 *              (priority 10, first CPU) critical section done, while a
 *              medium thread (priority 50, first CPU) spins on the low
 *              one's CPU for at most -S microseconds (default 500; it
 *              stops early once the high thread is through).  normal, pi:
 *              the low thread holds the mutex when the high one asks for
 *              it; without priority inheritance the wait lasts as long as
 *              the spinner runs, with it a few microseconds.  cond-pi: the
 *              low thread waits on a condvar with a PI mutex; the high
 *              thread signals it with the mutex held, or (-r) after
 *              releasing it, and then needs the mutex (inversion_round).
 *   noise      no library: a priority-99 thread on each CPU reads the TSC
 *              in a loop; one figure per 10 ms window (-n windows per
 *              CPU), the longest gap between two reads.  The machine's
 *              own stalls (interrupts, a hypervisor's other guests), the
 *              floor under every max above.
 *
 * Floors: the same threads on raw futex calls instead of the library
 * (the primitives below), what the kernel alone costs for a protocol.
 *   -F         handoff, inversion -k normal|pi: the simplest lock of the
 *              kind (normal: a 0/1/2 futex word; pi: CAS, else
 *              FUTEX_LOCK_PI; pp: the normal
 *              word with the priority raised to the ceiling before the try
 *              and lowered after the release, one sched_setparam each,
 *              none at or above the ceiling).  bcast -k pi, inversion -k
 *              cond-pi: requeue-PI (FUTEX_WAIT_REQUEUE_PI and
 *              FUTEX_CMP_REQUEUE_PI onto a PI word), at the signal; with
 *              -D deferred to the unlock when the signaller holds the
 *              mutex (weft's way: the mutex is free then).
 *   -P         bcast -k pi, inversion -k cond-pi: a plain FUTEX_WAKE and
 *              the waiter's own lock of the PI word (glibc's way: the
 *              waiter owns nothing until it has run).
 *   -H         the same, with the mutex handed to the waiter in user
 *              space before the wake (a CAS of the free word to its tid;
 *              at the unlock when the signaller holds it): ownership
 *              before it runs, as requeue-PI gives, without requeue-PI.
 *
 * Threads are pinned to the first two CPUs of the process's affinity mask
 * (two are needed; with fewer the program skips itself, exit 77).
 * SCHED_FIFO needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 99;
 * without it the program prints "SKIP needs SCHED_FIFO" and exits with
 * BENCH_SKIP (77) rather than measuring something else, unless -O asks
 * for SCHED_OTHER (handoff and bcast; variant gets the suffix "-other").
 * A mutex kind the library refuses (musl has no priority protection) is
 * skipped the same way.  Memory is locked with mlockall when permitted
 * (mlock=1/0 in the result line).  The kernel's RT throttling
 * (/proc/sys/kernel/sched_rt_runtime_us, printed as rt_runtime_us) stalls
 * busy FIFO threads for 50 ms a second unless it is -1: `weft bench`
 * turns it off around each run and restores it.  A watchdog (-W seconds,
 * default 20) ends a run that goes on too long: with throttling off,
 * spinning FIFO threads on both CPUs would starve everything else.
 *
 * Usage: sync_latency [-m handoff|bcast|inversion|noise] [-k KIND] [-r]
 *                     [-F [-D] | -P | -H] [-n measurements] [-w warm-up]
 *                     [-S spin_us] [-W seconds] [-O]
 */
#include "sync_common.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

enum kind { K_NORMAL, K_PI, K_PP, K_COND_PI };
static const char *const kind_names[] = { "normal", "pi", "pp", "cond-pi" };

static pthread_mutex_t lock;
static long n;		/* measurements kept */
static long warm;	/* iterations before them, not kept */
static long rounds;	/* warm + n: what every loop runs */
static int cpus[2]; /* the first two CPUs we may use */

/* ------------------------------------------------------------ samples */

static uint64_t *samples;
static long count, discarded;

/* The first `warm` figures are dropped: the first iterations meet cold
 * caches and branch predictors, which no later one sees again. */
static void record(uint64_t d)
{
	if (discarded < warm)
		discarded++;
	else if (count < n)
		samples[count++] = d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The nearest-rank percentile of the sorted samples: the smallest sample
 * that at least p of them do not exceed. */
static uint64_t percentile(double p)
{
	long i = (long)(p * (double)count + 0.999999) - 1;
	if (i < 0)
		i = 0;
	if (i >= count)
		i = count - 1;
	return samples[i];
}

/* ------------------------------------------------------------ primitives */

/* The measured threads reach the mutex and the condition variables
 * through these, so one scenario runs on the library (pthread_*) or on
 * raw futex calls (-F, -P: the floor columns, what the kernel alone costs
 * for the same protocol).  An indirect call costs nanoseconds; the
 * figures are hundreds of cycles to milliseconds. */
enum { CV_COND, CV_ACK, CV_COUNT }; /* the measured condvar; bcast's "waiting" */

struct prims {
	void (*lock)(void);
	void (*unlock)(void);
	void (*wait)(int cv); /* mutex held */
	void (*signal)(int cv);
	void (*broadcast)(int cv);
};

static pthread_cond_t conds[CV_COUNT] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };

static void lib_lock(void) { SYNC_OK(pthread_mutex_lock(&lock)); }
static void lib_unlock(void) { SYNC_OK(pthread_mutex_unlock(&lock)); }
static void lib_wait(int cv) { SYNC_OK(pthread_cond_wait(&conds[cv], &lock)); }
static void lib_signal(int cv) { SYNC_OK(pthread_cond_signal(&conds[cv])); }
static void lib_broadcast(int cv) { SYNC_OK(pthread_cond_broadcast(&conds[cv])); }

static const struct prims lib_prims = { lib_lock, lib_unlock, lib_wait, lib_signal,
					lib_broadcast };
static const struct prims *prim = &lib_prims;

/* The raw references: one mutex word and, per condvar, a sequence word
 * and a count of its waiters (changed under the mutex), so that a signal
 * with nobody waiting makes no system call, as the libraries' do not.
 * Values are the kernel ABI (musl-gcc has no <linux/futex.h>). */
#define RAW_WAIT 128		/* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define RAW_WAKE 129		/* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */
#define RAW_LOCK_PI 134		/* FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG */
#define RAW_UNLOCK_PI 135	/* FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG */
#define RAW_WAIT_REQUEUE_PI 139	/* FUTEX_WAIT_REQUEUE_PI | FUTEX_PRIVATE_FLAG */
#define RAW_CMP_REQUEUE_PI 140	/* FUTEX_CMP_REQUEUE_PI | FUTEX_PRIVATE_FLAG */
#define RAW_TID_MASK 0x3fffffff	/* FUTEX_TID_MASK */
#define RAW_CEILING 99		/* -k pp: the ceiling, as the library rows' */

static atomic_int raw_word, raw_seq[CV_COUNT], raw_waiters[CV_COUNT];
static __thread int raw_tid, raw_prio; /* the thread's tid, its own priority */

static long raw_futex(atomic_int *w, int op, int val, void *val2, atomic_int *w2, int val3)
{
	return syscall(SYS_futex, (int *)w, op, val, val2, (int *)w2, val3);
}

/* PI: 0 or the owner's tid (and the kernel's waiters bit); CAS, else the
 * kernel, which queues by priority and boosts the owner. */
static void raw_pi_lock(void)
{
	int free_word = 0;
	if (atomic_compare_exchange_strong(&raw_word, &free_word, raw_tid))
		return;
	while (raw_futex(&raw_word, RAW_LOCK_PI, 0, NULL, NULL, 0) != 0)
		if (errno != EAGAIN && errno != EINTR) /* EAGAIN: owner exiting */
			bench_die("FUTEX_LOCK_PI", errno);
}

static void raw_requeue_due(void);

static void raw_pi_unlock(void)
{
	int mine = raw_tid;
	if (!atomic_compare_exchange_strong(&raw_word, &mine, 0) &&
	    raw_futex(&raw_word, RAW_UNLOCK_PI, 0, NULL, NULL, 0) != 0)
		bench_die("FUTEX_UNLOCK_PI", errno);
	raw_requeue_due();
}

/* normal: 0 free, 1 held, 2 held with sleepers (the simplest futex lock,
 * no spinning). */
static void raw_plain_lock(void)
{
	int v = 0;
	if (atomic_compare_exchange_strong(&raw_word, &v, 1))
		return;
	if (v != 2)
		v = atomic_exchange(&raw_word, 2);
	while (v != 0) {
		sync_futex_wait(&raw_word, 2);
		v = atomic_exchange(&raw_word, 2);
	}
}

static void raw_plain_unlock(void)
{
	if (atomic_exchange(&raw_word, 0) == 2)
		sync_futex_wake(&raw_word, 1);
}

/* pp: the plain lock, with the priority raised to the ceiling before it
 * is tried (glibc's order: the owner never runs below the ceiling; its
 * waiters sleep there) and lowered after the release, by the one system
 * call a priority change takes; none at or above the ceiling. */
static void raw_set_prio(int p)
{
	struct sched_param sp = { .sched_priority = p };
	if (syscall(SYS_sched_setparam, 0, &sp) != 0)
		bench_die("sched_setparam", errno);
}

static void raw_pp_lock(void)
{
	if (raw_prio < RAW_CEILING)
		raw_set_prio(RAW_CEILING);
	raw_plain_lock();
}

static void raw_pp_unlock(void)
{
	raw_plain_unlock();
	if (raw_prio < RAW_CEILING)
		raw_set_prio(raw_prio);
}

/* -F, requeue-PI: a waiter sleeps with FUTEX_WAIT_REQUEUE_PI naming the
 * PI mutex; a signal (broadcast) moves one (all) with
 * FUTEX_CMP_REQUEUE_PI onto the mutex, where the kernel makes the first
 * the owner if the mutex is free, or else queues them as PI waiters.
 * Made the owner, a waiter is boosted by the next thread that waits for
 * the mutex, before it has even run (inversion_round says what being
 * only queued gives).  -D: a signaller that holds the mutex requeues
 * when it releases it (then the mutex is free: weft's deferred requeue);
 * else at once. */
static int raw_how;			/* 'F', 'P' or 'H' */
static int raw_defer;			/* -D */
static __thread int raw_due[CV_COUNT];	/* -D: requeues due at the release (waiters to move) */

static void raw_requeue(int cv, int nmove)
{
	int seq = atomic_load(&raw_seq[cv]);
	/* wake 1 (or requeue it if the mutex is taken), requeue nmove more */
	while (raw_futex(&raw_seq[cv], RAW_CMP_REQUEUE_PI, 1, (void *)(long)nmove, &raw_word,
			 seq) < 0) {
		if (errno != EAGAIN)
			bench_die("FUTEX_CMP_REQUEUE_PI", errno);
		seq = atomic_load(&raw_seq[cv]);
	}
}

static void raw_handover(int cv);

static void raw_requeue_due(void)
{
	for (int cv = 0; cv < CV_COUNT; cv++)
		if (raw_due[cv]) {
			int nmove = raw_due[cv] - 1;
			raw_due[cv] = 0;
			if (raw_how == 'H')
				raw_handover(cv);
			else
				raw_requeue(cv, nmove);
		}
}

static void raw_rq_wait(int cv)
{
	int seq = atomic_load(&raw_seq[cv]);
	atomic_fetch_add(&raw_waiters[cv], 1);
	raw_pi_unlock();
	if (raw_futex(&raw_seq[cv], RAW_WAIT_REQUEUE_PI, seq, NULL, &raw_word, 0) != 0) {
		/* EAGAIN: signalled before we slept (or interrupted after the
		 * requeue): not the owner */
		if (errno != EAGAIN && errno != EINTR)
			bench_die("FUTEX_WAIT_REQUEUE_PI", errno);
		raw_pi_lock();
	}
	atomic_fetch_sub(&raw_waiters[cv], 1);
}

static void raw_rq_post(int cv, int nmove)
{
	atomic_fetch_add(&raw_seq[cv], 1);
	if (!atomic_load(&raw_waiters[cv]))
		return;
	if (raw_defer && (atomic_load(&raw_word) & RAW_TID_MASK) == raw_tid)
		raw_due[cv] = nmove + 1;
	else
		raw_requeue(cv, nmove);
}

static void raw_rq_signal(int cv) { raw_rq_post(cv, 0); }
static void raw_rq_broadcast(int cv) { raw_rq_post(cv, INT_MAX); }

/* -P, plain wake: a waiter sleeps with FUTEX_WAIT on the sequence word;
 * a signal (broadcast) wakes one (all) with FUTEX_WAKE, and the waiter
 * takes the PI mutex itself: CAS, else FUTEX_LOCK_PI (glibc's way; the
 * woken waiter owns nothing until it has run). */
static void raw_wake_wait(int cv)
{
	int seq = atomic_load(&raw_seq[cv]);
	atomic_fetch_add(&raw_waiters[cv], 1);
	raw_pi_unlock();
	if (raw_futex(&raw_seq[cv], RAW_WAIT, seq, NULL, NULL, 0) != 0 && errno != EAGAIN &&
	    errno != EINTR)
		bench_die("FUTEX_WAIT", errno);
	raw_pi_lock();
	atomic_fetch_sub(&raw_waiters[cv], 1);
}

static void raw_wake_post(int cv, int nwake)
{
	atomic_fetch_add(&raw_seq[cv], 1);
	if (atomic_load(&raw_waiters[cv]) &&
	    raw_futex(&raw_seq[cv], RAW_WAKE, nwake, NULL, NULL, 0) < 0)
		bench_die("FUTEX_WAKE", errno);
}

static void raw_wake_signal(int cv) { raw_wake_post(cv, 1); }
static void raw_wake_broadcast(int cv) { raw_wake_post(cv, INT_MAX); }

/* -H, hand-over: a waiter sleeps with FUTEX_WAIT on the sequence word;
 * the signaller makes it the mutex's owner in user space (a CAS of the
 * free word to the waiter's tid; one waiter per condvar here) and wakes
 * it with FUTEX_WAKE.  A signaller that holds the mutex does it when it
 * releases it.  The woken waiter owns the mutex before it runs, as with
 * requeue-PI, so a thread that then needs the mutex blocks in
 * FUTEX_LOCK_PI and boosts it. */
static atomic_int raw_waiter_tid[CV_COUNT];

static void raw_ho_wait(int cv)
{
	int seq = atomic_load(&raw_seq[cv]);
	atomic_store(&raw_waiter_tid[cv], raw_tid);
	atomic_fetch_add(&raw_waiters[cv], 1);
	raw_pi_unlock();
	while (atomic_load(&raw_seq[cv]) == seq)
		if (raw_futex(&raw_seq[cv], RAW_WAIT, seq, NULL, NULL, 0) != 0 &&
		    errno != EAGAIN && errno != EINTR)
			bench_die("FUTEX_WAIT", errno);
	if ((atomic_load(&raw_word) & RAW_TID_MASK) != raw_tid)
		raw_pi_lock(); /* not handed over: the mutex was taken */
	atomic_fetch_sub(&raw_waiters[cv], 1);
}

static void raw_handover(int cv)
{
	int free_word = 0;
	atomic_compare_exchange_strong(&raw_word, &free_word, atomic_load(&raw_waiter_tid[cv]));
	atomic_fetch_add(&raw_seq[cv], 1);
	if (raw_futex(&raw_seq[cv], RAW_WAKE, 1, NULL, NULL, 0) < 0)
		bench_die("FUTEX_WAKE", errno);
}

static void raw_ho_post(int cv)
{
	if (!atomic_load(&raw_waiters[cv]))
		return;
	if ((atomic_load(&raw_word) & RAW_TID_MASK) == raw_tid)
		raw_due[cv] = 1;
	else
		raw_handover(cv);
}

static struct prims raw_prims;
static const char *raw_name = ""; /* the row's suffix */

/* The raw primitives for a mutex kind and a condvar protocol ('F'
 * requeue-PI, 'P' plain wake; condvars need the PI mutex). */
static void use_raw(int kind_pi, int kind_pp, int how)
{
	raw_how = how;
	raw_prims.lock = kind_pi ? raw_pi_lock : kind_pp ? raw_pp_lock : raw_plain_lock;
	raw_prims.unlock = kind_pi ? raw_pi_unlock : kind_pp ? raw_pp_unlock : raw_plain_unlock;
	raw_prims.wait = how == 'P' ? raw_wake_wait : how == 'H' ? raw_ho_wait : raw_rq_wait;
	raw_prims.signal = how == 'P' ? raw_wake_signal : how == 'H' ? raw_ho_post : raw_rq_signal;
	raw_prims.broadcast = how == 'P' ? raw_wake_broadcast : how == 'H' ? raw_ho_post
									    : raw_rq_broadcast;
	raw_name = how == 'P' ? "-raw-wake" : how == 'H' ? "-raw-handover" :
		   raw_defer ? "-raw-deferred" : "-raw";
	prim = &raw_prims;
}

/* ------------------------------------------------------------ threads */

/* Busy-waits until *w holds v.  Only for a thread alone on its CPU: a
 * spinning FIFO thread would starve a lower one on the same CPU. */
static void spin_until(atomic_int *w, int v)
{
	while (atomic_load_explicit(w, memory_order_acquire) != v)
		__builtin_ia32_pause();
}

/* Sleeps until *w reaches v (the words only grow). */
static void sleep_until(atomic_int *w, int v)
{
	int seen;
	while ((seen = atomic_load_explicit(w, memory_order_acquire)) < v)
		sync_futex_wait(w, seen);
}

static void set_and_wake(atomic_int *w, int v)
{
	atomic_store_explicit(w, v, memory_order_release);
	sync_futex_wake(w, 1);
}

/* The kernel's view of the calling thread's policy and priority must be
 * the ones asked for: a library that ignored the creation attributes
 * would otherwise produce SCHED_OTHER numbers labelled SCHED_FIFO. */
static int want_policy = SCHED_FIFO;

static void check_sched(int prio)
{
	struct sched_param sp;
	int got = (int)syscall(SYS_sched_getscheduler, 0); /* musl stubs the wrapper */

	if (got != want_policy) {
		fprintf(stderr, "FATAL sched: thread runs with policy %d, asked for %d\n",
			got, want_policy);
		exit(1);
	}
	if (want_policy == SCHED_FIFO &&
	    (syscall(SYS_sched_getparam, 0, &sp) != 0 || sp.sched_priority != prio)) {
		fprintf(stderr, "FATAL sched: thread runs at priority %d, asked for %d\n",
			sp.sched_priority, prio);
		exit(1);
	}
}

/* Every thread of an experiment runs on a CPU of its own choosing, so
 * that "the same CPU" and "the other CPU" mean what the mode says. */
static void pin_self(int cpu)
{
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	if (syscall(SYS_sched_setaffinity, 0, sizeof cs, &cs) != 0)
		bench_die("sched_setaffinity", errno);
}

struct role {
	void *(*fn)(void *);
	int prio;
	int cpu; /* 0: the first CPU, 1: the second */
};

static atomic_int gate; /* 1 once every thread exists */

/* Thread start: settle on the role's CPU, check the scheduling, then
 * wait for the others.  A thread that started spinning at once would
 * keep the (SCHED_OTHER) main thread off its CPU, and the kernel can
 * take a second to move it: the next threads would start that late. */
static void *role_start(void *arg)
{
	const struct role *r = arg;
	pin_self(cpus[r->cpu]);
	check_sched(r->prio);
	raw_tid = (int)syscall(SYS_gettid);
	raw_prio = r->prio;
	sleep_until(&gate, 1);
	return r->fn(arg);
}

static void start(pthread_t *t, struct role *r)
{
	pthread_attr_t attr;
	int fifo = want_policy == SCHED_FIFO;
	struct sched_param sp = { .sched_priority = fifo ? r->prio : 0 };

	SYNC_OK(pthread_attr_init(&attr));
	/* mlockall(MCL_FUTURE) populates a stack as it is mapped: keep them
	 * small, or each start would clear megabytes */
	SYNC_OK(pthread_attr_setstacksize(&attr, SYNC_SMALL_STACK));
	SYNC_OK(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED));
	SYNC_OK(pthread_attr_setschedpolicy(&attr, want_policy));
	SYNC_OK(pthread_attr_setschedparam(&attr, &sp));
	int rc = pthread_create(t, &attr, role_start, r);
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

/* ------------------------------------------------------------ handoff */

static atomic_int done;

static void *handoff_low(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		prim->lock();
		prim->unlock();
	}
	return NULL;
}

static void *handoff_high(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		uint64_t a = sync_rdtsc();
		prim->lock();
		prim->unlock();
		record(sync_rdtsc() - a);
	}
	atomic_store(&done, 1);
	return NULL;
}

/* ------------------------------------------------------------ bcast */

static int released;	/* -r: broadcast after the unlock */
static int waiting;	/* under lock */
static long gen;	/* under lock */
static _Atomic uint64_t t_entry;
static atomic_long t_gen; /* the generation t_entry belongs to */

static void *bcast_waiter(void *arg)
{
	(void)arg;
	prim->lock();
	for (long i = 0; i < rounds; i++) {
		long seen = gen;
		waiting = 1;
		prim->signal(CV_ACK);
		while (gen == seen)
			prim->wait(CV_COND);
		uint64_t now = sync_rdtsc();
		/* On one CPU at equal priorities we run only once the
		 * broadcaster blocked, long after it stamped the time; never
		 * report a figure taken against a stale stamp. */
		if (atomic_load(&t_gen) != gen) {
			fprintf(stderr, "FATAL bcast: woke before the broadcast was stamped\n");
			exit(1);
		}
		record(now - atomic_load(&t_entry));
	}
	prim->unlock();
	return NULL;
}

static void stamp(long g)
{
	atomic_store(&t_entry, sync_rdtsc());
	atomic_store(&t_gen, g);
}

static void *bcast_sender(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		prim->lock();
		while (!waiting)
			prim->wait(CV_ACK);
		waiting = 0;
		long g = ++gen;
		if (released) {
			prim->unlock();
			stamp(g);
			prim->broadcast(CV_COND);
		} else {
			stamp(g);
			prim->broadcast(CV_COND);
			prim->unlock();
		}
	}
	return NULL;
}

/* ------------------------------------------- inversion: the scenario */

static int with_cond;		/* -k cond-pi */
static uint64_t spin_cycles;	/* the medium thread's bound */
static atomic_int low_tid;

/* Control words, raw futexes and atomics so that only the measured calls
 * go through the library.  Each holds the round it was last set for. */
static atomic_int round_start;	/* high -> low: take the mutex (normal, pi) */
static atomic_int low_ready;	/* low -> high: holds the mutex / is waiting */
static atomic_int release;	/* high -> low: leave the critical section */
static atomic_int spin_go;	/* high -> medium: spin */
static atomic_int spinning;	/* medium -> high: spinning now */
static atomic_int got_it;	/* high -> medium: stop early */
static atomic_int medium_done, low_done;
static int ready, mark;		/* under the mutex: signalled round, finished round */

static void *inversion_low(void *arg)
{
	(void)arg;
	atomic_store(&low_tid, raw_tid);
	if (with_cond) {
		/* wait for each round's signal on the condvar */
		prim->lock();
		for (int r = 1; r <= rounds; r++) {
			atomic_store(&low_ready, r);
			while (ready != r)
				prim->wait(CV_COND);
			mark = r;
		}
		prim->unlock();
		return NULL;
	}
	for (int r = 1; r <= rounds; r++) {
		sleep_until(&round_start, r);
		prim->lock();
		atomic_store(&low_ready, r);
		/* The critical section lasts until the high thread is about
		 * to ask for the mutex: by then the spinner has the CPU, so
		 * this thread runs again only when the spinner is done, or
		 * when priority inheritance lifts it above the spinner. */
		while (atomic_load_explicit(&release, memory_order_acquire) != r)
			__builtin_ia32_pause();
		mark = r;
		prim->unlock();
		atomic_store(&low_done, r);
	}
	return NULL;
}

static void *inversion_medium(void *arg)
{
	(void)arg;
	for (int r = 1; r <= rounds; r++) {
		sleep_until(&spin_go, r);
		atomic_store(&spinning, r);
		uint64_t end = sync_rdtsc() + spin_cycles;
		while (sync_rdtsc() < end && atomic_load(&got_it) != r)
			__builtin_ia32_pause();
		atomic_store(&medium_done, r);
	}
	return NULL;
}

/* Whether thread `tid` of this process sleeps in the kernel (state S). */
static int task_sleeps(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	char *p = strrchr(buf, ')'); /* the state follows "(comm) " */
	return p && p[1] == ' ' && p[2] == 'S';
}

/* cond-pi: the low thread must be asleep in its condvar wait before the
 * round starts, or a signal could find it still on its way in. */
static void await_low_asleep(int r)
{
	spin_until(&low_ready, r);
	prim->lock(); /* it released the mutex: it is inside the wait */
	prim->unlock();
	double give_up = bench_now() + 5;
	while (!task_sleeps(atomic_load(&low_tid)))
		if (bench_now() > give_up) {
			fprintf(stderr, "FATAL inversion: the low thread never slept in its wait\n");
			exit(1);
		}
}

/* One round: the low thread holds the mutex (or waits on the condvar),
 * the medium thread spins on its CPU, then the high thread needs the
 * mutex.  Measured: from the high thread's first lock until it holds the
 * mutex and finds the low thread's critical section done.
 *
 * Normal and PI mutexes: the first lock blocks until the low thread
 * releases, which takes the spinner's whole run unless the high thread's
 * wait lends the low one its priority.
 *
 * cond-pi: the high thread signals, then locks again until it finds the
 * low thread through.  A condvar that only wakes the low thread leaves it
 * runnable behind the spinner, owning nothing, and the high thread takes
 * the free mutex over and over: the wait lasts the spinner's run.  A
 * PI-aware condvar (requeue-PI) makes the woken thread the mutex's owner
 * in the kernel before it runs, when the mutex is free at the signal
 * (-r): the high thread's lock then blocks on it and lifts it above the
 * spinner.  When the signaller holds the mutex, the woken thread is only
 * queued on it, the release hands it over, and the kernel lets a thread
 * of higher priority take the mutex back before the new owner has run
 * (rt-mutex lock stealing): the high thread gets the mutex at once,
 * without the answer, and the wait is the spinner's run again, requeue-PI
 * or not (the floor column shows both). */
static void inversion_round(int r)
{
	if (with_cond) {
		await_low_asleep(r);
	} else {
		set_and_wake(&round_start, r);
		spin_until(&low_ready, r);
	}
	set_and_wake(&spin_go, r);
	spin_until(&spinning, r); /* the low thread is off its CPU now */
	if (with_cond && released) {
		prim->lock();
		ready = r;
		prim->unlock();
		prim->signal(CV_COND);
	} else if (with_cond) {
		prim->lock();
		ready = r;
		prim->signal(CV_COND);
		prim->unlock();
	} else {
		atomic_store_explicit(&release, r, memory_order_release);
	}
	uint64_t t0 = sync_rdtsc();
	for (;;) {
		prim->lock();
		int through = mark == r;
		prim->unlock();
		if (through)
			break;
	}
	record(sync_rdtsc() - t0);
	atomic_store(&got_it, r);
	spin_until(&medium_done, r);
	if (!with_cond)
		spin_until(&low_done, r);
}

static void *inversion_high(void *arg)
{
	(void)arg;
	for (int r = 1; r <= rounds; r++)
		inversion_round(r);
	return NULL;
}

/* ------------------------------------------------------------ noise */

static uint64_t window_cycles;

/* The machine's own stalls, no library involved: a FIFO thread alone on
 * each CPU reads the TSC in a loop; one figure per window (-n windows of
 * 10 ms per CPU) is the longest gap between two reads.  Any latency
 * above these is not the library's doing, nor can one below them be
 * promised. */
static void *noise_probe(void *arg)
{
	const struct role *r = arg;
	uint64_t *mine = samples + (long)r->cpu * n;
	uint64_t last = sync_rdtsc();

	for (long w = 0; w < n; w++) {
		uint64_t end = last + window_cycles, worst = 0;
		while (last < end) {
			uint64_t now = sync_rdtsc();
			if (now - last > worst)
				worst = now - last;
			last = now;
		}
		mine[w] = worst;
	}
	return NULL;
}

/* ------------------------------------------------------------ set-up */

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

/* The first two CPUs of our affinity mask; skip without two. */
static int pick_cpus(void)
{
	cpu_set_t cs;
	int found = 0;

	if (sched_getaffinity(0, sizeof cs, &cs) != 0)
		bench_die("sched_getaffinity", errno);
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &cs))
			cpus[found++] = c;
	if (found < 2) {
		fprintf(stderr, "SKIP needs 2 CPUs: the affinity mask has %d\n", found);
		exit(BENCH_SKIP);
	}
	return CPU_COUNT(&cs);
}

/* A mutex kind the library does not have is a skip, not a failure. */
static void mutex_kind_ok(int rc, const char *what)
{
	if (rc == ENOTSUP || rc == EINVAL) {
		fprintf(stderr, "SKIP mutex kind not supported: %s: %s\n", what, strerror(rc));
		exit(BENCH_SKIP);
	}
	if (rc != 0)
		bench_die(what, rc);
}

static void init_mutex(enum kind k)
{
	pthread_mutexattr_t a;

	SYNC_OK(pthread_mutexattr_init(&a));
	if (k == K_PI || k == K_COND_PI)
		mutex_kind_ok(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT),
			      "pthread_mutexattr_setprotocol(PTHREAD_PRIO_INHERIT)");
	if (k == K_PP) {
#if defined(__GLIBC__)
		mutex_kind_ok(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT),
			      "pthread_mutexattr_setprotocol(PTHREAD_PRIO_PROTECT)");
		mutex_kind_ok(pthread_mutexattr_setprioceiling(&a, 99),
			      "pthread_mutexattr_setprioceiling(99)");
#else
		/* musl declares the ceiling functions but does not define them */
		mutex_kind_ok(ENOTSUP, "priority protection (not in this libc)");
#endif
	}
	mutex_kind_ok(pthread_mutex_init(&lock, &a), "pthread_mutex_init");
	pthread_mutexattr_destroy(&a);
}

static void watchdog_fired(int sig)
{
	static const char msg[] = "FATAL watchdog: the run went on too long (-W)\n";
	(void)sig;
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	_exit(3);
}

/* Ends the process after `sec` seconds whatever its threads do: the
 * timer's signal interrupts even a spinning FIFO thread. */
static void arm_watchdog(unsigned sec)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = watchdog_fired;
	sigaction(SIGALRM, &sa, NULL);
	alarm(sec);
}

/* Lock memory only where no limit applies: under an RLIMIT_MEMLOCK,
 * MCL_FUTURE would make later thread stacks fail to map (EAGAIN), which
 * is not what this program measures. */
static int lock_memory(void)
{
	struct rlimit ml;
	if (geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &ml) == 0 && ml.rlim_cur == RLIM_INFINITY))
		return mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
	return 0;
}

static long rt_runtime_us(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_RDONLY);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return 0; /* unknown */
	buf[len] = '\0';
	return strtol(buf, NULL, 10);
}

static int parse_kind(const char *s)
{
	for (int k = 0; k < (int)(sizeof kind_names / sizeof *kind_names); k++)
		if (strcmp(s, kind_names[k]) == 0)
			return k;
	return -1;
}

/* The roles of a mode: [0] started first, [1] last (it measures). */
static int roles_for(const char *mode, enum kind k, struct role *r)
{
	if (strcmp(mode, "handoff") == 0 && k != K_COND_PI) {
		r[0] = (struct role){ handoff_low, 98, 0 };
		r[1] = (struct role){ handoff_high, 99, 1 };
		return 2;
	}
	if (strcmp(mode, "bcast") == 0 && (k == K_NORMAL || k == K_PI)) {
		r[0] = (struct role){ bcast_waiter, 90, 1 };
		r[1] = (struct role){ bcast_sender, 90, 1 };
		return 2;
	}
	if (strcmp(mode, "noise") == 0 && k == K_NORMAL) {
		r[0] = (struct role){ noise_probe, 99, 0 };
		r[1] = (struct role){ noise_probe, 99, 1 };
		return 2;
	}
	if (strcmp(mode, "inversion") == 0 && k != K_PP) {
		r[0] = (struct role){ inversion_low, 10, 0 };
		r[1] = (struct role){ inversion_medium, 50, 0 };
		r[2] = (struct role){ inversion_high, 90, 1 };
		return 3;
	}
	return 0;
}

/* The row's name: mode, for bcast and cond-pi when the mutex is released,
 * the kind, "-raw..." for a futex reference (use_raw). */
static const char *variant_name(const char *mode, enum kind k)
{
	static char name[64];

	if (strcmp(mode, "noise") == 0)
		return "noise";
	snprintf(name, sizeof name, "%s-%s%s%s%s", mode,
		 with_cond || strcmp(mode, "bcast") == 0 ? (released ? "released-" : "held-") : "",
		 kind_names[k], raw_name,
		 want_policy == SCHED_FIFO ? "" : "-other");
	return name;
}

static void print_result(const char *mode, enum kind k, double sec, double tsc_ns, int ncpu,
			 int mlocked, long rt_us)
{
	double sum = 0;
	for (long i = 0; i < count; i++)
		sum += (double)samples[i];
	qsort(samples, (size_t)count, sizeof *samples, cmp_u64);
	uint64_t p50 = percentile(0.5), p99 = percentile(0.99), p999 = percentile(0.999);
	uint64_t lo = samples[0], hi = samples[count - 1];

	printf("RESULT bench=latency variant=%s metric=p999_cycles n=%ld sec=%.6f "
	       "min_cycles=%llu p50_cycles=%llu p99_cycles=%llu p999_cycles=%llu max_cycles=%llu "
	       "avg_cycles=%.1f p50_ns=%.1f p999_ns=%.1f max_ns=%.1f tsc_per_ns=%.4f cpus=%d "
	       "mlock=%d rt_runtime_us=%ld",
	       variant_name(mode, k), count, sec, (unsigned long long)lo, (unsigned long long)p50,
	       (unsigned long long)p99, (unsigned long long)p999, (unsigned long long)hi,
	       sum / (double)count, (double)p50 / tsc_ns, (double)p999 / tsc_ns,
	       (double)hi / tsc_ns, tsc_ns, ncpu, mlocked, rt_us);
	if (strcmp(mode, "inversion") == 0)
		printf(" spin_us=%.0f", (double)spin_cycles / tsc_ns / 1000.0);
	static const char *const create_lib[] = { "pthread_create", NULL };
	static const char *const mutex_libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
						   "pthread_create", NULL };
	static const char *const cond_libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
						  "pthread_cond_broadcast", "pthread_cond_signal",
						  "pthread_create", NULL };
	sync_print_libs(strcmp(mode, "noise") == 0 ? create_lib :
			with_cond || strcmp(mode, "bcast") == 0 ? cond_libs : mutex_libs);
	printf("\n");
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-m handoff|bcast|inversion|noise] [-k normal|pi|pp|cond-pi] [-r] "
		"[-F [-D] | -P | -H] [-n measurements] [-w warm-up] [-S spin_us] [-W seconds] [-O]\n"
		"  handoff: -k normal|pi|pp [-F]; bcast: -k normal|pi [-r] [-F [-D] | -P | -H with pi]; "
		"inversion: -k normal|pi [-F], -k cond-pi [-r] [-F [-D] | -P | -H]; noise: -n windows\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	int opt, kind = K_NORMAL, raw = 0; /* raw: 'F' or 'P' */
	long spin_us = 500, watchdog = 20;
	const char *mode = "handoff";

	n = warm = -1;
	while ((opt = getopt(argc, argv, "m:k:rFPHDn:w:S:W:Oh")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'k': kind = parse_kind(optarg); break;
		case 'r': released = 1; break;
		case 'F':
		case 'P':
		case 'H': raw = raw && raw != opt ? -1 : opt; break;
		case 'D': raw_defer = 1; break;
		case 'n': n = bench_arg_long("-n", optarg); break;
		case 'w': warm = bench_arg_long("-w", optarg); break;
		case 'S': spin_us = bench_arg_long("-S", optarg); break;
		case 'W': watchdog = bench_arg_long("-W", optarg); break;
		case 'O': want_policy = SCHED_OTHER; break;
		default: usage(argv[0]);
		}
	}
	int inversion = strcmp(mode, "inversion") == 0, noise = strcmp(mode, "noise") == 0;
	int bcast = strcmp(mode, "bcast") == 0, handoff = strcmp(mode, "handoff") == 0;
	/* the raw condvars need a PI mutex (requeue-PI moves waiters onto one) */
	int cond_pi = (bcast && kind == K_PI) || (inversion && kind == K_COND_PI);
	if (n < 0)
		n = inversion ? 1000 : noise ? 50 : 200000;
	if (warm < 0 || noise)
		warm = inversion ? 10 : noise ? 0 : 1000;
	rounds = n + warm;
	struct role roles[3];
	int nroles = kind < 0 ? 0 : roles_for(mode, kind, roles);
	if (optind != argc || !nroles || n < 1 || rounds > INT_MAX / 2 || watchdog < 1 ||
	    raw < 0 || (raw && !cond_pi && !((handoff || inversion) && raw == 'F')) ||
	    (raw_defer && (raw != 'F' || !cond_pi)) ||
	    (released && !bcast && !(inversion && kind == K_COND_PI)) ||
	    ((inversion || noise) && want_policy != SCHED_FIFO))
		usage(argv[0]);

	if (want_policy == SCHED_FIFO)
		require_fifo();
	int ncpu = pick_cpus();
	if (raw)
		use_raw(kind == K_PI || kind == K_COND_PI, kind == K_PP, raw);
	else
		init_mutex(kind);
	with_cond = kind == K_COND_PI;
	int mlocked = lock_memory();
	long nsamples = noise ? 2 * n : n; /* noise: n windows per CPU */
	samples = calloc((size_t)nsamples, sizeof *samples);
	if (!samples)
		bench_die("calloc", ENOMEM);
	memset(samples, 0, (size_t)nsamples * sizeof *samples); /* fault it in now */
	double tsc_ns = sync_tsc_per_ns();
	spin_cycles = (uint64_t)((double)spin_us * 1000.0 * tsc_ns);
	window_cycles = (uint64_t)(10e6 * tsc_ns);
	long rt_us = rt_runtime_us();

	arm_watchdog((unsigned)watchdog);
	pthread_t t[3];
	for (int i = 0; i < nroles; i++)
		start(&t[i], &roles[i]);
	double t0 = bench_now();
	atomic_store(&gate, 1);
	sync_futex_wake(&gate, INT_MAX);
	for (int i = nroles - 1; i >= 0; i--)
		SYNC_OK(pthread_join(t[i], NULL));
	double sec = bench_now() - t0;
	alarm(0);
	if (noise)
		count = nsamples;
	if (count != nsamples) {
		fprintf(stderr, "FATAL %s: %ld measurements, expected %ld\n", mode, count, nsamples);
		return 1;
	}
	print_result(mode, kind, sec, tsc_ns, ncpu, mlocked, rt_us);
	return 0;
}
