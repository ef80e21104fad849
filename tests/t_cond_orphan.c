/* A condvar wake-up deferred to a mutex's release (docs/sync.md) is
   delivered whoever releases the mutex, and is not lost with the
   thread that signalled:
   - the signaller holds a normal mutex, signals, and another thread
     unlocks it (glibc wakes the waiter; rt-tests' ptsematest unlocks
     from a non-owner);
   - the signaller signals and exits still holding it, and another
     thread unlocks it;
   - the signaller signals and is cancelled still holding it (no
     cleanup handler), and another thread unlocks it;
   - the signaller signals and is cancelled with a cleanup handler that
     unlocks, and exits through pthread_exit with one: the waiter wakes;
   - broadcast instead of signal, to two waiters, with a non-owner
     unlock: both wake.
   Each waiter must return within 10 s of the release. */
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int waiting, go, woken;

static void *waiter(void *p)
{
	(void)p;
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&m);
	waiting++;
	while (!go)
		pthread_cond_wait(&c, &m);
	woken++;
	pthread_mutex_unlock(&m);
	return NULL;
}

/* Starts n waiters and returns once all are in pthread_cond_wait (they
   counted themselves under the mutex, which they release only there). */
static void start_waiters(pthread_t *t, int n)
{
	waiting = go = woken = 0;
	for (int i = 0; i < n; i++)
		REQUIRE(pthread_create(&t[i], NULL, waiter, NULL) == 0,
			"pthread_create failed");
	for (;;) {
		pthread_mutex_lock(&m);
		int w = waiting;
		pthread_mutex_unlock(&m);
		if (w == n)
			return;
		sched_yield();
	}
}

static void join_waiters(pthread_t *t, int n, const char *what)
{
	for (int i = 0; i < n; i++) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
		int r = pthread_timedjoin_np(t[i], NULL, &ts);
		CHECK(r == 0, "%s: expected waiter %d to wake after the mutex "
		      "was released, got %s (still waiting)", what, i,
		      strerror(r));
		if (r) /* let it go, so that the test can end */
			pthread_detach(t[i]);
	}
}

/* ------------------------------------------------- the signallers */

enum ending { RETURN_LOCKED, EXIT_LOCKED, CANCELLED_LOCKED,
	      CANCELLED_CLEANUP, EXIT_CLEANUP };

struct sig_arg {
	enum ending end;
	int broadcast;
	int signalled; /* raw flag: set after the signal call returned */
};

static void unlock_m(void *p)
{
	(void)p;
	pthread_mutex_unlock(&m);
}

static int runs_cleanup(enum ending e)
{
	return e == EXIT_CLEANUP || e == CANCELLED_CLEANUP;
}

/* Locks, signals, and ends as told, still holding the mutex. */
static void signal_and_end(struct sig_arg *a)
{
	int fds[2];
	char b;

	pthread_mutex_lock(&m);
	go = 1;
	if (a->broadcast)
		pthread_cond_broadcast(&c);
	else
		pthread_cond_signal(&c);
	__atomic_store_n(&a->signalled, 1, __ATOMIC_RELEASE);
	switch (a->end) {
	case EXIT_LOCKED:
	case EXIT_CLEANUP:
		pthread_exit(NULL);
	case CANCELLED_LOCKED:
	case CANCELLED_CLEANUP:
		/* Blocks in a cancellation point until cancelled. */
		if (pipe(fds) == 0)
			for (;;)
				(void)!read(fds[0], &b, 1);
		break;
	default:
		break;
	}
}

static void *signaller(void *p)
{
	struct sig_arg *a = p;

	CHECK_WEFT_THREAD();
	if (!runs_cleanup(a->end)) {
		signal_and_end(a);
		return NULL;
	}
	pthread_cleanup_push(unlock_m, NULL);
	signal_and_end(a);
	pthread_cleanup_pop(1);
	return NULL;
}

static void run(const char *what, enum ending end, int broadcast, int n)
{
	pthread_t w[2], s;
	struct sig_arg a = { end, broadcast, 0 };

	start_waiters(w, n);
	REQUIRE(pthread_create(&s, NULL, signaller, &a) == 0,
		"pthread_create failed");
	while (!__atomic_load_n(&a.signalled, __ATOMIC_ACQUIRE))
		sched_yield();
	if (end == CANCELLED_LOCKED || end == CANCELLED_CLEANUP)
		CHECK_ERR(pthread_cancel(s), 0);
	if (end != RETURN_LOCKED)
		CHECK_ERR(pthread_join(s, NULL), 0);
	/* The mutex is still held (by the signaller, alive or gone) unless
	   its cleanup handler released it: release it from here. */
	if (!runs_cleanup(end))
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
	join_waiters(w, n, what);
	if (end == RETURN_LOCKED)
		CHECK_ERR(pthread_join(s, NULL), 0);
	CHECK_EQ(woken, n);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cond_signal);
	REQUIRE_SERVED(pthread_mutex_unlock);
	/* A signaller that returns with the mutex held: a non-owner
	   unlocks it (while the signaller may still run). */
	run("signal, unlock by another thread", RETURN_LOCKED, 0, 1);
	run("signal, signaller exits holding the mutex", EXIT_LOCKED, 0, 1);
	run("signal, signaller cancelled holding the mutex", CANCELLED_LOCKED,
	    0, 1);
	run("signal, signaller cancelled, cleanup unlocks", CANCELLED_CLEANUP,
	    0, 1);
	run("signal, signaller exits, cleanup unlocks", EXIT_CLEANUP, 0, 1);
	run("broadcast to 2, signaller exits holding the mutex", EXIT_LOCKED,
	    1, 2);
	run("broadcast to 2, unlock by another thread", RETURN_LOCKED, 1, 2);
	TEST_DONE();
}
