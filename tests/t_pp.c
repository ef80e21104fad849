/* Priority-protect (PTHREAD_PRIO_PROTECT) mutexes: the holder runs at
   the ceiling (the kernel's view, sched_getparam on the tid) while
   pthread_getschedparam reports its base priority, as glibc; nested
   ceilings; EINVAL above the ceiling and for a SCHED_OTHER caller;
   get/setprioceiling; setschedparam/setschedprio while holding; a
   waiter (asleep at its own priority, t_prio_order checks the order);
   a condvar wait; a process-shared PP mutex with a plain glibc
   process; bad input.  Needs SCHED_FIFO (root): EPERM fails the test
   unless WEFT_TEST_NO_RT=1, which skips the real-time part. */
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
			    PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* The kernel's priority of thread `tid`. */
static int kprio(pid_t tid)
{
	struct sched_param p;

	if (sched_getparam(tid, &p) != 0)
		return -1;
	return p.sched_priority;
}

/* What pthread_getschedparam reports for the caller. */
static int pprio(void)
{
	struct sched_param p;
	int pol;

	if (pthread_getschedparam(pthread_self(), &pol, &p) != 0)
		return -1;
	return p.sched_priority;
}

static int set_fifo(int prio)
{
	struct sched_param p = {.sched_priority = prio};

	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

static void pp_init(pthread_mutex_t *m, int type, int shared, int ceiling)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutexattr_setpshared(&a, shared ? PTHREAD_PROCESS_SHARED
						: PTHREAD_PROCESS_PRIVATE);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, ceiling), 0);
	CHECK_ERR(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

/* Runs fn in a weft thread (which checks it is one). */
static void *thread_main(void *arg)
{
	void (*fn)(void) = (void (*)(void))arg;

	CHECK_WEFT_THREAD();
	fn();
	return NULL;
}

static void in_thread(void (*fn)(void))
{
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, thread_main, (void *)fn) == 0,
		"pthread_create");
	pthread_join(t, NULL);
}

/* --------------------------------------------------- raise and restore */

/* Every type, private and shared, every way of locking. */
static void raise_restore(void)
{
	pid_t me = gettid_();

	CHECK_ERR(set_fifo(5), 0);
	for (int shared = 0; shared < 2; shared++)
		for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
			pthread_mutex_t m;
			struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000L);
			struct timespec tm = deadline_in(CLOCK_MONOTONIC, 1000000000L);

			pp_init(&m, types[i], shared, 10);
			for (int how = 0; how < 4; how++) {
				int r = how == 0   ? pthread_mutex_lock(&m)
					: how == 1 ? pthread_mutex_trylock(&m)
					: how == 2 ? pthread_mutex_timedlock(&m, &ts)
						   : pthread_mutex_clocklock(
							     &m, CLOCK_MONOTONIC, &tm);
				CHECK(r == 0, "type %d shared %d how %d: %s",
				      types[i], shared, how, strerror(r));
				CHECK(kprio(me) == 10,
				      "held: expected kernel priority 10, got %d "
				      "(type %d shared %d how %d)",
				      kprio(me), types[i], shared, how);
				CHECK_EQ(pprio(), 5); /* the base, as glibc */
				CHECK_EQ(m.__data.__lock & 0x7ffff, 1);
				CHECK_EQ((unsigned)m.__data.__lock >> 19, 10);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK(kprio(me) == 5,
				      "released: expected 5, got %d", kprio(me));
				CHECK_EQ(m.__data.__lock, 10 << 19);
			}
			if (types[i] == PTHREAD_MUTEX_RECURSIVE) {
				CHECK_ERR(pthread_mutex_lock(&m), 0);
				CHECK_ERR(pthread_mutex_lock(&m), 0);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK_EQ(kprio(me), 10);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK_EQ(kprio(me), 5);
			}
			if (types[i] == PTHREAD_MUTEX_ERRORCHECK) {
				CHECK_ERR(pthread_mutex_unlock(&m), EPERM);
				CHECK_ERR(pthread_mutex_lock(&m), 0);
				CHECK_ERR(pthread_mutex_lock(&m), EDEADLK);
				CHECK_ERR(pthread_mutex_trylock(&m), EBUSY);
				CHECK_ERR(pthread_mutex_unlock(&m), 0);
				CHECK_EQ(kprio(me), 5);
			}
			CHECK_ERR(pthread_mutex_destroy(&m), 0);
		}
}

/* lock 10, lock 20, unlock 20 -> 10, unlock 10 -> base; out of order;
   two holds of one ceiling; a thread already above a ceiling. */
static void nested(void)
{
	pthread_mutex_t a, b, b2, c;
	pid_t me = gettid_();

	CHECK_ERR(set_fifo(5), 0);
	pp_init(&a, PTHREAD_MUTEX_NORMAL, 0, 10);
	pp_init(&b, PTHREAD_MUTEX_NORMAL, 0, 20);
	pp_init(&b2, PTHREAD_MUTEX_NORMAL, 1, 20);
	pp_init(&c, PTHREAD_MUTEX_NORMAL, 0, 8);
	CHECK_ERR(pthread_mutex_lock(&a), 0);
	CHECK_EQ(kprio(me), 10);
	CHECK_ERR(pthread_mutex_lock(&b), 0);
	CHECK_EQ(kprio(me), 20);
	CHECK_ERR(pthread_mutex_unlock(&b), 0);
	CHECK_EQ(kprio(me), 10);
	CHECK_ERR(pthread_mutex_unlock(&a), 0);
	CHECK_EQ(kprio(me), 5);

	CHECK_ERR(pthread_mutex_lock(&a), 0);
	CHECK_ERR(pthread_mutex_lock(&b), 0);
	CHECK_ERR(pthread_mutex_lock(&b2), 0);
	/* A lower ceiling under a higher one: the base (5) decides, not
	   the priority in force (20). */
	CHECK_ERR(pthread_mutex_lock(&c), 0);
	CHECK_EQ(kprio(me), 20);
	CHECK_ERR(pthread_mutex_unlock(&c), 0);
	CHECK_ERR(pthread_mutex_unlock(&a), 0);
	CHECK_EQ(kprio(me), 20);
	CHECK_ERR(pthread_mutex_unlock(&b), 0);
	CHECK_EQ(kprio(me), 20); /* b2 holds 20 still */
	CHECK_ERR(pthread_mutex_unlock(&b2), 0);
	CHECK_EQ(kprio(me), 5);

	/* Above a ceiling's level already: nothing changes. */
	CHECK_ERR(set_fifo(10), 0);
	CHECK_ERR(pthread_mutex_lock(&a), 0);
	CHECK_EQ(kprio(me), 10);
	CHECK_ERR(pthread_mutex_unlock(&a), 0);
	CHECK_EQ(kprio(me), 10);
	pthread_mutex_destroy(&a);
	pthread_mutex_destroy(&b);
	pthread_mutex_destroy(&b2);
	pthread_mutex_destroy(&c);
}

/* The same refusal when the mutex is held: a waiter sleeps without
   counting the ceiling (mutex_pp.c, take_word), so the refusal the count
   would give must come before the sleep, not after it.  The word is
   made "held" by hand (glibc's layout), so that no holder is needed.
   A lock that slept would time out after 1 s. */
static void held_refused(pthread_mutex_t *m, int ceiling)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000L);
	long t0 = mono_ns();
	int r;

	m->__data.__lock = ceiling << 19 | 1;
	r = pthread_mutex_timedlock(m, &ts);
	CHECK(r == EINVAL && mono_ns() - t0 < 500000000L,
	      "timedlock of a held PP mutex the caller may not lock: expected "
	      "EINVAL at once, got %d after %ld ms", r, (mono_ns() - t0) / 1000000);
	if (r == EINVAL)
		CHECK_ERR(pthread_mutex_lock(m), EINVAL);
	CHECK_ERR(pthread_mutex_trylock(m), EBUSY);
	CHECK_EQ(m->__data.__lock, ceiling << 19 | 1);
	m->__data.__lock = ceiling << 19;
}

/* A caller whose priority is above the ceiling: EINVAL, no change. */
static void above_ceiling(void)
{
	pthread_mutex_t m;
	struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000L);
	pid_t me = gettid_();

	CHECK_ERR(set_fifo(30), 0);
	pp_init(&m, PTHREAD_MUTEX_NORMAL, 0, 10);
	CHECK_ERR(pthread_mutex_lock(&m), EINVAL);
	CHECK_ERR(pthread_mutex_trylock(&m), EINVAL);
	CHECK_ERR(pthread_mutex_timedlock(&m, &ts), EINVAL);
	CHECK_EQ(kprio(me), 30);
	CHECK_EQ(m.__data.__lock, 10 << 19);
	held_refused(&m, 10);
	CHECK_EQ(kprio(me), 30);
	/* Equal to the ceiling is allowed. */
	CHECK_ERR(set_fifo(10), 0);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	pthread_mutex_destroy(&m);
}

/* glibc asks the kernel for (SCHED_OTHER, ceiling), which refuses:
   EINVAL (glibc 2.36 then lets a second attempt through, having counted
   the first; weft refuses every time). */
static void sched_other(void)
{
	pthread_mutex_t m;

	pp_init(&m, PTHREAD_MUTEX_NORMAL, 0, 10);
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	CHECK_ERR(pthread_mutex_lock(&m), EINVAL);
	CHECK_ERR(pthread_mutex_lock(&m), EINVAL);
	CHECK_ERR(pthread_mutex_trylock(&m), EINVAL);
	CHECK_EQ(m.__data.__lock, 10 << 19);
	held_refused(&m, 10);
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	pthread_mutex_destroy(&m);
}

/* ------------------------------------------------------- the ceilings */

static void ceilings(void)
{
	pthread_mutex_t m, r, e, n = PTHREAD_MUTEX_INITIALIZER;
	pid_t me = gettid_();
	int old = -1, v = -1;

	CHECK_ERR(set_fifo(5), 0);
	pp_init(&m, PTHREAD_MUTEX_NORMAL, 0, 10);
	CHECK_ERR(pthread_mutex_getprioceiling(&m, &v), 0);
	CHECK_EQ(v, 10);
	CHECK_ERR(pthread_mutex_setprioceiling(&m, 15, &old), 0);
	CHECK_EQ(old, 10);
	CHECK_ERR(pthread_mutex_getprioceiling(&m, &v), 0);
	CHECK_EQ(v, 15);
	CHECK_EQ(m.__data.__lock, 15 << 19); /* left unlocked */
	CHECK_EQ(kprio(me), 5);		     /* no protocol for it */
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_EQ(kprio(me), 15);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(kprio(me), 5);
	CHECK_ERR(pthread_mutex_setprioceiling(&m, 0, &old), EINVAL);
	CHECK_ERR(pthread_mutex_setprioceiling(&m, 100, &old), EINVAL);
	CHECK_ERR(pthread_mutex_setprioceiling(&m, -1, &old), EINVAL);
	CHECK_ERR(pthread_mutex_getprioceiling(&n, &v), EINVAL);
	CHECK_ERR(pthread_mutex_setprioceiling(&n, 10, &old), EINVAL);

	/* A recursive mutex held by the caller stays held, and the
	   priority follows the new ceiling. */
	pp_init(&r, PTHREAD_MUTEX_RECURSIVE, 0, 10);
	CHECK_ERR(pthread_mutex_lock(&r), 0);
	CHECK_ERR(pthread_mutex_setprioceiling(&r, 25, &old), 0);
	CHECK_EQ(old, 10);
	CHECK_EQ(kprio(me), 25);
	CHECK_EQ(r.__data.__lock, (25 << 19) | 1);
	CHECK_ERR(pthread_mutex_unlock(&r), 0);
	CHECK_EQ(kprio(me), 5);
	/* Error-checking and held: EDEADLK. */
	pp_init(&e, PTHREAD_MUTEX_ERRORCHECK, 0, 10);
	CHECK_ERR(pthread_mutex_lock(&e), 0);
	CHECK_ERR(pthread_mutex_setprioceiling(&e, 12, &old), EDEADLK);
	CHECK_ERR(pthread_mutex_destroy(&e), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&e), 0);
	CHECK_ERR(pthread_mutex_destroy(&e), 0);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
	CHECK_ERR(pthread_mutex_destroy(&r), 0);
}

/* ------------------------------------------- setschedparam while holding */

static void sched_while_holding(void)
{
	pthread_mutex_t m;
	pid_t me = gettid_();
	struct sched_param p = {.sched_priority = 15};

	CHECK_ERR(set_fifo(5), 0);
	pp_init(&m, PTHREAD_MUTEX_NORMAL, 0, 20);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_setschedparam(pthread_self(), SCHED_FIFO, &p), 0);
	CHECK_EQ(kprio(me), 20); /* keeps the ceiling */
	CHECK_EQ(pprio(), 15);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(kprio(me), 15); /* the new base */
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_setschedprio(pthread_self(), 25), 0);
	CHECK_EQ(kprio(me), 25); /* above the ceiling: takes effect */
	CHECK_EQ(pprio(), 25);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(kprio(me), 25);
	CHECK_ERR(pthread_setschedprio(pthread_self(), 5), 0);
	pthread_mutex_destroy(&m);
}

/* Another thread changes the holder's priority. */
static pthread_barrier_t bar;
static pthread_mutex_t shared_m;
static pid_t holder_tid;
static int holder_after;

static void *holder(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK_ERR(set_fifo(5), 0);
	holder_tid = gettid_();
	CHECK_ERR(pthread_mutex_lock(&shared_m), 0);
	pthread_barrier_wait(&bar); /* held */
	pthread_barrier_wait(&bar); /* changed by main */
	CHECK_ERR(pthread_mutex_unlock(&shared_m), 0);
	holder_after = kprio(holder_tid);
	return NULL;
}

static void sched_other_thread(void)
{
	pthread_t t;
	struct sched_param p = {.sched_priority = 8};
	int pol = -1;

	pp_init(&shared_m, PTHREAD_MUTEX_NORMAL, 0, 20);
	pthread_barrier_init(&bar, NULL, 2);
	CHECK_ERR(pthread_create(&t, NULL, holder, NULL), 0);
	pthread_barrier_wait(&bar);
	CHECK_EQ(kprio(holder_tid), 20);
	CHECK_ERR(pthread_setschedparam(t, SCHED_FIFO, &p), 0);
	CHECK_EQ(kprio(holder_tid), 20);
	p.sched_priority = -1;
	CHECK_ERR(pthread_getschedparam(t, &pol, &p), 0);
	CHECK_EQ(pol, SCHED_FIFO);
	CHECK_EQ(p.sched_priority, 8);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	CHECK_EQ(holder_after, 8);
	pthread_barrier_destroy(&bar);
	pthread_mutex_destroy(&shared_m);
}

/* ---------------------------------------------------------- a waiter */

static pthread_mutex_t wm;
static pid_t waiter_tid;
static int waiter_held_prio, waiter_after_prio, waiter_timeout_prio;

static void *waiter(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK_ERR(set_fifo(3), 0);
	/* A deadline that passes: the ceiling taken for the wait is
	   given back (glibc 2.36 keeps it). */
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000L);
	CHECK_ERR(pthread_mutex_clocklock(&wm, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	waiter_timeout_prio = kprio(gettid_());
	__atomic_store_n(&waiter_tid, gettid_(), __ATOMIC_RELEASE);
	CHECK_ERR(pthread_mutex_lock(&wm), 0);
	waiter_held_prio = kprio(gettid_());
	CHECK_ERR(pthread_mutex_unlock(&wm), 0);
	waiter_after_prio = kprio(gettid_());
	return NULL;
}

static void contended(void)
{
	pthread_t t;
	pid_t w;
	long end;

	CHECK_ERR(set_fifo(5), 0);
	for (int shared = 0; shared < 2; shared++) {
		pp_init(&wm, PTHREAD_MUTEX_NORMAL, shared, 10);
		waiter_tid = 0;
		CHECK_ERR(pthread_mutex_lock(&wm), 0);
		CHECK_ERR(pthread_create(&t, NULL, waiter, NULL), 0);
		end = mono_ns() + 5000000000L;
		while (!(w = __atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE)) &&
		       mono_ns() < end)
			sched_yield();
		REQUIRE(w, "waiter never started");
		CHECK(task_asleep(w, 5000000000L), "waiter never slept");
		/* The waiter sleeps at its own priority, so that the
		   kernel queues it by that priority (glibc's waiter sleeps
		   at the ceiling: every waiter ranks equal).  It counts the
		   ceiling again before each try of the word. */
		CHECK_EQ(kprio(w), 3);
		CHECK_EQ(wm.__data.__lock, (10 << 19) | 2);
		CHECK_ERR(pthread_mutex_destroy(&wm), EBUSY);
		CHECK_ERR(pthread_mutex_unlock(&wm), 0);
		pthread_join(t, NULL);
		CHECK_EQ(waiter_timeout_prio, 3);
		CHECK_EQ(waiter_held_prio, 10);
		CHECK_EQ(waiter_after_prio, 3);
		CHECK_EQ(wm.__data.__lock, 10 << 19);
		CHECK_ERR(pthread_mutex_destroy(&wm), 0);
	}
}

/* ---------------------------------------------------------- a condvar */

static pthread_cond_t cv;
static int cv_flag, cv_ret, cv_after_prio, cv_back_prio, cv_timed_prio;

static void *cv_waiter(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK_ERR(set_fifo(5), 0);
	CHECK_ERR(pthread_mutex_lock(&wm), 0);
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000L);
	CHECK_ERR(pthread_cond_timedwait(&cv, &wm, &ts), ETIMEDOUT);
	cv_timed_prio = kprio(gettid_());
	__atomic_store_n(&waiter_tid, gettid_(), __ATOMIC_RELEASE);
	while (!cv_flag)
		cv_ret |= pthread_cond_wait(&cv, &wm);
	cv_back_prio = kprio(gettid_());
	CHECK_ERR(pthread_mutex_unlock(&wm), 0);
	cv_after_prio = kprio(gettid_());
	return NULL;
}

static void condvar(void)
{
	pthread_t t;
	pid_t w;
	long end;

	CHECK_ERR(set_fifo(3), 0);
	for (int shared = 0; shared < 2; shared++) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setpshared(&ca, shared);
		pthread_cond_init(&cv, &ca);
		pp_init(&wm, PTHREAD_MUTEX_RECURSIVE, shared, 12);
		waiter_tid = 0;
		cv_flag = cv_ret = 0;
		CHECK_ERR(pthread_create(&t, NULL, cv_waiter, NULL), 0);
		end = mono_ns() + 5000000000L;
		while (!(w = __atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE)) &&
		       mono_ns() < end)
			sched_yield();
		REQUIRE(w, "condvar waiter never started");
		CHECK(task_asleep(w, 5000000000L), "waiter never slept");
		/* Released for the wait: the priority dropped. */
		CHECK_EQ(kprio(w), 5);
		CHECK_ERR(pthread_mutex_lock(&wm), 0);
		cv_flag = 1;
		pthread_cond_signal(&cv);
		CHECK_ERR(pthread_mutex_unlock(&wm), 0);
		pthread_join(t, NULL);
		CHECK_EQ(cv_ret, 0);
		CHECK_EQ(cv_timed_prio, 12); /* back with the mutex */
		CHECK_EQ(cv_back_prio, 12);
		CHECK_EQ(cv_after_prio, 5);
		CHECK_ERR(pthread_mutex_destroy(&wm), 0);
		pthread_cond_destroy(&cv);
	}
}

/* ------------------------------------- process-shared, with plain glibc */

struct shm {
	pthread_mutex_t m;
	long counter, inside, overlaps;
	int peer_held_prio, peer_after_prio;
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

static int peer(int fd, long n)
{
	struct shm *s;
	int r;

	if (weft_active) {
		fprintf(stderr, "peer: expected plain glibc, got libweft\n");
		return 3;
	}
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		return 4;
	/* The fork copied the parent's boosted priority: take the base. */
	struct sched_param sp = {.sched_priority = 1};
	r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (r) {
		fprintf(stderr, "peer: setschedparam: %s\n", strerror(r));
		return 6;
	}
	/* Blocks: weft holds it, and its unlock must wake us. */
	r = pthread_mutex_lock(&s->m);
	if (r) {
		fprintf(stderr, "peer: lock: %s\n", strerror(r));
		return 5;
	}
	s->peer_held_prio = kprio(0);
	pthread_mutex_unlock(&s->m);
	s->peer_after_prio = kprio(0);
	count(s, n);
	return 0;
}

static pid_t run_peer(int fd, long n)
{
	return spawn_glibc_peer_for("peer", fd, n);
}

/* Runs in the main thread (a glibc-made thread, served by weft). */
static void with_glibc(void)
{
	const long n = 20000;
	struct shm *s;
	int fd, st;
	long end;
	pid_t pid;

	CHECK_ERR(set_fifo(1), 0);
	fd = memfd_create("weft-pp", 0);
	REQUIRE(fd >= 0 && ftruncate(fd, sizeof *s) == 0, "memfd");
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(s != MAP_FAILED, "mmap");
	pp_init(&s->m, PTHREAD_MUTEX_NORMAL, 1, 10);
	CHECK_ERR(pthread_mutex_lock(&s->m), 0);
	CHECK_EQ(kprio(0), 10);
	pid = run_peer(fd, n); /* inherits SCHED_FIFO 1 */
	end = mono_ns() + 10000000000L;
	while (__atomic_load_n(&s->m.__data.__lock, __ATOMIC_ACQUIRE) !=
		       ((10 << 19) | 2) &&
	       mono_ns() < end)
		sched_yield();
	CHECK_EQ(s->m.__data.__lock, (10 << 19) | 2); /* glibc sleeps */
	CHECK_ERR(pthread_mutex_unlock(&s->m), 0);
	CHECK_EQ(kprio(0), 1);
	count(s, n);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "glibc peer status %#x", st);
	CHECK_EQ(s->peer_held_prio, 10);
	CHECK_EQ(s->peer_after_prio, 1);
	CHECK_EQ(s->counter, 2 * n);
	CHECK_EQ(s->overlaps, 0);
	CHECK_EQ(s->m.__data.__lock, 10 << 19);
	CHECK_ERR(pthread_mutex_destroy(&s->m), 0);
	printf("with a glibc process: counter %ld (expected %ld), overlaps %ld\n",
	       s->counter, 2 * n, s->overlaps);
	munmap(s, sizeof *s);
	close(fd);
}

/* --------------------------------------------------------- bad input */

static void bad_input(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int v;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, 0), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, 100), EINVAL);
	CHECK_ERR(pthread_mutexattr_setprioceiling(&a, 4096 + 10), EINVAL);
	/* No ceiling set: SCHED_FIFO's lowest priority, as glibc. */
	CHECK_ERR(pthread_mutex_init(&m, &a), 0);
	CHECK_ERR(pthread_mutex_getprioceiling(&m, &v), 0);
	CHECK_EQ(v, sched_get_priority_min(SCHED_FIFO));
	CHECK_EQ((unsigned)m.__data.__lock >> 19, (unsigned)v);
	CHECK_ERR(pthread_mutex_destroy(&m), 0); /* the ceiling is not "busy" */
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	CHECK_ERR(pthread_mutex_init(&m, &a), ENOTSUP);
	pthread_mutexattr_destroy(&a);
}

static int rt_available(void)
{
	struct sched_param p = {.sched_priority = 1};
	int r;

	if (!harness_rt_wanted())
		return 0;
	r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
	if (r == 0)
		return 1;
	RT_REFUSED(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "peer"))
		return peer(atoi(argv[2]), atol(argv[3]));
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_setprioceiling);
	REQUIRE_SERVED(pthread_mutex_getprioceiling);
	REQUIRE_SERVED(pthread_setschedparam);
	REQUIRE_SERVED(pthread_getschedparam);
	REQUIRE_SERVED(pthread_setschedprio);

	bad_input();
	in_thread(sched_other);
	if (rt_available()) {
		in_thread(raise_restore);
		in_thread(nested);
		in_thread(above_ceiling);
		in_thread(ceilings);
		in_thread(sched_while_holding);
		sched_other_thread();
		contended();
		condvar();
		with_glibc();
		/* The main thread (glibc-made) too. */
		nested();
		struct sched_param p = {.sched_priority = 0};
		CHECK_ERR(pthread_setschedparam(pthread_self(), SCHED_OTHER, &p), 0);
	}
	TEST_DONE();
}
