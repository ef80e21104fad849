/* A mutex waiter whose turn of yields ran out shortly before the lock
   came (a near miss) sleeps without a turn in its next waits; one whose
   lock came long after does not (docs/sync.md, "Near misses back off";
   sync/mutex.c yield_miss_settle).

   Both threads run on one CPU (the first of the allowed set), so that
   a wake-up is a switch and the times below do not depend on how fast
   an idle CPU wakes.  ROUNDS rounds: the main thread takes the mutex,
   lets the waiter ask for it, waits until the waiter sleeps in the
   kernel (its turn of yields is over then: a yielder runs), and
   releases it:
   - NEARMISS_HOLD unset or "near": at once, so the lock comes a poll
     and a switch after the turn ran out, well inside YIELD_WAIT_NS;
   - NEARMISS_HOLD=far: after another 200 us (busy, yielding the CPU),
     so the lock comes at least that long after the turn: never near.
   tests/t_mutex_yield.sh runs it both ways with WEFT_STATS=1 and checks
   the counters yield_near_misses and yield_skips.

   Checked here: mutual exclusion and every round's entry; every lock
   returns 0; the waiter is seen asleep within 10 s each round.
   Bounded: ROUNDS rounds, each with 10 s limits. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

enum { ROUNDS = 200 };
#define FAR_EXTRA_NS 200000L

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int go, asked, done;	/* round numbers, atomics */
static pid_t waiter_tid;
static int in_cs, entries, overlaps, bad_locks;

/* Waits, yielding the CPU (both threads share one), until *p == want
   or 10 s passed; 1 when it got there. */
static int await_value(int *p, int want)
{
	double limit = now_s() + 10;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want)
		if (now_s() > limit)
			return 0;
		else
			sched_yield();
	return 1;
}

static void *waiter(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	__atomic_store_n(&waiter_tid, gettid(), __ATOMIC_RELEASE);
	for (int r = 1; r <= ROUNDS; r++) {
		if (!await_value(&go, r)) {
			FAIL("round %d: the main thread did not start it within 10 s", r);
			break;
		}
		__atomic_store_n(&asked, r, __ATOMIC_RELEASE);
		if (pthread_mutex_lock(&m) != 0)
			bad_locks++;
		if (__atomic_exchange_n(&in_cs, 1, __ATOMIC_ACQ_REL))
			overlaps++;
		entries++;
		__atomic_store_n(&in_cs, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&m);
		__atomic_store_n(&done, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Busy for `ns`, yielding the CPU to the waiter should it need it. */
static void hold_for(long ns)
{
	long end = mono_ns() + ns;

	while (mono_ns() < end)
		sched_yield();
}

int main(void)
{
	const char *how = getenv("NEARMISS_HOLD");
	int far = how && strcmp(how, "far") == 0;
	cpu_set_t set;
	pthread_t t;

	harness_watchdog("t_mutex_nearmiss", 120);
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE(how == NULL || far || strcmp(how, "near") == 0,
		"NEARMISS_HOLD: expected near or far, got '%s'", how);
	/* One CPU for both (the first allowed): the waiter inherits it. */
	REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			CPU_ZERO(&set);
			CPU_SET(c, &set);
			break;
		}
	REQUIRE(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity");
	REQUIRE(pthread_create(&t, NULL, waiter, NULL) == 0, "pthread_create");
	for (int r = 1; r <= ROUNDS; r++) {
		CHECK_EQ(pthread_mutex_lock(&m), 0);
		__atomic_store_n(&go, r, __ATOMIC_RELEASE);
		if (!await_value(&asked, r)) {
			FAIL("round %d: the waiter did not ask for the mutex within 10 s", r);
			pthread_mutex_unlock(&m);
			break;
		}
		if (!task_asleep(__atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE),
				 10000000000L)) {
			FAIL("round %d: expected the waiter asleep on the mutex within 10 s", r);
			pthread_mutex_unlock(&m);
			break;
		}
		if (far)
			hold_for(FAR_EXTRA_NS);
		if (__atomic_exchange_n(&in_cs, 1, __ATOMIC_ACQ_REL))
			overlaps++;
		__atomic_store_n(&in_cs, 0, __ATOMIC_RELEASE);
		CHECK_EQ(pthread_mutex_unlock(&m), 0);
		if (!await_value(&done, r)) {
			FAIL("round %d: the waiter did not get the mutex within 10 s", r);
			break;
		}
	}
	REQUIRE(pthread_join(t, NULL) == 0, "pthread_join");
	CHECK_EQ(entries, ROUNDS);
	CHECK_EQ(overlaps, 0);
	CHECK_EQ(bad_locks, 0);
	printf("t_mutex_nearmiss: %d rounds, lock released %s\n", entries,
	       far ? "200 us after the waiter slept" : "as soon as the waiter slept");
	TEST_DONE();
}
