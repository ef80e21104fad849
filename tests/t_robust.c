/* Robust mutexes (not PI): every type, owner death by return, by
   pthread_exit and by cancellation, then EOWNERDEAD, consistent and
   ENOTRECOVERABLE; the error cases; timed and clock variants; a waiter
   asleep when the owner dies; 2000 mutexes held at thread exit; a
   condvar wait whose reacquire finds the owner dead; a process-shared
   robust mutex whose holder (a fork child, re-registered by fork) is
   killed with SIGKILL; and the same mutex shared with a plain glibc
   process (the preload build exec'd without LD_PRELOAD) in both
   directions.  The cross-process tests run again with robust + PI
   mutexes (t_pi tests PI in one process). */
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "child.h"
#include "tid_common.h"

extern char **environ;

#define ROBUST 16
#define PSHARED 128

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
			    PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};
static const char *type_name[] = {"normal", "recursive", "errorcheck",
				  "adaptive"};

/* Set for the cross-process tests' second round: robust + PI. */
static int use_pi;

static void robust_init(pthread_mutex_t *m, int type, int pshared)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	if (use_pi)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutexattr_settype(&a, type);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pshared)
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

/* ------------------------------------------------- dying owner threads */

enum death { BY_RETURN, BY_EXIT, BY_CANCEL };
static const char *death_name[] = {"return", "pthread_exit", "cancel"};

struct owner {
	pthread_mutex_t *m;
	int n;		/* how many mutexes (m[0..n-1]) */
	enum death how;
	int locked;	/* futex flag: all taken */
	int tid;
};

static void *owner_main(void *p)
{
	struct owner *o = p;

	CHECK_WEFT_THREAD();
	o->tid = tid();
	for (int i = 0; i < o->n; i++)
		CHECK_ERR(pthread_mutex_lock(&o->m[i]), 0);
	__atomic_store_n(&o->locked, 1, __ATOMIC_RELEASE);
	if (o->how == BY_EXIT)
		pthread_exit(NULL);
	if (o->how == BY_CANCEL)
		for (;;)
			pause(); /* a cancellation point */
	return NULL;
}

/* Runs an owner that takes m[0..n-1] and dies holding them; returns
   once the thread is joined (the kernel has walked its list: weft's
   join waits for the kernel's tid clear, which comes after the walk). */
static void die_holding(pthread_mutex_t *m, int n, enum death how)
{
	struct owner o = {.m = m, .n = n, .how = how};
	pthread_t t;
	void *res;

	REQUIRE(pthread_create(&t, NULL, owner_main, &o) == 0, "create");
	if (how == BY_CANCEL) {
		while (!__atomic_load_n(&o.locked, __ATOMIC_ACQUIRE))
			sched_yield();
		pthread_cancel(t);
	}
	pthread_join(t, &res);
	CHECK(__atomic_load_n(&o.locked, __ATOMIC_ACQUIRE), "owner locked");
	if (how == BY_CANCEL)
		CHECK(res == PTHREAD_CANCELED, "owner cancelled");
}

static void test_owner_death(void)
{
	for (int ti = 0; ti < 4; ti++)
		for (int how = BY_RETURN; how <= BY_CANCEL; how++)
			for (int pshared = 0; pshared < 2; pshared++) {
				pthread_mutex_t m;
				int me = tid(), want_ok = (how + pshared) & 1;

				robust_init(&m, types[ti], pshared);
				die_holding(&m, 1, how);
				/* The kernel marked the word: OWNER_DIED,
				   the tid cleared. */
				CHECK(m.__data.__lock == 0x40000000,
				      "%s/%s: word expected 0x40000000, got %#x",
				      type_name[ti], death_name[how],
				      (unsigned)m.__data.__lock);
				/* trylock for some, lock for the others */
				int r = ((ti + how) & 1) ? pthread_mutex_trylock(&m)
							 : pthread_mutex_lock(&m);
				CHECK(r == EOWNERDEAD, "%s/%s/%s: expected "
				      "EOWNERDEAD, got %d", type_name[ti],
				      death_name[how], pshared ? "shared" : "private", r);
				CHECK_EQ(m.__data.__lock & 0x3fffffff, me);
				if (want_ok) {
					CHECK_ERR(pthread_mutex_consistent(&m), 0);
					CHECK_ERR(pthread_mutex_consistent(&m), EINVAL);
					CHECK_ERR(pthread_mutex_unlock(&m), 0);
					CHECK_ERR(pthread_mutex_lock(&m), 0);
					CHECK_ERR(pthread_mutex_unlock(&m), 0);
					CHECK_ERR(pthread_mutex_trylock(&m), 0);
					CHECK_ERR(pthread_mutex_unlock(&m), 0);
				} else {
					CHECK_ERR(pthread_mutex_unlock(&m), 0);
					CHECK_ERR(pthread_mutex_lock(&m), ENOTRECOVERABLE);
					CHECK_ERR(pthread_mutex_trylock(&m), ENOTRECOVERABLE);
					CHECK_EQ(m.__data.__lock, 0);
				}
				CHECK_ERR(pthread_mutex_destroy(&m), 0);
			}
}

/* 2000 robust mutexes held at thread exit (the kernel walks at most
   2048 entries): every one is EOWNERDEAD for the next locker. */
static void test_many(void)
{
	enum { N = 2000 };
	pthread_mutex_t *m = calloc(N, sizeof *m);
	int dead = 0;

	REQUIRE(m, "calloc");
	for (int i = 0; i < N; i++)
		robust_init(&m[i], types[i % 4], 0);
	die_holding(m, N, BY_RETURN);
	for (int i = 0; i < N; i++) {
		int r = pthread_mutex_trylock(&m[i]);
		dead += r == EOWNERDEAD;
		if (r == EOWNERDEAD) {
			pthread_mutex_consistent(&m[i]);
			pthread_mutex_unlock(&m[i]);
		}
	}
	CHECK_EQ(dead, N);
	free(m);
}

/* ------------------------------------------------------- error cases */

static void test_errors(void)
{
	pthread_mutex_t m, r;
	pthread_mutexattr_t a;
	struct timespec bad = {0, -1};

	/* glibc's choice, kept: a robust mutex is process-shared to the
	   futex (the kernel wakes a dead owner's waiter with a shared
	   wake), whatever the attribute says. */
	robust_init(&m, PTHREAD_MUTEX_NORMAL, 0);
	CHECK_EQ(m.__data.__kind, ROBUST | PSHARED);
	CHECK_ERR(pthread_mutex_consistent(&m), EINVAL);
	CHECK_ERR(pthread_mutex_unlock(&m), EPERM);
	/* a bad deadline is ignored when no wait is needed (glibc) */
	CHECK_ERR(pthread_mutex_timedlock(&m, &bad), 0);
	CHECK_EQ(m.__data.__lock, tid());
	CHECK_EQ(m.__data.__owner, tid());
	CHECK_ERR(pthread_mutex_consistent(&m), EINVAL);
	CHECK_ERR(in_other_thread(&m, pthread_mutex_unlock), EPERM);
	CHECK_ERR(in_other_thread(&m, pthread_mutex_trylock), EBUSY);
	CHECK_ERR(in_other_thread(&m, timed_rt_short), ETIMEDOUT);
	CHECK_ERR(in_other_thread(&m, clock_mono_short), ETIMEDOUT);
	CHECK_ERR(in_other_thread(&m, timed_bad_nsec), EINVAL);
	CHECK_ERR(in_other_thread(&m, timed_past), ETIMEDOUT);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(m.__data.__lock, 0);
	CHECK_EQ(m.__data.__list.__next, NULL);

	robust_init(&r, PTHREAD_MUTEX_ERRORCHECK, 1);
	robust_init(&m, PTHREAD_MUTEX_RECURSIVE, 0);
	check_relock_rules(&r, &m);

	/* A recursive mutex taken from a dead owner and locked again:
	   unlocking without consistent says ENOTRECOVERABLE until the
	   last level, which gives it up. */
	die_holding(&m, 1, BY_RETURN);
	CHECK_ERR(pthread_mutex_lock(&m), EOWNERDEAD);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), ENOTRECOVERABLE);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_ERR(pthread_mutex_lock(&m), ENOTRECOVERABLE);

	/* Robust + priority protect: ENOTSUP, as glibc. */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	CHECK_ERR(pthread_mutex_init(&m, &a), ENOTSUP);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, 3), EINVAL);
	CHECK_ERR(pthread_mutexattr_setrobust(&a, 2), EINVAL);
	pthread_mutexattr_destroy(&a);
}

/* Own mutexes and the robust list: the head in the TCB, as the kernel
   reads it, lists exactly the held mutexes. */
static void test_list(void)
{
	pthread_mutex_t m[3];
	void *head;
	size_t len;

	REQUIRE(syscall(SYS_get_robust_list, 0, &head, &len) == 0, "get");
	for (int i = 0; i < 3; i++) {
		robust_init(&m[i], types[i], 0);
		CHECK_ERR(pthread_mutex_lock(&m[i]), 0);
	}
	void **e = *(void ***)head;
	int n = 0;
	for (; e != head && n < 10; e = *e)
		CHECK(e == (void **)&m[2 - n++].__data.__list.__next,
		      "entry %d: %p", n, (void *)e);
	CHECK_EQ(n, 3);
	CHECK(((void **)head)[2] == NULL, "list_op_pending cleared");
	pthread_mutex_unlock(&m[1]); /* from the middle */
	pthread_mutex_unlock(&m[2]);
	pthread_mutex_unlock(&m[0]);
	CHECK(*(void **)head == head, "list empty again");
}

/* --------------------------------------- a waiter when the owner dies */

static void test_waiter_wakes(void)
{
	for (int ti = 0; ti < 4; ti++) {
		pthread_mutex_t m;
		int flag = 0;
		struct holder h = {.m = &m, .go = &flag}, w = {.m = &m};
		pthread_t th, tw;

		robust_init(&m, types[ti], 0);
		pthread_create(&th, NULL, hold_until_go, &h);
		wait_flag(&h.held);
		pthread_create(&tw, NULL, lock_it, &w);
		wait_flag(&w.held);
		CHECK(task_asleep(w.tid, 5000000000L), "waiter asleep");
		go(&flag);
		pthread_join(th, NULL);
		pthread_join(tw, NULL);
		CHECK(w.res == EOWNERDEAD, "%s: sleeping waiter: expected "
		      "EOWNERDEAD, got %d", type_name[ti], w.res);
		CHECK_ERR(pthread_mutex_lock(&m), 0);
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
	}
}

/* A condvar wait whose reacquire finds the owner dead. */
static void test_cond(void)
{
	for (int pshared = 0; pshared < 2; pshared++) {
		pthread_mutex_t m;

		robust_init(&m, PTHREAD_MUTEX_RECURSIVE, pshared);
		cond_rounds(&m, pshared, 1, "");
	}
}

/* ---------------------------------------------- other processes */

struct shm {
	pthread_mutex_t m;
	int phase;
	int peer_res;
};

static void set_phase(struct shm *s, int v)
{
	__atomic_store_n(&s->phase, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->phase, FUTEX_WAKE, INT_MAX);
}

static int wait_phase(struct shm *s, int v, long ns)
{
	long end = mono_ns() + ns;
	int cur;

	while ((cur = __atomic_load_n(&s->phase, __ATOMIC_ACQUIRE)) < v) {
		struct timespec ts = {0, 10000000};
		if (mono_ns() > end)
			return 0;
		syscall(SYS_futex, &s->phase, FUTEX_WAIT, cur, &ts);
	}
	return 1;
}

__attribute__((noreturn)) static void *child_thread_lock(void *p)
{
	struct shm *s = p;

	pthread_mutex_lock(&s->m);
	set_phase(s, 1);
	for (;;)
		pause();
}

/* A fork child (its list registered again by fork) takes the mutex in
   its main thread or in a thread of its own and is killed with
   SIGKILL: the parent gets EOWNERDEAD. */
static void test_kill9(struct shm *s)
{
	for (int in_thread = 0; in_thread < 2; in_thread++) {
		pid_t pid;
		int st;

		robust_init(&s->m, PTHREAD_MUTEX_ERRORCHECK, 1);
		s->phase = 0;
		pid = fork();
		REQUIRE(pid >= 0, "fork");
		if (pid == 0) {
			pthread_t t;
			if (in_thread) {
				pthread_create(&t, NULL, child_thread_lock, s);
				for (;;)
					pause();
			}
			child_thread_lock(s);
		}
		CHECK(wait_phase(s, 1, 10000000000L), "child locked");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child killed");
		int r = pthread_mutex_lock(&s->m);
		CHECK(r == EOWNERDEAD, "kill -9 (%s%s): expected EOWNERDEAD, "
		      "got %d", in_thread ? "thread" : "main",
		      use_pi ? ", PI" : "", r);
		CHECK_ERR(pthread_mutex_consistent(&s->m), 0);
		CHECK_ERR(pthread_mutex_unlock(&s->m), 0);
	}
}

/* The plain glibc peer: "peer hold": takes the mutex and exits holding
   it, after the parent's thread is asleep on it; "peer wait": waits on
   the mutex the parent holds and reports what its lock said. */
static int peer(const char *role, int fd)
{
	struct shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, 0);

	if (s == MAP_FAILED)
		return 2;
	if (!strcmp(role, "hold")) {
		if (pthread_mutex_lock(&s->m) != 0)
			return 3;
		set_phase(s, 1);
		if (!wait_phase(s, 2, 10000000000L))
			return 4;
		return 0; /* exits holding it */
	}
	set_phase(s, 1);
	s->peer_res = pthread_mutex_lock(&s->m);
	if (s->peer_res == EOWNERDEAD) {
		pthread_mutex_consistent(&s->m);
		pthread_mutex_unlock(&s->m);
	}
	return 0;
}

/* argv: {exe, "peer", role, fd}. */
static pid_t run_peer(const char *role, int fd)
{
	char fdarg[16];
	char *args[] = {"peer", (char *)role, fdarg, NULL};
	pid_t pid;

	snprintf(fdarg, sizeof fdarg, "%d", fd);
	pid = spawn_glibc_peer(args);
	REQUIRE(pid > 0, "glibc peer: expected the preload build of this test "
		"to start, got %s", strerror(errno));
	return pid;
}

static void test_glibc_peer(struct shm *s, int fd)
{
	pid_t pid;
	int st, flag = 0;

	/* glibc holds and dies; a weft thread asleep on it gets
	   EOWNERDEAD. */
	robust_init(&s->m, PTHREAD_MUTEX_NORMAL, 1);
	s->phase = 0;
	pid = run_peer("hold", fd);
	CHECK(wait_phase(s, 1, 10000000000L), "glibc peer locked");
	struct holder w = {.m = &s->m};
	pthread_t tw;
	pthread_create(&tw, NULL, lock_it, &w);
	wait_flag(&w.held);
	CHECK(task_asleep(w.tid, 5000000000L), "weft waiter asleep");
	set_phase(s, 2);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "glibc peer status %#x", st);
	pthread_join(tw, NULL);
	CHECK(w.res == EOWNERDEAD, "glibc holder died%s: weft expected "
	      "EOWNERDEAD, got %d", use_pi ? " (PI)" : "", w.res);

	/* A weft thread holds and dies; glibc asleep on it gets
	   EOWNERDEAD. */
	robust_init(&s->m, PTHREAD_MUTEX_RECURSIVE, 1);
	s->phase = 0;
	s->peer_res = -1;
	struct holder h = {.m = &s->m, .go = &flag};
	pthread_t th;
	pthread_create(&th, NULL, hold_until_go, &h);
	wait_flag(&h.held);
	pid = run_peer("wait", fd);
	CHECK(wait_phase(s, 1, 10000000000L), "glibc peer started");
	CHECK(process_asleep(pid, 5000000000L), "glibc peer asleep");
	go(&flag);
	pthread_join(th, NULL);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "glibc peer status %#x", st);
	CHECK(s->peer_res == EOWNERDEAD, "weft holder died%s: glibc expected "
	      "EOWNERDEAD, got %d", use_pi ? " (PI)" : "", s->peer_res);
	CHECK_ERR(pthread_mutex_lock(&s->m), 0);
	CHECK_ERR(pthread_mutex_unlock(&s->m), 0);
}

int main(int argc, char **argv)
{
	struct shm *s;
	int fd;

	if (argc == 4 && !strcmp(argv[1], "peer"))
		return peer(argv[2], atoi(argv[3]));
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_consistent);
	watchdog_arm();
	test_errors();
	test_list();
	test_owner_death();
	test_many();
	test_waiter_wakes();
	test_cond();
	fd = memfd_create("weft-robust", 0);
	REQUIRE(fd >= 0 && ftruncate(fd, sizeof(struct shm)) == 0, "memfd");
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(s != MAP_FAILED, "mmap");
	for (use_pi = 0; use_pi < 2; use_pi++) {
		test_kill9(s);
		test_glibc_peer(s, fd);
	}
	TEST_DONE();
}
