/* exit(5) called from a created thread while the other threads (main
   included) block in various ways: the process ends promptly with
   status 5, and atexit handlers run (once), stdio is flushed. */
#include "harness.h"
#include "child.h"

#include <semaphore.h>
#include <stdint.h>

static int wfd;
static pthread_barrier_t ready;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t never;
static int never_pipe[2];
static pthread_t blocker_cv;
static int atexit_runs;

static void at_exit_handler(void)
{
	char buf[64];
	snprintf(buf, sizeof buf, "atexit %d\n", ++atexit_runs);
	put(wfd, buf);
}

static void *block_on_condvar(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	pthread_barrier_wait(&ready);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

static void *block_on_read(void *arg)
{
	char c;
	(void)arg;
	pthread_barrier_wait(&ready);
	ssize_t n = read(never_pipe[0], &c, 1);
	put(wfd, "read returned\n");
	return (void *)n;
}

static void *block_on_sem(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&ready);
	while (sem_wait(&never) != 0)
		;
	put(wfd, "sem_wait returned\n");
	return NULL;
}

static void *block_on_join(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&ready);
	pthread_join(blocker_cv, NULL);
	put(wfd, "join returned\n");
	return NULL;
}

static void *exiter(void *arg)
{
	char buf[64];
	(void)arg;
	snprintf(buf, sizeof buf, "exiter origin=%d\n", weft_self_origin());
	put(wfd, buf);
	pthread_barrier_wait(&ready);
	printf("stdio flushed\n"); /* buffered; exit must flush it */
	exit(5);
	return NULL;
}

static int scenario(int fd, void *arg)
{
	pthread_t t[5];

	(void)arg;
	wfd = fd;
	if (dup2(fd, 1) != 1)
		return 20;
	setvbuf(stdout, NULL, _IOFBF, 4096);
	if (atexit(at_exit_handler) != 0 || pipe(never_pipe) != 0 ||
	    sem_init(&never, 0, 0) != 0 ||
	    pthread_barrier_init(&ready, NULL, 5) != 0)
		return 21;
	if (pthread_create(&blocker_cv, NULL, block_on_condvar, NULL) ||
	    pthread_create(&t[1], NULL, block_on_read, NULL) ||
	    pthread_create(&t[2], NULL, block_on_sem, NULL) ||
	    pthread_create(&t[3], NULL, block_on_join, NULL) ||
	    pthread_create(&t[4], NULL, exiter, NULL))
		return 22;
	pthread_join(t[4], NULL); /* main blocks too */
	put(wfd, "main's join returned\n");
	return 23;
}

int main(void)
{
	struct child_result r;

	WEFT_REQUIRE();

	for (int round = 0; round < 20; round++) {
		REQUIRE(run_child(scenario, NULL, 20000, &r) == 0, "fork failed");
		char want[128];
		snprintf(want, sizeof want, "exiter origin=%d\natexit 1\nstdio flushed\n",
			 WEFT_THREAD_CREATED);
		int ok = !r.timed_out && WIFEXITED(r.status) &&
			 WEXITSTATUS(r.status) == 5 && strcmp(r.out, want) == 0;
		if (!ok) {
			FAIL("round %d: expected exit 5 and output\n%s---\ngot %s and "
			     "output\n%s---", round, want, status_str(&r), r.out);
			break;
		}
		CHECK(r.seconds < 5.0, "round %d: the process took %.2f s to end",
		      round, r.seconds);
	}
	TEST_DONE();
}
