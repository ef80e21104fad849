/* Issue 16: weft's start-up waits for the first call that needs it.
   Until then a process is as glibc made it: no SIGCANCEL handler, and
   malloc never called on weft's behalf (a failed dlsym at start-up used
   to allocate its error message, initialising malloc in every process).
   Then the first call into weft (a mutex lock) starts weft and is served
   by it, and a fork before and after start-up works.

   Both facts are read without calling weft or malloc: the handler with
   the raw rt_sigaction system call on __SIGRTMIN, glibc's and weft's
   SIGCANCEL (glibc's sigaction refuses it), malloc's state with
   mallinfo2 (no allocation).  With
   WEFT_REPORT or WEFT_STATS set, start-up runs at load on purpose: the
   test then only checks the second half. */
#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static void *cancel_handler(void)
{
	struct ksigaction old;

	memset(&old, 0, sizeof old);
	if (syscall(SYS_rt_sigaction, __SIGRTMIN, NULL, &old, 8) != 0)
		return (void *)-1;
	return old.handler;
}

static int fork_and_wait(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int started_at_load = getenv("WEFT_REPORT") || getenv("WEFT_STATS");
	void *before = cancel_handler();
	size_t arena = mallinfo2().arena;
	int child_before = fork_and_wait();

	if (!started_at_load) {
		/* SIG_DFL, or SIG_IGN when a glibc posix_spawn made this
		   process (its child ignores glibc's internal signals, and
		   exec keeps that: make's recipes run so). */
		CHECK(before == SIG_DFL || before == SIG_IGN,
		      "before any call into weft, SIGCANCEL has no handler "
		      "(start-up not run), got handler %p", before);
		CHECK(arena == 0,
		      "before main's first malloc, no heap arena (nothing "
		      "allocated at load), got %zu bytes", arena);
	}
	CHECK(child_before == 7, "fork before start-up: child exit 7, got %d",
	      child_before);

	/* The first call into weft: served by weft. */
	CHECK(pthread_mutex_lock(&m) == 0 && pthread_mutex_unlock(&m) == 0,
	      "mutex lock/unlock before WEFT_REQUIRE");
	WEFT_REQUIRE();
	CHECK(cancel_handler() != SIG_DFL && cancel_handler() != SIG_IGN &&
	      cancel_handler() != (void *)-1,
	      "after the first call, weft's SIGCANCEL handler is installed, "
	      "got %p", cancel_handler());
	CHECK(fork_and_wait() == 7, "fork after start-up: child exit 7");
	TEST_DONE();
}
