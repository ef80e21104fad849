/* Fallback mode for this whole group (semaphores, named semaphores,
   rwlocks, barriers, spin locks, once, C11 mtx/cnd/call_once): with
   WEFT_PRETEND_GLIBC=9.99 weft is loaded but inactive, and every one of
   these entry points must forward to glibc's own implementation with its
   arguments intact (sem_open's variadic ones too).  The test re-executes
   itself with that variable and checks the run; one behaviour where
   glibc and weft differ (unlocking an unheld rwlock: weft EPERM, glibc
   0) proves glibc did the work. */
#include <fcntl.h>
#include <semaphore.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

static pthread_barrier_t bar;
static void *arrive(void *arg)
{
	(void)arg;
	return (void *)(long)pthread_barrier_wait(&bar);
}

static int once_runs;
static void once_fn(void)
{
	once_runs++;
}

static int forwarded(void)
{
	sem_t s, *n;
	pthread_rwlock_t rw, scratch;
	pthread_rwlockattr_t ra;
	pthread_spinlock_t sp;
	pthread_once_t o = PTHREAD_ONCE_INIT;
	once_flag cf = ONCE_FLAG_INIT;
	mtx_t m;
	cnd_t c;
	pthread_t t;
	struct timespec past = {0, 0};
	char name[64];
	void *res;
	int v, k;

	REQUIRE(weft_active && !weft_active(), "weft should be loaded, inactive");
	REQUIRE_SERVED(sem_open);
	REQUIRE_SERVED(pthread_rwlock_unlock);
	REQUIRE_SERVED(pthread_barrier_wait);
	REQUIRE_SERVED(pthread_once);
	REQUIRE_SERVED(mtx_lock);

	CHECK_EQ(sem_init(&s, 0, 1), 0);
	CHECK_EQ(sem_wait(&s), 0);
	CHECK(sem_trywait(&s) == -1 && errno == EAGAIN, "trywait: %d", errno);
	CHECK(sem_timedwait(&s, &past) == -1 && errno == ETIMEDOUT,
	      "timedwait: %d", errno);
	CHECK(sem_clockwait(&s, CLOCK_MONOTONIC, &past) == -1 &&
		      errno == ETIMEDOUT,
	      "clockwait: %d", errno);
	CHECK_EQ(sem_post(&s), 0);
	CHECK_EQ(sem_getvalue(&s, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(sem_destroy(&s), 0);

	snprintf(name, sizeof name, "/weft-fallback-%d", (int)getpid());
	sem_unlink(name);
	n = sem_open(name, O_CREAT | O_EXCL, 0600, 7);
	REQUIRE(n != SEM_FAILED, "sem_open: %s", strerror(errno));
	CHECK_EQ(sem_getvalue(n, &v), 0);
	CHECK_EQ(v, 7); /* the variadic value reached glibc */
	CHECK_EQ(sem_close(n), 0);
	CHECK_EQ(sem_unlink(name), 0);

	CHECK_ERR(pthread_rwlockattr_init(&ra), 0);
	CHECK_ERR(pthread_rwlockattr_setkind_np(
			  &ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
		  0);
	CHECK_ERR(pthread_rwlockattr_getkind_np(&ra, &k), 0);
	CHECK_EQ(k, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CHECK_ERR(pthread_rwlock_init(&rw, &ra), 0);
	CHECK_ERR(pthread_rwlock_rdlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_trywrlock(&rw), EBUSY);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_wrlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_wrlock(&rw), EDEADLK);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_timedrdlock(&rw, &past), 0);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &past), 0);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	CHECK_ERR(pthread_rwlock_destroy(&rw), 0);
	/* glibc does not check this; weft would say EPERM. */
	CHECK_ERR(pthread_rwlock_init(&scratch, NULL), 0);
	CHECK_ERR(pthread_rwlock_unlock(&scratch), 0);

	CHECK_ERR(pthread_barrier_init(&bar, NULL, 2), 0);
	CHECK_ERR(pthread_create(&t, NULL, arrive, NULL), 0);
	v = pthread_barrier_wait(&bar);
	CHECK_ERR(pthread_join(t, &res), 0);
	CHECK_EQ(v + (long)res, PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_ERR(pthread_barrier_destroy(&bar), 0);

	CHECK_ERR(pthread_spin_init(&sp, 0), 0);
	CHECK_ERR(pthread_spin_lock(&sp), 0);
	CHECK_ERR(pthread_spin_trylock(&sp), EBUSY);
	CHECK_ERR(pthread_spin_unlock(&sp), 0);
	CHECK_ERR(pthread_spin_destroy(&sp), 0);

	CHECK_ERR(pthread_once(&o, once_fn), 0);
	CHECK_ERR(pthread_once(&o, once_fn), 0);
	call_once(&cf, once_fn);
	CHECK_EQ(once_runs, 2);

	CHECK_EQ(mtx_init(&m, mtx_plain), thrd_success);
	CHECK_EQ(cnd_init(&c), thrd_success);
	CHECK_EQ(mtx_lock(&m), thrd_success);
	CHECK_EQ(mtx_trylock(&m), thrd_busy);
	struct timespec soon;
	clock_gettime(CLOCK_REALTIME, &soon);
	CHECK_EQ(cnd_timedwait(&c, &m, &soon), thrd_timedout);
	CHECK_EQ(mtx_unlock(&m), thrd_success);
	cnd_destroy(&c);
	mtx_destroy(&m);
	TEST_DONE();
}

int main(int argc, char **argv)
{
	pid_t pid;
	int status;

	(void)argc;
	if (getenv("WEFT_PRETEND_GLIBC"))
		return forwarded();
	WEFT_REQUIRE();
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		setenv("WEFT_PRETEND_GLIBC", "9.99", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fallback run: status 0x%x", status);
	TEST_DONE();
}
