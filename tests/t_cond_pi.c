/* PI-aware condition variables (docs/sync.md, "PI-aware condition
   variables") and the priority order of a condvar's waiters.

   A wait on a priority-inheritance mutex sleeps in FUTEX_WAIT_REQUEUE_PI
   (read from /proc/self/task/TID/syscall), and a signal moves it onto the
   mutex: while the signaller holds the mutex the waiter stays asleep,
   queued on the mutex word (FUTEX_WAITERS set by the kernel), and gets
   the mutex straight from the unlock.  Then: every PI mutex kind (types,
   robust, process-shared) for signal, broadcast and timeouts on both
   clocks; a timeout and a cancellation that strike after the requeue;
   a cancellation before it; the inversion with the low thread waiting on
   the condvar (its boost read from /proc while high waits for the mutex
   the kernel handed it); and signal and broadcast releasing SCHED_FIFO
   waiters highest priority first, arrival order within a priority, for
   a normal and a PI mutex.  The RT parts need root; without the right
   they fail.  WEFT_TEST_NO_RT=1 leaves them out (the test then exits 77:
   SKIP). */
#include <limits.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tid_common.h"
#include "trap_syscalls.h"

#define OP_WAIT_REQUEUE_PI 11
#define OP_LOCK_PI 6
#define OP_LOCK_PI2 13

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

/* The futex operation thread `t` sleeps in (FUTEX_PRIVATE_FLAG and
   FUTEX_CLOCK_REALTIME masked off), -1 when it is in no futex call. */
static int futex_op_of(int t)
{
	char path[64], buf[256];
	long nr = -1, addr = 0, op = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", t);
	if (!(f = fopen(path, "r")))
		return -1;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = 0;
	fclose(f);
	if (sscanf(buf, "%ld 0x%lx 0x%lx", &nr, &addr, &op) != 3 ||
	    nr != SYS_futex)
		return -1;
	return (int)(op & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME));
}

/* Polls (at most 5 s) until thread `t` sleeps in futex operation `op`. */
static int sleeps_in(int t, int op)
{
	long end = mono_ns() + 5000000000L;

	while (mono_ns() < end) {
		if (futex_op_of(t) == op && task_asleep(t, 1000000))
			return 1;
		sched_yield();
	}
	return 0;
}

static int poll_word_bit(int *w, int bit)
{
	long end = mono_ns() + 5000000000L;

	while (!(__atomic_load_n(w, __ATOMIC_ACQUIRE) & bit))
		if (mono_ns() > end)
			return 0;
	return 1;
}

/* ---------------------------------------------------- one waiter */

struct waiter {
	pthread_mutex_t *m;
	pthread_cond_t *c;
	clockid_t clock;      /* with `timeout_ns` */
	long timeout_ns;      /* 0: untimed */
	int tid, started, returned, res, owner_at_return;
	int cleanup_ran, owner_at_cleanup;
	int testcancel;	      /* call pthread_testcancel after the wait */
};

static void waiter_cleanup(void *p)
{
	struct waiter *w = p;

	w->cleanup_ran = 1;
	w->owner_at_cleanup = w->m->__data.__owner;
	pthread_mutex_unlock(w->m);
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	int r;

	CHECK_WEFT_THREAD();
	w->tid = tid();
	CHECK_ERR(pthread_mutex_lock(w->m), 0);
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	pthread_cleanup_push(waiter_cleanup, w);
	if (w->timeout_ns) {
		struct timespec ts = deadline_in(w->clock, w->timeout_ns);
		r = w->clock == CLOCK_REALTIME
			    ? pthread_cond_timedwait(w->c, w->m, &ts)
			    : pthread_cond_clockwait(w->c, w->m, w->clock, &ts);
	} else {
		r = pthread_cond_wait(w->c, w->m);
	}
	w->res = r;
	w->owner_at_return = w->m->__data.__owner;
	__atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
	if (w->testcancel)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	if (r == 0 || r == ETIMEDOUT || r == EOWNERDEAD)
		CHECK_ERR(pthread_mutex_unlock(w->m), 0);
	return NULL;
}

static void start_waiter(pthread_t *t, struct waiter *w)
{
	REQUIRE(pthread_create(t, NULL, waiter_main, w) == 0, "create");
	REQUIRE(poll_flag(&w->started), "waiter started");
}

/* Signal under the mutex.  The waiter is not woken while the mutex is
   held.  A robust mutex's waiter is requeued at once (FUTEX_WAITERS in
   the word); another waiter of no higher priority than the signaller is
   requeued when the signaller unlocks (the word stays the holder's tid
   alone until then).  Either way the unlock gives it the mutex. */
static void check_requeue(pthread_mutex_t *m, int robust, const char *what)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w = {.m = m, .c = &c};
	pthread_t t;

	start_waiter(&t, &w);
	CHECK(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI),
	      "%s: waiter's futex operation: expected FUTEX_WAIT_REQUEUE_PI "
	      "(11), got %d", what, futex_op_of(w.tid));
	CHECK_ERR(pthread_mutex_lock(m), 0);
	CHECK_ERR(pthread_cond_signal(&c), 0);
	if (robust)
		CHECK(poll_word_bit(&m->__data.__lock, FUTEX_WAITERS),
		      "%s: mutex word after the signal: expected FUTEX_WAITERS "
		      "(the waiter queued on it), got %#x", what,
		      m->__data.__lock);
	else
		CHECK(m->__data.__lock == tid(),
		      "%s: mutex word after the signal: expected the holder's "
		      "tid %d alone (requeue deferred to the unlock), got %#x",
		      what, tid(), m->__data.__lock);
	CHECK(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI) &&
		      !__atomic_load_n(&w.returned, __ATOMIC_ACQUIRE),
	      "%s: waiter woke while the signaller held the mutex", what);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	pthread_join(t, NULL);
	CHECK(w.res == 0, "%s: wait: expected 0, got %d", what, w.res);
	CHECK(w.owner_at_return == w.tid, "%s: owner at return: expected "
	      "%d, got %d", what, w.tid, w.owner_at_return);
	CHECK_ERR(pthread_cond_destroy(&c), 0);
}

/* Signal after the unlock: the kernel hands the free mutex over. */
static void check_free_handover(pthread_mutex_t *m, const char *what)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w = {.m = m, .c = &c};
	pthread_t t;

	start_waiter(&t, &w);
	REQUIRE(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
	CHECK_ERR(pthread_cond_signal(&c), 0);
	pthread_join(t, NULL);
	CHECK(w.res == 0 && w.owner_at_return == w.tid,
	      "%s, signal without the mutex: expected 0 and owner %d, got %d "
	      "and owner %d", what, w.tid, w.res, w.owner_at_return);
}

static void check_timeouts(pthread_mutex_t *m, const char *what)
{
	static const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;

	for (int i = 0; i < 2; i++) {
		struct waiter w = {.m = m, .c = &c, .clock = clocks[i],
				   .timeout_ns = 20000000};
		pthread_t t;
		long t0 = mono_ns();

		start_waiter(&t, &w);
		pthread_join(t, NULL);
		CHECK(w.res == ETIMEDOUT && w.owner_at_return == w.tid,
		      "%s, timeout on clock %d: expected ETIMEDOUT and owner %d, "
		      "got %d and owner %d", what, (int)clocks[i], w.tid, w.res,
		      w.owner_at_return);
		CHECK(mono_ns() - t0 >= 19000000, "%s: timed out after %ld ns",
		      what, mono_ns() - t0);
	}
	CHECK_ERR(pthread_cond_destroy(&c), 0);
}

/* Three waiters, one broadcast under the mutex: all requeued, each gets
   the mutex in turn. */
static void check_broadcast(pthread_mutex_t *m, int robust, const char *what)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w[3];
	pthread_t t[3];

	for (int i = 0; i < 3; i++) {
		w[i] = (struct waiter){.m = m, .c = &c};
		start_waiter(&t[i], &w[i]);
		REQUIRE(sleeps_in(w[i].tid, OP_WAIT_REQUEUE_PI),
			"waiter asleep");
	}
	CHECK_ERR(pthread_mutex_lock(m), 0);
	CHECK_ERR(pthread_cond_broadcast(&c), 0);
	if (robust)
		CHECK(poll_word_bit(&m->__data.__lock, FUTEX_WAITERS),
		      "%s: broadcast: expected the waiters queued on the mutex",
		      what);
	for (int i = 0; i < 3; i++)
		CHECK(sleeps_in(w[i].tid, OP_WAIT_REQUEUE_PI) &&
			      !__atomic_load_n(&w[i].returned, __ATOMIC_ACQUIRE),
		      "%s: a waiter woke while the mutex was held", what);
	CHECK_ERR(pthread_mutex_unlock(m), 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].res == 0 && w[i].owner_at_return == w[i].tid,
		      "%s: broadcast waiter %d: expected 0 and owner, got %d",
		      what, i, w[i].res);
	}
	CHECK_ERR(pthread_cond_destroy(&c), 0);
}

static void test_kinds(void)
{
	static const int types[] = {PTHREAD_MUTEX_NORMAL,
				    PTHREAD_MUTEX_RECURSIVE,
				    PTHREAD_MUTEX_ERRORCHECK};
	pthread_mutex_t m;
	char what[80];

	for (int ti = 0; ti < 3; ti++)
		for (int robust = 0; robust < 2; robust++)
			for (int pshared = 0; pshared < 2; pshared++) {
				snprintf(what, sizeof what,
					 "PI type %d%s%s", types[ti],
					 robust ? " robust" : "",
					 pshared ? " shared" : "");
				pi_init(&m, types[ti], robust, pshared);
				check_requeue(&m, robust, what);
				check_free_handover(&m, what);
				check_timeouts(&m, what);
				check_broadcast(&m, robust, what);
				CHECK_ERR(pthread_mutex_destroy(&m), 0);
			}
}

/* A recursive PI mutex held twice: the wait gives up both levels and the
   kernel's hand-over restores them. */
static void test_recursive_depth(void)
{
	pthread_mutex_t m;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w;
	pthread_t t;

	pi_init(&m, PTHREAD_MUTEX_RECURSIVE, 0, 0);
	w = (struct waiter){.m = &m, .c = &c};
	/* the waiter locks once in waiter_main; a second level here */
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_cond_signal(&c), 0); /* nobody: a no-op */
	{
		struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10000000);
		CHECK_ERR(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts),
			  ETIMEDOUT);
	}
	CHECK_EQ(m.__data.__count, 2);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(m.__data.__lock, 0);
	start_waiter(&t, &w);
	REQUIRE(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_ERR(pthread_cond_signal(&c), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	pthread_join(t, NULL);
	CHECK_ERR(w.res, 0);
	CHECK_EQ(m.__data.__lock, 0);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);
}

/* Deferred requeues of two mutexes.  The signaller holds m1 and m2 and
   signals a waiter of each (both requeues wait for the unlocks, kept in
   the signaller's list in order); unlocking m2 requeues only m2's, and a
   second waiter of m1 signalled after that must still be requeued at
   m1's unlock (it is appended behind m1's first: the list's tail must
   have followed the removal).  Every wait returns 0 with its mutex. */
static void test_deferred_two_mutexes(void)
{
	pthread_mutex_t m1, m2;
	pthread_cond_t c1 = PTHREAD_COND_INITIALIZER,
		       c2 = PTHREAD_COND_INITIALIZER;
	struct waiter w[3];
	pthread_t t[3];

	pi_init(&m1, PTHREAD_MUTEX_NORMAL, 0, 0);
	pi_init(&m2, PTHREAD_MUTEX_NORMAL, 0, 0);
	w[0] = (struct waiter){.m = &m1, .c = &c1};
	w[1] = (struct waiter){.m = &m2, .c = &c2};
	w[2] = (struct waiter){.m = &m1, .c = &c1};
	for (int i = 0; i < 3; i++) {
		start_waiter(&t[i], &w[i]);
		REQUIRE(sleeps_in(w[i].tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
	}
	CHECK_ERR(pthread_mutex_lock(&m1), 0);
	CHECK_ERR(pthread_mutex_lock(&m2), 0);
	CHECK_ERR(pthread_cond_signal(&c1), 0); /* w[0] */
	CHECK_ERR(pthread_cond_signal(&c2), 0); /* w[1] */
	CHECK_ERR(pthread_mutex_unlock(&m2), 0);
	pthread_join(t[1], NULL);
	CHECK(!__atomic_load_n(&w[0].returned, __ATOMIC_ACQUIRE),
	      "m1's waiter returned while m1 was held");
	CHECK_ERR(pthread_cond_signal(&c1), 0); /* w[2] */
	CHECK_ERR(pthread_mutex_unlock(&m1), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[2], NULL);
	for (int i = 0; i < 3; i++)
		CHECK(w[i].res == 0 && w[i].owner_at_return == w[i].tid,
		      "deferred requeues of two mutexes, waiter %d: expected 0 "
		      "and the mutex, got %d and owner %d", i, w[i].res,
		      w[i].owner_at_return);
	CHECK_ERR(pthread_mutex_destroy(&m1), 0);
	CHECK_ERR(pthread_mutex_destroy(&m2), 0);
}

/* The deadline passes after the signal, while the mutex is still held.
   Robust mutex (requeued at once): the kernel ends the wait on the mutex
   without it, the waiter sees it was signalled and takes the mutex the
   ordinary way (FUTEX_LOCK_PI).  Other PI mutexes (requeue deferred to
   the unlock): the signalled waiter ignores its deadline and sleeps on
   until the requeue.  Both return 0, the signal consumed, with the
   mutex. */
static void test_timeout_after_signal(void)
{
	pthread_mutex_t m;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w;
	pthread_t t;

	for (int robust = 0; robust < 2; robust++) {
		pi_init(&m, PTHREAD_MUTEX_NORMAL, robust, 0);
		w = (struct waiter){.m = &m, .c = &c, .clock = CLOCK_MONOTONIC,
				    .timeout_ns = 100000000};
		long deadline = mono_ns() + 100000000;
		start_waiter(&t, &w);
		REQUIRE(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
		CHECK_ERR(pthread_mutex_lock(&m), 0);
		CHECK_ERR(pthread_cond_signal(&c), 0);
		if (robust) {
			CHECK(poll_word_bit(&m.__data.__lock, FUTEX_WAITERS),
			      "requeued before the deadline");
			CHECK(sleeps_in(w.tid, OP_LOCK_PI),
			      "after the deadline: expected the waiter in "
			      "FUTEX_LOCK_PI, got futex op %d",
			      futex_op_of(w.tid));
		} else {
			while (mono_ns() < deadline + 50000000)
				sched_yield();
			CHECK(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI),
			      "after the deadline: expected the signalled waiter "
			      "still in FUTEX_WAIT_REQUEUE_PI, got futex op %d",
			      futex_op_of(w.tid));
		}
		CHECK(!__atomic_load_n(&w.returned, __ATOMIC_ACQUIRE),
		      "returned without the mutex");
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
		pthread_join(t, NULL);
		CHECK(w.res == 0 && w.owner_at_return == w.tid,
		      "deadline after the signal (robust %d): expected 0 and the "
		      "mutex, got %d and owner %d", robust, w.res,
		      w.owner_at_return);
		CHECK_ERR(pthread_mutex_destroy(&m), 0);
	}
	CHECK_ERR(pthread_cond_destroy(&c), 0);
}

/* Cancellation.  Before any signal: the wait unwinds, the cleanup runs
   with the mutex held.  After the signal, robust mutex (requeued): the
   kernel's wait on the mutex ends without it, the signal has been
   consumed, so the wait returns 0 with the mutex and the cancellation
   acts at the next cancellation point.  After the signal, other PI
   mutex (requeue deferred): the wait unwinds once the unlock has handed
   the waiter the mutex, and the cleanup runs with it held. */
static void test_cancel(void)
{
	pthread_mutex_t m;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct waiter w;
	pthread_t t;
	void *ret;

	pi_init(&m, PTHREAD_MUTEX_NORMAL, 0, 0);
	w = (struct waiter){.m = &m, .c = &c};
	start_waiter(&t, &w);
	REQUIRE(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
	CHECK_ERR(pthread_cancel(t), 0);
	pthread_join(t, &ret);
	CHECK(ret == PTHREAD_CANCELED && w.cleanup_ran && !w.returned &&
		      w.owner_at_cleanup == w.tid,
	      "cancel while waiting: expected cancelled with the mutex held in "
	      "the cleanup, got ret %p cleanup %d returned %d owner %d (tid %d)",
	      ret, w.cleanup_ran, w.returned, w.owner_at_cleanup, w.tid);
	CHECK_EQ(m.__data.__lock, 0);
	CHECK_ERR(pthread_mutex_destroy(&m), 0);

	for (int robust = 0; robust < 2; robust++) {
		pi_init(&m, PTHREAD_MUTEX_NORMAL, robust, 0);
		w = (struct waiter){.m = &m, .c = &c, .testcancel = 1};
		start_waiter(&t, &w);
		REQUIRE(sleeps_in(w.tid, OP_WAIT_REQUEUE_PI), "waiter asleep");
		CHECK_ERR(pthread_mutex_lock(&m), 0);
		CHECK_ERR(pthread_cond_signal(&c), 0);
		if (robust)
			REQUIRE(poll_word_bit(&m.__data.__lock, FUTEX_WAITERS),
				"requeued");
		CHECK_ERR(pthread_cancel(t), 0);
		CHECK(sleeps_in(w.tid, robust ? OP_LOCK_PI : OP_WAIT_REQUEUE_PI),
		      "cancelled after the signal (robust %d): expected the "
		      "waiter in futex op %d, got %d", robust,
		      robust ? OP_LOCK_PI : OP_WAIT_REQUEUE_PI,
		      futex_op_of(w.tid));
		CHECK_ERR(pthread_mutex_unlock(&m), 0);
		pthread_join(t, &ret);
		CHECK(ret == PTHREAD_CANCELED && w.returned == robust &&
			      (!robust || (w.res == 0 && w.owner_at_return == w.tid)) &&
			      w.cleanup_ran && w.owner_at_cleanup == w.tid,
		      "cancel after the signal (robust %d): expected %s, then the "
		      "cleanup with the mutex; got ret %p returned %d res %d "
		      "owner %d cleanup %d owner %d (tid %d)", robust,
		      robust ? "the wait to return 0 with the mutex"
			     : "no return from the wait",
		      ret, w.returned, w.res, w.owner_at_return, w.cleanup_ran,
		      w.owner_at_cleanup, w.tid);
		CHECK_EQ(m.__data.__lock, 0);
		CHECK_ERR(pthread_mutex_destroy(&m), 0);
	}
	CHECK_ERR(pthread_cond_destroy(&c), 0);
}

/* ------------------------------------------------------------ ping-pong

   Two threads on one CPU hand a turn back and forth through two
   condvars of one PI mutex (the latency benchmark's broadcast round):
   the waiter announces itself and signals the other under the mutex,
   then waits; the other broadcasts, under the mutex or after the
   unlock.  The waiter's release of the mutex hands it to the other
   thread, which may run at once (preemption under SCHED_OTHER, or a
   higher SCHED_FIFO priority) and pick the waiter before the waiter is
   asleep: the wait must still see it was picked (a wait that then
   slept on would never be woken: the lost wake-up this checks for).
   The main thread watches the rounds go by and fails, naming the round
   and the side, if none passes for 2 s. */
struct pong {
	pthread_mutex_t m;
	pthread_cond_t turn, ready;
	int waiting, gen, rounds, released;
	int prio_waiter, prio_sender; /* SCHED_FIFO, or 0: SCHED_OTHER */
	int progress, where[2], err;
};

static void pong_sched(struct pong *p, int prio)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set))
		__atomic_store_n(&p->err, 1, __ATOMIC_RELEASE);
	if (prio && rt_self(prio, 0))
		__atomic_store_n(&p->err, 2, __ATOMIC_RELEASE);
}

static void *pong_waiter(void *arg)
{
	struct pong *p = arg;

	CHECK_WEFT_THREAD();
	pong_sched(p, p->prio_waiter);
	CHECK_ERR(pthread_mutex_lock(&p->m), 0);
	for (int i = 0; i < p->rounds; i++) {
		int seen = p->gen;
		p->waiting = 1;
		CHECK_ERR(pthread_cond_signal(&p->ready), 0);
		__atomic_store_n(&p->where[0], i, __ATOMIC_RELAXED);
		while (p->gen == seen)
			CHECK_ERR(pthread_cond_wait(&p->turn, &p->m), 0);
		__atomic_add_fetch(&p->progress, 1, __ATOMIC_RELEASE);
	}
	CHECK_ERR(pthread_mutex_unlock(&p->m), 0);
	return NULL;
}

static void *pong_sender(void *arg)
{
	struct pong *p = arg;

	CHECK_WEFT_THREAD();
	pong_sched(p, p->prio_sender);
	for (int i = 0; i < p->rounds; i++) {
		CHECK_ERR(pthread_mutex_lock(&p->m), 0);
		__atomic_store_n(&p->where[1], i, __ATOMIC_RELAXED);
		while (!p->waiting)
			CHECK_ERR(pthread_cond_wait(&p->ready, &p->m), 0);
		p->waiting = 0;
		p->gen++;
		if (p->released) {
			CHECK_ERR(pthread_mutex_unlock(&p->m), 0);
			CHECK_ERR(pthread_cond_broadcast(&p->turn), 0);
		} else {
			CHECK_ERR(pthread_cond_broadcast(&p->turn), 0);
			CHECK_ERR(pthread_mutex_unlock(&p->m), 0);
		}
	}
	return NULL;
}

static void check_pingpong(int prio_waiter, int prio_sender, int rounds)
{
	for (int released = 0; released < 2; released++) {
		struct pong *p = calloc(1, sizeof *p);
		pthread_t tw, ts;
		int last = -1;
		long idle_since = mono_ns();

		pi_init(&p->m, PTHREAD_MUTEX_NORMAL, 0, 0);
		pthread_cond_init(&p->turn, NULL);
		pthread_cond_init(&p->ready, NULL);
		p->rounds = rounds;
		p->released = released;
		p->prio_waiter = prio_waiter;
		p->prio_sender = prio_sender;
		REQUIRE(pthread_create(&tw, NULL, pong_waiter, p) == 0, "create");
		REQUIRE(pthread_create(&ts, NULL, pong_sender, p) == 0, "create");
		for (;;) {
			int done = __atomic_load_n(&p->progress, __ATOMIC_ACQUIRE);
			if (done == rounds)
				break;
			if (done != last) {
				last = done;
				idle_since = mono_ns();
			} else if (mono_ns() - idle_since > 2000000000L) {
				FAIL("ping-pong on one CPU (priorities %d/%d, broadcast "
				     "%s the unlock): expected %d rounds, got stuck "
				     "after %d: a lost wake-up (waiter in round %d, "
				     "sender in round %d)", prio_waiter, prio_sender,
				     released ? "after" : "before", rounds, done,
				     p->where[0], p->where[1]);
				_exit(1); /* the threads are stuck */
			}
			usleep(1000);
		}
		pthread_join(tw, NULL);
		pthread_join(ts, NULL);
		CHECK(p->err == 0, "ping-pong: scheduling set-up failed (%d)",
		      p->err);
		pthread_cond_destroy(&p->turn);
		pthread_cond_destroy(&p->ready);
		pthread_mutex_destroy(&p->m);
		free(p);
	}
}

/* ------------------------------------------------------------ RT parts */

/* The inversion with the low thread in the condvar.  CPU 0, SCHED_FIFO:
   low (10) waits on the condvar of a PI mutex; medium (20) spins; high
   (30) signals (the kernel hands the free mutex to low, which cannot run
   under medium) and locks the mutex.  High now waits for low: low is
   boosted to 30, leaves its wait and runs its critical section, where
   the main thread (CPU 1) reads its boosted priority.  With a wait that
   is only woken (glibc's), low would not own the mutex yet: high would
   take it and low stay stuck under medium, never boosted.  Run twice:
   high signals without the mutex, and with it held (low's requeue then
   waits for high's unlock, so that the kernel makes low the owner
   outright; requeued at once, low would only be the pending owner at
   the unlock, and high would take the mutex back from it). */
struct inv {
	pthread_mutex_t m;
	pthread_cond_t c;
	int low_tid, low_waiting, low_returned, medium_running, high_started;
	int observed, abort, done, high_res, low_res;
	int held; /* high signals with the mutex held, then unlocks */
};

static int stop(struct inv *v)
{
	return __atomic_load_n(&v->observed, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&v->abort, __ATOMIC_ACQUIRE);
}

static void *inv_low(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(10, 0), 0);
	v->low_tid = tid();
	CHECK_ERR(pthread_mutex_lock(&v->m), 0);
	__atomic_store_n(&v->low_waiting, 1, __ATOMIC_RELEASE);
	v->low_res = pthread_cond_wait(&v->c, &v->m);
	__atomic_store_n(&v->low_returned, 1, __ATOMIC_RELEASE);
	while (!stop(v))
		; /* its critical section: runs only when boosted */
	CHECK_ERR(pthread_mutex_unlock(&v->m), 0);
	return NULL;
}

static void *inv_medium(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(20, 0), 0);
	__atomic_store_n(&v->medium_running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&v->done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&v->abort, __ATOMIC_ACQUIRE))
		;
	return NULL;
}

static void *inv_high(void *p)
{
	struct inv *v = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(30, 0), 0);
	__atomic_store_n(&v->high_started, 1, __ATOMIC_RELEASE);
	if (v->held)
		CHECK_ERR(pthread_mutex_lock(&v->m), 0);
	CHECK_ERR(pthread_cond_signal(&v->c), 0);
	if (v->held)
		CHECK_ERR(pthread_mutex_unlock(&v->m), 0);
	v->high_res = pthread_mutex_lock(&v->m);
	__atomic_store_n(&v->done, 1, __ATOMIC_RELEASE);
	if (v->high_res == 0)
		pthread_mutex_unlock(&v->m);
	return NULL;
}

static void test_inversion(int held)
{
	struct inv *v = calloc(1, sizeof *v);
	pthread_t lo, me, hi;
	int boosted = INT_MIN;

	v->held = held;
	pi_init(&v->m, PTHREAD_MUTEX_NORMAL, 0, 0);
	pthread_cond_init(&v->c, NULL);
	pthread_create(&lo, NULL, inv_low, v);
	REQUIRE(poll_flag(&v->low_waiting), "low runs");
	REQUIRE(sleeps_in(v->low_tid, OP_WAIT_REQUEUE_PI), "low waits");
	pthread_create(&me, NULL, inv_medium, v);
	REQUIRE(poll_flag(&v->medium_running), "medium runs");
	pthread_create(&hi, NULL, inv_high, v);
	REQUIRE(poll_flag(&v->high_started), "high runs");
	long end = mono_ns() + 5000000000L;
	while (mono_ns() < end) {
		boosted = stat_field(v->low_tid, 18);
		if (boosted == -31 &&
		    __atomic_load_n(&v->low_returned, __ATOMIC_ACQUIRE))
			break;
	}
	CHECK(boosted == -31 &&
		      __atomic_load_n(&v->low_returned, __ATOMIC_ACQUIRE),
	      "low thread signalled out of its condvar wait (mutex held by "
	      "the signaller: %d) while high waits for the mutex: expected it "
	      "to return boosted (stat 18 = -31), got priority %d, returned %d",
	      held, boosted,
	      __atomic_load_n(&v->low_returned, __ATOMIC_ACQUIRE));
	__atomic_store_n(boosted == -31 ? &v->observed : &v->abort, 1,
			 __ATOMIC_RELEASE);
	pthread_join(hi, NULL);
	pthread_join(me, NULL);
	pthread_join(lo, NULL);
	CHECK_ERR(v->high_res, 0);
	CHECK_ERR(v->low_res, 0);
	pthread_cond_destroy(&v->c);
	pthread_mutex_destroy(&v->m);
	free(v);
}

/* The holder is boosted by a requeued waiter.  CPU 0: high (30) waits on
   the condvar; low (10) takes the mutex and signals: high is moved onto
   the mutex, still asleep, and low runs at 30 from then on (read by the
   main thread while high is still asleep in FUTEX_WAIT_REQUEUE_PI);
   medium (20), started after the signal, cannot run until low unlocks. */
struct boost {
	pthread_mutex_t m;
	pthread_cond_t c;
	int high_tid, high_waiting, low_tid, signalled, observed, abort;
	int medium_ran_early, low_done, high_res;
};

static void *boost_high(void *p)
{
	struct boost *b = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(30, 0), 0);
	b->high_tid = tid();
	CHECK_ERR(pthread_mutex_lock(&b->m), 0);
	__atomic_store_n(&b->high_waiting, 1, __ATOMIC_RELEASE);
	b->high_res = pthread_cond_wait(&b->c, &b->m);
	CHECK_ERR(pthread_mutex_unlock(&b->m), 0);
	return NULL;
}

static void *boost_low(void *p)
{
	struct boost *b = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(10, 0), 0);
	b->low_tid = tid();
	CHECK_ERR(pthread_mutex_lock(&b->m), 0);
	CHECK_ERR(pthread_cond_signal(&b->c), 0);
	__atomic_store_n(&b->signalled, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&b->observed, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&b->abort, __ATOMIC_ACQUIRE))
		;
	__atomic_store_n(&b->low_done, 1, __ATOMIC_RELEASE);
	CHECK_ERR(pthread_mutex_unlock(&b->m), 0);
	return NULL;
}

static void *boost_medium(void *p)
{
	struct boost *b = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(20, 0), 0);
	if (!__atomic_load_n(&b->low_done, __ATOMIC_ACQUIRE))
		b->medium_ran_early = 1;
	return NULL;
}

static void test_requeue_boost(void)
{
	struct boost *b = calloc(1, sizeof *b);
	pthread_t hi, lo, me;
	int prio = INT_MIN, op = -1;

	pi_init(&b->m, PTHREAD_MUTEX_NORMAL, 0, 0);
	pthread_cond_init(&b->c, NULL);
	pthread_create(&hi, NULL, boost_high, b);
	REQUIRE(poll_flag(&b->high_waiting), "high runs");
	REQUIRE(sleeps_in(b->high_tid, OP_WAIT_REQUEUE_PI), "high waits");
	pthread_create(&lo, NULL, boost_low, b);
	REQUIRE(poll_flag(&b->signalled), "low signalled");
	pthread_create(&me, NULL, boost_medium, b);
	long end = mono_ns() + 5000000000L;
	while (mono_ns() < end) {
		prio = stat_field(b->low_tid, 18);
		op = futex_op_of(b->high_tid);
		if (prio == -31)
			break;
	}
	CHECK(prio == -31 && op == OP_WAIT_REQUEUE_PI,
	      "low holding the mutex after its signal: expected boosted to 30 "
	      "(stat 18 = -31) by high, still asleep in FUTEX_WAIT_REQUEUE_PI "
	      "(11); got priority %d, high's futex op %d", prio, op);
	__atomic_store_n(prio == -31 ? &b->observed : &b->abort, 1,
			 __ATOMIC_RELEASE);
	pthread_join(lo, NULL);
	pthread_join(hi, NULL);
	pthread_join(me, NULL);
	CHECK(!b->medium_ran_early, "medium ran before low unlocked");
	CHECK_ERR(b->high_res, 0);
	pthread_cond_destroy(&b->c);
	pthread_mutex_destroy(&b->m);
	free(b);
}

/* Priority order.  Five waiters on CPU 0 at FIFO priorities 10, 30, 20,
   30, 5 (arrival order; the two 30s tell FIFO within a priority), each
   asleep before the next arrives.  The main thread (CPU 1) releases
   them one signal at a time, or all with one broadcast, and reads the
   order in which they got the mutex: 30 (first), 30 (second), 20, 10, 5. */
#define NORD 5
static const int ord_prio[NORD] = {10, 30, 20, 30, 5};
static const int ord_expect[NORD] = {1, 3, 2, 0, 4};

struct ord {
	pthread_mutex_t m;
	pthread_cond_t c;
	int go[NORD], tids[NORD], started[NORD];
	int order[NORD], n;
};

struct ord_arg {
	struct ord *o;
	int i;
};

static void *ord_waiter(void *p)
{
	struct ord_arg *a = p;
	struct ord *o = a->o;

	CHECK_WEFT_THREAD();
	CHECK_ERR(rt_self(ord_prio[a->i], 0), 0);
	o->tids[a->i] = tid();
	CHECK_ERR(pthread_mutex_lock(&o->m), 0);
	__atomic_store_n(&o->started[a->i], 1, __ATOMIC_RELEASE);
	while (!o->go[a->i])
		CHECK_ERR(pthread_cond_wait(&o->c, &o->m), 0);
	o->order[o->n++] = a->i;
	CHECK_ERR(pthread_mutex_unlock(&o->m), 0);
	return NULL;
}

static void check_order(int pi, int broadcast)
{
	struct ord *o = calloc(1, sizeof *o);
	struct ord_arg args[NORD];
	pthread_t t[NORD];
	const char *what = broadcast ? "broadcast" : "signal";

	if (pi)
		pi_init(&o->m, PTHREAD_MUTEX_NORMAL, 0, 0);
	else
		pthread_mutex_init(&o->m, NULL);
	pthread_cond_init(&o->c, NULL);
	for (int i = 0; i < NORD; i++) {
		args[i] = (struct ord_arg){o, i};
		pthread_create(&t[i], NULL, ord_waiter, &args[i]);
		REQUIRE(poll_flag(&o->started[i]), "waiter runs");
		REQUIRE(sleeps_in(o->tids[i], pi ? OP_WAIT_REQUEUE_PI
						   : FUTEX_WAIT_BITSET),
			"waiter asleep");
	}
	if (broadcast) {
		CHECK_ERR(pthread_mutex_lock(&o->m), 0);
		for (int i = 0; i < NORD; i++)
			o->go[i] = 1;
		CHECK_ERR(pthread_cond_broadcast(&o->c), 0);
		CHECK_ERR(pthread_mutex_unlock(&o->m), 0);
	} else {
		for (int k = 0; k < NORD; k++) {
			CHECK_ERR(pthread_mutex_lock(&o->m), 0);
			for (int i = 0; i < NORD; i++)
				o->go[i] = 1; /* whoever is picked leaves */
			CHECK_ERR(pthread_cond_signal(&o->c), 0);
			CHECK_ERR(pthread_mutex_unlock(&o->m), 0);
			long end = mono_ns() + 5000000000L;
			for (;;) {
				pthread_mutex_lock(&o->m);
				int n = o->n;
				pthread_mutex_unlock(&o->m);
				if (n > k || mono_ns() > end)
					break;
				sched_yield();
			}
		}
	}
	for (int i = 0; i < NORD; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(o->n, NORD);
	for (int k = 0; k < NORD; k++)
		CHECK(o->order[k] == ord_expect[k],
		      "%s mutex, %s: release %d: expected waiter %d (priority "
		      "%d), got waiter %d (priority %d)", pi ? "PI" : "normal",
		      what, k, ord_expect[k], ord_prio[ord_expect[k]],
		      o->order[k], ord_prio[o->order[k]]);
	pthread_cond_destroy(&o->c);
	pthread_mutex_destroy(&o->m);
	free(o);
}

/* Destroy and a leaving waiter.  cond_destroy waits for waiters that
   timed out or were cancelled and are unlinking themselves.  It used to
   wait with a sched_yield loop, which under SCHED_FIFO never lets a
   leaver of lower priority on the same CPU run (a yield gives way to
   equal or higher priorities only); it now sleeps until the leaver has
   gone.  The state is made by hand, in a child: the condvar's internal
   lock (a PI word at offset 0, weft's layout: 0 or the holder's tid) is
   marked held by the main thread, so the waiter (FIFO 10, CPU 0) that
   times out is left "leaving" and blocked on that lock; the destroyer
   (FIFO 20, CPU 0) blocks on it too; the main thread (CPU 1) then lets
   it go (FUTEX_UNLOCK_PI: to the destroyer, the higher).  The destroyer
   finds the leaver, and must wait for it without a yield (a seccomp
   filter counts the destroyer's sched_yield calls); it returns 0 once
   the leaver is gone, and the leaver's wait ETIMEDOUT. */
struct dleave {
	pthread_mutex_t m;
	pthread_cond_t c;
	int waiter_tid, destroyer_tid, waiter_res, destroy_res;
};

static void *dleave_waiter(void *p)
{
	struct dleave *d = p;
	struct timespec ts;

	CHECK_ERR(rt_self(10, 0), 0);
	__atomic_store_n(&d->waiter_tid, tid(), __ATOMIC_RELEASE);
	CHECK_ERR(pthread_mutex_lock(&d->m), 0);
	ts = deadline_in(CLOCK_REALTIME, 200000000);
	d->waiter_res = pthread_cond_timedwait(&d->c, &d->m, &ts);
	CHECK_ERR(pthread_mutex_unlock(&d->m), 0);
	return NULL;
}

static void *dleave_destroyer(void *p)
{
	struct dleave *d = p;

	CHECK_ERR(rt_self(20, 0), 0);
	trap_tid = tid(); /* from here only ours count */
	__atomic_store_n(&trap_count, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->destroyer_tid, trap_tid, __ATOMIC_RELEASE);
	d->destroy_res = pthread_cond_destroy(&d->c);
	return NULL;
}

static void destroy_waits_for_leaver_child(void)
{
	static const int nrs[] = {SYS_sched_yield};
	struct dleave *d = calloc(1, sizeof *d);
	int *cond_lock = (int *)&d->c;
	pthread_t w, x;

	trap_result = 0;
	REQUIRE(trap_syscalls(nrs, 1) == 0, "seccomp filter: %s",
		strerror(errno));
	pthread_mutex_init(&d->m, NULL);
	pthread_cond_init(&d->c, NULL);
	pthread_create(&w, NULL, dleave_waiter, d);
	REQUIRE(poll_flag(&d->waiter_tid), "waiter runs");
	REQUIRE(sleeps_in(d->waiter_tid, FUTEX_WAIT_BITSET),
		"waiter asleep in its wait");
	__atomic_store_n(cond_lock, tid(), __ATOMIC_RELEASE);
	REQUIRE(sleeps_in(d->waiter_tid, OP_LOCK_PI),
		"timed-out waiter blocked on the internal lock, got futex op %d",
		futex_op_of(d->waiter_tid));
	pthread_create(&x, NULL, dleave_destroyer, d);
	REQUIRE(poll_flag(&d->destroyer_tid), "destroyer runs");
	REQUIRE(sleeps_in(d->destroyer_tid, OP_LOCK_PI),
		"destroyer blocked on the internal lock");
	REQUIRE(syscall(SYS_futex, cond_lock,
			FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG) == 0,
		"FUTEX_UNLOCK_PI: %s", strerror(errno));
	pthread_join(x, NULL);
	pthread_join(w, NULL);
	CHECK(d->destroy_res == 0 && d->waiter_res == ETIMEDOUT,
	      "destroy with a leaving waiter: expected 0 and the waiter's "
	      "ETIMEDOUT, got %d and %d", d->destroy_res, d->waiter_res);
	CHECK(trap_count == 0, "destroy waiting for a leaving waiter of lower "
	      "priority on its CPU: expected it to sleep, got %d sched_yield "
	      "call(s)", trap_count);
}

static int rt_allowed(void)
{
	struct sched_param sp = {.sched_priority = 1};
	cpu_set_t set;

	if (!harness_rt_wanted())
		return 0;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		RT_REFUSED(errno);
		return 0;
	}
	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "two CPUs needed");
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
		"main on CPU 1");
	return 1;
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cond_wait);
	REQUIRE_SERVED(pthread_cond_signal);
	REQUIRE_SERVED(pthread_mutex_lock);
	watchdog_arm();
	test_kinds();
	test_recursive_depth();
	test_deferred_two_mutexes();
	test_timeout_after_signal();
	test_cancel();
	check_pingpong(0, 0, 20000);
	if (rt_allowed()) {
		fprintf(stderr, "ping-pong\n");
		check_pingpong(10, 20, 2000);
		check_pingpong(20, 10, 2000);
		fprintf(stderr, "destroy and a leaving waiter\n");
		trap_in_child(destroy_waits_for_leaver_child, 10,
			      "destroy and a leaving waiter");
		fprintf(stderr, "inversion\n");
		test_inversion(0);
		test_inversion(1);
		fprintf(stderr, "requeue boost\n");
		test_requeue_boost();
		for (int pi = 0; pi < 2; pi++)
			for (int b = 0; b < 2; b++) {
				fprintf(stderr, "order pi %d broadcast %d\n",
					pi, b);
				check_order(pi, b);
			}
	}
	TEST_DONE();
}
