/* Issue 17: the mutex's spin with few threads: two threads on one
   mutex, each taking it back right after its release
   (src/sync/mutex.c, spin: the spinner marks the word after 500 ns so
   that the holder's release takes the slow path), and the same with each
   thread pinned to a CPU of its own (a thread confined to one CPU spins
   only for a holder awake on another, core/spin_policy.h).

   Checks, for each placement and for a short and a longer critical
   section (the longer one outlasts the spin, so the waiter marks, gives
   up and sleeps): every entry counted (2 x ENTRIES increments under the
   mutex), no two threads inside at once (a flag set on entry and
   cleared on exit), and the mutex free at the end (trylock succeeds).
   Bounded by counts and a 60 s alarm, which reports a hang (a lost
   wake-up) as a failure.  The pinned placement needs two usable CPUs:
   with one it is noted as skipped. */
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"

#define ENTRIES 100000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static volatile int inside, overlaps;
static int inner_work, pin_cpu[2];
static pthread_barrier_t start;

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
	for (int i = 0; i < ENTRIES; i++) {
		pthread_mutex_lock(&m);
		if (inside)
			overlaps++;
		inside = 1;
		for (volatile int k = 0; k < inner_work; k++)
			;
		counter++;
		inside = 0;
		pthread_mutex_unlock(&m);
		for (volatile int k = 0; k < 50; k++)
			;
	}
	return NULL;
}

static void run(const char *placement, int cpu0, int cpu1, int work)
{
	pthread_t t[2];

	counter = 0;
	overlaps = 0;
	inner_work = work;
	pin_cpu[0] = cpu0;
	pin_cpu[1] = cpu1;
	pthread_barrier_init(&start, NULL, 2);
	for (long i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	CHECK(counter == 2L * ENTRIES, "%s, work %d: expected %ld entries, got %ld",
	      placement, work, 2L * ENTRIES, counter);
	CHECK(overlaps == 0, "%s, work %d: expected no overlap, got %d",
	      placement, work, overlaps);
	CHECK_EQ(pthread_mutex_trylock(&m), 0);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
}

int main(void)
{
	cpu_set_t usable;
	int cpus[2], n = 0;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	harness_watchdog("t_mutex_pinned", 60);
	/* Short: the releasing thread takes the mutex back 50 loop steps
	   later.  Longer: 10-20 us inside, beyond the 2 us spin. */
	run("unpinned", -1, -1, 20);
	run("unpinned", -1, -1, 20000);
	CHECK_EQ(sched_getaffinity(0, sizeof usable, &usable), 0);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &usable))
			cpus[n++] = c;
	if (n < 2) {
		harness_skip_part("pinned placement: one usable CPU");
	} else {
		run("pinned to two CPUs", cpus[0], cpus[1], 20);
		run("pinned to two CPUs", cpus[0], cpus[1], 20000);
	}
	TEST_DONE();
}
