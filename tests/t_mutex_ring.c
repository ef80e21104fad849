/* The lock ring under load (issue 17): N threads walk around a ring of
   N+1 mutexes hand over hand (lock the next, then unlock the one held),
   with more threads than CPUs, so that holders are preempted, woken and
   spun on in every state (docs/sync.md, "Spinning and the fairness
   rule").  Mutex types alternate (normal, adaptive, error-checking,
   recursive); a lock is now and then a timed lock, whose deadline may
   already be past (then the thread takes it the ordinary way).  One
   mutex of the ring is also taken by a hog thread that holds it for
   2 ms at a time, so that walkers wait longer than 1 ms there and ask
   for the fairness hand-off.

   Checked: mutual exclusion (each critical section marks the mutex
   occupied and finds the mark unchanged at its end), the checksum of
   the critical sections (each entry adds its thread's number to the
   mutex's sum, a plain read-modify-write: a lost update shows), the
   number of entries per mutex and per thread, and that every thread
   finishes (joined within 60 s, else reported).  Rounds: WALKERS x STEPS,
   bounded. */
#include <stdint.h>
#include <unistd.h>
#include "harness.h"

enum { STEPS = 20000, HOG_HOLDS = 25 };

static int walkers;
static pthread_mutex_t *ring;
static int nmutex;
static struct cell {
	long entries;
	long sum;
	int occupant;
	char pad[44];
} *cells;
static long overlaps, timeouts;

static void enter(int i, int who)
{
	struct cell *c = &cells[i];

	if (c->occupant != 0)
		__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
	c->occupant = who;
	long s = c->sum;
	for (volatile int k = 0; k < 200; k++)
		;
	c->sum = s + who;
	c->entries++;
	if (c->occupant != who)
		__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
	c->occupant = 0;
}

static void take(int i, long step)
{
	if (step % 64 == 5) {
		/* Half of these are already due (1970). */
		struct timespec ts = deadline_in(CLOCK_REALTIME, 200000);
		if (step % 128 == 5)
			ts = (struct timespec){0, 0};
		int r = pthread_mutex_timedlock(&ring[i], &ts);
		if (r == 0)
			return;
		CHECK(r == ETIMEDOUT, "timedlock: %s", strerror(r));
		__atomic_fetch_add(&timeouts, 1, __ATOMIC_RELAXED);
	}
	int r = pthread_mutex_lock(&ring[i]);
	CHECK(r == 0, "lock: %s", strerror(r));
}

static void *walker(void *arg)
{
	int id = (int)(intptr_t)arg, who = id + 1;
	int held = id, next = id + 1;
	long mine = 0;

	CHECK_WEFT_THREAD();
	take(held, 1);
	enter(held, who);
	mine++;
	for (long s = 0; s < STEPS; s++) {
		if (next == nmutex)
			next = 0;
		take(next, s);
		enter(next, who);
		mine++;
		CHECK_EQ(pthread_mutex_unlock(&ring[held]), 0);
		held = next++;
	}
	CHECK_EQ(pthread_mutex_unlock(&ring[held]), 0);
	return (void *)mine;
}

static int hog_stop;

/* Holds the ring's last mutex 2 ms at a time (busy, as a long critical
   section would), HOG_HOLDS times, so walkers queue behind it. */
static void *hog(void *arg)
{
	int i = nmutex - 1;
	long n;

	(void)arg;
	for (n = 0; n < HOG_HOLDS && !__atomic_load_n(&hog_stop, __ATOMIC_RELAXED); n++) {
		pthread_mutex_lock(&ring[i]);
		enter(i, walkers + 1);
		long end = mono_ns() + 2000000;
		while (mono_ns() < end)
			;
		pthread_mutex_unlock(&ring[i]);
		sched_yield();
	}
	return (void *)n;
}

int main(void)
{
	static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ADAPTIVE_NP,
				    PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_RECURSIVE};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t *t, ht;
	long hog_entries = 0;

	if (!getenv("WEFT_TEST_GLIBC")) {
		WEFT_REQUIRE();
		REQUIRE_SERVED(pthread_mutex_lock);
		REQUIRE_SERVED(pthread_mutex_unlock);
	}
	walkers = (int)(cpus < 2 ? 6 : 3 * cpus);
	if (walkers > 24)
		walkers = 24;
	nmutex = walkers + 1;
	ring = calloc((size_t)nmutex, sizeof *ring);
	cells = calloc((size_t)nmutex, sizeof *cells);
	t = calloc((size_t)walkers, sizeof *t);
	REQUIRE(ring && cells && t, "calloc");
	for (int i = 0; i < nmutex; i++) {
		pthread_mutexattr_t a;
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, types[i % 4]);
		pthread_mutex_init(&ring[i], &a);
		pthread_mutexattr_destroy(&a);
	}
	/* Each walker takes its first mutex itself; the last mutex is free
	   at the start (N+1 mutexes), so the walk can begin at once. */
	for (int i = 0; i < walkers; i++)
		pthread_create(&t[i], NULL, walker, (void *)(intptr_t)i);
	pthread_create(&ht, NULL, hog, NULL);

	long total = 0;
	for (int i = 0; i < walkers; i++) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 60000000000L);
		void *res;
		int r = pthread_timedjoin_np(t[i], &res, &ts);
		if (r != 0) {
			FAIL("walker %d did not finish within 60 s (%s)", i,
			     strerror(r));
			exit(1);
		}
		CHECK((long)res == STEPS + 1, "walker %d entered %ld critical "
		      "sections, expected %d", i, (long)res, STEPS + 1);
		total += (long)res;
	}
	__atomic_store_n(&hog_stop, 1, __ATOMIC_RELAXED);
	void *hres;
	pthread_join(ht, &hres);
	hog_entries = (long)hres;

	long entries = 0, sum = 0;
	for (int i = 0; i < nmutex; i++) {
		entries += cells[i].entries;
		sum += cells[i].sum;
		CHECK_EQ(pthread_mutex_destroy(&ring[i]), 0);
	}
	/* Every walker enters STEPS + 1 times with its number, the hog
	   hog_entries times with walkers + 1. */
	long want_sum = (long)(STEPS + 1) * walkers * (walkers + 1) / 2 +
			hog_entries * (walkers + 1);
	CHECK_EQ(overlaps, 0);
	CHECK(entries == total + hog_entries, "critical sections counted in "
	      "the mutexes: expected %ld, got %ld (a lost update)",
	      total + hog_entries, entries);
	CHECK(sum == want_sum, "checksum of the critical sections: expected "
	      "%ld, got %ld (a lost update)", want_sum, sum);
	printf("ring: %d walkers on %ld CPUs, %d mutexes, %ld entries, %ld by "
	       "the hog, %ld timed locks timed out, checksum %ld\n",
	       walkers, cpus, nmutex, entries, hog_entries, timeouts, sum);
	free(ring);
	free(cells);
	free(t);
	TEST_DONE();
}
