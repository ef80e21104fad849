/* pthread_join and pthread_timedjoin_np are cancellation points, and a
   joiner cancelled while it waits leaves the thread it waited for
   joinable (POSIX; Open POSIX Test Suite pthread_join/4-1):
   - a joiner cancelled while asleep in pthread_join runs its cleanup
     handler and yields PTHREAD_CANCELED; the target can then be joined
     (its result intact) or detached;
   - a cancellation requested before the join acts as the join starts
     to wait;
   - pthread_timedjoin_np with a far deadline is cancelled likewise;
   - a thread that has already ended is joined even with a cancellation
     pending (nothing to wait for: no cancellation point, as in glibc);
   - race: the joiner is cancelled at arbitrary points while the target
     ends; every target ends up joined exactly once (by the joiner, or by
     main after the joiner was cancelled). */
#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

/* Waits (at most 5 s) until the thread is asleep in the kernel. */
static void wait_asleep(pid_t tid)
{
	(void)task_asleep(tid, 5000000000L);
}

/* Waits (at most 5 s) until the task is gone: the kernel has cleared
   its tid word by then (that happens before the task is released). */
static int wait_gone(pid_t tid)
{
	char path[64];
	long end = mono_ns() + 5000000000L;

	snprintf(path, sizeof path, "/proc/self/task/%d", tid);
	while (mono_ns() < end) {
		DIR *d = opendir(path);

		if (!d)
			return 1;
		closedir(d);
		sched_yield();
	}
	return 0;
}

/* Joins `th` but fails (and ends the test) instead of hanging when it
   does not end within 5 s: a joiner that ignores its cancellation. */
static void *join_or_die(pthread_t th, const char *what)
{
	struct timespec ts;
	void *r = NULL;
	int err;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	err = pthread_timedjoin_np(th, &r, &ts);
	REQUIRE(err == 0, "%s: expected it to end within 5 s, got %d (%s)",
		what, err, strerror(err));
	return r;
}

/* --------------------------------------------------------- the target */

static int gate[2]; /* the target blocks reading this until we write */
static pid_t target_tid;

static void *target(void *arg)
{
	char c;

	CHECK_WEFT_THREAD();
	__atomic_store_n(&target_tid, gettid(), __ATOMIC_RELEASE);
	if (read(gate[0], &c, 1) != 1)
		return NULL;
	return arg;
}

static void release_target(void)
{
	CHECK_EQ(write(gate[1], "x", 1), 1);
}

/* --------------------------------------------------------- the joiner */

enum how { PLAIN, TIMED, PENDING };

struct joiner {
	pthread_t target;
	enum how how;
	pid_t tid;
	int cleanup_ran;
	int returned;
	int ready; /* PENDING: cancellation disabled, waiting to be cancelled */
};

static void joiner_cleanup(void *p)
{
	((struct joiner *)p)->cleanup_ran = 1;
}

static void *joiner(void *p)
{
	struct joiner *j = p;
	struct timespec ts;
	int old;

	CHECK_WEFT_THREAD();
	__atomic_store_n(&j->tid, gettid(), __ATOMIC_RELEASE);
	if (j->how == PENDING) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		__atomic_store_n(&j->ready, 1, __ATOMIC_RELEASE);
		/* Main cancels us now; the request stays pending. */
		while (__atomic_load_n(&j->ready, __ATOMIC_ACQUIRE) == 1)
			sched_yield();
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	}
	pthread_cleanup_push(joiner_cleanup, j);
	if (j->how == TIMED) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 60;
		pthread_timedjoin_np(j->target, NULL, &ts);
	} else {
		pthread_join(j->target, NULL);
	}
	j->returned = 1;
	pthread_cleanup_pop(0);
	return NULL;
}

/* A joiner waiting for a target that still runs is cancelled; afterwards
   the target is joined by main (or detached, when `detach`). */
static void cancel_waiting_joiner(enum how how, int detach)
{
	struct joiner j = {.how = how};
	pthread_t jt;
	void *r;

	REQUIRE(pipe(gate) == 0, "pipe");
	target_tid = 0;
	CHECK_ERR(pthread_create(&j.target, NULL, target, (void *)0x7a11), 0);
	CHECK_ERR(pthread_create(&jt, NULL, joiner, &j), 0);
	if (how == PENDING) {
		while (!__atomic_load_n(&j.ready, __ATOMIC_ACQUIRE))
			sched_yield();
		CHECK_ERR(pthread_cancel(jt), 0);
		__atomic_store_n(&j.ready, 2, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&j.tid, __ATOMIC_ACQUIRE))
			sched_yield();
		wait_asleep(j.tid);
		CHECK_ERR(pthread_cancel(jt), 0);
	}
	r = join_or_die(jt, "the cancelled joiner");
	CHECK(r == PTHREAD_CANCELED, "how %d: joiner result %p", how, r);
	CHECK(j.cleanup_ran, "how %d: the joiner's cleanup handler did not run",
	      how);
	CHECK(!j.returned, "how %d: the join returned", how);

	if (detach) {
		/* The claim was given back: the target is joinable, so it
		   can be detached (EINVAL if the claim were still held). */
		CHECK_ERR(pthread_detach(j.target), 0);
		while (!__atomic_load_n(&target_tid, __ATOMIC_ACQUIRE))
			sched_yield();
		release_target();
		/* Before the pipe's descriptors can be reused: it must not
		   read from the next case's pipe. */
		CHECK(wait_gone(target_tid), "detached target still there");
	} else {
		release_target();
		r = join_or_die(j.target, how == PLAIN ? "target (plain)"
				: how == TIMED ? "target (timed)" : "target (pending)");
		CHECK(r == (void *)0x7a11, "how %d: target result %p", how, r);
	}
	close(gate[0]);
	close(gate[1]);
}

/* The target has ended (its tid word is clear) before the join begins:
   the join succeeds despite a pending cancellation. */
static void pending_cancel_dead_target(void)
{
	struct joiner j = {.how = PENDING};
	pthread_t jt;
	void *r;

	REQUIRE(pipe(gate) == 0, "pipe");
	target_tid = 0;
	CHECK_ERR(pthread_create(&j.target, NULL, target, (void *)0xdead), 0);
	while (!__atomic_load_n(&target_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	release_target();
	CHECK(wait_gone(target_tid), "target task still there after 5 s");
	CHECK_ERR(pthread_create(&jt, NULL, joiner, &j), 0);
	while (!__atomic_load_n(&j.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	CHECK_ERR(pthread_cancel(jt), 0);
	__atomic_store_n(&j.ready, 2, __ATOMIC_RELEASE);
	r = join_or_die(jt, "the joiner of an ended thread");
	/* The join returned; the joiner meets no other cancellation point
	   on its way out, so it returns normally. */
	CHECK(j.returned, "the join of an ended thread was cancelled");
	CHECK(r == NULL, "joiner result %p", r);
	/* It was joined: its handle is stale now. */
	CHECK_ERR(pthread_join(j.target, NULL), ESRCH);
	close(gate[0]);
	close(gate[1]);
}

/* ---------------------------------------------------------- the race */

static void *quick(void *arg)
{
	return arg;
}

struct racer {
	pthread_t target;
	void *got;
};

static void *race_joiner(void *p)
{
	struct racer *x = p;

	pthread_join(x->target, &x->got);
	return NULL;
}

static void race(void)
{
	long end = mono_ns() + 1500000000L;
	int rounds = 0, cancelled = 0;

	while (rounds < 400 && mono_ns() < end) {
		struct racer x = {0};
		void *tag = (void *)(uintptr_t)(0x1000 + rounds), *r;
		pthread_t jt;

		CHECK_ERR(pthread_create(&x.target, NULL, quick, tag), 0);
		CHECK_ERR(pthread_create(&jt, NULL, race_joiner, &x), 0);
		for (int i = rounds % 64; i > 0; i--)
			sched_yield();
		CHECK_ERR(pthread_cancel(jt), 0);
		r = join_or_die(jt, "a racing joiner");
		if (r == PTHREAD_CANCELED) {
			/* Cancelled before it joined: the target must still
			   be joinable, whatever point it had reached. */
			cancelled++;
			r = join_or_die(x.target, "a target whose joiner was "
						  "cancelled");
			CHECK(r == tag, "round %d: target result %p", rounds,
			      r);
		} else {
			CHECK(x.got == tag, "round %d: joiner got %p", rounds,
			      x.got);
			CHECK_ERR(pthread_join(x.target, NULL), ESRCH);
		}
		rounds++;
		if (harness_failures)
			break;
	}
	printf("race: %d rounds, joiner cancelled in %d\n", rounds, cancelled);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_join);
	REQUIRE_SERVED(pthread_timedjoin_np);
	REQUIRE_SERVED(pthread_detach);

	cancel_waiting_joiner(PLAIN, 0);
	cancel_waiting_joiner(PLAIN, 1);
	cancel_waiting_joiner(TIMED, 0);
	cancel_waiting_joiner(PENDING, 0);
	pending_cancel_dead_target();
	race();
	TEST_DONE();
}
