/* Deferred condvar wake-ups (docs/sync.md, "Nobody is woken into a held
   mutex"): a waiter signalled by the mutex's holder is woken only when
   the holder releases the mutex, and a broadcast's waiters are woken one
   after another, each by the previous one's release.  Checked here:
   - signal under the mutex: the waiter does not run before the unlock,
     for normal, recursive (depth 2: only the last unlock releases) and
     error-checking mutexes;
   - releasing the mutex inside pthread_cond_wait hands the deferred
     wake-ups on, as an unlock does;
   - many mutexes with deferred wake-ups at once (each carries its own
     chain): every waiter still returns;
   - a broadcast chain survives a waiter that times out, is cancelled or
     leaves at once, across many rounds with an exact wake-up count;
   - a fork child that releases the mutex does not touch the parent's
     waiters, and the parent's waiter still wakes. */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Joins within 10 s, or reports the thread as stranded. */
static int join_bounded(pthread_t t, const char *what, int i)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	int r = pthread_timedjoin_np(t, NULL, &ts);

	CHECK(r == 0, "%s waiter %d: expected to return after the release, "
	      "got %s", what, i, strerror(r));
	return r;
}

/* ------------------------------------------- one waiter per condvar */

struct pair {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int waiting, go;
	pid_t tid;
};

static void *pair_waiter(void *p)
{
	struct pair *x = p;

	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&x->m);
	x->tid = gettid_();
	x->waiting = 1;
	while (!x->go)
		pthread_cond_wait(&x->cv, &x->m);
	x->go = 2;
	pthread_mutex_unlock(&x->m);
	return NULL;
}

static void pair_start(struct pair *x, int type, pthread_t *t)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutex_init(&x->m, &a);
	pthread_mutexattr_destroy(&a);
	pthread_cond_init(&x->cv, NULL);
	x->waiting = x->go = 0;
	pthread_create(t, NULL, pair_waiter, x);
	for (;;) {
		pthread_mutex_lock(&x->m);
		int w = x->waiting;
		pthread_mutex_unlock(&x->m);
		if (w)
			break;
		sched_yield();
	}
	CHECK(task_asleep(x->tid, 5000000000L), "waiter never slept");
}

static const char *type_name(int type)
{
	return type == PTHREAD_MUTEX_RECURSIVE	  ? "recursive"
	       : type == PTHREAD_MUTEX_ERRORCHECK ? "error-checking"
						  : "normal";
}

/* Signal under the mutex: the waiter must not run until the release
   (for a recursive mutex locked twice: the second unlock). */
static void test_signal_under_lock(int type)
{
	struct pair x;
	pthread_t t;
	long before, after;

	pair_start(&x, type, &t);
	pthread_mutex_lock(&x.m);
	if (type == PTHREAD_MUTEX_RECURSIVE)
		CHECK_ERR(pthread_mutex_lock(&x.m), 0);
	before = task_vol_switches(x.tid);
	x.go = 1;
	CHECK_ERR(pthread_cond_signal(&x.cv), 0);
	if (type == PTHREAD_MUTEX_RECURSIVE)
		CHECK_ERR(pthread_mutex_unlock(&x.m), 0); /* still held */
	/* A woken waiter would run on the other CPU or when we yield, and
	   count a voluntary switch blocking on the mutex. */
	for (int i = 0; i < 200; i++)
		sched_yield();
	after = task_vol_switches(x.tid);
	CHECK(after == before, "%s mutex: the waiter ran %ld times before "
	      "the signaller released the mutex (expected 0)",
	      type_name(type), after - before);
	CHECK_ERR(pthread_mutex_unlock(&x.m), 0);
	if (join_bounded(t, type_name(type), 0) == 0)
		CHECK_EQ(x.go, 2);
	pthread_mutex_destroy(&x.m);
	pthread_cond_destroy(&x.cv);
}

/* The signaller waits on a second condvar with the same mutex: that
   release passes the wake-up on, and the woken waiter signals back. */
static struct pair relay;
static pthread_cond_t relay_back = PTHREAD_COND_INITIALIZER;
static int relay_done;

static void *relay_waiter(void *p)
{
	(void)p;
	pthread_mutex_lock(&relay.m);
	relay.tid = gettid_();
	relay.waiting = 1;
	while (!relay.go)
		pthread_cond_wait(&relay.cv, &relay.m);
	relay_done = 1;
	pthread_cond_signal(&relay_back);
	pthread_mutex_unlock(&relay.m);
	return NULL;
}

static void test_release_in_wait(void)
{
	pthread_t t;
	struct timespec ts;
	int r = 0;

	pthread_mutex_init(&relay.m, NULL);
	pthread_cond_init(&relay.cv, NULL);
	pthread_create(&t, NULL, relay_waiter, NULL);
	for (;;) {
		pthread_mutex_lock(&relay.m);
		if (relay.waiting)
			break;
		pthread_mutex_unlock(&relay.m);
		sched_yield();
	}
	/* It is listed on relay.cv: it released the mutex in its wait. */
	relay.go = 1;
	pthread_cond_signal(&relay.cv);
	ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	while (!relay_done && r == 0)
		r = pthread_cond_timedwait(&relay_back, &relay.m, &ts);
	CHECK(relay_done, "signal then wait on another condvar: expected the "
	      "waiter to wake when our wait released the mutex, got %s",
	      strerror(r));
	pthread_mutex_unlock(&relay.m);
	join_bounded(t, "relay", 0);
}

/* Many held mutexes with deferred wake-ups (once more than a thread's
   slots, when the chains were kept per thread): every waiter returns,
   whatever the order of the unlocks. */
static void test_many_mutexes(void)
{
	enum { N = 9 };
	struct pair x[N];
	pthread_t t[N];

	for (int i = 0; i < N; i++)
		pair_start(&x[i], PTHREAD_MUTEX_NORMAL, &t[i]);
	for (int i = 0; i < N; i++)
		pthread_mutex_lock(&x[i].m);
	for (int i = 0; i < N; i++) {
		x[i].go = 1;
		pthread_cond_signal(&x[i].cv);
	}
	for (int i = 0; i < N; i += 2) /* evens first, then odds backwards */
		pthread_mutex_unlock(&x[i].m);
	for (int i = N - 1 - (N % 2 == 1); i > 0; i -= 2)
		pthread_mutex_unlock(&x[i].m);
	for (int i = 0; i < N; i++)
		if (join_bounded(t[i], "many-mutexes", i) == 0)
			CHECK_EQ(x[i].go, 2);
}

/* ------------------------------------------- broadcast chains */

enum { CW = 8, ROUNDS = 1500 };

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ccv = PTHREAD_COND_INITIALIZER;
static long cround, woken_total, timeouts_total;
static int cwaiting, cstop;

/* Waiter i: even ones wait without a deadline; odd ones with deadlines
   of a few microseconds, so that some time out as the broadcast claims
   them.  Every return with a new round counts once. */
static void *chain_waiter(void *p)
{
	long i = (long)p, seen;

	pthread_mutex_lock(&cm);
	while (!cstop) {
		seen = cround;
		cwaiting++; /* ready for the next round; the master resets it */
		while (cround == seen && !cstop) {
			int r;
			if (i & 1) {
				struct timespec ts =
					deadline_in(CLOCK_MONOTONIC, 2000 * (i + 1));
				r = pthread_cond_clockwait(&ccv, &cm,
							   CLOCK_MONOTONIC, &ts);
				if (r == ETIMEDOUT)
					timeouts_total++;
			} else {
				r = pthread_cond_wait(&ccv, &cm);
			}
			CHECK(r == 0 || r == ETIMEDOUT, "wait: %s", strerror(r));
		}
		if (cround != seen)
			woken_total++;
	}
	pthread_mutex_unlock(&cm);
	return NULL;
}

static void test_chain_rounds(int under_lock)
{
	pthread_t t[CW];

	cround = woken_total = timeouts_total = 0;
	cwaiting = cstop = 0;
	for (long i = 0; i < CW; i++)
		pthread_create(&t[i], NULL, chain_waiter, (void *)i);
	long start = mono_ns();
	for (long r = 0; r < ROUNDS; r++) {
		/* wait until every waiter is back in (or about to enter) a wait */
		for (;;) {
			pthread_mutex_lock(&cm);
			if (cwaiting == CW)
				break;
			pthread_mutex_unlock(&cm);
			sched_yield();
			if (mono_ns() - start > 60000000000L)
				break;
		}
		cwaiting = 0;
		cround++;
		if (under_lock) {
			pthread_cond_broadcast(&ccv);
			pthread_mutex_unlock(&cm);
		} else {
			pthread_mutex_unlock(&cm);
			pthread_cond_broadcast(&ccv);
		}
	}
	pthread_mutex_lock(&cm);
	cstop = 1;
	pthread_cond_broadcast(&ccv);
	pthread_mutex_unlock(&cm);
	for (int i = 0; i < CW; i++)
		join_bounded(t[i], "chain", i);
	/* Each round every waiter saw the new round exactly once. */
	CHECK(woken_total == (long)CW * ROUNDS,
	      "broadcast %s: expected %ld returns with a new round, got %ld",
	      under_lock ? "under the mutex" : "after unlock",
	      (long)CW * ROUNDS, woken_total);
	printf("broadcast chains %s: %d rounds x %d waiters, %ld timeouts "
	       "along the way\n", under_lock ? "under the mutex" : "after unlock",
	       ROUNDS, CW, timeouts_total);
}

/* A waiter of the chain is cancelled while the broadcaster still holds
   the mutex: its cleanup runs with the mutex held and unlocks it, which
   must pass the chain on to the others. */
static pthread_mutex_t km = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kcv = PTHREAD_COND_INITIALIZER;
static int kgo, kwaiting, kreturned, kcleanups;
static pid_t ktid[6];

static void kcleanup(void *p)
{
	(void)p;
	kcleanups++;
	pthread_mutex_unlock(&km);
}

static void *kwaiter(void *p)
{
	long i = (long)p;

	pthread_mutex_lock(&km);
	ktid[i] = gettid_();
	kwaiting++;
	pthread_cleanup_push(kcleanup, NULL);
	while (!kgo)
		pthread_cond_wait(&kcv, &km);
	kreturned++;
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(&km);
	return NULL;
}

static void test_chain_cancel(void)
{
	enum { K = 6, VICTIM = 2 };
	pthread_t t[K];
	void *res;

	for (long i = 0; i < K; i++)
		pthread_create(&t[i], NULL, kwaiter, (void *)i);
	for (;;) {
		pthread_mutex_lock(&km);
		if (kwaiting == K)
			break;
		pthread_mutex_unlock(&km);
		sched_yield();
	}
	for (int i = 0; i < K; i++)
		task_asleep(ktid[i], 5000000000L);
	kgo = 1;
	pthread_cond_broadcast(&kcv);
	pthread_cancel(t[VICTIM]);
	pthread_mutex_unlock(&km);
	for (int i = 0; i < K; i++) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
		int r = pthread_timedjoin_np(t[i], &res, &ts);
		CHECK(r == 0, "chain with a cancelled waiter: waiter %d did not "
		      "return (%s)", i, strerror(r));
	}
	/* The victim either returned (picked before the cancel acted) or
	   ran its cleanup; every other waiter returned. */
	CHECK(kreturned + kcleanups == K, "expected %d returns + cleanups, got "
	      "%d + %d", K, kreturned, kcleanups);
}

/* fork while a wake-up is deferred: the child releases the mutex (its
   copy of the parent's waiter is not a thread there), the parent's
   waiter wakes at the parent's release. */
static void test_fork(void)
{
	struct pair x;
	pthread_t t;
	pid_t pid;
	int status;

	pair_start(&x, PTHREAD_MUTEX_NORMAL, &t);
	pthread_mutex_lock(&x.m);
	x.go = 1;
	pthread_cond_signal(&x.cv);
	pid = fork();
	if (pid == 0) {
		pthread_mutex_unlock(&x.m);
		pthread_mutex_lock(&x.m);
		pthread_mutex_unlock(&x.m);
		_exit(0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid > 0) {
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "fork child status %#x", status);
	}
	pthread_mutex_unlock(&x.m);
	if (join_bounded(t, "fork", 0) == 0)
		CHECK_EQ(x.go, 2);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cond_signal);
	REQUIRE_SERVED(pthread_cond_broadcast);
	REQUIRE_SERVED(pthread_cond_wait);
	REQUIRE_SERVED(pthread_cond_clockwait);
	REQUIRE_SERVED(pthread_mutex_unlock);
	test_signal_under_lock(PTHREAD_MUTEX_NORMAL);
	test_signal_under_lock(PTHREAD_MUTEX_RECURSIVE);
	test_signal_under_lock(PTHREAD_MUTEX_ERRORCHECK);
	test_release_in_wait();
	test_many_mutexes();
	test_chain_rounds(1);
	test_chain_rounds(0);
	test_chain_cancel();
	test_fork();
	TEST_DONE();
}
