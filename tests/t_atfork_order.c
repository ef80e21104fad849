/* Issue 16: weft registers no fork handler at load.  Its one handler
   triple is registered by the first pthread_atfork (libweft's
   __register_atfork, ahead of the caller's) or by start-up, so that
   it is first in glibc's list even when a library's constructor, run
   before libweft's, registered handlers: weft's prepare handler runs
   after every program handler (which may lock a program mutex whose
   holder waits for a weft lock), and its child handler before theirs
   (which may use weft).

   libatforkfirst.so (initialised before libweft in both modes) locks
   its mutex in its prepare handler.  Here:
   1. fork while another thread keeps taking that mutex and, holding it,
      creates and joins threads (weft's internal locks): weft's prepare,
      run first, would take those locks and wait forever for the program
      handler, which waits for the mutex (bounded: a hang is the
      failure, caught by run.sh's time limit);
   2. in the child, the library's child handler finds weft's state
      already reset (its counters say 0 threads created, "since fork")
      and creates and joins a thread;
   3. a dlopen'ed library's child handler runs once, and after dlclose
      a fork no longer calls it (glibc dropped it by its dso handle). */
#include <limits.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern pthread_mutex_t atfork_first_mutex;
extern void (*atfork_first_child_hook)(void);
extern int atfork_first_registered;

enum { FORKS = 100, MAX_ROUNDS = 100000 };

static int stop;
static unsigned long hook_created; /* weft's count seen by the hook */
static int hook_thread_ok;

static void *give_42(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	return (void *)(intptr_t)42;
}

static void *locker(void *arg)
{
	unsigned long *rounds = arg;

	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && *rounds < MAX_ROUNDS) {
		pthread_t t;
		void *r = NULL;

		pthread_mutex_lock(&atfork_first_mutex);
		if (pthread_create(&t, NULL, give_42, NULL) == 0)
			pthread_join(t, &r);
		pthread_mutex_unlock(&atfork_first_mutex);
		CHECK_EQ((intptr_t)r, 42);
		++*rounds;
	}
	return NULL;
}

/* In the child, from the library's child handler. */
static void child_hook(void)
{
	struct weft_stats s;
	pthread_t t;
	void *r = NULL;

	hook_created = weft_get_stats(&s) == 0 ? s.threads_created : ULONG_MAX;
	/* Unless weft's child handler ran first, its locks may still be
	   held by threads the child does not have: no creation then. */
	if (hook_created == 0 && pthread_create(&t, NULL, give_42, NULL) == 0 &&
	    pthread_join(t, &r) == 0)
		hook_thread_ok = (intptr_t)r == 42;
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_order(void)
{
	pthread_t lt;
	unsigned long rounds = 0;

	CHECK_EQ(atfork_first_registered, 1); /* pthread_atfork gave 0 */
	atfork_first_child_hook = child_hook;
	CHECK_ERR(pthread_create(&lt, NULL, locker, &rounds), 0);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(hook_created == 0 && hook_thread_ok ? 0
			      : hook_created ? 2 : 3);
		REQUIRE(pid > 0, "fork: %s", strerror(errno));
		int st = wait_status(pid);
		if (st == 2)
			FAIL("child %d: the program's child handler ran before "
			     "weft's (weft's counters not yet reset: threads "
			     "created since fork nonzero, expected 0)", i);
		else if (st)
			FAIL("child %d: expected status 0 (the program's child "
			     "handler created and joined a thread), got %d", i, st);
		if (st)
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	CHECK_ERR(pthread_join(lt, NULL), 0);
	printf("%d forks beside %lu lock+create+join rounds\n", FORKS, rounds);
}

static void test_dlclose(void)
{
	char exe[PATH_MAX - 64], path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	REQUIRE(n > 0, "readlink(/proc/self/exe) failed: %s", strerror(errno));
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(path, sizeof path, "%s/../libatforkdl.so", exe);
	void *h = dlopen(path, RTLD_NOW);
	REQUIRE(h, "dlopen(%s): %s", path, dlerror());
	int *runs = dlsym(h, "atfork_dl_child_runs");
	REQUIRE(runs, "atfork_dl_child_runs not found");

	pid_t pid = fork();
	if (pid == 0)
		_exit(*runs == 1 ? 0 : 1);
	REQUIRE(pid > 0, "fork: %s", strerror(errno));
	CHECK(wait_status(pid) == 0,
	      "the dlopen'ed library's child handler: expected 1 run in the child");
	CHECK_ERR(dlclose(h), 0);
	/* Its code is unmapped now: a handler left registered would crash
	   the child (or the parent's prepare). */
	pid = fork();
	if (pid == 0)
		_exit(0);
	REQUIRE(pid > 0, "fork: %s", strerror(errno));
	CHECK_EQ(wait_status(pid), 0);
}

int main(void)
{
	WEFT_REQUIRE();
	test_order();
	test_dlclose();
	TEST_DONE();
}
