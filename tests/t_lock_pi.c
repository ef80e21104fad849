/* weft's internal lock inherits priority (docs/sync.md, "Internal locks
   and waits"), shown on a real path with no test hook.

   Everything on one CPU under SCHED_FIFO.  A low thread (42) holds a
   priority-protect mutex with ceiling 48, so it runs at 48.  Its unlock
   gives the priority back: weft asks the kernel for priority 42 inside
   the thread's ceiling-count lock (src/sync/mutex_pp.c, pp_move), and a
   medium thread (45) that spins on that CPU preempts the low one right
   there, with the lock held.  A high thread (48) then calls
   pthread_getschedparam on the low one, which reads the base priority
   under that same lock, and blocks.

   With priority inheritance the kernel runs the low thread at 48 until
   it lets the lock go: it runs although the medium thread never stops
   spinning (its CPU time, /proc/self/task/TID/schedstat, grows), and
   the high thread has its answer while the medium thread spins.
   Without it (the 0/1/2 lock weft had before) the low thread cannot run
   until the medium one gives up after a bounded 3 s spin, and the high
   thread waits that long: the test fails.

   The second scenario forks while another thread holds the forking
   thread's ceiling-count lock, caught the same way: a thread (43) that
   calls pthread_setschedparam to raise the forker (41) to 47 is
   preempted by it right after the kernel obeyed, still holding the
   forker's lock.  The forker forks; the child must take a
   priority-protect mutex (that lock again), ask for its own scheduling
   parameters, create and join a thread and make a key.  Without the
   reset in the fork child its lock names a thread of the parent: the
   child hangs and is killed after 10 s.

   The first scenario runs again in a child process whose PI futex calls
   fail with ENOSYS (a seccomp filter), as on a kernel built without
   them: weft's internal lock falls back to plain futexes there, and
   the high thread must still get its answer, after the medium thread's
   (shortened) spin, since nothing can boost the low one.

   The priorities are in the 40s: above the busy SCHED_FIFO loops other
   jobs on a shared machine may run at low priorities (one at 6 starved a
   forker at 5 here), below the kernel's interrupt threads (50).

   Needs SCHED_FIFO (root, CAP_SYS_NICE or RLIMIT_RTPRIO) and two CPUs
   (the main thread watches from the second).  Without the right it
   fails; WEFT_TEST_NO_RT=1 leaves it out (exit 77, reported as SKIP by
   tests/run.sh); with one CPU it is skipped. */
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

#define SKIP_EXIT 77
#define LOW 42
#define MEDIUM 45
#define HIGH 48 /* also the ceilings of the PP mutexes */
#define FORKER 41
#define RAISER 43
#define RAISED 47
#define MEDIUM_SPIN_NS 3000000000L
#define POLL_NS 10000000000L

struct scenario {
	pthread_mutex_t pp;	/* priority protect, ceiling HIGH */
	sem_t go;		/* lets the low thread unlock */
	pthread_t low;
	int low_tid, low_held, low_unlock_res, low_returned;
	int medium_spinning, medium_stop, medium_gave_up;
	long medium_deadline;
	int high_done, high_res, high_policy, high_prio;
	long high_wait_ns;
};

static int cpu_a, cpu_b; /* the scenario's CPU, the watcher's */

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* Field `field` (1-based, as proc(5) numbers them) of a thread's stat
   file; LONG_MIN when unreadable. */
static long stat_field(int tid, int field)
{
	char path[64], buf[1024];
	size_t n;
	char *p;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	if (!(f = fopen(path, "r")))
		return LONG_MIN;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')))
		return LONG_MIN;
	p++; /* " state ..." is field 3 */
	for (int i = 3; i <= field; i++) {
		while (*p == ' ')
			p++;
		if (i == field)
			return atol(p);
		while (*p && *p != ' ')
			p++;
	}
	return LONG_MIN;
}

/* The thread's CPU time so far in ns (schedstat, first field). */
static long run_ns(int tid)
{
	char path[64];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void rt_attr(pthread_attr_t *a, int prio)
{
	struct sched_param sp = {.sched_priority = prio};
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu_a, &set);
	pthread_attr_init(a);
	pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(a, SCHED_FIFO);
	pthread_attr_setschedparam(a, &sp);
	pthread_attr_setaffinity_np(a, sizeof set, &set);
}

static void *low_main(void *p)
{
	struct scenario *s = p;

	CHECK_WEFT_THREAD();
	s->low_tid = gettid_();
	CHECK_ERR(pthread_mutex_lock(&s->pp), 0); /* now at HIGH */
	__atomic_store_n(&s->low_held, 1, __ATOMIC_RELEASE);
	while (sem_wait(&s->go) != 0)
		;
	/* Drops to LOW inside weft's lock; the medium thread takes over. */
	s->low_unlock_res = pthread_mutex_unlock(&s->pp);
	__atomic_store_n(&s->low_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Spins until told to stop or for MEDIUM_SPIN_NS after the high thread
   was started, whichever comes first. */
static void *medium_main(void *p)
{
	struct scenario *s = p;

	CHECK_WEFT_THREAD();
	__atomic_store_n(&s->medium_spinning, 1, __ATOMIC_RELEASE);
	for (;;) {
		long end = __atomic_load_n(&s->medium_deadline, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&s->medium_stop, __ATOMIC_ACQUIRE))
			return NULL;
		if (end && mono_ns() > end)
			break;
	}
	__atomic_store_n(&s->medium_gave_up, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *high_main(void *p)
{
	struct scenario *s = p;
	struct sched_param sp;
	long t0;

	CHECK_WEFT_THREAD();
	t0 = mono_ns();
	s->high_res = pthread_getschedparam(s->low, &s->high_policy, &sp);
	s->high_wait_ns = mono_ns() - t0;
	s->high_prio = sp.sched_priority;
	__atomic_store_n(&s->high_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Polls from the watcher's CPU (at most POLL_NS) until *f is set or,
   with `stop`, until *stop is. */
static int poll_flag(int *f, int *stop)
{
	long end = mono_ns() + POLL_NS;

	while (!__atomic_load_n(f, __ATOMIC_ACQUIRE)) {
		if (mono_ns() > end || (stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE)))
			return 0;
		sched_yield();
	}
	return 1;
}

/* The low thread's effective priority is LOW again (stat field 18 is the
   kernel's prio - 100: -1 - LOW) and it has not returned from the
   unlock: it sits in weft's lock, preempted by the medium thread. */
static int low_stuck(struct scenario *s)
{
	long end = mono_ns() + POLL_NS;

	while (mono_ns() < end) {
		if (stat_field(s->low_tid, 18) == -1 - LOW)
			return !__atomic_load_n(&s->low_returned, __ATOMIC_ACQUIRE);
		sched_yield();
	}
	return 0;
}

/* `pi`: 1 on this kernel; 0 in a child where PI futex calls fail with
   ENOSYS (as on a kernel built without them): weft then falls back to a
   plain futex lock, the inversion is expected, and the medium thread's
   spin is shortened. */
static void scenario(int pi)
{
	struct scenario *s = calloc(1, sizeof *s);
	long spin_ns = pi ? MEDIUM_SPIN_NS : MEDIUM_SPIN_NS / 10;
	pthread_mutexattr_t ma;
	pthread_attr_t la, ma_, ha;
	pthread_t medium, high;
	cpu_set_t set;
	long ran_before, ran_after;

	CPU_ZERO(&set);
	CPU_SET(cpu_b, &set);
	REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
		"main thread on CPU %d", cpu_b);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT);
	pthread_mutexattr_setprioceiling(&ma, HIGH);
	CHECK_ERR(pthread_mutex_init(&s->pp, &ma), 0);
	pthread_mutexattr_destroy(&ma);
	sem_init(&s->go, 0, 0);
	rt_attr(&la, LOW);
	rt_attr(&ma_, MEDIUM);
	rt_attr(&ha, HIGH);

	CHECK_ERR(pthread_create(&s->low, &la, low_main, s), 0);
	REQUIRE(poll_flag(&s->low_held, NULL), "low thread holds the mutex");
	CHECK_ERR(pthread_create(&medium, &ma_, medium_main, s), 0);
	REQUIRE(poll_flag(&s->medium_spinning, NULL), "medium thread spins");
	sem_post(&s->go);
	REQUIRE(low_stuck(s), "low thread: expected preempted at priority %d "
		"inside its unlock (stat 18 = %d), got stat 18 = %ld, returned "
		"%d", LOW, -1 - LOW, stat_field(s->low_tid, 18), s->low_returned);

	ran_before = run_ns(s->low_tid);
	__atomic_store_n(&s->medium_deadline, mono_ns() + spin_ns,
			 __ATOMIC_RELEASE);
	CHECK_ERR(pthread_create(&high, &ha, high_main, s), 0);
	poll_flag(&s->high_done, &s->medium_gave_up);
	ran_after = run_ns(s->low_tid);
	int gave_up = __atomic_load_n(&s->medium_gave_up, __ATOMIC_ACQUIRE);
	__atomic_store_n(&s->medium_stop, 1, __ATOMIC_RELEASE);
	pthread_join(high, NULL);
	pthread_join(medium, NULL);
	pthread_join(s->low, NULL);
	pthread_attr_destroy(&la);
	pthread_attr_destroy(&ma_);
	pthread_attr_destroy(&ha);

	if (pi) {
		CHECK(!gave_up, "high thread: expected its pthread_getschedparam "
		      "to return while the medium thread spun (low thread "
		      "boosted), got the medium thread's %.1f s spin ending "
		      "first (waited %.3f s)", spin_ns / 1e9,
		      s->high_wait_ns / 1e9);
		CHECK(ran_before >= 0 && ran_after > ran_before,
		      "low thread's CPU time while the medium thread spun: "
		      "expected to grow (boosted above it), got %ld ns -> %ld ns",
		      ran_before, ran_after);
	} else {
		/* The high thread slept on the plain lock until the low one,
		   free to run once the medium one gave up, woke it. */
		CHECK(gave_up, "without PI futexes: expected the medium "
		      "thread's spin to end first (no boost), got the high "
		      "thread done after %.3f s", s->high_wait_ns / 1e9);
	}
	CHECK_ERR(s->high_res, 0);
	CHECK_EQ(s->high_policy, SCHED_FIFO);
	CHECK_EQ(s->high_prio, LOW);
	CHECK_ERR(s->low_unlock_res, 0);
	printf("%s: high thread waited %.1f us for the low thread's lock; the "
	       "low thread ran %ld ns meanwhile\n",
	       pi ? "PI futexes" : "no PI futexes", s->high_wait_ns / 1e3,
	       ran_after - ran_before);
	pthread_mutex_destroy(&s->pp);
	sem_destroy(&s->go);
	free(s);
}

/* ------------------------------------ fork while the lock is held */

struct forking {
	pthread_t forker;
	int forker_spinning, forker_raised, raiser_returned, raiser_res;
	int child_pid, child_status, forker_done;
};

static void *noop(void *p)
{
	return p;
}

/* In the fork child: every internal lock the child needs must be free.
   Exit status: 0, or the number of the step that failed. */
static int child_work(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	struct sched_param sp;
	pthread_key_t k;
	pthread_t t;
	int pol;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	pthread_mutexattr_setprioceiling(&a, HIGH);
	if (pthread_mutex_init(&m, &a) || pthread_mutex_lock(&m) ||
	    pthread_mutex_unlock(&m))
		return 1;
	if (pthread_getschedparam(pthread_self(), &pol, &sp) ||
	    pol != SCHED_FIFO || sp.sched_priority != RAISED)
		return 2;
	if (pthread_create(&t, NULL, noop, NULL) || pthread_join(t, NULL))
		return 3;
	if (pthread_key_create(&k, NULL) || pthread_key_delete(k))
		return 4;
	return 0;
}

static int own_prio(void)
{
	struct sched_param sp;

	return sched_getparam(0, &sp) == 0 ? sp.sched_priority : -1;
}

static void *forker_main(void *p)
{
	struct forking *f = p;
	long end = mono_ns() + POLL_NS;
	int pid, st = -1;

	CHECK_WEFT_THREAD();
	__atomic_store_n(&f->forker_spinning, 1, __ATOMIC_RELEASE);
	while (own_prio() != RAISED)
		if (mono_ns() > end)
			return NULL; /* the raiser never ran: main reports it */
	/* The raiser cannot run while we do: it is still in its call. */
	__atomic_store_n(&f->forker_raised,
			 __atomic_load_n(&f->raiser_returned, __ATOMIC_ACQUIRE) ? 2 : 1,
			 __ATOMIC_RELEASE);
	pid = fork();
	if (pid == 0)
		_exit(child_work());
	__atomic_store_n(&f->child_pid, pid, __ATOMIC_RELEASE);
	if (pid > 0)
		waitpid(pid, &st, 0);
	f->child_status = st;
	__atomic_store_n(&f->forker_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *raiser_main(void *p)
{
	struct forking *f = p;
	struct sched_param sp = {.sched_priority = RAISED};

	CHECK_WEFT_THREAD();
	f->raiser_res = pthread_setschedparam(f->forker, SCHED_FIFO, &sp);
	__atomic_store_n(&f->raiser_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void fork_scenario(void)
{
	struct forking *f = calloc(1, sizeof *f);
	pthread_attr_t fa, ra;
	pthread_t raiser;
	int pid;

	rt_attr(&fa, FORKER);
	rt_attr(&ra, RAISER);
	CHECK_ERR(pthread_create(&f->forker, &fa, forker_main, f), 0);
	REQUIRE(poll_flag(&f->forker_spinning, NULL), "forker spins");
	CHECK_ERR(pthread_create(&raiser, &ra, raiser_main, f), 0);
	REQUIRE(poll_flag(&f->forker_raised, NULL), "forker: expected raised "
		"to %d by the other thread, got it not raised", RAISED);
	REQUIRE(f->forker_raised == 1, "raiser: expected still inside "
		"pthread_setschedparam when the forker forks, got returned");
	if (!poll_flag(&f->forker_done, NULL)) {
		pid = __atomic_load_n(&f->child_pid, __ATOMIC_ACQUIRE);
		FAIL("fork child: expected to exit within 10 s, got a hang "
		     "(pid %d killed)", pid);
		if (pid > 0)
			kill(pid, SIGKILL);
	}
	pthread_join(f->forker, NULL);
	pthread_join(raiser, NULL);
	pthread_attr_destroy(&fa);
	pthread_attr_destroy(&ra);
	CHECK(WIFEXITED(f->child_status) && WEXITSTATUS(f->child_status) == 0,
	      "fork child: expected exit 0, got status %#x (exit n: step n "
	      "failed)", f->child_status);
	CHECK_ERR(f->raiser_res, 0);
	free(f);
}

/* --------------------------------------- a kernel without PI futexes

   A seccomp filter makes every PI futex operation fail with ENOSYS, as
   a kernel built without CONFIG_FUTEX_PI answers, in a child process;
   the scenario then runs there on weft's plain-futex fallback. */

static int no_pi_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* the low half of the operation argument, less the flags */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, FUTEX_CMD_MASK),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_LOCK_PI, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_UNLOCK_PI, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_TRYLOCK_PI, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_LOCK_PI2, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_WAIT_REQUEUE_PI, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_CMP_REQUEUE_PI, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void no_pi_scenario(void)
{
	int st = -1, lock_pi_errno;
	long end;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		REQUIRE(no_pi_filter() == 0, "seccomp filter: %s", strerror(errno));
		/* The filter works: a PI futex call answers ENOSYS. */
		int word = 0;
		lock_pi_errno = syscall(SYS_futex, &word, FUTEX_LOCK_PI_PRIVATE,
					0, NULL) == 0 ? 0 : errno;
		REQUIRE(lock_pi_errno == ENOSYS, "FUTEX_LOCK_PI under the filter: "
			"expected ENOSYS, got %s", strerror(lock_pi_errno));
		scenario(0);
		fflush(stdout);
		_exit(harness_failures ? 1 : 0);
	}
	REQUIRE(pid > 0, "fork");
	end = mono_ns() + 3 * POLL_NS;
	while (waitpid(pid, &st, WNOHANG) == 0 && mono_ns() < end)
		sched_yield();
	if (mono_ns() >= end && kill(pid, SIGKILL) == 0) {
		waitpid(pid, &st, 0);
		FAIL("the scenario without PI futexes: expected to end within "
		     "%ld s, got a hang (killed)", 3 * POLL_NS / 1000000000L);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the scenario without "
	      "PI futexes: expected exit 0, got status %#x", st);
}

/* The first two CPUs this process may use; 0 when there are fewer. */
static int two_cpus(void)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			*(n++ ? &cpu_b : &cpu_a) = c;
	return n == 2;
}

static void skip(const char *why)
{
	printf("SKIP: %s\n", why);
	exit(SKIP_EXIT);
}

int main(void)
{
	struct sched_param sp = {.sched_priority = 1};

	alarm(60); /* a hang ends as a failure (SIGALRM) */
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_getschedparam);
	REQUIRE_SERVED(pthread_mutex_unlock);
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_setschedparam);
	if (!harness_rt_wanted())
		TEST_DONE(); /* exits 77 */
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		RT_REFUSED(errno);
		TEST_DONE();
	}
	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	if (!two_cpus())
		skip("two CPUs needed (the main thread watches from the second)");
	scenario(1);
	fork_scenario();
	no_pi_scenario();
	TEST_DONE();
}
