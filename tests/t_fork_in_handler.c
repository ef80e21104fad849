/* Issue 16, point 4: fork from a signal handler of a program that never
   made a thread works as under glibc.  glibc takes its malloc and stdio
   locks around fork only once the process has a second thread, so that
   a handler that interrupted malloc can still fork; weft (whose probe
   thread once switched glibc into multi-threaded mode at load) must not
   take that away.

   A worker process (a single-threaded fork of the test) runs malloc,
   free and stdio in a loop while an interval timer interrupts it; the
   handler forks, the child _exits at once, the handler reaps it.  The
   test waits for the worker with a deadline (sigtimedwait on SIGCHLD):
   a worker that deadlocks inside a handler is killed and reported.
   Then the same with a weft mutex held by the interrupted code. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define FORKS 300
#define WORKER_SECONDS 60

/* The timer is one-shot, re-armed by the handler as it returns: the
   interrupted code then always runs for a while between two forks.  A
   periodic 500 us timer starved it for good where a fork, exit and
   wait take longer than that (about 700 us on a VM seen here, glibc or
   weft alike): the handler ran back to back and the loop never got to
   count its forks. */
static const struct itimerval next_alarm = {{0, 0}, {0, 500}};

static volatile unsigned long *forks_done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int child_failed;

static void on_alarm(int sig)
{
	int saved = errno, status;
	pid_t pid;

	(void)sig;
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		child_failed = 1;
	else
		(*forks_done)++;
	setitimer(ITIMER_REAL, &next_alarm, NULL);
	errno = saved;
}

/* The worker: the interrupted code holds malloc's, stdio's and weft's
   locks as often as it can. */
static void worker(void)
{
	FILE *null = fopen("/dev/null", "w");
	void *keep[64] = {0};
	long start = mono_ns();

	if (!null || signal(SIGALRM, on_alarm) == SIG_ERR ||
	    setitimer(ITIMER_REAL, &next_alarm, NULL) != 0)
		_exit(4);
	for (unsigned long i = 0; *forks_done < FORKS && !child_failed; i++) {
		size_t k = i % 64;

		free(keep[k]);
		keep[k] = malloc(16 + (i * 37) % 5000);
		fprintf(null, "%lu %s\n", i, "some text to format");
		pthread_mutex_lock(&mu);
		keep[(k + 7) % 64] = realloc(keep[(k + 7) % 64], 32 + i % 300);
		pthread_mutex_unlock(&mu);
		if (mono_ns() - start > (long)WORKER_SECONDS * 1000000000L)
			_exit(5);
	}
	_exit(child_failed ? 3 : 0);
}

int main(void)
{
	sigset_t chld;
	siginfo_t si;
	struct timespec limit = {WORKER_SECONDS + 30, 0};
	int status;
	pid_t pid;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	CHECK(__libc_single_threaded, "glibc left single-threaded mode at load");
	forks_done = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(forks_done != MAP_FAILED, "mmap failed");
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		worker();
	}
	if (sigtimedwait(&chld, &si, &limit) < 0) {
		FAIL("the worker did not finish within %lds: a fork from a "
		     "signal handler deadlocked after %lu forks",
		     (long)limit.tv_sec, *forks_done);
		kill(pid, SIGKILL);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "worker: expected exit 0, got status %#x (%lu forks; 3: a child "
	      "failed, 5: out of time)", status, *forks_done);
	CHECK(*forks_done >= FORKS, "forks from the handler: expected %d, got %lu",
	      FORKS, *forks_done);
	printf("%lu forks from a signal handler\n", *forks_done);
	TEST_DONE();
}
