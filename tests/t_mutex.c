/* Mutexes served by weft: static initializers from glibc's <pthread.h>,
   zero-filled memory, every type under contention, trylock and timed
   locks with both clocks, every error, attributes read back, the
   double-underscore aliases, and the worst wait under contention
   (printed; no timing thresholds). */
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "harness.h"

/* WEFT_TEST_GLIBC=1: run against glibc (preload build, no LD_PRELOAD),
   to see which checks glibc 2.36 fails. */
static int glibc_mode;
#define THREAD_CHECK()                                                         \
	do {                                                                   \
		if (!glibc_mode)                                               \
			CHECK_WEFT_THREAD();                                   \
	} while (0)

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* ------------------------------------------------ static initializers */

static pthread_mutex_t s_norm = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_err = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adapt = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

static void test_initializers(void)
{
	pthread_mutex_t *zero = calloc(1, sizeof *zero);

	CHECK_ERR(pthread_mutex_lock(&s_norm), 0);
	CHECK_EQ(s_norm.__data.__owner, gettid_());
	CHECK_ERR(pthread_mutex_trylock(&s_norm), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&s_norm), 0);
	CHECK_EQ(s_norm.__data.__owner, 0);

	CHECK_ERR(pthread_mutex_lock(&s_rec), 0);
	CHECK_ERR(pthread_mutex_lock(&s_rec), 0);
	CHECK_ERR(pthread_mutex_trylock(&s_rec), 0);
	CHECK_EQ(s_rec.__data.__count, 3);
	CHECK_EQ(s_rec.__data.__owner, gettid_());
	CHECK_ERR(pthread_mutex_unlock(&s_rec), 0);
	CHECK_ERR(pthread_mutex_unlock(&s_rec), 0);
	CHECK_ERR(pthread_mutex_unlock(&s_rec), 0);
	CHECK_ERR(pthread_mutex_unlock(&s_rec), EPERM);

	CHECK_ERR(pthread_mutex_lock(&s_err), 0);
	CHECK_ERR(pthread_mutex_lock(&s_err), EDEADLK);
	CHECK_ERR(pthread_mutex_trylock(&s_err), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&s_err), 0);
	CHECK_ERR(pthread_mutex_unlock(&s_err), EPERM);

	CHECK_ERR(pthread_mutex_lock(&s_adapt), 0);
	CHECK_EQ(s_adapt.__data.__owner, gettid_());
	CHECK_ERR(pthread_mutex_unlock(&s_adapt), 0);

	CHECK_ERR(pthread_mutex_lock(zero), 0);
	CHECK_ERR(pthread_mutex_trylock(zero), EBUSY);
	CHECK_ERR(pthread_mutex_destroy(zero), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(zero), 0);
	CHECK_ERR(pthread_mutex_destroy(zero), 0);
	free(zero);
}

/* ------------------------------------------------ counters, every type */

struct counter {
	pthread_mutex_t m;
	long value;	/* protected */
	long inside;	/* threads inside the critical section */
	long overlaps;
	long per_thread;
	long deadline_ns;
};

/* Each thread counts its own increments, so that a time-bounded run can
   still check the exact total. */
struct count_arg {
	struct counter *c;
	long done;
};

static void *count_thread2(void *p)
{
	struct count_arg *a = p;
	struct counter *c = a->c;

	THREAD_CHECK();
	for (long i = 0; i < c->per_thread; i++) {
		if ((i & 1023) == 0 && mono_ns() > c->deadline_ns)
			break;
		CHECK_ERR(pthread_mutex_lock(&c->m), 0);
		if (++c->inside != 1)
			c->overlaps++;
		c->value++;
		c->inside--;
		a->done++;
		CHECK_ERR(pthread_mutex_unlock(&c->m), 0);
	}
	return NULL;
}

static void test_counters(int type, int pshared, const char *name)
{
	enum { N = 4 };
	struct counter c = {.per_thread = 200000,
			    .deadline_ns = mono_ns() + 1500000000L};
	struct count_arg args[N];
	pthread_mutexattr_t a;
	pthread_t t[N];
	long total = 0;

	pthread_mutexattr_init(&a);
	CHECK_ERR(pthread_mutexattr_settype(&a, type), 0);
	CHECK_ERR(pthread_mutexattr_setpshared(&a, pshared), 0);
	CHECK_ERR(pthread_mutex_init(&c.m, &a), 0);
	pthread_mutexattr_destroy(&a);
	for (int i = 0; i < N; i++) {
		args[i] = (struct count_arg){.c = &c};
		CHECK_ERR(pthread_create(&t[i], NULL, count_thread2, &args[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		total += args[i].done;
	}
	CHECK(c.value == total && c.overlaps == 0,
	      "%s: counter %ld, increments %ld, overlaps %ld", name, c.value,
	      total, c.overlaps);
	CHECK_ERR(pthread_mutex_destroy(&c.m), 0);
	printf("counter %-22s %ld increments by %d threads\n", name, total, N);
}

/* ------------------------------------------------ trylock, timed locks */

struct holder {
	pthread_mutex_t *m;
	int held, release;
	pthread_mutex_t gate;
	pthread_cond_t cv;
};

static void *hold_thread(void *p)
{
	struct holder *h = p;

	THREAD_CHECK();
	CHECK_ERR(pthread_mutex_lock(h->m), 0);
	pthread_mutex_lock(&h->gate);
	h->held = 1;
	pthread_cond_broadcast(&h->cv);
	while (!h->release)
		pthread_cond_wait(&h->cv, &h->gate);
	pthread_mutex_unlock(&h->gate);
	CHECK_ERR(pthread_mutex_unlock(h->m), 0);
	return NULL;
}

static pthread_t hold_start(struct holder *h, pthread_mutex_t *m)
{
	pthread_t t;

	h->m = m;
	h->held = h->release = 0;
	pthread_mutex_init(&h->gate, NULL);
	pthread_cond_init(&h->cv, NULL);
	pthread_create(&t, NULL, hold_thread, h);
	pthread_mutex_lock(&h->gate);
	while (!h->held)
		pthread_cond_wait(&h->cv, &h->gate);
	pthread_mutex_unlock(&h->gate);
	return t;
}

static void hold_stop(struct holder *h, pthread_t t)
{
	pthread_mutex_lock(&h->gate);
	h->release = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->gate);
	pthread_join(t, NULL);
}

static void test_timeouts(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	struct holder h;
	pthread_t t = hold_start(&h, &m);
	struct timespec ts, bad;
	long t0;

	CHECK_ERR(pthread_mutex_trylock(&m), EBUSY);
	t0 = mono_ns();
	ts = deadline_in(CLOCK_REALTIME, 50000000);
	CHECK_ERR(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
	CHECK(mono_ns() - t0 >= 49000000, "timedlock returned after %ld ns",
	      mono_ns() - t0);
	t0 = mono_ns();
	ts = deadline_in(CLOCK_MONOTONIC, 50000000);
	CHECK_ERR(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	CHECK(mono_ns() - t0 >= 49000000, "clocklock returned after %ld ns",
	      mono_ns() - t0);
	ts = deadline_in(CLOCK_REALTIME, 20000000);
	CHECK_ERR(pthread_mutex_clocklock(&m, CLOCK_REALTIME, &ts), ETIMEDOUT);
	/* A deadline in the past, negative seconds. */
	ts = (struct timespec){.tv_sec = -1, .tv_nsec = 0};
	CHECK_ERR(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
	/* Invalid nanoseconds and clocks, on a mutex that would block. */
	bad = (struct timespec){.tv_sec = time(NULL) + 10, .tv_nsec = 1000000000};
	CHECK_ERR(pthread_mutex_timedlock(&m, &bad), EINVAL);
	bad.tv_nsec = -1;
	CHECK_ERR(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
	ts = deadline_in(CLOCK_MONOTONIC, 1000000);
	CHECK_ERR(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts),
		  EINVAL);
	CHECK_ERR(pthread_mutex_clocklock(&m, 12345, &ts), EINVAL);
	hold_stop(&h, t);
	/* Free now: the timed lock succeeds at once. */
	ts = deadline_in(CLOCK_MONOTONIC, 1000000000);
	CHECK_ERR(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);

	/* Owner-checked types, from another thread. */
	t = hold_start(&h, &e);
	CHECK_ERR(pthread_mutex_unlock(&e), EPERM);
	CHECK_ERR(pthread_mutex_trylock(&e), EBUSY);
	hold_stop(&h, t);
	t = hold_start(&h, &r);
	CHECK_ERR(pthread_mutex_unlock(&r), EPERM);
	CHECK_ERR(pthread_mutex_trylock(&r), EBUSY);
	ts = deadline_in(CLOCK_REALTIME, 20000000);
	CHECK_ERR(pthread_mutex_timedlock(&r, &ts), ETIMEDOUT);
	hold_stop(&h, t);
}

/* --------------------------------------------------------------- errors */

static void test_errors(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int v;

	pthread_mutexattr_init(&a);
	/* The default ceiling is a SCHED_FIFO priority (PTS
	   pthread_mutexattr_getprioceiling/1-1), not the stored 0. */
	CHECK_ERR(pthread_mutexattr_getprioceiling(&a, &v), 0);
	CHECK_EQ(v, sched_get_priority_min(SCHED_FIFO));
	CHECK_ERR(pthread_mutexattr_settype(&a, 99), EINVAL);
	CHECK_ERR(pthread_mutexattr_settype(&a, -1), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, 99), EINVAL);
	CHECK_ERR(pthread_mutexattr_setpshared(&a, 99), EINVAL);
	CHECK_ERR(pthread_mutexattr_setrobust(&a, 99), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, 100000), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, -5), EINVAL);

	/* Read back. */
	CHECK_ERR(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	CHECK_ERR(pthread_mutexattr_gettype(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_ERR(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP), 0);
	CHECK_ERR(pthread_mutexattr_gettype(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_MUTEX_ADAPTIVE_NP);
	CHECK_ERR(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	CHECK_ERR(pthread_mutexattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, 42), 0);
	CHECK_ERR(pthread_mutexattr_getprioceiling(&a, &v), 0);
	CHECK_EQ(v, 42);
	CHECK_ERR(pthread_mutexattr_gettype(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_MUTEX_ADAPTIVE_NP);

	/* PI, PP and robust: stored, read back and made with glibc's kind
	   bits (t_pi, t_pp and t_robust test them); robust + PP refused as
	   by glibc.  PP's ceiling lands in the lock word's bits 19-30,
	   glibc's place, so the unlocked word is not 0. */
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	CHECK_ERR(pthread_mutexattr_getprotocol(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PRIO_INHERIT);
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	CHECK_EQ(m.__data.__kind, 32 | 128 | PTHREAD_MUTEX_ADAPTIVE_NP);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT), 0);
	CHECK_ERR(pthread_mutexattr_getprotocol(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PRIO_PROTECT);
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	CHECK_ERR(pthread_mutex_getprioceiling(&m, &v), 0);
	CHECK_EQ(v, 42);
	CHECK_EQ(m.__data.__lock, 42 << 19);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	/* Robust + protect: refused, as glibc. */
	CHECK_ERR(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	CHECK_ERR(pthread_mutex_init(&m, &a), ENOTSUP);
	CHECK_ERR(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED), 0);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_NONE), 0);
	CHECK_ERR(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	CHECK_ERR(pthread_mutexattr_getrobust(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_MUTEX_ROBUST);
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	CHECK_EQ(m.__data.__kind, 16 | 128 | PTHREAD_MUTEX_ADAPTIVE_NP);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT), 0);
	CHECK_ERR(pthread_mutex_init(&m, &a), ENOTSUP);
	CHECK_ERR(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_NONE), 0);
	CHECK_ERR(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED), 0);
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	pthread_mutexattr_destroy(&a);

	/* A mutex whose kind says PI, made by hand as glibc's
	   PTHREAD_MUTEX_INITIALIZER plus the kind bits (no init call):
	   served, trylock EBUSY while held. */
	memset(&m, 0, sizeof m);
	m.__data.__kind = 32;
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_EQ(m.__data.__lock, gettid_());
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(m.__data.__lock, 0);
	CHECK_ERR(pthread_mutex_trylock(&m), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), EPERM);
	memset(&m, 0, sizeof m);
	CHECK_ERR(pthread_mutex_consistent(&m), EINVAL);
	CHECK_ERR(pthread_mutex_getprioceiling(&m, &v), EINVAL);
	CHECK_ERR(pthread_mutex_setprioceiling(&m, 10, &v), EINVAL);

	/* EAGAIN at the recursion maximum, as POSIX and glibc say (the
	   count is glibc's public __count field; reaching 2^32 by locking
	   would take minutes). */
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	CHECK_ERR(pthread_mutex_lock(&r), 0);
	r.__data.__count = UINT_MAX;
	CHECK_ERR(pthread_mutex_lock(&r), EAGAIN);
	CHECK_ERR(pthread_mutex_trylock(&r), EAGAIN);
	r.__data.__count = 1;
	CHECK_ERR(pthread_mutex_unlock(&r), 0);

	/* EBUSY destroying a locked mutex, of each type. */
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	CHECK_ERR(pthread_mutex_lock(&e), 0);
	CHECK_ERR(pthread_mutex_destroy(&e), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&e), 0);
	CHECK_ERR(pthread_mutex_lock(&r), 0);
	CHECK_ERR(pthread_mutex_destroy(&r), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&r), 0);
	CHECK_ERR(pthread_mutex_destroy(&r), 0);
}

/* The double-underscore names are the same code. */
static void test_aliases(void)
{
	static const char *pairs[][2] = {
		{"__pthread_mutex_lock", "pthread_mutex_lock"},
		{"__pthread_mutex_unlock", "pthread_mutex_unlock"},
		{"__pthread_mutex_trylock", "pthread_mutex_trylock"},
		{"__pthread_mutex_init", "pthread_mutex_init"},
		{"__pthread_mutex_destroy", "pthread_mutex_destroy"},
		{"__pthread_mutexattr_init", "pthread_mutexattr_init"},
		{"__pthread_mutexattr_destroy", "pthread_mutexattr_destroy"},
		{"__pthread_mutexattr_settype", "pthread_mutexattr_settype"},
		{"pthread_mutexattr_setkind_np", "pthread_mutexattr_settype"},
		{"pthread_mutexattr_getkind_np", "pthread_mutexattr_gettype"},
		{"pthread_mutex_consistent_np", "pthread_mutex_consistent"},
		{"pthread_mutexattr_setrobust_np", "pthread_mutexattr_setrobust"},
		{"pthread_mutexattr_getrobust_np", "pthread_mutexattr_getrobust"},
	};
	/* harness_served_def: under ASan, pthread_mutex_lock & co. bind
	   to libasan's interceptors, and their aliases do not. */
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		void *a = harness_served_def(pairs[i][0]);
		void *b = harness_served_def(pairs[i][1]);
		CHECK(a && a == b, "%s at %p, %s at %p", pairs[i][0], a,
		      pairs[i][1], b);
	}
}

/* ------------------------------------------------ worst wait (fairness) */

struct ring {
	pthread_mutex_t m;
	long deadline_ns;
	long worst_ns;	/* max over all lock calls */
	long ops;
};

static void *wait_thread(void *p)
{
	struct ring *r = p;
	long worst = 0, ops = 0;

	THREAD_CHECK();
	while (mono_ns() < r->deadline_ns) {
		long t0 = mono_ns();
		pthread_mutex_lock(&r->m);
		long w = mono_ns() - t0;
		for (int i = 0; i < 50; i++) /* a short critical section */
			__asm__ volatile("" ::: "memory");
		pthread_mutex_unlock(&r->m);
		if (w > worst)
			worst = w;
		ops++;
	}
	pthread_mutex_lock(&r->m);
	if (worst > r->worst_ns)
		r->worst_ns = worst;
	r->ops += ops;
	pthread_mutex_unlock(&r->m);
	return NULL;
}

static void test_worst_wait(int nthreads)
{
	struct ring r = {.m = PTHREAD_MUTEX_INITIALIZER,
			 .deadline_ns = mono_ns() + 1000000000L};
	pthread_t t[8];

	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, wait_thread, &r);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	CHECK(r.ops > 0, "no lock operations");
	printf("worst wait, %d threads hammering one mutex for 1 s: %.3f ms "
	       "(%ld lock/unlock pairs)\n",
	       nthreads, r.worst_ns / 1e6, r.ops);
}

/* Timed locks racing the starvation hand-off: waiters that registered
   for a hand-off time out while unlockers try to grant it to them.  An
   error-checking mutex tells whether a result was true: after 0 the
   caller owns it, after ETIMEDOUT it does not; at the end it is free. */
struct timed_race {
	pthread_mutex_t m;
	long deadline_ns;
	long ok, timeouts, lies;
};

static void *timed_racer(void *p)
{
	struct timed_race *t = p;
	long ok = 0, to = 0, lies = 0;

	THREAD_CHECK();
	while (mono_ns() < t->deadline_ns) {
		struct timespec ts = deadline_in(CLOCK_MONOTONIC, 3000000);
		int r = pthread_mutex_clocklock(&t->m, CLOCK_MONOTONIC, &ts);
		if (r == 0) {
			for (int i = 0; i < 200; i++)
				__asm__ volatile("" ::: "memory");
			lies += pthread_mutex_unlock(&t->m) != 0;
			ok++;
		} else {
			lies += r != ETIMEDOUT;
			lies += pthread_mutex_unlock(&t->m) != EPERM;
			to++;
		}
	}
	__atomic_fetch_add(&t->ok, ok, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->timeouts, to, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->lies, lies, __ATOMIC_RELAXED);
	return NULL;
}

static void test_handoff_timeouts(void)
{
	enum { N = 4 };
	struct timed_race t = {.m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP,
			       .deadline_ns = mono_ns() + 1000000000L};
	pthread_t th[N];

	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, timed_racer, &t);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(t.lies, 0);
	CHECK_ERR(pthread_mutex_trylock(&t.m), 0);
	CHECK_ERR(pthread_mutex_unlock(&t.m), 0);
	printf("timed locks racing hand-offs: %ld acquired, %ld timed out\n",
	       t.ok, t.timeouts);
}

int main(void)
{
	glibc_mode = getenv("WEFT_TEST_GLIBC") != NULL;
	if (glibc_mode)
		goto tests;
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_unlock);
	REQUIRE_SERVED(pthread_mutex_trylock);
	REQUIRE_SERVED(pthread_mutex_timedlock);
	REQUIRE_SERVED(pthread_mutex_clocklock);
	REQUIRE_SERVED(pthread_mutex_init);
	REQUIRE_SERVED(pthread_mutex_destroy);
	REQUIRE_SERVED(pthread_mutex_consistent);
	REQUIRE_SERVED(pthread_mutex_getprioceiling);
	REQUIRE_SERVED(pthread_mutex_setprioceiling);
	REQUIRE_SERVED(pthread_mutexattr_init);
	REQUIRE_SERVED(pthread_mutexattr_settype);
	REQUIRE_SERVED(pthread_mutexattr_gettype);
	REQUIRE_SERVED(pthread_mutexattr_setprotocol);
	REQUIRE_SERVED(pthread_mutexattr_getprotocol);
	REQUIRE_SERVED(pthread_mutexattr_setprioceiling);
	REQUIRE_SERVED(pthread_mutexattr_getprioceiling);
	REQUIRE_SERVED(pthread_mutexattr_setpshared);
	REQUIRE_SERVED(pthread_mutexattr_getpshared);
	REQUIRE_SERVED(pthread_mutexattr_setrobust);
	REQUIRE_SERVED(pthread_mutexattr_getrobust);
	REQUIRE_SERVED(__pthread_mutex_lock);
tests:

	test_initializers();
	test_aliases();
	test_errors();
	test_timeouts();
	test_counters(PTHREAD_MUTEX_NORMAL, 0, "normal");
	test_counters(PTHREAD_MUTEX_RECURSIVE, 0, "recursive");
	test_counters(PTHREAD_MUTEX_ERRORCHECK, 0, "errorcheck");
	test_counters(PTHREAD_MUTEX_ADAPTIVE_NP, 0, "adaptive");
	test_counters(PTHREAD_MUTEX_NORMAL, 1, "normal, process-shared");
	test_handoff_timeouts();
	test_worst_wait(2);
	test_worst_wait(4);
	TEST_DONE();
}
