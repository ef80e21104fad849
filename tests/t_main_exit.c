/* pthread_exit from main while a worker still runs: the process lives on
   until the worker finishes, then ends with status 0, running atexit
   handlers and flushing stdio.  The worker proves that main really is
   gone by joining it (POSIX allows joining the initial thread). */
#include "harness.h"
#include "child.h"

#include <semaphore.h>
#include <stdint.h>

static int wfd;
static pthread_t main_thread;
static sem_t go;
static int atexit_runs;

static void at_exit_handler(void)
{
	char buf[64];
	snprintf(buf, sizeof buf, "atexit %d\n", ++atexit_runs);
	put(wfd, buf);
}

static void *worker(void *arg)
{
	char buf[128];
	void *rv = NULL;

	(void)arg;
	int origin = weft_self_origin();
	sem_wait(&go);
	/* Blocks until main has finished; main called pthread_exit. */
	int e = pthread_join(main_thread, &rv);
	snprintf(buf, sizeof buf, "worker joined main: err=%d rv=%ld origin=%d\n",
		 e, (long)(intptr_t)rv, origin);
	put(wfd, buf);
	/* Buffered stdio output must be flushed by the exit that follows
	   the last thread's end. */
	printf("stdio flushed\n");
	put(wfd, "worker done\n");
	return NULL;
}

static int scenario(int fd, void *arg)
{
	pthread_t t;

	(void)arg;
	wfd = fd;
	if (dup2(fd, 1) != 1)
		return 20;
	setvbuf(stdout, NULL, _IOFBF, 4096); /* fully buffered */
	if (atexit(at_exit_handler) != 0)
		return 21;
	main_thread = pthread_self();
	if (sem_init(&go, 0, 0) != 0)
		return 22;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 23;
	put(wfd, "main exiting\n");
	sem_post(&go);
	pthread_exit((void *)(intptr_t)77);
	return 24; /* not reached */
}

int main(void)
{
	struct child_result r;

	WEFT_REQUIRE();

	/* Several rounds: the worker may reach its join before or after
	   main is fully gone. */
	for (int round = 0; round < 20; round++) {
		REQUIRE(run_child(scenario, NULL, 30000, &r) == 0, "fork failed");
		char want[256];
		snprintf(want, sizeof want,
			 "main exiting\n"
			 "worker joined main: err=0 rv=77 origin=%d\n"
			 "worker done\n"
			 "atexit 1\n"
			 "stdio flushed\n",
			 WEFT_THREAD_CREATED);
		int ok = !r.timed_out && WIFEXITED(r.status) &&
			 WEXITSTATUS(r.status) == 0 && strcmp(r.out, want) == 0;
		if (!ok) {
			FAIL("round %d: expected exit 0 and output\n%s---\ngot %s and "
			     "output\n%s---", round, want, status_str(&r), r.out);
			break;
		}
	}
	TEST_DONE();
}
