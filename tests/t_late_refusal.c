/* Issue 16: the probe thread runs at the first thread creation, after
   weft has served the program (mutexes, cleanup buffers in main) for a
   while.  If it refutes the release table's row then, weft must keep the
   program correct (docs/glibc-host.md, "If the probe refutes the row"):
   thread creation goes to glibc's own pthread_create from then on, those
   threads are adopted, weft keeps serving the objects already in use,
   and pthread_exit and cancellation are glibc's.  WEFT_TEST_REFUTE_PROBE
   makes the probe report a mismatch; the test runs itself again with it
   and checks the child's result and its one "weft:" line. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_key_t key;
static int stage, destructed, cleaned, main_cleaned;

static void destructor(void *v)
{
	(void)v;
	__atomic_fetch_add(&destructed, 1, __ATOMIC_RELAXED);
}

static void cleanup(void *arg)
{
	*(int *)arg = 1;
}

static void set_stage(int s)
{
	pthread_mutex_lock(&mu);
	stage = s;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void wait_stage(int s)
{
	pthread_mutex_lock(&mu);
	while (stage < s)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *first(void *arg)
{
	int origin = weft_self_origin ? weft_self_origin() : -1;

	(void)arg;
	CHECK(origin == WEFT_THREAD_ADOPTED, "after a late refusal: expected a "
	      "glibc thread adopted by weft (%d), got origin %d",
	      WEFT_THREAD_ADOPTED, origin);
	CHECK_ERR(pthread_setspecific(key, &origin), 0);
	CHECK(pthread_getspecific(key) == &origin, "getspecific");
	set_stage(1);
	pthread_mutex_lock(&held); /* main held it before any thread */
	pthread_mutex_unlock(&held);
	set_stage(2);
	pthread_exit((void *)0x1234);
}

static void *blocked(void *arg)
{
	int fds[2];
	char c;

	(void)arg;
	REQUIRE(pipe(fds) == 0, "pipe");
	pthread_cleanup_push(cleanup, &cleaned);
	set_stage(3);
	for (;;)
		(void)read(fds[0], &c, 1); /* cancelled here */
	pthread_cleanup_pop(0);
	return NULL;
}

static int child(void)
{
	pthread_t a, b;
	void *res;

	WEFT_REQUIRE();
	CHECK_ERR(pthread_key_create(&key, destructor), 0);
	CHECK_ERR(pthread_mutex_lock(&held), 0);
	pthread_cleanup_push(cleanup, &main_cleaned);
	CHECK_ERR(pthread_create(&a, NULL, first, NULL), 0);
	wait_stage(1);
	CHECK_ERR(pthread_mutex_unlock(&held), 0);
	wait_stage(2);
	CHECK_ERR(pthread_join(a, &res), 0);
	CHECK(res == (void *)0x1234, "pthread_exit value: expected 0x1234, got %p", res);
	CHECK_EQ(destructed, 1);
	CHECK_ERR(pthread_create(&b, NULL, blocked, NULL), 0);
	wait_stage(3);
	CHECK_ERR(pthread_cancel(b), 0);
	CHECK_ERR(pthread_join(b, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "cancelled: expected PTHREAD_CANCELED, got %p", res);
	CHECK_EQ(cleaned, 1);
	CHECK(weft_active && weft_active(), "weft no longer active after the refusal");
	pthread_cleanup_pop(1);
	CHECK_EQ(main_cleaned, 1);
	TEST_DONE();
}

int main(int argc, char **argv)
{
	char *args[] = {argv[0], "child", NULL}, err[4096], *nl;
	char *envp[64];
	int pipefd[2], status, n = 0, lines = 0;
	posix_spawn_file_actions_t fa;
	ssize_t got, len = 0;
	pid_t pid;

	if (argc > 1)
		return child();
	WEFT_REQUIRE();
	for (char **e = environ; *e && n < 62; e++)
		envp[n++] = *e;
	envp[n++] = "WEFT_TEST_REFUTE_PROBE=1";
	envp[n] = NULL;
	REQUIRE(pipe(pipefd) == 0, "pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	REQUIRE(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, envp) == 0,
		"posix_spawn failed");
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	while ((got = read(pipefd[0], err + len, sizeof err - 1 - len)) > 0)
		len += got;
	err[len] = 0;
	close(pipefd[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	fputs(err, stdout);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child after a late refusal: expected exit 0, got status %#x", status);
	for (char *p = err; (nl = strstr(p, "weft:")); p = nl + 5)
		lines++;
	CHECK(lines == 1 && strstr(err, "WEFT_TEST_REFUTE_PROBE") &&
		      strstr(err, "thread creation goes to glibc"),
	      "expected one \"weft:\" line naming the refusal, got %d in \"%s\"",
	      lines, err);
	TEST_DONE();
}
