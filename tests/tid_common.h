/* Helpers shared by the robust and PI mutex tests (t_robust, t_pi). */
#ifndef WEFT_TEST_TID_COMMON_H
#define WEFT_TEST_TID_COMMON_H

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

static inline int tid(void)
{
	return (int)syscall(SYS_gettid);
}

/* Runs op(m) in a new thread and returns what it said. */
struct other {
	pthread_mutex_t *m;
	int (*op)(pthread_mutex_t *);
	int res;
};

static inline void *other_main(void *p)
{
	struct other *o = p;

	CHECK_WEFT_THREAD();
	o->res = o->op(o->m);
	return NULL;
}

static inline int in_other_thread(pthread_mutex_t *m,
				  int (*op)(pthread_mutex_t *))
{
	struct other o = {.m = m, .op = op};
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, other_main, &o) == 0, "create");
	pthread_join(t, NULL);
	return o.res;
}

/* Deadlines for in_other_thread: 20 ms ahead on each clock, an invalid
   one, one in the past. */
static inline int timed_rt_short(pthread_mutex_t *m)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 20000000);
	return pthread_mutex_timedlock(m, &ts);
}

static inline int clock_mono_short(pthread_mutex_t *m)
{
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000);
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
}

static inline int timed_bad_nsec(pthread_mutex_t *m)
{
	struct timespec ts = {0, 1000000000};
	return pthread_mutex_timedlock(m, &ts);
}

static inline int timed_past(pthread_mutex_t *m)
{
	struct timespec ts = {-1, 0};
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
}

/* The owner rules of the checked types, for robust and PI mutexes
   alike (glibc): an error-checking mutex refuses a relock, by trylock
   too, with EDEADLK; a recursive one counts, and only its owner may
   unlock it; an unlock of a free mutex is EPERM. */
static inline void check_relock_rules(pthread_mutex_t *errorcheck,
				      pthread_mutex_t *recursive)
{
	pthread_mutex_t *m = errorcheck;

	CHECK_ERR(pthread_mutex_lock(m), 0);
	CHECK_ERR(pthread_mutex_lock(m), EDEADLK);
	CHECK_ERR(pthread_mutex_trylock(m), EDEADLK);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	CHECK_ERR(pthread_mutex_unlock(m), EPERM);
	m = recursive;
	CHECK_ERR(pthread_mutex_lock(m), 0);
	CHECK_ERR(pthread_mutex_lock(m), 0);
	CHECK_ERR(pthread_mutex_trylock(m), 0);
	CHECK_EQ(m->__data.__count, 3);
	CHECK_ERR(in_other_thread(m, pthread_mutex_unlock), EPERM);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	CHECK_EQ(m->__data.__lock, tid());
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	CHECK_EQ(m->__data.__lock, 0);
	CHECK_ERR(pthread_mutex_unlock(m), EPERM);
}

/* wait_flag: polls until another thread sets *f.  go: sets a flag and
   wakes the thread asleep on it (hold_until_go). */
static inline void wait_flag(int *f)
{
	while (!__atomic_load_n(f, __ATOMIC_ACQUIRE))
		sched_yield();
}

static inline void go(int *flag)
{
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, flag, FUTEX_WAKE_PRIVATE, 1);
}

/* hold_until_go: takes m, says `held`, waits for *go, returns holding
   it (the thread dies holding it).  lock_it: says `held` (meaning
   "about to lock"), locks, records the result, makes the mutex
   consistent if needed and unlocks. */
struct holder {
	pthread_mutex_t *m;
	int held, tid, res;
	int *go;
};

static inline void *hold_until_go(void *p)
{
	struct holder *h = p;

	CHECK_WEFT_THREAD();
	h->tid = tid();
	CHECK_ERR(pthread_mutex_lock(h->m), 0);
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(h->go, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, h->go, FUTEX_WAIT_PRIVATE, 0, NULL);
	return NULL; /* dies holding it */
}

static inline void *lock_it(void *p)
{
	struct holder *h = p;

	CHECK_WEFT_THREAD();
	h->tid = tid();
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	h->res = pthread_mutex_lock(h->m);
	if (h->res == EOWNERDEAD)
		pthread_mutex_consistent(h->m);
	if (h->res == 0 || h->res == EOWNERDEAD)
		pthread_mutex_unlock(h->m);
	return NULL;
}

/* A condvar wait with m (recursive), a plain signal round; then for a
   robust m, the signaller takes the mutex, signals and dies holding
   it: the wait must return EOWNERDEAD with the mutex held. */
struct cw {
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	int ready, tid, res, pred;
};

static inline void *cond_waiter(void *p)
{
	struct cw *w = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(pthread_mutex_lock(w->m), 0);
	w->tid = tid();
	__atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
	do
		w->res = pthread_cond_wait(w->cv, w->m);
	while (w->res == 0 && !w->pred);
	if (w->res == EOWNERDEAD)
		pthread_mutex_consistent(w->m);
	pthread_mutex_unlock(w->m);
	return NULL;
}

static inline void *signal_and_die(void *p)
{
	struct cw *w = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(pthread_mutex_lock(w->m), 0);
	w->pred = 1;
	pthread_cond_signal(w->cv);
	return NULL;
}

static inline void cond_rounds(pthread_mutex_t *m, int pshared, int robust,
			       const char *what)
{
	pthread_cond_t cv;
	pthread_condattr_t ca;
	struct cw w = {.m = m, .cv = &cv};
	pthread_t tw, ts;

	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, pshared);
	pthread_cond_init(&cv, &ca);
	pthread_create(&tw, NULL, cond_waiter, &w);
	wait_flag(&w.ready);
	CHECK_ERR(pthread_mutex_lock(m), 0);
	w.pred = 1;
	CHECK_ERR(pthread_cond_signal(&cv), 0);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	pthread_join(tw, NULL);
	CHECK_ERR(w.res, 0);
	if (robust) {
		w.ready = w.pred = 0;
		pthread_create(&tw, NULL, cond_waiter, &w);
		wait_flag(&w.ready);
		CHECK(task_asleep(w.tid, 5000000000L), "cond waiter asleep");
		pthread_create(&ts, NULL, signal_and_die, &w);
		pthread_join(ts, NULL);
		pthread_join(tw, NULL);
		CHECK(w.res == EOWNERDEAD, "cond_wait, robust %s (%s): "
		      "expected EOWNERDEAD, got %d", what,
		      pshared ? "shared" : "private", w.res);
		CHECK_ERR(pthread_mutex_lock(m), 0);
		CHECK_ERR(pthread_mutex_unlock(m), 0);
	}
	pthread_cond_destroy(&cv);
}

/* Polls (at most 5 s) until `f` is set: 1, or 0 at the deadline. */
static inline int poll_flag(int *f)
{
	long end = mono_ns() + 5000000000L;

	while (!__atomic_load_n(f, __ATOMIC_ACQUIRE))
		if (mono_ns() > end)
			return 0;
	return 1;
}

/* Field `field` of /proc/self/task/T/stat (18: the effective priority,
   -1 - rtprio for a real-time thread; 40: rt_priority), INT_MIN if
   unreadable. */
static inline int stat_field(int t, int field)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;
	char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", t);
	if (!(f = fopen(path, "r")))
		return INT_MIN;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return INT_MIN;
	/* p + 2 is field 3 */
	for (int i = 3; i < field && p; i++)
		p = strchr(p + 2, ' ') ? strchr(p + 2, ' ') - 1 : NULL;
	return p ? atoi(p + 2) : INT_MIN;
}

/* Pins the caller to `cpu` and makes it SCHED_FIFO at `prio`. */
static inline int rt_self(int prio, int cpu)
{
	struct sched_param sp = {.sched_priority = prio};
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set))
		return -1;
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

/* A lost wake-up or a missing EOWNERDEAD would block for ever: the test
   reports it within its time bound instead. */
static inline void watchdog(int sig)
{
	static const char msg[] = "FAIL: watchdog: expected the test to end "
				  "within 25 s, got a hang\n";
	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(2);
	_exit(1);
}

static inline void watchdog_arm(void)
{
	signal(SIGALRM, watchdog);
	alarm(25);
}

#endif
