/* fork while other threads are acting on the forking thread
   (pthread_kill(forker, 0) pins it, core/target.c) and changing the
   default attributes (their lock): in the child the forker must still be
   able to end (its pin count starts at zero) and to create threads
   without attributes (the defaults' lock is free).  A child that hangs
   is killed after 10 s and counts as a failure. */
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "harness.h"

static pthread_t forker;
static int stop;
/* The main thread waits on this, not in pthread_join: a fork child
   would inherit the forker's "being joined" state from the parent. */
static sem_t forks_done;

static void *prober(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		pthread_kill(forker, 0);
	return NULL;
}

static void *defaults_changer(void *arg)
{
	pthread_attr_t a;
	cpu_set_t set;

	(void)arg;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
		pthread_setattr_default_np(&a);
		pthread_attr_destroy(&a);
		pthread_getattr_default_np(&a);
		pthread_attr_destroy(&a);
	}
	return NULL;
}

/* Outlives the forker, so that the forker's exit is not the process's
   exit and goes all the way through thread_finish; the join returns once
   the forker is gone. */
static void *child_last(void *arg)
{
	pthread_t f = *(pthread_t *)arg;

	int err = pthread_join(f, NULL);

	if (err != 0)
		_exit(4);
	return NULL;
}

/* In the child: make a thread without attributes, then end the forker
   while that thread waits for it. */
static void child(void)
{
	static pthread_t me;
	pthread_t t;

	me = pthread_self();
	if (pthread_create(&t, NULL, child_last, &me) != 0)
		_exit(3);
	pthread_exit(NULL);
}

static int wait_child(pid_t p)
{
	struct timespec t0, t;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t r = waitpid(p, &st, WNOHANG);

		if (r == p)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 10) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			return -1; /* hung */
		}
		sched_yield();
	}
}

static void *fork_loop(void *arg)
{
	struct timespec t0, t;
	int n = 0, bad = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pid_t p = fork();
		int rc;

		if (p == 0)
			child();
		REQUIRE(p > 0, "fork: %s", strerror(errno));
		rc = wait_child(p);
		if (rc != 0) {
			FAIL("fork child %d: %s (status %d)", n,
			     rc < 0 ? "hung" : "failed", rc);
			if (++bad == 3)
				break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (++n < 300 && t.tv_sec - t0.tv_sec < 4);
	fprintf(stderr, "%d forks\n", n);
	sem_post(&forks_done);
	return NULL;
}

int main(void)
{
	pthread_t pr, dc;
	pthread_attr_t a;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_kill);
	REQUIRE_SERVED(pthread_setattr_default_np);
	REQUIRE_SERVED(pthread_create);
	REQUIRE(sem_init(&forks_done, 0, 0) == 0, "sem_init");
	CHECK_ERR(pthread_create(&forker, NULL, fork_loop, NULL), 0);
	CHECK_ERR(pthread_create(&pr, NULL, prober, NULL), 0);
	CHECK_ERR(pthread_create(&dc, NULL, defaults_changer, NULL), 0);
	while (sem_wait(&forks_done) != 0)
		;
	pthread_join(forker, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(pr, NULL);
	pthread_join(dc, NULL);
	pthread_attr_init(&a);
	pthread_setattr_default_np(&a);
	pthread_attr_destroy(&a);
	TEST_DONE();
}
