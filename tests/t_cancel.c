/* weft's cancellation engine (docs/cancel.md):
   - pthread_setcancelstate/-type: EINVAL for bad values, old values;
   - a self-cancel stays pending while deferred or disabled, acts at
     pthread_testcancel, and at once when the type becomes asynchronous;
   - asynchronous cancellation of a busy loop (no cancellation point);
   - a cancellation requested before, and one arriving while blocked,
     in pthread_cond_wait, pthread_join and sem_wait: the cleanup handler
     runs (with the mutex held for the condvar) and the join gives
     PTHREAD_CANCELED; a joiner cancelled leaves its target joinable, a
     sem_wait cancelled leaves the token for another waiter;
   - a cancelled cond waiter does not take a signal meant for another:
     cancel one of two waiters and signal at once, the other one wakes. */
#include <errno.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

/* Waits (at most 5 s) until the thread is asleep in the kernel. */
static int wait_asleep(pid_t tid)
{
	return task_asleep(tid, 5000000000L);
}

static pthread_mutex_t m;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static volatile int handler_ran, handler_had_mutex;
static volatile pid_t worker_tid;
static pthread_t join_target;

static void on_cancel(void *arg)
{
	(void)arg;
	handler_ran++;
}

static void on_cancel_cond(void *arg)
{
	(void)arg;
	/* An error-checking mutex unlocks only for its owner. */
	handler_had_mutex = pthread_mutex_unlock(&m) == 0;
	handler_ran++;
}

enum what { COND, JOIN, SEM };

struct job {
	enum what what;
	int pending_first; /* cancel before the call */
	volatile int started;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	int old;

	CHECK_WEFT_THREAD();
	worker_tid = gettid();
	if (j->pending_first) {
		/* Deferred: a self-cancel only records the request. */
		CHECK_EQ(pthread_cancel(pthread_self()), 0);
	}
	if (j->what == COND) {
		pthread_mutex_lock(&m);
		pthread_cleanup_push(on_cancel_cond, NULL);
		j->started = 1;
		for (;;)
			pthread_cond_wait(&cv, &m);
		pthread_cleanup_pop(1);
	} else {
		pthread_cleanup_push(on_cancel, NULL);
		j->started = 1;
		if (j->what == JOIN)
			pthread_join(join_target, NULL);
		else
			sem_wait(&sem);
		pthread_cleanup_pop(0);
	}
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	return (void *)1; /* not reached */
}

static void *sleeper(void *arg)
{
	sem_t *go = arg;

	sem_wait(go);
	return (void *)42;
}

static void one_case(enum what what, int pending_first)
{
	struct job j = {.what = what, .pending_first = pending_first};
	sem_t go;
	pthread_t th;
	void *res = NULL;

	handler_ran = handler_had_mutex = 0;
	worker_tid = 0;
	sem_init(&go, 0, 0);
	if (what == JOIN)
		CHECK_EQ(pthread_create(&join_target, NULL, sleeper, &go), 0);
	CHECK_EQ(pthread_create(&th, NULL, worker, &j), 0);
	if (!pending_first) {
		while (!worker_tid)
			sched_yield();
		CHECK(wait_asleep(worker_tid), "worker never slept");
		CHECK_EQ(pthread_cancel(th), 0);
	}
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "case %d/%d: join gave %p", what,
	      pending_first, res);
	CHECK_EQ(handler_ran, 1);
	if (what == COND)
		CHECK_EQ(handler_had_mutex, 1);
	if (what == JOIN) {
		/* The cancelled joiner gave its claim back. */
		sem_post(&go);
		CHECK_EQ(pthread_join(join_target, &res), 0);
		CHECK(res == (void *)42, "target result %p", res);
	}
	if (what == SEM) {
		/* No token was taken: one post is one successful trywait. */
		sem_post(&sem);
		CHECK_EQ(sem_trywait(&sem), 0);
		CHECK(sem_trywait(&sem) == -1 && errno == EAGAIN, "token left over");
	}
	sem_destroy(&go);
}

/* --- asynchronous cancellation of a busy loop ------------------------- */
static volatile unsigned long spins;
static volatile int spinning;

static void *busy(void *arg)
{
	(void)arg;
	CHECK_EQ(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
	pthread_cleanup_push(on_cancel, NULL);
	spinning = 1;
	for (;;)
		spins++;
	pthread_cleanup_pop(0);
	return NULL;
}

/* --- states, types, self-cancel --------------------------------------- */
static void *self_cancel(void *arg)
{
	int old = -1, r;

	(void)arg;
	CHECK_EQ(pthread_setcancelstate(2, &old), EINVAL);
	CHECK_EQ(pthread_setcancelstate(-1, NULL), EINVAL);
	CHECK_EQ(pthread_setcanceltype(7, &old), EINVAL);
	CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
	CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
	CHECK_EQ(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
	CHECK_EQ(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_ASYNCHRONOUS);
	/* Disabled: pending, testcancel does nothing. */
	CHECK_EQ(pthread_cancel(pthread_self()), 0);
	pthread_testcancel();
	CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
	/* Enabled but deferred: still pending until a point. */
	r = 0;
	pthread_cleanup_push(on_cancel, NULL);
	r = 1;
	/* Becoming asynchronous with a pending request acts at once. */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	r = 2;
	pthread_cleanup_pop(0);
	FAIL("still running after becoming asynchronous (r=%d)", r);
	return NULL;
}

static void *testcancel_acts(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	pthread_cleanup_push(on_cancel, NULL);
	pthread_testcancel();
	FAIL("pthread_testcancel returned with a request pending");
	pthread_cleanup_pop(0);
	return NULL;
}

/* --- a request pending when the start routine returns ------------------
   The thread's exit steps (key destructors) may reach cancellation
   points; with no cleanup buffer left, they must not act. */
static pthread_key_t key;
static volatile int dtor_ran;

static void key_dtor(void *v)
{
	(void)v;
	pthread_testcancel();
	usleep(1);
	dtor_ran = 1;
}

static void *returns_with_request(void *arg)
{
	(void)arg;
	pthread_setspecific(key, (void *)1);
	pthread_cancel(pthread_self()); /* deferred: pending */
	return (void *)5;
}

/* --- cancelling the main thread (in a child process) -------------------
   Its handler runs, then weft's key destructor (glibc's start-up frame
   ends the main thread), and another thread can join it. */
static int main_out;
static pthread_t main_th;
static pthread_key_t main_key;

/* Not a cancellation point (write is one). */
static void say(const char *s)
{
	syscall(SYS_write, main_out, s, strlen(s));
}

static void main_handler(void *arg)
{
	(void)arg;
	say("handler,");
}

static void main_key_dtor(void *v)
{
	(void)v;
	say("key,");
}

static void *main_canceller(void *arg)
{
	void *res = NULL;

	(void)arg;
	pthread_cancel(main_th);
	if (pthread_join(main_th, &res) == 0 && res == PTHREAD_CANCELED)
		say("joined-canceled");
	return NULL;
}

static int cancel_main_child(int wfd, void *arg)
{
	pthread_t th;
	int p[2];
	char c;

	(void)arg;
	main_out = wfd;
	main_th = pthread_self();
	if (pipe(p) != 0 || pthread_key_create(&main_key, main_key_dtor) != 0)
		return 3;
	pthread_setspecific(main_key, (void *)1);
	pthread_cleanup_push(main_handler, NULL);
	if (pthread_create(&th, NULL, main_canceller, NULL) != 0)
		return 4;
	read(p[0], &c, 1); /* never returns: cancelled */
	pthread_cleanup_pop(0);
	return 5;
}

/* A process with one thread (a fork child) cancelling itself: the
   request acts at the next point (weft's single-thread path). */
static int alone_child(int wfd, void *arg)
{
	int p[2];
	char c = 'x';

	(void)arg;
	main_out = wfd;
	if (pipe(p) != 0 || write(p[1], &c, 1) != 1)
		return 3;
	pthread_cleanup_push(main_handler, NULL);
	pthread_cancel(pthread_self());
	say("asked,");
	read(p[0], &c, 1); /* data there, but the request came first */
	say("read returned");
	pthread_cleanup_pop(0);
	return 5;
}

/* --- two waiters, one cancelled, one signal ----------------------------- */
static int woken;
static volatile int waiting;

static void unlock_m(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&m);
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock_m, NULL);
	waiting++;
	while (!woken)
		pthread_cond_wait(&cv, &m);
	woken--;
	pthread_cleanup_pop(1);
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t ma;
	pthread_t th, a, b;
	void *res;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cancel);
	REQUIRE_SERVED(pthread_setcancelstate);
	REQUIRE_SERVED(pthread_setcanceltype);
	REQUIRE_SERVED(pthread_testcancel);
	REQUIRE_SERVED(__pthread_register_cancel);
	REQUIRE_SERVED(__pthread_unwind_next);
	REQUIRE_SERVED(pthread_cond_wait);
	REQUIRE_SERVED(pthread_join);
	REQUIRE_SERVED(sem_wait);

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &ma);
	sem_init(&sem, 0, 0);

	handler_ran = 0;
	CHECK_EQ(pthread_create(&th, NULL, self_cancel, NULL), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "self_cancel: %p", res);
	CHECK_EQ(handler_ran, 1);

	handler_ran = 0;
	CHECK_EQ(pthread_create(&th, NULL, testcancel_acts, NULL), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "testcancel: %p", res);
	CHECK_EQ(handler_ran, 1);

	CHECK_EQ(pthread_key_create(&key, key_dtor), 0);
	CHECK_EQ(pthread_create(&th, NULL, returns_with_request, NULL), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == (void *)5, "returned with a request pending: join gave %p",
	      res);
	CHECK_EQ(dtor_ran, 1);

	handler_ran = 0;
	CHECK_EQ(pthread_create(&th, NULL, busy, NULL), 0);
	while (!spinning)
		sched_yield();
	CHECK_EQ(pthread_cancel(th), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "busy loop: %p", res);
	CHECK_EQ(handler_ran, 1);

	for (int pf = 0; pf < 2; pf++) {
		one_case(COND, pf);
		one_case(JOIN, pf);
		one_case(SEM, pf);
	}

	{
		struct child_result cr;

		REQUIRE(run_child(cancel_main_child, NULL, 10000, &cr) == 0,
			"fork");
		CHECK(!cr.timed_out && WIFEXITED(cr.status) &&
			      WEXITSTATUS(cr.status) == 0,
		      "cancelled main: status %#x", cr.status);
		CHECK(strcmp(cr.out, "handler,key,joined-canceled") == 0,
		      "cancelled main: %s", cr.out);
	}

	{
		struct child_result cr;

		REQUIRE(run_child(alone_child, NULL, 10000, &cr) == 0, "fork");
		CHECK(!cr.timed_out && WIFEXITED(cr.status) &&
			      WEXITSTATUS(cr.status) == 0,
		      "single-threaded self-cancel: status %#x", cr.status);
		CHECK(strcmp(cr.out, "asked,handler,") == 0,
		      "single-threaded self-cancel: %s", cr.out);
	}

	/* Cancel one waiter and signal at once: the other must wake. */
	for (int round = 0; round < 50; round++) {
		woken = 0;
		waiting = 0;
		CHECK_EQ(pthread_create(&a, NULL, waiter, NULL), 0);
		CHECK_EQ(pthread_create(&b, NULL, waiter, NULL), 0);
		for (;;) {
			pthread_mutex_lock(&m);
			int n = waiting;
			pthread_mutex_unlock(&m);
			if (n == 2)
				break;
			sched_yield();
		}
		pthread_mutex_lock(&m);
		pthread_cancel(a);
		woken = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&m);
		CHECK_EQ(pthread_join(a, &res), 0);
		/* b either got the signal, or a took it before its
		   cancellation was seen and exited normally. */
		if (res != PTHREAD_CANCELED) {
			CHECK(res == NULL, "waiter a gave %p", res);
			pthread_cancel(b);
		}
		struct timespec dl = deadline_in(CLOCK_REALTIME, 5000000000L);
		int e = pthread_timedjoin_np(b, &res, &dl);
		CHECK(e == 0, "round %d: the other waiter never woke (lost signal)",
		      round);
		if (e) {
			pthread_cancel(b);
			pthread_join(b, &res);
		}
	}
	TEST_DONE();
}
