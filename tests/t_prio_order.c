/* Priority order of wake-ups (issue 14 item 5): every queue weft keeps
   on a futex lets its SCHED_FIFO waiters through highest priority
   first, first come first served within a priority, SCHED_OTHER waiters
   after them.

   Each case puts waiters of priorities 50 70 60 70 80 45 (and a
   SCHED_OTHER one where the object allows it) to sleep on one object,
   one after the other, each seen asleep in a futex call on the object's
   own bytes (/proc/self/task/TID/stat and .../syscall) before the next
   starts.  Everybody, the main thread included, runs on one CPU, and the
   main thread (SCHED_FIFO 90) holds the object, so nobody moves until it
   lets go; every waiter records its rank when it gets through.  Cases:
   private mutexes of each type, a process-shared one, robust, PI
   (the kernel's rt-mutex) and PP ones (waiters must sleep at their own
   priority, not at the ceiling), semaphores (private and shared, one
   post at a time), rwlock writers (both kinds), readers and writers
   mixed (POSIX: a writer before a reader of equal priority), and the
   barrier (all released at once: they run in the order the kernel woke
   them, which is priority order).

   The private mutex's starvation hand-off (docs/sync.md) must not jump
   the queue: a SCHED_OTHER waiter registered for a hand-off gets the
   mutex after the real-time sleepers, and a real-time waiter never
   registers (a later, higher-priority one goes first).  A waiter is
   pushed into registering by a signal (EINTR, no SA_RESTART) once it has
   slept past the 1 ms threshold; the registration is read from the
   mutex (__spins/__elision hold -tid, weft's layout).

   The scheduler may run a SCHED_OTHER thread ahead of runnable
   real-time ones: real-time throttling (sched_rt_runtime_us; since
   Linux 6.12 the "fair server") does so once real-time threads, other
   programs' too, have kept a CPU busy, and with another test's busy
   SCHED_FIFO thread on the machine it did so in every run of a case
   where the SCHED_OTHER waiter is runnable early.  So a SCHED_OTHER
   waiter that gets through while one of the case's real-time waiters
   is runnable (state R: that real-time waiter was let go already, and
   on one CPU only the scheduler's choice runs us first) has its place
   left unchecked, with a note; the real-time waiters' order is checked
   all the same.  A SCHED_OTHER waiter that weft let in too early finds
   the real-time ones asleep, not runnable: its place is checked and
   fails.  The priorities are high enough that other tests' busy
   real-time threads (priorities up to 30) do not delay ours.

   Needs SCHED_FIFO (root): a refusal fails the test.  WEFT_TEST_NO_RT=1
   leaves it all out (exit 77: SKIP). */
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

#define MAXW 8
#define MAIN_PRIO 90
#define OTHER 0 /* "priority" of a SCHED_OTHER waiter */

enum op { OP_LOCK, OP_READ, OP_WRITE, OP_SEM, OP_BARRIER };

struct waiter {
	pthread_t th;
	int idx, prio;
	enum op op;
	pid_t tid;
	int calling; /* about to block in the object */
	int through; /* got through and recorded its rank */
	int result;
};

static int cpu;		/* the one CPU everybody runs on */
static int order[MAXW]; /* waiter indexes, in the order they got through */
static int norder;
static struct waiter ws[MAXW]; /* the current case's waiters */
static int nws;
static int other_early; /* a SCHED_OTHER waiter ran ahead of runnable RT ones */
static int sig_seen;

static pthread_mutex_t m;
static sem_t sem;
static pthread_rwlock_t rw;
static pthread_barrier_t bar;
static const void *obj; /* the object the waiters sleep in */
static size_t obj_size;

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void ms_sleep(void)
{
	struct timespec t = {0, 1000000};

	nanosleep(&t, NULL);
}

/* The task's state letter (R, S, ...), '?' if unreadable. */
static char task_state(pid_t tid)
{
	char path[64], buf[512];
	size_t n;
	FILE *f;
	char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	if (!(f = fopen(path, "r")))
		return '?';
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* The task's .../syscall line: "202 0x<futex address> ..." while it is
   in the futex system call. */
static const char *task_syscall(pid_t tid)
{
	static char buf[256];
	char path[64];
	size_t n = 0;
	FILE *f;
	char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	if ((f = fopen(path, "r"))) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	if ((p = strchr(buf, '\n')))
		*p = 0;
	return buf;
}

/* ------------------------------------------------------------ waiters */

static int acquire(struct waiter *w)
{
	switch (w->op) {
	case OP_LOCK:
		return pthread_mutex_lock(&m);
	case OP_READ:
		return pthread_rwlock_rdlock(&rw);
	case OP_WRITE:
		return pthread_rwlock_wrlock(&rw);
	case OP_SEM:
		return sem_wait(&sem) ? errno : 0;
	case OP_BARRIER: {
		int r = pthread_barrier_wait(&bar);
		return r == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : r;
	}
	}
	return -1;
}

static void leave(struct waiter *w)
{
	if (w->op == OP_LOCK)
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
	else if (w->op == OP_READ || w->op == OP_WRITE)
		CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
}

/* Called by a SCHED_OTHER waiter that got through: a real-time waiter
   of the case that has not, and is runnable, was let go already and
   held back by the scheduler (on one CPU nothing else runs us first). */
static int rt_runnable(void)
{
	for (int i = 0; i < nws; i++)
		if (ws[i].prio != OTHER &&
		    !__atomic_load_n(&ws[i].through, __ATOMIC_ACQUIRE) &&
		    task_state(ws[i].tid) == 'R')
			return 1;
	return 0;
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	cpu_set_t set;

	CHECK_WEFT_THREAD();
	/* Inherited from the main thread: the order relies on it. */
	CHECK(sched_getaffinity(0, sizeof set, &set) == 0 &&
		      CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set),
	      "waiter %d runs on CPU %d only (%d CPUs allowed)", w->idx, cpu,
	      CPU_COUNT(&set));
	__atomic_store_n(&w->tid, gettid_(), __ATOMIC_RELEASE);
	__atomic_store_n(&w->calling, 1, __ATOMIC_RELEASE);
	w->result = acquire(w);
	if (w->result == 0) {
		if (w->prio == OTHER && rt_runnable())
			__atomic_store_n(&other_early, 1, __ATOMIC_RELEASE);
		order[__atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST)] = w->idx;
		__atomic_store_n(&w->through, 1, __ATOMIC_RELEASE);
		leave(w);
	}
	return NULL;
}

static void start(struct waiter *w, int idx, int prio, enum op op)
{
	struct sched_param sp = {.sched_priority = prio};
	pthread_attr_t a;

	w->idx = idx;
	w->prio = prio;
	w->op = op;
	w->tid = 0;
	w->calling = 0;
	w->through = 0;
	w->result = -1;
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, prio == OTHER ? SCHED_OTHER : SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	REQUIRE(pthread_create(&w->th, &a, waiter_main, w) == 0,
		"pthread_create (priority %d) failed", prio);
	pthread_attr_destroy(&a);
}

/* Where thread `tid` sleeps: the futex address if it is asleep (state
   S) in the futex system call, else 0. */
static uintptr_t futex_sleep_addr(pid_t tid)
{
	unsigned long addr = 0;
	long nr = -1;

	if (task_state(tid) != 'S' ||
	    sscanf(task_syscall(tid), "%ld %lx", &nr, &addr) != 2 ||
	    nr != SYS_futex)
		return 0;
	return addr;
}

/* Waits (at most 5 s) until the waiter sleeps in a futex call on the
   object's bytes.  Polled every millisecond: the main thread outranks
   everyone on the one CPU and must leave it to them. */
static int wait_asleep(struct waiter *w)
{
	long end = mono_ns() + 5000000000L;

	do {
		if (__atomic_load_n(&w->calling, __ATOMIC_ACQUIRE)) {
			uintptr_t a = futex_sleep_addr(w->tid);
			if (a >= (uintptr_t)obj && a < (uintptr_t)obj + obj_size)
				return 1;
		}
		ms_sleep();
	} while (mono_ns() < end);
	return 0;
}

static void require_asleep(struct waiter *w)
{
	REQUIRE(wait_asleep(w),
		"waiter %d (priority %d) asleep in a futex call on the object "
		"(%p, %zu bytes) within 5 s, got state %c, syscall \"%s\"",
		w->idx, w->prio, obj, obj_size, task_state(w->tid),
		task_syscall(w->tid));
}

static int wait_count(int *counter, int n)
{
	long end = mono_ns() + 5000000000L;

	while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < n)
		if (mono_ns() > end)
			return 0;
		else
			ms_sleep();
	return 1;
}

static void finish(struct waiter *w)
{
	struct timespec dl = deadline_in(CLOCK_REALTIME, 10000000000L);

	REQUIRE(pthread_timedjoin_np(w->th, NULL, &dl) == 0,
		"waiter %d (priority %d) still blocked after 10 s", w->idx,
		w->prio);
	CHECK_ERR(w->result, 0);
}

/* ---------------------------------------------------------- the cases */

/* Starts waiters 0..n-1 one after the other, each asleep in the object
   before the next starts. */
static void queue(const int *prios, const enum op *ops, int n, enum op op)
{
	__atomic_store_n(&norder, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&other_early, 0, __ATOMIC_SEQ_CST);
	nws = n;
	for (int i = 0; i < n; i++) {
		start(&ws[i], i, prios[i], ops ? ops[i] : op);
		require_asleep(&ws[i]);
	}
}

/* Waits until all got through, joins them. */
static void finish_all(void)
{
	wait_count(&norder, nws);
	for (int i = 0; i < nws; i++)
		finish(&ws[i]);
}

static const char *names(const int *idx, int n)
{
	static char buf[256];
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; i < n && len < sizeof buf - 16; i++) {
		const struct waiter *w = &ws[idx[i]];
		const char *k = w->op == OP_READ ? "r" : w->op == OP_WRITE ? "w" : "";

		if (w->prio == OTHER)
			len += (size_t)snprintf(buf + len, sizeof buf - len,
						" %sother#%d", k, idx[i]);
		else
			len += (size_t)snprintf(buf + len, sizeof buf - len,
						" %s%d#%d", k, w->prio, idx[i]);
	}
	return buf;
}

/* Copies the real-time waiters of `idx` to `out`; returns how many. */
static int rt_only(const int *idx, int n, int *out)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (ws[idx[i]].prio != OTHER)
			out[k++] = idx[i];
	return k;
}

static void check_order(const char *what, const int *want)
{
	int got[MAXW], exp[MAXW], n = __atomic_load_n(&norder, __ATOMIC_SEQ_CST);
	int ng = n, ne = nws;
	char wanted[256];

	memcpy(got, order, sizeof *got * (size_t)n);
	memcpy(exp, want, sizeof *exp * (size_t)nws);
	if (__atomic_load_n(&other_early, __ATOMIC_ACQUIRE)) {
		printf("%s: the scheduler ran SCHED_OTHER ahead of runnable "
		       "real-time waiters (got%s): its place not checked\n",
		       what, names(order, n));
		ng = rt_only(order, n, got);
		ne = rt_only(want, nws, exp);
	}
	if (n == nws && ng == ne && !memcmp(got, exp, sizeof *got * (size_t)ng))
		return;
	snprintf(wanted, sizeof wanted, "%s", names(exp, ne));
	FAIL("%s: expected the order%s, got%s", what, wanted, names(got, ng));
}

/* Highest priority first, the earlier-queued first among equals,
   SCHED_OTHER after every SCHED_FIFO waiter. */
static void by_priority(const int *prios, int n, int *want)
{
	for (int i = 0; i < n; i++)
		want[i] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && prios[want[j]] > prios[want[j - 1]]; j--) {
			int t = want[j];
			want[j] = want[j - 1];
			want[j - 1] = t;
		}
}

static const int prios_all[] = {50, 70, 60, 70, 80, 45, OTHER};
static const int prios_rt[] = {50, 70, 60, 70, 80, 45};

/* ------------------------------------------------------------ mutexes */

enum mkind { MK_PRIVATE, MK_SHARED, MK_ROBUST, MK_PI, MK_PP };

static const char *mkind_name[] = {"private", "process-shared", "robust",
				   "PI", "PP"};

static void mutex_make(enum mkind k, int type)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	if (k == MK_SHARED)
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (k == MK_ROBUST)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (k == MK_PI)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	if (k == MK_PP) {
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
		pthread_mutexattr_setprioceiling(&a, MAIN_PRIO + 5);
	}
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	pthread_mutexattr_destroy(&a);
	obj = &m;
	obj_size = sizeof m;
}

/* The main thread holds the mutex; the waiters queue; one unlock lets
   them go: each unlocks after it recorded, waking the next. */
static void mutex_case(enum mkind k, int type)
{
	/* A PP mutex refuses SCHED_OTHER lockers (EINVAL). */
	const int *prios = k == MK_PP ? prios_rt : prios_all;
	int n = k == MK_PP ? 6 : 7, want[MAXW];
	char what[64];

	mutex_make(k, type);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	queue(prios, NULL, n, OP_LOCK);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	finish_all();
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	by_priority(prios, n, want);
	snprintf(what, sizeof what, "%s mutex, type %d", mkind_name[k], type);
	check_order(what, want);
}

/* ------------------------------------------------ the mutex hand-off */

static void on_sigusr1(int sig)
{
	(void)sig;
	__atomic_fetch_add(&sig_seen, 1, __ATOMIC_SEQ_CST);
}

/* The -tid of a waiter registered for a hand-off, weft's use of
   __spins/__elision in a private mutex. */
static int handoff_word(void)
{
	int v;

	memcpy(&v, (char *)&m + offsetof(pthread_mutex_t, __data.__spins),
	       sizeof v);
	return v;
}

/* Makes waiter `w`, asleep on the held mutex, wake (EINTR) after it has
   slept past the hand-off threshold, so that it takes the starving
   path; waits until it sleeps again. */
static void starve(struct waiter *w)
{
	long slept = mono_ns();
	int seen = __atomic_load_n(&sig_seen, __ATOMIC_SEQ_CST);

	while (mono_ns() - slept < 3000000L) /* weft's threshold: 1 ms */
		ms_sleep();
	CHECK_ERR(pthread_kill(w->th, SIGUSR1), 0);
	REQUIRE(wait_count(&sig_seen, seen + 1), "signal not handled");
	require_asleep(w);
}

/* A SCHED_OTHER waiter registered for the hand-off, then real-time
   waiters queue: they go first. */
static void handoff_other_registrant(void)
{
	static const int prios[] = {OTHER, 50, 70, 60};
	int want[4];
	long end;

	mutex_make(MK_PRIVATE, PTHREAD_MUTEX_NORMAL);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	queue(prios, NULL, 1, OP_LOCK);
	starve(&ws[0]);
	end = mono_ns() + 5000000000L;
	while (handoff_word() != -ws[0].tid && mono_ns() < end)
		ms_sleep();
	CHECK(handoff_word() == -ws[0].tid,
	      "SCHED_OTHER waiter registered for a hand-off (%d), got %d",
	      -ws[0].tid, handoff_word());
	nws = 4;
	for (int i = 1; i < 4; i++) {
		start(&ws[i], i, prios[i], OP_LOCK);
		require_asleep(&ws[i]);
	}
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	finish_all();
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	by_priority(prios, 4, want);
	check_order("hand-off registrant SCHED_OTHER", want);
}

/* A starving real-time waiter (priority 45) must not be handed the
   mutex ahead of a later one of priority 75. */
static void handoff_rt_starving(void)
{
	static const int prios[] = {45, 75};
	static const int want[] = {1, 0};

	mutex_make(MK_PRIVATE, PTHREAD_MUTEX_NORMAL);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	queue(prios, NULL, 1, OP_LOCK);
	starve(&ws[0]);
	nws = 2;
	start(&ws[1], 1, prios[1], OP_LOCK);
	require_asleep(&ws[1]);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	finish_all();
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	check_order("starving real-time waiter", want);
}

/* --------------------------------------------------------- semaphores */

/* One post at a time; each waiter gets through before the next post. */
static void sem_case(int shared)
{
	int n = 7, want[MAXW];

	CHECK_ERR(sem_init(&sem, shared, 0), 0);
	obj = &sem;
	obj_size = sizeof sem;
	queue(prios_all, NULL, n, OP_SEM);
	for (int i = 0; i < n; i++) {
		CHECK_ERR(sem_post(&sem), 0);
		if (!wait_count(&norder, i + 1))
			break;
	}
	finish_all();
	CHECK_ERR(sem_destroy(&sem), 0);
	by_priority(prios_all, n, want);
	check_order(shared ? "shared semaphore" : "private semaphore",
			   want);
}

/* ------------------------------------------------------------ rwlocks */

static void rwlock_make(int kind)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, kind);
	CHECK_ERR(pthread_rwlock_init(&rw, &a), 0);
	pthread_rwlockattr_destroy(&a);
	obj = &rw;
	obj_size = sizeof rw;
}

static void rwlock_writers(int kind)
{
	int n = 7, want[MAXW];

	rwlock_make(kind);
	CHECK_ERR(pthread_rwlock_wrlock(&rw), 0);
	queue(prios_all, NULL, n, OP_WRITE);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	finish_all();
	CHECK_ERR(pthread_rwlock_destroy(&rw), 0);
	by_priority(prios_all, n, want);
	check_order(kind == PTHREAD_RWLOCK_PREFER_READER_NP
				   ? "rwlock writers"
				   : "rwlock writers, writer-preferring",
			   want);
}

/* Readers and writers (reader-preferring kind): priority order, a
   writer before a reader of equal priority (POSIX). */
static void rwlock_mixed(void)
{
	static const int prios[] = {70, 70, 60, 80, 50, 70, OTHER};
	static const enum op ops[] = {OP_WRITE, OP_READ, OP_WRITE, OP_READ,
				      OP_READ, OP_WRITE, OP_WRITE};
	static const int want[] = {3, 0, 5, 1, 2, 4, 6};

	rwlock_make(PTHREAD_RWLOCK_PREFER_READER_NP);
	CHECK_ERR(pthread_rwlock_wrlock(&rw), 0);
	queue(prios, ops, 7, OP_READ);
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	finish_all();
	CHECK_ERR(pthread_rwlock_destroy(&rw), 0);
	check_order("rwlock readers and writers", want);
}

/* ------------------------------------------------------------ barrier */

/* The main thread arrives last and releases everyone at once. */
static void barrier_case(void)
{
	int n = 7, want[MAXW], r;

	CHECK_ERR(pthread_barrier_init(&bar, NULL, (unsigned)n + 1), 0);
	obj = &bar;
	obj_size = sizeof bar;
	queue(prios_all, NULL, n, OP_BARRIER);
	r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD,
	      "barrier wait: expected 0 or SERIAL_THREAD, got %d", r);
	finish_all();
	CHECK_ERR(pthread_barrier_destroy(&bar), 0);
	by_priority(prios_all, n, want);
	check_order("barrier", want);
}

/* ---------------------------------------------------------------- main */

/* The first CPU the process may use: everybody is pinned to it. */
static int first_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}

static int go_realtime(void)
{
	struct sched_param sp = {.sched_priority = MAIN_PRIO};
	cpu_set_t set;

	cpu = first_cpu();
	REQUIRE(cpu >= 0, "no CPU in the affinity mask");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
		"pinning the main thread to CPU %d", cpu);
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

int main(void)
{
	static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
				    PTHREAD_MUTEX_ERRORCHECK};
	struct sigaction sa = {.sa_handler = on_sigusr1};
	int r;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_unlock);
	REQUIRE_SERVED(pthread_rwlock_rdlock);
	REQUIRE_SERVED(pthread_rwlock_wrlock);
	REQUIRE_SERVED(pthread_rwlock_unlock);
	REQUIRE_SERVED(sem_wait);
	REQUIRE_SERVED(sem_post);
	REQUIRE_SERVED(pthread_barrier_wait);

	if (!harness_rt_wanted())
		TEST_DONE(); /* nothing else to check */
	r = go_realtime();
	if (r != 0) {
		RT_REFUSED(r);
		TEST_DONE();
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART: the wait sees EINTR */

	for (int round = 0; round < 3; round++) {
		for (unsigned t = 0; t < sizeof types / sizeof *types; t++)
			mutex_case(MK_PRIVATE, types[t]);
		mutex_case(MK_SHARED, PTHREAD_MUTEX_NORMAL);
		mutex_case(MK_ROBUST, PTHREAD_MUTEX_NORMAL);
		mutex_case(MK_PI, PTHREAD_MUTEX_NORMAL);
		mutex_case(MK_PP, PTHREAD_MUTEX_NORMAL);
		handoff_other_registrant();
		handoff_rt_starving();
		sem_case(0);
		sem_case(1);
		rwlock_writers(PTHREAD_RWLOCK_PREFER_READER_NP);
		rwlock_writers(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		rwlock_mixed();
		barrier_case();
	}
	TEST_DONE();
}
