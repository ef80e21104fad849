/* Issue 17: two threads taking turns at one lock, where the waiter's
   spin decides the speed: the rwlock's spin with its backoff
   (src/sync/rwlock.c, spin_then_try; core/spin_policy.h, spin_round),
   a thread confined to one CPU spinning for a writer awake on another,
   the barrier's spin for the thread that completed the last round
   (src/sync/barrier.c), and the spin lock's first compare-and-swap
   without a load (src/sync/spin.c).

   Each pattern runs with the two threads unpinned, unpinned beside two
   busy threads (more threads than CPUs, so holders are preempted inside
   and spinners must give up), and pinned one to a CPU each; with a
   short critical section (taken back 50 loop steps after the release)
   and one that outlasts the 2 us spin (the waiter gives up and sleeps).
   Checks:
   - write locks and spin locks: every entry counted, no two threads
     inside at once, the lock free at the end;
   - a writer and a reader on one rwlock: no reader inside while the
     writer is, and the reader never sees the writer's half-done update
     (two counters written apart, equal whenever the lock is free);
   - barrier: no thread leaves round r before the other has arrived at
     it, and both count every round.
   Bounded by counts and a 60 s alarm, which reports a hang (a lost
   wake-up) as a failure, naming the run and printing its counters
   twice, a second apart (moving: the machine was too slow, not a hang).
   The pinned placement needs two usable CPUs: with one it is noted as
   skipped. */
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"

#define ENTRIES 50000
#define ROUNDS 20000

enum pattern { WRITERS, WRITER_READER, SPIN, BARRIER };
static const char *const pattern_name[] = { "two writers", "writer and reader",
					     "spin lock", "barrier" };

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sl;
static pthread_barrier_t bar, start;
static volatile long counter, half_a, half_b;
static volatile int inside, overlaps, torn;
static volatile long arrived[2];
static volatile int early_leaves, busy_stop;
static enum pattern pattern;
static int inner_work, pin_cpu[2];
static long entries, rounds; /* this run's (fewer with the longer work) */

static void work(int steps)
{
	for (volatile int k = 0; k < steps; k++)
		;
}

static void lock(int me)
{
	if (pattern == SPIN)
		pthread_spin_lock(&sl);
	else if (pattern == WRITER_READER && me == 1)
		pthread_rwlock_rdlock(&rw);
	else
		pthread_rwlock_wrlock(&rw);
}

static void unlock(void)
{
	if (pattern == SPIN)
		pthread_spin_unlock(&sl);
	else
		pthread_rwlock_unlock(&rw);
}

/* One entry: the writer (thread 0, or both with WRITERS and SPIN)
   marks itself inside and updates both halves with work between; the
   reader of WRITER_READER checks that no writer is inside and that the
   halves agree. */
static void enter(int me)
{
	lock(me);
	if (pattern == WRITER_READER && me == 1) {
		if (inside)
			overlaps++;
		if (half_a != half_b)
			torn++;
		work(inner_work);
	} else {
		if (inside)
			overlaps++;
		inside = 1;
		half_a++;
		work(inner_work);
		half_b++;
		counter++;
		inside = 0;
	}
	unlock();
	work(50);
}

static void meet(int me)
{
	for (long r = 1; r <= rounds; r++) {
		arrived[me] = r;
		pthread_barrier_wait(&bar);
		if (arrived[!me] < r)
			early_leaves++;
		work(inner_work);
	}
}

static void *worker(void *arg)
{
	int me = (int)(long)arg;

	CHECK_WEFT_THREAD();
	if (pin_cpu[me] >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(pin_cpu[me], &set);
		CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
	}
	pthread_barrier_wait(&start);
	if (pattern == BARRIER)
		meet(me);
	else
		for (long i = 0; i < entries; i++)
			enter(me);
	return NULL;
}

/* Keeps a CPU busy until the run ends (the "loaded" placement). */
static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED))
		work(1000);
	return NULL;
}

static void check_run(const char *placement)
{
	const char *what = pattern_name[pattern];
	long writers = pattern == WRITER_READER ? 1 : 2;

	if (pattern == BARRIER) {
		CHECK(early_leaves == 0,
		      "%s, %s, work %d: expected no thread past a round before the "
		      "other arrived, got %d", what, placement, inner_work, early_leaves);
		CHECK(arrived[0] == rounds && arrived[1] == rounds,
		      "%s, %s: expected %ld rounds each, got %ld and %ld", what,
		      placement, rounds, arrived[0], arrived[1]);
		return;
	}
	CHECK(counter == writers * entries, "%s, %s, work %d: expected %ld entries, got %ld",
	      what, placement, inner_work, writers * entries, counter);
	CHECK(half_a == counter && half_b == counter,
	      "%s, %s: expected both halves %ld, got %ld and %ld", what, placement,
	      counter, half_a, half_b);
	CHECK(overlaps == 0, "%s, %s, work %d: expected no overlap, got %d", what,
	      placement, inner_work, overlaps);
	CHECK(torn == 0, "%s, %s, work %d: expected no torn read, got %d", what,
	      placement, inner_work, torn);
	if (pattern == SPIN) {
		CHECK_EQ(pthread_spin_trylock(&sl), 0);
		CHECK_EQ(pthread_spin_unlock(&sl), 0);
	} else {
		CHECK_EQ(pthread_rwlock_trywrlock(&rw), 0);
		CHECK_EQ(pthread_rwlock_unlock(&rw), 0);
	}
}

static void run(enum pattern p, const char *placement, int cpu0, int cpu1,
		int loaded, int steps)
{
	static char part[2][120];
	static int which;
	pthread_t t[2], b[2];

	/* Named for the watchdog; the buffer it may be reading is not the
	   one written. */
	which = !which;
	snprintf(part[which], sizeof part[which], "%s, %s, work %d",
		 pattern_name[p], placement, steps);
	harness_watchdog_part(part[which]);
	pattern = p;
	counter = half_a = half_b = 0;
	overlaps = torn = early_leaves = 0;
	arrived[0] = arrived[1] = 0;
	inner_work = steps;
	entries = steps > 1000 ? ENTRIES / 20 : ENTRIES;
	rounds = steps > 1000 ? ROUNDS / 20 : ROUNDS;
	pin_cpu[0] = cpu0;
	pin_cpu[1] = cpu1;
	busy_stop = 0;
	if (loaded)
		for (int i = 0; i < 2; i++)
			CHECK_EQ(pthread_create(&b[i], NULL, busy, NULL), 0);
	pthread_barrier_init(&start, NULL, 2);
	for (long i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
	if (loaded)
		for (int i = 0; i < 2; i++)
			CHECK_EQ(pthread_join(b[i], NULL), 0);
	check_run(placement);
}

int main(void)
{
	cpu_set_t usable;
	int cpus[2], n = 0;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_rwlock_wrlock);
	REQUIRE_SERVED(pthread_spin_lock);
	REQUIRE_SERVED(pthread_barrier_wait);
	harness_watchdog("t_lock_pairs", 60);
	harness_watchdog_count("entries", &counter);
	harness_watchdog_count("rounds[0]", &arrived[0]);
	harness_watchdog_count("rounds[1]", &arrived[1]);
	CHECK_EQ(pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE), 0);
	CHECK_EQ(pthread_barrier_init(&bar, NULL, 2), 0);
	CHECK_EQ(sched_getaffinity(0, sizeof usable, &usable), 0);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &usable))
			cpus[n++] = c;
	if (n < 2)
		harness_skip_part("pinned placement: one usable CPU");
	/* Short: taken back 50 loop steps after the release.  Longer:
	   10-20 us inside, beyond the 2 us spin.  The spin lock only
	   short: its waiter never sleeps. */
	for (int p = WRITERS; p <= BARRIER; p++) {
		for (int longer = 0; longer <= (p == SPIN ? 0 : 1); longer++) {
			int steps = longer ? 20000 : 20;

			run(p, "unpinned", -1, -1, 0, steps);
			run(p, "unpinned beside two busy threads", -1, -1, 1, steps);
			if (n == 2)
				run(p, "pinned to two CPUs", cpus[0], cpus[1], 0, steps);
		}
	}
	CHECK_EQ(pthread_barrier_destroy(&bar), 0);
	TEST_DONE();
}
