/* bench/sync_broadcast.c - broadcast throughput, in the spirit of glibc's
 * cond-perf test used in seed 002 §5 (our own code and protocol).
 *
 * W waiters (default 10) sleep on one condition variable.  A round:
 *
 *   master: wait until all W waiters are asleep on `cond`
 *           lock; round++; ready = 0
 *           plain:  unlock; broadcast(cond)      (default)
 *           -k:     broadcast(cond); unlock      (broadcast under the lock)
 *   waiter: lock; loop { ready++; if ready == W: signal(all_in)
 *                        seen = round; while round == seen: wait(cond) }
 *
 * Every broadcast wakes W threads that all need the same mutex, which is
 * what requeueing ("wait morphing") and deferred wake-ups are meant to make
 * cheap; with -k a naive implementation wakes them into a held mutex.
 * The headline metric is rounds_per_s.
 *
 * Two floors use no thread library in the protocol: raw futex words for
 * the mutex (0 free, 1 held, 2 held with sleepers) and for each condition
 * variable (a sequence number):
 *   -m herd     broadcast = bump the sequence, FUTEX_WAKE all: every
 *               waiter wakes and contends for the mutex (glibc 2.36's way)
 *   -m requeue  broadcast = bump the sequence, wake one, FUTEX_CMP_REQUEUE
 *               the rest onto the mutex word: each unlock wakes the next
 *               (wait morphing, as glibc did before 2.25)
 * They show what the kernel's wake-ups cost with either design.
 *
 * -s (split) pins the master to CPU 0 and every waiter to CPU 1: every
 * wake-up then crosses CPUs.  Unpinned, the scheduler places each thread
 * once for the whole run (on both CPUs of an idle machine, often on one
 * of a loaded one), and the run's rate follows that placement.
 *
 * Usage: sync_broadcast [-w waiters] [-r rounds] [-k] [-s] [-m cond|herd|requeue]
 */
#include "sync_common.h"

#include <sched.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER, all_in = PTHREAD_COND_INITIALIZER;
/* round_no and stop are read in loops around waits that the compiler
   can see through (the raw floors' futex calls): volatile, so that each
   test reads memory again.  They change under the mutex. */
static volatile long round_no;
static long rounds = 20000;
static int ready, nwaiters = 10;
static volatile int stop;
static long wakeups; /* waiter returns that saw a new round, checked at the end */
static int split; /* -s: master on CPU 0, waiters on CPU 1 */

static void pin_self(int cpu)
{
	cpu_set_t cs;

	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	if (sched_setaffinity(0, sizeof cs, &cs) != 0)
		bench_die("sched_setaffinity", errno);
}

/* ------------------------------------------------ the floors' raw words */

enum { M_COND, M_HERD, M_REQUEUE };
static int mode = M_COND;
static atomic_int raw_mutex, raw_cond, raw_all_in;

#define SYNC_FUTEX_CMP_REQUEUE_PRIVATE 132 /* FUTEX_CMP_REQUEUE | PRIVATE */

static void raw_lock(void)
{
	int c = 0;

	if (atomic_compare_exchange_strong(&raw_mutex, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&raw_mutex, 2);
	while (c != 0) {
		sync_futex_wait(&raw_mutex, 2);
		c = atomic_exchange(&raw_mutex, 2);
	}
}

/* After a requeue others may sleep on the mutex word: take it as 2, so
 * that our unlock wakes the next one. */
static void raw_lock_contended(void)
{
	while (atomic_exchange(&raw_mutex, 2) != 0)
		sync_futex_wait(&raw_mutex, 2);
}

static void raw_unlock(void)
{
	if (atomic_exchange(&raw_mutex, 0) == 2)
		sync_futex_wake(&raw_mutex, 1);
}

static void raw_wait(atomic_int *seq)
{
	int s = atomic_load(seq);

	raw_unlock();
	sync_futex_wait(seq, s);
	if (mode == M_REQUEUE && seq == &raw_cond)
		raw_lock_contended();
	else
		raw_lock();
}

static void raw_broadcast(atomic_int *seq, int holding)
{
	int s = atomic_fetch_add(seq, 1) + 1;

	if (mode == M_HERD || seq != &raw_cond) {
		sync_futex_wake(seq, seq == &raw_cond ? INT_MAX : 1);
		return;
	}
	/* The requeued sleep on the mutex word: make sure its holder's
	   unlock wakes one of them. */
	if (holding)
		atomic_store(&raw_mutex, 2);
	syscall(SYS_futex, (int *)seq, SYNC_FUTEX_CMP_REQUEUE_PRIVATE, 1,
		(void *)(long)INT_MAX, (int *)&raw_mutex, s);
}

/* ------------------------------------------------- the benchmark's calls */

static void b_lock(void)
{
	if (mode == M_COND)
		SYNC_OK(pthread_mutex_lock(&lock));
	else
		raw_lock();
}

static void b_unlock(void)
{
	if (mode == M_COND)
		SYNC_OK(pthread_mutex_unlock(&lock));
	else
		raw_unlock();
}

static void b_wait(pthread_cond_t *c)
{
	if (mode == M_COND)
		SYNC_OK(pthread_cond_wait(c, &lock));
	else
		raw_wait(c == &cond ? &raw_cond : &raw_all_in);
}

/* signal for all_in, broadcast for cond */
static void b_wake(pthread_cond_t *c, int holding)
{
	if (mode == M_COND)
		SYNC_OK(c == &cond ? pthread_cond_broadcast(c) : pthread_cond_signal(c));
	else
		raw_broadcast(c == &cond ? &raw_cond : &raw_all_in, holding);
}

static void *waiter(void *arg)
{
	(void)arg;
	if (split)
		pin_self(1);
	b_lock();
	for (;;) {
		if (++ready == nwaiters)
			b_wake(&all_in, 1);
		long seen = round_no;
		while (round_no == seen && !stop)
			b_wait(&cond);
		if (stop)
			break;
		wakeups++;
	}
	b_unlock();
	return NULL;
}

static void broadcast_round(int keep, int last)
{
	b_lock();
	while (ready < nwaiters)
		b_wait(&all_in);
	ready = 0;
	if (last)
		stop = 1;
	else
		round_no++;
	if (keep) {
		b_wake(&cond, 1);
		b_unlock();
	} else {
		b_unlock();
		b_wake(&cond, 0);
	}
}

int main(int argc, char **argv)
{
	int opt, keep = 0;
	while ((opt = getopt(argc, argv, "w:r:ksm:h")) != -1) {
		switch (opt) {
		case 'w': nwaiters = (int)bench_arg_long("-w", optarg); break;
		case 'r': rounds = bench_arg_long("-r", optarg); break;
		case 'k': keep = 1; break;
		case 's': split = 1; break;
		case 'm':
			if (strcmp(optarg, "cond") == 0)
				mode = M_COND;
			else if (strcmp(optarg, "herd") == 0)
				mode = M_HERD;
			else if (strcmp(optarg, "requeue") == 0)
				mode = M_REQUEUE;
			else {
				fprintf(stderr, "%s: -m cond, herd or requeue\n", argv[0]);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-w waiters] [-r rounds] [-k] [-s] [-m cond|herd|requeue]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc || nwaiters < 1 || nwaiters > 10000 || rounds < 1) {
		fprintf(stderr, "%s: need 1 <= waiters <= 10000, rounds >= 1\n", argv[0]);
		return 2;
	}
	if (split)
		pin_self(0);
	pthread_t *tid = calloc((size_t)nwaiters, sizeof *tid);
	if (tid == NULL)
		bench_die("calloc", ENOMEM);
	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	for (int i = 0; i < nwaiters; i++)
		SYNC_OK(pthread_create(&tid[i], &attr, waiter, NULL));

	/* round 0 is a warm-up: it waits for every thread to start */
	broadcast_round(keep, 0);
	double t0 = bench_now();
	for (long r = 0; r < rounds; r++)
		broadcast_round(keep, 0);
	/* the clock stops when all waiters are asleep after the last round */
	b_lock();
	while (ready < nwaiters)
		b_wait(&all_in);
	b_unlock();
	double sec = bench_now() - t0;
	broadcast_round(keep, 1);
	for (int i = 0; i < nwaiters; i++)
		SYNC_OK(pthread_join(tid[i], NULL));

	long expect = (rounds + 1) * nwaiters;
	if (wakeups != expect) {
		fprintf(stderr, "FATAL %ld wake-ups, expected %ld\n", wakeups, expect);
		return 1;
	}
	static const char *const modes[] = { "cond", "herd", "requeue" };
	printf("RESULT bench=broadcast variant=%s-w%d metric=rounds_per_s waiters=%d "
	       "under_lock=%d impl=%s rounds=%ld sec=%.6f rounds_per_s=%.1f us_per_round=%.3f",
	       keep ? "locked" : "plain", nwaiters, nwaiters, keep, modes[mode], rounds, sec,
	       (double)rounds / sec, sec * 1e6 / (double)rounds);
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
					     "pthread_cond_broadcast", "pthread_create", NULL };
	sync_print_libs(libs);
	printf("\n");
	pthread_attr_destroy(&attr);
	return 0;
}
