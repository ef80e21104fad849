/* A key's value is the calling thread's own in every kind of thread:
     - the main thread, before any other thread exists and after;
     - weft's threads, over rounds that reuse their stack blocks;
     - a thread glibc makes for a timer's SIGEV_THREAD notification,
       which weft adopts and which must not see the main thread's value;
     - the child of a fork, from the main thread and from a weft thread.
   Keys below 32 (the inline path, docs/tsd.md) and one beyond (the
   value blocks).  Written for a per-TCB descriptor slot that was tried
   and dropped; it caught that slot pointing a glibc thread at the main
   thread's descriptor. */
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

#define ROUNDS 4
#define PER_ROUND 4
#define READS 20000

static pthread_key_t k_inline, k_block;
static int main_val, main_val2;

/* Reads `key` many times in a row and returns how many reads differed
   from `want` (the inline path after the first). */
static int misreads(pthread_key_t key, void *want)
{
	int bad = 0;

	for (int i = 0; i < READS; i++)
		bad += pthread_getspecific(key) != want;
	return bad;
}

/* In a child process: the forking thread's values, then exit 0. */
static void check_child(void *want_inline, void *want_block)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		int bad = misreads(k_inline, want_inline) +
			  misreads(k_block, want_block);

		_exit(bad ? 1 : 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "fork child: expected the forking thread's values (exit 0), "
	      "got status 0x%x",
	      st);
}

static void *worker(void *arg)
{
	int own[2];

	CHECK_WEFT_THREAD();
	CHECK(pthread_getspecific(k_inline) == NULL,
	      "new thread %ld: expected no inline value, got %p", (long)arg,
	      pthread_getspecific(k_inline));
	CHECK(pthread_getspecific(k_block) == NULL,
	      "new thread %ld: expected no block value, got %p", (long)arg,
	      pthread_getspecific(k_block));
	CHECK_ERR(pthread_setspecific(k_inline, &own[0]), 0);
	CHECK_ERR(pthread_setspecific(k_block, &own[1]), 0);
	CHECK_EQ(misreads(k_inline, &own[0]), 0);
	CHECK_EQ(misreads(k_block, &own[1]), 0);
	if (arg == 0)
		check_child(&own[0], &own[1]);
	/* Cleared values read back as NULL. */
	CHECK_ERR(pthread_setspecific(k_inline, NULL), 0);
	CHECK_EQ(misreads(k_inline, NULL), 0);
	return NULL;
}

static sem_t timer_done;
static void *timer_before, *timer_after;
static int timer_origin = -1, timer_val;

static void timer_cb(union sigval v)
{
	(void)v;
	timer_origin = weft_self_origin();
	timer_before = pthread_getspecific(k_inline);
	if (pthread_setspecific(k_inline, &timer_val) == 0)
		timer_after = pthread_getspecific(k_inline);
	sem_post(&timer_done);
}

static void check_glibc_thread(void)
{
	struct sigevent sev = { 0 };
	struct itimerspec its = { .it_value.tv_nsec = 1000000 };
	struct timespec dl;
	timer_t tm;

	REQUIRE(sem_init(&timer_done, 0, 0) == 0, "sem_init");
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = timer_cb;
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0, "timer_create");
	REQUIRE(timer_settime(tm, 0, &its, NULL) == 0, "timer_settime");
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	REQUIRE(sem_timedwait(&timer_done, &dl) == 0,
		"the timer's thread did not run within 20 s");
	timer_delete(tm);
	CHECK_EQ(timer_origin, WEFT_THREAD_ADOPTED);
	CHECK(timer_before == NULL,
	      "glibc's timer thread: expected no value, got %p (main's is %p)",
	      timer_before, (void *)&main_val);
	CHECK(timer_after == &timer_val,
	      "glibc's timer thread: expected its own value %p back, got %p",
	      (void *)&timer_val, timer_after);
}

int main(void)
{
	pthread_t t[PER_ROUND];

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_getspecific);
	REQUIRE_SERVED(pthread_setspecific);
	CHECK_ERR(pthread_key_create(&k_inline, NULL), 0);
	/* Past the inline keys: 32 more make the last one a block key. */
	for (int i = 0; i < 32; i++)
		CHECK_ERR(pthread_key_create(&k_block, NULL), 0);
	CHECK(k_inline < 32 && k_block >= 32,
	      "keys: expected one inline (< 32) and one beyond, got %u and %u",
	      k_inline, k_block);

	/* The main thread, before any thread exists. */
	CHECK(pthread_getspecific(k_inline) == NULL, "main: expected no value");
	CHECK_ERR(pthread_setspecific(k_inline, &main_val), 0);
	CHECK_ERR(pthread_setspecific(k_block, &main_val2), 0);
	CHECK_EQ(misreads(k_inline, &main_val), 0);
	CHECK_EQ(misreads(k_block, &main_val2), 0);
	check_child(&main_val, &main_val2);

	for (int r = 0; r < ROUNDS; r++) {
		for (long i = 0; i < PER_ROUND; i++)
			CHECK_ERR(pthread_create(&t[i], NULL, worker,
						 (void *)(i + r * PER_ROUND)),
				  0);
		for (int i = 0; i < PER_ROUND; i++)
			CHECK_ERR(pthread_join(t[i], NULL), 0);
	}

	check_glibc_thread();

	/* Nobody else's value reached the main thread's. */
	CHECK_EQ(misreads(k_inline, &main_val), 0);
	CHECK_EQ(misreads(k_block, &main_val2), 0);
	TEST_DONE();
}
