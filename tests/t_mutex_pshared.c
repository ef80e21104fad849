/* Process-shared mutexes and condition variables in MAP_SHARED memory:
   across fork (both processes on weft), and a process-shared normal
   mutex shared with a plain glibc process (the preload build of this
   test, exec'd without LD_PRELOAD), with blocking and wake-ups in both
   directions. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

struct shm {
	pthread_mutex_t m;
	pthread_cond_t cv;
	long counter, inside, overlaps;
	int turn;	  /* ping-pong over the shared condvar */
	int phase;	  /* interop hand-shakes */
	int peer_done;
};

static void count(struct shm *s, long n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&s->m);
		if (++s->inside != 1)
			s->overlaps++;
		s->counter++;
		s->inside--;
		pthread_mutex_unlock(&s->m);
	}
}

/* Waits (bounded) until *p == v; returns 0 on success. */
static int await(volatile int *p, int v)
{
	long end = mono_ns() + 10000000000L;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
		if (mono_ns() > end)
			return -1;
		else
			sched_yield();
	return 0;
}

static void set(volatile int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Alternates `rounds` turns with the other process over the shared
   condvar; returns the number of timed-out waits. */
static int ping_pong(struct shm *s, int me, int rounds)
{
	int timeouts = 0;

	for (int r = 0; r < rounds && !timeouts; r++) {
		pthread_mutex_lock(&s->m);
		while (s->turn != me) {
			struct timespec ts = deadline_in(CLOCK_REALTIME, 2000000000L);
			if (pthread_cond_timedwait(&s->cv, &s->m, &ts) ==
			    ETIMEDOUT) {
				timeouts++;
				break;
			}
		}
		s->turn = !me;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->m);
	}
	return timeouts;
}

/* ------------------------------------------------------ the glibc peer */

static int peer(int fd, long n)
{
	struct shm *s;

	if (weft_active) {
		fprintf(stderr, "peer: expected plain glibc, got libweft\n");
		return 3;
	}
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		return 4;
	/* 1: block on the mutex weft holds; weft's unlock must wake us. */
	if (await(&s->phase, 1))
		return 5;
	pthread_mutex_lock(&s->m);
	set(&s->phase, 2);
	pthread_mutex_unlock(&s->m);
	/* 3: hold the mutex until weft sleeps on it, then wake it. */
	if (await(&s->phase, 3))
		return 6;
	pthread_mutex_lock(&s->m);
	set(&s->phase, 4);
	long end = mono_ns() + 10000000000L;
	while (__atomic_load_n(&s->m.__data.__lock, __ATOMIC_ACQUIRE) != 2 &&
	       mono_ns() < end)
		sched_yield();
	pthread_mutex_unlock(&s->m);
	/* Then contend. */
	if (await(&s->phase, 5))
		return 7;
	count(s, n);
	set(&s->peer_done, 1);
	return 0;
}

static pid_t run_peer(int fd, long n)
{
	return spawn_glibc_peer_for("peer", fd, n);
}

static void test_interop(struct shm *s, int fd)
{
	const long n = 100000;
	long t0;
	int st;
	pid_t pid;

	s->counter = s->overlaps = 0;
	s->phase = 0;
	s->peer_done = 0;
	pid = run_peer(fd, n);
	/* weft holds, glibc blocks, weft's unlock wakes it. */
	pthread_mutex_lock(&s->m);
	set(&s->phase, 1);
	long end = mono_ns() + 10000000000L;
	while (__atomic_load_n(&s->m.__data.__lock, __ATOMIC_ACQUIRE) != 2 &&
	       mono_ns() < end)
		sched_yield();
	CHECK_EQ(s->m.__data.__lock, 2); /* glibc marked it contended */
	pthread_mutex_unlock(&s->m);
	CHECK(await(&s->phase, 2) == 0, "glibc peer never got the mutex");
	/* glibc holds, weft blocks, glibc's unlock wakes weft. */
	set(&s->phase, 3);
	CHECK(await(&s->phase, 4) == 0, "glibc peer did not take the mutex");
	t0 = mono_ns();
	CHECK_ERR(pthread_mutex_lock(&s->m), 0);
	CHECK(mono_ns() - t0 < 9000000000L, "woken only after %ld ns",
	      mono_ns() - t0);
	pthread_mutex_unlock(&s->m);
	/* Both contend. */
	set(&s->phase, 5);
	count(s, n);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "glibc peer status %#x", st);
	CHECK_EQ(s->peer_done, 1);
	CHECK_EQ(s->counter, 2 * n);
	CHECK_EQ(s->overlaps, 0);
	printf("interop with a glibc process: counter %ld (expected %ld), "
	       "overlaps %ld\n", s->counter, 2 * n, s->overlaps);
}

/* ---------------------------------------------------------- fork tests */

static void test_fork(struct shm *s)
{
	const long n = 100000;
	const int rounds = 2000;
	int st, timeouts;
	pid_t pid;

	s->counter = s->overlaps = 0;
	s->turn = 0;
	pid = fork();
	if (pid == 0) {
		count(s, n);
		_exit(ping_pong(s, 1, rounds) ? 2 : 0);
	}
	count(s, n);
	timeouts = ping_pong(s, 0, rounds);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	CHECK_EQ(timeouts, 0);
	CHECK_EQ(s->counter, 2 * n);
	CHECK_EQ(s->overlaps, 0);
	printf("across fork: counter %ld, %d condvar ping-pong rounds\n",
	       s->counter, rounds);
}

int main(int argc, char **argv)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	struct shm *s;
	int fd;

	if (argc == 4 && !strcmp(argv[1], "peer"))
		return peer(atoi(argv[2]), atol(argv[3]));
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_unlock);
	REQUIRE_SERVED(pthread_mutex_init);
	REQUIRE_SERVED(pthread_mutexattr_setpshared);
	REQUIRE_SERVED(pthread_cond_init);
	REQUIRE_SERVED(pthread_cond_timedwait);
	REQUIRE_SERVED(pthread_cond_broadcast);
	REQUIRE_SERVED(pthread_condattr_setpshared);

	fd = memfd_create("weft-pshared", 0);
	REQUIRE(fd >= 0 && ftruncate(fd, sizeof *s) == 0, "memfd");
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(s != MAP_FAILED, "mmap");
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_mutex_init(&s->m, &ma), 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_cond_init(&s->cv, &ca), 0);

	test_fork(s);
	test_interop(s, fd);
	TEST_DONE();
}
