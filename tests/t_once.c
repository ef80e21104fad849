/* pthread_once: concurrent callers run the routine exactly once and all
   return after it finished; a routine cancelled by pthread_cancel leaves
   the once re-runnable (a waiting caller then runs it); a routine running
   in the parent during fork does not hang the child; C11 call_once. */
#include <sys/wait.h>
#include <semaphore.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

enum { CALLERS = 8, REPEATS = 300 };

static pthread_once_t onces[REPEATS];
static int runs[REPEATS];
static int finished[REPEATS];
static int cur;
static pthread_barrier_t go;

static void init_cur(void)
{
	int k = __atomic_load_n(&cur, __ATOMIC_RELAXED);

	__atomic_fetch_add(&runs[k], 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2000; i++)
		__asm__ volatile("pause");
	__atomic_store_n(&finished[k], 1, __ATOMIC_RELEASE);
}

static void *caller(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (int k = 0; k < REPEATS; k++) {
		pthread_barrier_wait(&go);
		CHECK_ERR(pthread_once(&onces[k], init_cur), 0);
		if (!__atomic_load_n(&finished[k], __ATOMIC_ACQUIRE))
			FAIL("once %d returned before its routine finished", k);
		pthread_barrier_wait(&go);
		if (arg == NULL)
			__atomic_store_n(&cur, k + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void concurrent(void)
{
	pthread_t t[CALLERS];

	pthread_barrier_init(&go, NULL, CALLERS);
	for (long i = 0; i < CALLERS; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, caller, (void *)i), 0);
	for (int i = 0; i < CALLERS; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	for (int k = 0; k < REPEATS; k++)
		if (runs[k] != 1)
			FAIL("once %d: routine ran %d times", k, runs[k]);
	pthread_barrier_destroy(&go);
}

/* --- cancelled routine ------------------------------------------------ */

static pthread_once_t conce = PTHREAD_ONCE_INIT;
static int cruns, pipefd[2];
static sem_t started;

static void blocking_init(void)
{
	char c;

	if (__atomic_add_fetch(&cruns, 1, __ATOMIC_SEQ_CST) == 1) {
		sem_post(&started);
		/* read() is a cancellation point: the cancel lands here. */
		for (;;)
			if (read(pipefd[0], &c, 1) < 0)
				break;
	}
}

static void *once_caller(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK_ERR(pthread_once(&conce, blocking_init), 0);
	return NULL;
}

static void cancelled_init(void)
{
	pthread_t runner, waiter;
	void *res;

	REQUIRE(pipe(pipefd) == 0, "pipe");
	sem_init(&started, 0, 0);
	CHECK_ERR(pthread_create(&runner, NULL, once_caller, NULL), 0);
	while (sem_wait(&started) != 0)
		;
	/* A second caller that must wait for the runner: it is asleep
	   once weft's WAITERS bit (4) shows in the word. */
	CHECK_ERR(pthread_create(&waiter, NULL, once_caller, NULL), 0);
	{
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			sched_yield();
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (!(__atomic_load_n(&conce, __ATOMIC_SEQ_CST) & 4) &&
			 t1.tv_sec - t0.tv_sec < 5);
		CHECK(conce & 4, "the second caller never waited: word %d",
		      conce);
	}
	CHECK_ERR(pthread_cancel(runner), 0);
	CHECK_ERR(pthread_join(runner, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "runner not cancelled: %p", res);
	/* The waiter (or, if it came late, a new call) runs it again. */
	CHECK_ERR(pthread_join(waiter, NULL), 0);
	CHECK_ERR(pthread_once(&conce, blocking_init), 0);
	CHECK_EQ(cruns, 2);
	CHECK_EQ(conce, 2); /* done: glibc's value, PTHREAD_ONCE_INIT + 2 */
	close(pipefd[0]);
	close(pipefd[1]);
}

/* --- fork while a routine runs ----------------------------------------- */

static pthread_once_t fonce = PTHREAD_ONCE_INIT;
static int fork_ready, fork_done, child_ran;

static void slow_init(void)
{
	__atomic_fetch_add(&child_ran, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fork_ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&fork_done, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void *fork_runner(void *arg)
{
	(void)arg;
	pthread_once(&fonce, slow_init);
	return NULL;
}

static void fork_during_init(void)
{
	pthread_t t;
	int status;
	pid_t pid;

	CHECK_ERR(pthread_create(&t, NULL, fork_runner, NULL), 0);
	while (!__atomic_load_n(&fork_ready, __ATOMIC_SEQ_CST))
		sched_yield();
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		/* The runner does not exist here; the child runs it itself
		   (fork_done is 1 in the child's copy only). */
		__atomic_store_n(&fork_done, 1, __ATOMIC_SEQ_CST);
		alarm(10);
		pthread_once(&fonce, slow_init);
		_exit(child_ran == 2 ? 0 : 3);
	}
	__atomic_store_n(&fork_done, 1, __ATOMIC_SEQ_CST);
	CHECK_ERR(pthread_join(t, NULL), 0);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child: status 0x%x", status);
	CHECK_EQ(child_ran, 1);
}

static once_flag c11_flag = ONCE_FLAG_INIT;
static int c11_runs;
static void c11_init(void)
{
	c11_runs++;
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_once);
	REQUIRE_SERVED(__pthread_once);
	REQUIRE_SERVED(call_once);

	concurrent();
	cancelled_init();
	fork_during_init();
	call_once(&c11_flag, c11_init);
	call_once(&c11_flag, c11_init);
	CHECK_EQ(c11_runs, 1);
	TEST_DONE();
}
