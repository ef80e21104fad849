/* fork in a process where weft has started but no second thread exists
   yet.  weft's fork handlers are registered by the first thread creation
   (or pthread_atfork), not by start-up, which may run in a signal
   handler that interrupted glibc's fork-handler lock
   (docs/lifecycle.md, "fork").  Before then a fork child runs none of
   weft's handlers, and must still find weft whole:

     parent   pthread_self (start-up, the main thread adopted), a
              semaphore, a mutex, a condvar timed wait; fork
     child    getpid and weft's view agree (a condvar's fork check),
              the semaphore, mutex and condvar work, a thread is created
              and joined (this registers the handlers), then it forks:
     grandchild  weft's child handler ran: threads_created "since fork"
              is 0 though the child made one; a thread again

   Bounded: each child is waited for with a 30 s deadline. */
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;

static void *run(void *arg)
{
	CHECK_WEFT_THREAD();
	CHECK_EQ(pthread_mutex_lock(&mu), 0);
	CHECK_EQ(pthread_cond_signal(&cv), 0);
	CHECK_EQ(pthread_mutex_unlock(&mu), 0);
	CHECK_EQ(sem_post(&sem), 0);
	return arg;
}

/* A weft mutex, condvar (timed wait: nobody signals) and semaphore. */
static void use_sync(void)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000);

	CHECK_EQ(sem_post(&sem), 0);
	CHECK_EQ(sem_wait(&sem), 0);
	CHECK_EQ(pthread_mutex_lock(&mu), 0);
	CHECK_ERR(pthread_cond_timedwait(&cv, &mu, &ts), ETIMEDOUT);
	CHECK_EQ(pthread_mutex_unlock(&mu), 0);
}

static void one_thread(void)
{
	pthread_t t;
	void *res = NULL;

	CHECK_EQ(pthread_create(&t, NULL, run, &mu), 0);
	CHECK_EQ(sem_wait(&sem), 0);
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK(res == &mu, "thread result: expected %p, got %p", (void *)&mu, res);
}

/* The child's exit status, or -1 after 30 s (killed).  SIGCHLD is
   blocked (main) and waited for. */
static int wait_child(pid_t pid)
{
	long end = mono_ns() + 30000000000L;
	sigset_t chld;
	int status;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		struct timespec left = {1, 0};

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status)
						 : 128 + WTERMSIG(status);
		if (mono_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		sigtimedwait(&chld, NULL, &left);
	}
}

/* Forks, runs `fn` in the child (its return is the exit status), and
   checks that the child exited 0. */
static void fork_and_check(int (*fn)(void), const char *who)
{
	pid_t pid = fork();
	int r;

	if (pid == 0)
		_exit(fn());
	REQUIRE(pid > 0, "fork: %s", strerror(errno));
	r = wait_child(pid);
	CHECK(r == 0, "%s: expected exit 0, got %d", who, r);
}

static int grandchild(void)
{
	struct weft_stats st;

	harness_failures = 0;
	CHECK_EQ(weft_get_stats(&st), 0);
	CHECK(st.threads_created == 0,
	      "threads created since fork: expected 0 (weft's child handler "
	      "ran), got %lu", st.threads_created);
	use_sync();
	one_thread();
	return harness_failures ? 1 : 0;
}

static int child(void)
{
	struct weft_stats st;

	harness_failures = 0;
	use_sync();
	CHECK_EQ(weft_get_stats(&st), 0);
	CHECK_EQ(st.threads_created, 0);
	one_thread();
	fork_and_check(grandchild, "grandchild");
	return harness_failures ? 1 : 0;
}

int main(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	REQUIRE_SERVED(pthread_self);
	REQUIRE_SERVED(pthread_create);
	(void)pthread_self(); /* start-up; the main thread adopted */
	WEFT_REQUIRE();
	CHECK_EQ(sem_init(&sem, 0, 0), 0);
	use_sync();
	fflush(stdout);
	fork_and_check(child, "child");
	/* And the parent makes its first thread after all that. */
	one_thread();
	TEST_DONE();
}
