/* Priority-inheritance mutexes: the lock word (tid, FUTEX_WAITERS),
   no system call for an uncontended lock and unlock (counted with
   ptrace in a fork child), every type under contention, the error
   cases, timed (FUTEX_LOCK_PI, CLOCK_REALTIME) and clock
   (FUTEX_LOCK_PI2, CLOCK_MONOTONIC) variants, robust PI owner death
   with and without a sleeping waiter, a condvar with a PI mutex, a
   process-shared PI mutex across fork, and the three-thread priority
   inversion on one CPU under SCHED_FIFO, whose boost of the low thread
   is read from /proc (stat field 18, the effective priority).  The RT
   part needs root; without the right it fails.  WEFT_TEST_NO_RT=1 leaves
   it out (the test then exits 77: SKIP). */
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tid_common.h"

#define W_WAITERS 0x80000000u
#define W_DIED 0x40000000u

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
			    PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};

static void pi_init(pthread_mutex_t *m, int type, int robust, int pshared)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	if (robust)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pshared)
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

/* --------------------------------------- no system call uncontended */

/* The child makes getppid() (marker), 1000 lock/unlock pairs of a PI
   mutex, of a robust PI one and of a robust one, getppid() again; the
   parent counts the system calls it entered between the markers. */
static void test_no_syscall(void)
{
	pid_t pid = fork();
	int st, in_call = 0, between = 0, markers = 0, calls = 0;
	long first = -1;

	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		pthread_mutex_t m, r, q;
		pthread_mutexattr_t a;
		pi_init(&m, PTHREAD_MUTEX_NORMAL, 0, 0);
		pi_init(&r, PTHREAD_MUTEX_ERRORCHECK, 1, 1);
		pthread_mutexattr_init(&a); /* robust, not PI */
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&q, &a);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		syscall(SYS_getppid);
		for (int i = 0; i < 1000; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
			pthread_mutex_trylock(&r);
			pthread_mutex_unlock(&r);
			pthread_mutex_lock(&q);
			pthread_mutex_unlock(&q);
		}
		syscall(SYS_getppid);
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st), "child stop");
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_TRACESYSGOOD);
	for (;;) {
		ptrace(PTRACE_SYSCALL, pid, NULL, NULL);
		if (waitpid(pid, &st, 0) != pid || WIFEXITED(st) ||
		    WIFSIGNALED(st))
			break;
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
			continue;
		in_call = !in_call;
		if (!in_call)
			continue; /* the exit stop */
		struct user_regs_struct regs;
		ptrace(PTRACE_GETREGS, pid, NULL, &regs);
		if ((long)regs.orig_rax == SYS_getppid) {
			markers++;
			between = markers == 1;
		} else if (between) {
			calls++;
			if (first < 0)
				first = (long)regs.orig_rax;
		}
	}
	CHECK_EQ(markers, 2);
	CHECK(calls == 0, "system calls in 1000 uncontended lock/unlock of "
	      "a PI, a robust PI and a robust mutex: expected 0, got %d "
	      "(first: %ld)", calls, first);
}

/* ---------------------------------------------- basics and errors */

static int timed_rt(pthread_mutex_t *m)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 30000000);
	long t0 = mono_ns();
	int r = pthread_mutex_timedlock(m, &ts);

	CHECK(mono_ns() - t0 >= 25000000, "timedlock waited %ld ns",
	      mono_ns() - t0);
	return r;
}

static int clock_mono(pthread_mutex_t *m)
{
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 30000000);
	long t0 = mono_ns();
	int r = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);

	CHECK(mono_ns() - t0 >= 29000000, "clocklock waited %ld ns",
	      mono_ns() - t0);
	return r;
}

static void test_errors(void)
{
	pthread_mutex_t m, r;
	pthread_mutexattr_t a;
	int v;

	for (int pshared = 0; pshared < 2; pshared++) {
		pi_init(&m, PTHREAD_MUTEX_NORMAL, 0, pshared);
		CHECK_EQ(m.__data.__kind, 32 | (pshared ? 128 : 0));
		CHECK_ERR(pthread_mutex_unlock(&m), EPERM);
		CHECK_ERR(pthread_mutex_lock(&m), 0);
		CHECK_EQ(m.__data.__lock, tid());
		CHECK_EQ(m.__data.__owner, tid());
		CHECK_ERR(pthread_mutex_destroy(&m), EBUSY);
		CHECK_ERR(in_other_thread(&m, pthread_mutex_unlock), EPERM);
		CHECK_ERR(in_other_thread(&m, pthread_mutex_trylock), EBUSY);
		CHECK_ERR(in_other_thread(&m, timed_rt), ETIMEDOUT);
		CHECK_ERR(in_other_thread(&m, clock_mono), ETIMEDOUT);
		CHECK_ERR(in_other_thread(&m, timed_bad_nsec), EINVAL);
		CHECK_ERR(in_other_thread(&m, timed_past), ETIMEDOUT);
		/* A normal PI mutex locked again by its owner: the kernel
		   says EDEADLK and glibc waits for the deadline. */
		CHECK_ERR(timed_rt(&m), ETIMEDOUT);
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
		CHECK_EQ(m.__data.__lock, 0);
		CHECK_ERR(pthread_mutex_destroy(&m), 0);
	}

	pi_init(&m, PTHREAD_MUTEX_ERRORCHECK, 0, 0);
	pi_init(&r, PTHREAD_MUTEX_RECURSIVE, 0, 0);
	check_relock_rules(&m, &r);

	pthread_mutexattr_init(&a);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, 3), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, -1), EINVAL);
	CHECK_ERR(pthread_mutexattr_getprotocol(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PRIO_NONE);
	pthread_mutexattr_destroy(&a);
}

/* ------------------------------------------------------- contention */

struct counter {
	pthread_mutex_t m;
	long n, inside, overlaps;
	int recursive;
};

static void *count_main(void *p)
{
	struct counter *c = p;

	CHECK_WEFT_THREAD();
	for (int i = 0; i < 5000; i++) {
		CHECK_ERR(pthread_mutex_lock(&c->m), 0);
		if (c->recursive)
			CHECK_ERR(pthread_mutex_lock(&c->m), 0);
		if (++c->inside != 1)
			c->overlaps++;
		c->n++;
		c->inside--;
		if (c->recursive)
			CHECK_ERR(pthread_mutex_unlock(&c->m), 0);
		CHECK_ERR(pthread_mutex_unlock(&c->m), 0);
	}
	return NULL;
}

static void test_contention(void)
{
	for (int ti = 0; ti < 4; ti++)
		for (int robust = 0; robust < 2; robust++) {
			struct counter c = {.recursive = types[ti] ==
						 PTHREAD_MUTEX_RECURSIVE};
			pthread_t t[4];

			pi_init(&c.m, types[ti], robust, 0);
			for (int i = 0; i < 4; i++)
				pthread_create(&t[i], NULL, count_main, &c);
			for (int i = 0; i < 4; i++)
				pthread_join(t[i], NULL);
			CHECK_EQ(c.n, 4 * 5000);
			CHECK_EQ(c.overlaps, 0);
			CHECK_EQ(c.m.__data.__lock, 0);
		}
}

/* -------------------------------------------------- robust PI death */

static void test_robust_death(void)
{
	for (int ti = 0; ti < 4; ti++)
		for (int waiter = 0; waiter < 2; waiter++) {
			pthread_mutex_t m;
			int flag = 0;
			struct holder h = {.m = &m, .go = &flag};
			struct holder w = {.m = &m};
			pthread_t th, tw;

			pi_init(&m, types[ti], 1, ti & 1);
			pthread_create(&th, NULL, hold_until_go, &h);
			wait_flag(&h.held);
			if (waiter) {
				pthread_create(&tw, NULL, lock_it, &w);
				wait_flag(&w.held);
				CHECK(task_asleep(w.tid, 5000000000L),
				      "PI waiter asleep");
				CHECK(m.__data.__lock == (int)(h.tid | W_WAITERS),
				      "word with a PI waiter: expected %#x, "
				      "got %#x", h.tid | W_WAITERS,
				      (unsigned)m.__data.__lock);
			}
			go(&flag);
			pthread_join(th, NULL);
			if (waiter) {
				pthread_join(tw, NULL);
				CHECK(w.res == EOWNERDEAD, "type %d: PI waiter "
				      "expected EOWNERDEAD, got %d", types[ti],
				      w.res);
				CHECK_ERR(pthread_mutex_lock(&m), 0);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				continue;
			}
			CHECK(m.__data.__lock == (int)W_DIED, "dead PI word: "
			      "expected %#x, got %#x", W_DIED,
			      (unsigned)m.__data.__lock);
			int r = ti & 2 ? pthread_mutex_trylock(&m)
				       : pthread_mutex_lock(&m);
			CHECK(r == EOWNERDEAD, "type %d: expected EOWNERDEAD, "
			      "got %d", types[ti], r);
			CHECK_EQ(m.__data.__lock, tid());
			if (ti & 1) {
				CHECK_ERR(pthread_mutex_consistent(&m), 0);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK_ERR(pthread_mutex_lock(&m), 0);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
			} else {
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK_ERR(pthread_mutex_lock(&m), ENOTRECOVERABLE);
				CHECK_ERR(pthread_mutex_trylock(&m), ENOTRECOVERABLE);
			}
		}
}

/* A waiter asleep in the kernel shows as FUTEX_WAITERS in the word;
   the unlock (FUTEX_UNLOCK_PI) hands the mutex to it. */
static void test_handover(void)
{
	for (int pshared = 0; pshared < 2; pshared++) {
		pthread_mutex_t m;
		struct holder w = {.m = &m};
		pthread_t tw;

		pi_init(&m, PTHREAD_MUTEX_ERRORCHECK, 0, pshared);
		CHECK_ERR(pthread_mutex_lock(&m), 0);
		pthread_create(&tw, NULL, lock_it, &w);
		wait_flag(&w.held);
		CHECK(task_asleep(w.tid, 5000000000L), "PI waiter asleep");
		CHECK(m.__data.__lock == (int)(tid() | W_WAITERS),
		      "word with a PI waiter: expected %#x, got %#x",
		      tid() | W_WAITERS, (unsigned)m.__data.__lock);
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
		pthread_join(tw, NULL);
		CHECK_ERR(w.res, 0);
		CHECK_EQ(m.__data.__lock, 0);
	}
}

/* ---------------------------------------------------------- condvar */

static void test_cond(void)
{
	for (int pshared = 0; pshared < 2; pshared++)
		for (int robust = 0; robust < 2; robust++) {
			pthread_mutex_t m;

			pi_init(&m, PTHREAD_MUTEX_RECURSIVE, robust, pshared);
			cond_rounds(&m, pshared, robust, "PI");
		}
}

/* ------------------------------------------- shared across processes */

static void test_fork(void)
{
	struct sh {
		pthread_mutex_t m;
		int phase;
	} *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int st;

	REQUIRE(s != MAP_FAILED, "mmap");
	pi_init(&s->m, PTHREAD_MUTEX_NORMAL, 0, 1);
	CHECK_ERR(pthread_mutex_lock(&s->m), 0);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		__atomic_store_n(&s->phase, 1, __ATOMIC_RELEASE);
		int r = pthread_mutex_lock(&s->m); /* sleeps in the kernel */
		int word = s->m.__data.__lock;
		pthread_mutex_unlock(&s->m);
		_exit(r == 0 && (word & 0x3fffffff) == getpid() ? 0 : 1);
	}
	wait_flag(&s->phase);
	CHECK(process_asleep(pid, 5000000000L), "child asleep on the PI mutex");
	CHECK_ERR(pthread_mutex_unlock(&s->m), 0);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	CHECK_EQ(s->m.__data.__lock, 0);
	munmap(s, sizeof *s);
}

/* ------------------------------------------ the priority inversion

   All three threads on CPU 0, SCHED_FIFO: low (10) takes the mutex,
   medium (20) then spins, so low no longer runs; high (30) blocks on
   the mutex.  Without inheritance low never runs again and high never
   gets the mutex; with it, low runs at 30 until it unlocks.  The main
   thread, on CPU 1, reads low's effective priority (stat field 18: the
   kernel's prio - 100, so -1 - 30 = -31 when boosted to 30, -11 at its
   own 10; field 40, rt_priority, stays 10). */

struct inv {
	pthread_mutex_t m;
	int low_tid, held, medium_running, high_blocking;
	int observed, abort, done;
	int high_res;
};

static int stop(struct inv *v)
{
	return __atomic_load_n(&v->observed, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&v->abort, __ATOMIC_ACQUIRE);
}

static void *low_main(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(10, 0), 0);
	v->low_tid = tid();
	CHECK_ERR(pthread_mutex_lock(&v->m), 0);
	__atomic_store_n(&v->held, 1, __ATOMIC_RELEASE);
	while (!stop(v))
		; /* its critical section: runs only when boosted */
	CHECK_ERR(pthread_mutex_unlock(&v->m), 0);
	return NULL;
}

static void *medium_main(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(20, 0), 0);
	__atomic_store_n(&v->medium_running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&v->done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&v->abort, __ATOMIC_ACQUIRE))
		; /* a busy thread between the two */
	return NULL;
}

static void *high_main(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(30, 0), 0);
	__atomic_store_n(&v->high_blocking, 1, __ATOMIC_RELEASE);
	v->high_res = pthread_mutex_lock(&v->m);
	__atomic_store_n(&v->done, 1, __ATOMIC_RELEASE);
	if (v->high_res == 0)
		pthread_mutex_unlock(&v->m);
	return NULL;
}

static void test_inversion(void)
{
	struct sched_param sp = {.sched_priority = 1};
	struct inv *v = calloc(1, sizeof *v);
	pthread_t lo, me, hi;
	cpu_set_t set;
	int boosted = INT_MIN, rtprio = INT_MIN, r;

	if (!harness_rt_wanted()) {
		free(v);
		return;
	}
	r = sched_setscheduler(0, SCHED_FIFO, &sp); /* probe the right */
	if (r != 0) {
		RT_REFUSED(errno);
		free(v);
		return;
	}
	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "two CPUs needed");
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
		"main on CPU 1");
	pi_init(&v->m, PTHREAD_MUTEX_NORMAL, 0, 0);
	pthread_create(&lo, NULL, low_main, v);
	REQUIRE(poll_flag(&v->held), "low took the mutex");
	pthread_create(&me, NULL, medium_main, v);
	REQUIRE(poll_flag(&v->medium_running), "medium runs");
	pthread_create(&hi, NULL, high_main, v);
	REQUIRE(poll_flag(&v->high_blocking), "high runs");
	long end = mono_ns() + 5000000000L;
	while (mono_ns() < end) {
		boosted = stat_field(v->low_tid, 18);
		rtprio = stat_field(v->low_tid, 40);
		if (boosted == -31)
			break;
	}
	CHECK(boosted == -31, "low thread's priority (stat 18) while high "
	      "waits: expected -31 (boosted to FIFO 30), got %d", boosted);
	CHECK(rtprio == 10, "low thread's rt_priority (stat 40): expected 10, "
	      "got %d", rtprio);
	__atomic_store_n(boosted == -31 ? &v->observed : &v->abort, 1,
			 __ATOMIC_RELEASE);
	pthread_join(hi, NULL);
	pthread_join(me, NULL);
	pthread_join(lo, NULL);
	CHECK_ERR(v->high_res, 0);
	CHECK(__atomic_load_n(&v->done, __ATOMIC_ACQUIRE), "high finished");
	free(v);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_init);
	watchdog_arm();
	test_no_syscall();
	test_errors();
	test_contention();
	test_robust_death();
	test_handover();
	test_cond();
	test_fork();
	test_inversion();
	TEST_DONE();
}
