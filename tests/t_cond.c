/* Condition variables served by weft: initializers, attributes and
   errors, timeouts on both clocks, producer/consumer with exact totals,
   a signal storm with lost-wake-up accounting, "broadcast then destroy
   and free", a recursive mutex, cancellation (mutex held in the cleanup
   handler, the signal not consumed), and no thundering herd: waiters
   moved by a broadcast under the mutex do not run before it is
   unlocked.  WEFT_TEST_GLIBC=1 skips the proofs that weft serves, to run
   the same checks against glibc (the preload build without LD_PRELOAD). */
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "harness.h"

/* WEFT_TEST_GLIBC=1: run against glibc (preload build, no LD_PRELOAD),
   to see which checks glibc 2.36 fails. */
static int glibc_mode;
#define THREAD_CHECK()                                                         \
	do {                                                                   \
		if (!glibc_mode)                                               \
			CHECK_WEFT_THREAD();                                   \
	} while (0)

/* ------------------------------------------- attributes, init, errors */

static pthread_cond_t s_cond = PTHREAD_COND_INITIALIZER;

static void test_basics(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_condattr_t a;
	pthread_cond_t c, *z = calloc(1, sizeof *z);
	struct timespec ts, bad;
	clockid_t clk;
	int v;
	long t0;

	CHECK_EQ(sizeof(pthread_cond_t), 48);
	CHECK_ERR(pthread_condattr_init(&a), 0);
	CHECK_ERR(pthread_condattr_getclock(&a, &clk), 0);
	CHECK_EQ(clk, CLOCK_REALTIME);
	CHECK_ERR(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	CHECK_ERR(pthread_condattr_getclock(&a, &clk), 0);
	CHECK_EQ(clk, CLOCK_MONOTONIC);
	CHECK_ERR(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID),
		  EINVAL);
	CHECK_ERR(pthread_condattr_setclock(&a, 12345), EINVAL);
	CHECK_ERR(pthread_condattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	CHECK_ERR(pthread_condattr_setpshared(&a, 7), EINVAL);
	CHECK_ERR(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	CHECK_ERR(pthread_condattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_condattr_getclock(&a, &clk), 0);
	CHECK_EQ(clk, CLOCK_MONOTONIC);
	CHECK_ERR(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE), 0);
	CHECK_ERR(pthread_cond_init(&c, &a), 0);
	CHECK_ERR(pthread_condattr_destroy(&a), 0);

	/* Timeouts: the condvar's clock (monotonic here), then realtime on
	   the static initializer and on zero-filled memory, clockwait on
	   both clocks. */
	pthread_mutex_lock(&m);
	t0 = mono_ns();
	ts = deadline_in(CLOCK_MONOTONIC, 50000000);
	CHECK_ERR(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	CHECK(mono_ns() - t0 >= 49000000, "returned after %ld ns", mono_ns() - t0);
	t0 = mono_ns();
	ts = deadline_in(CLOCK_REALTIME, 50000000);
	CHECK_ERR(pthread_cond_timedwait(&s_cond, &m, &ts), ETIMEDOUT);
	CHECK(mono_ns() - t0 >= 49000000, "returned after %ld ns", mono_ns() - t0);
	ts = deadline_in(CLOCK_REALTIME, 20000000);
	CHECK_ERR(pthread_cond_timedwait(z, &m, &ts), ETIMEDOUT);
	ts = deadline_in(CLOCK_MONOTONIC, 20000000);
	CHECK_ERR(pthread_cond_clockwait(z, &m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	ts = deadline_in(CLOCK_REALTIME, 20000000);
	CHECK_ERR(pthread_cond_clockwait(z, &m, CLOCK_REALTIME, &ts), ETIMEDOUT);
	ts = (struct timespec){.tv_sec = -1};
	CHECK_ERR(pthread_cond_timedwait(z, &m, &ts), ETIMEDOUT);
	CHECK_EQ(m.__data.__owner, (int)syscall(SYS_gettid));
	bad = (struct timespec){.tv_sec = time(NULL) + 10, .tv_nsec = 1000000000};
	CHECK_ERR(pthread_cond_timedwait(z, &m, &bad), EINVAL);
	bad.tv_nsec = -1;
	CHECK_ERR(pthread_cond_clockwait(z, &m, CLOCK_MONOTONIC, &bad), EINVAL);
	ts = deadline_in(CLOCK_MONOTONIC, 1000000);
	CHECK_ERR(pthread_cond_clockwait(z, &m, CLOCK_PROCESS_CPUTIME_ID, &ts),
		  EINVAL);
	pthread_mutex_unlock(&m);

	/* Waiting with an error-checking mutex one does not hold. */
	ts = deadline_in(CLOCK_REALTIME, 20000000);
	CHECK_ERR(pthread_cond_timedwait(&c, &e, &ts), EPERM);

	/* Signal and broadcast with nobody waiting. */
	CHECK_ERR(pthread_cond_signal(&c), 0);
	CHECK_ERR(pthread_cond_broadcast(&c), 0);
	CHECK_ERR(pthread_cond_destroy(&c), 0);
	CHECK_ERR(pthread_cond_destroy(z), 0);
	free(z);
}

/* A recursive mutex locked once (and twice) is released for the wait
   and comes back with its count. */
static void test_recursive(void)
{
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts;

	CHECK_ERR(pthread_mutex_lock(&r), 0);
	ts = deadline_in(CLOCK_REALTIME, 10000000);
	CHECK_ERR(pthread_cond_timedwait(&c, &r, &ts), ETIMEDOUT);
	CHECK_EQ(r.__data.__count, 1);
	CHECK_EQ(r.__data.__owner, (int)syscall(SYS_gettid));
	CHECK_ERR(pthread_mutex_lock(&r), 0);
	ts = deadline_in(CLOCK_REALTIME, 10000000);
	CHECK_ERR(pthread_cond_timedwait(&c, &r, &ts), ETIMEDOUT);
	CHECK_EQ(r.__data.__count, 2);
	CHECK_ERR(pthread_mutex_unlock(&r), 0);
	CHECK_ERR(pthread_mutex_unlock(&r), 0);
	CHECK_ERR(pthread_mutex_unlock(&r), EPERM);
}

/* ------------------------------------------------- producer / consumer */

#define QCAP 16
struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	long items[QCAP];
	int head, count;
	long per_producer;
	long consumed_sum, consumed_n;
	int producers_left;
};

static void *producer(void *p)
{
	struct queue *q = p;

	THREAD_CHECK();
	for (long i = 1; i <= q->per_producer; i++) {
		pthread_mutex_lock(&q->m);
		while (q->count == QCAP)
			pthread_cond_wait(&q->not_full, &q->m);
		q->items[(q->head + q->count++) % QCAP] = i;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->m);
	}
	pthread_mutex_lock(&q->m);
	if (--q->producers_left == 0)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->m);
	return NULL;
}

static void *consumer(void *p)
{
	struct queue *q = p;

	THREAD_CHECK();
	pthread_mutex_lock(&q->m);
	for (;;) {
		while (q->count == 0 && q->producers_left)
			pthread_cond_wait(&q->not_empty, &q->m);
		if (q->count == 0)
			break;
		long v = q->items[q->head];
		q->head = (q->head + 1) % QCAP;
		q->count--;
		q->consumed_sum += v;
		q->consumed_n++;
		pthread_cond_signal(&q->not_full);
	}
	pthread_mutex_unlock(&q->m);
	return NULL;
}

static void test_producer_consumer(void)
{
	enum { P = 3, C = 3 };
	struct queue q = {.m = PTHREAD_MUTEX_INITIALIZER,
			  .not_empty = PTHREAD_COND_INITIALIZER,
			  .not_full = PTHREAD_COND_INITIALIZER,
			  .per_producer = 30000,
			  .producers_left = P};
	pthread_t t[P + C];

	for (int i = 0; i < C; i++)
		pthread_create(&t[i], NULL, consumer, &q);
	for (int i = 0; i < P; i++)
		pthread_create(&t[C + i], NULL, producer, &q);
	for (int i = 0; i < P + C; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(q.consumed_n, P * q.per_producer);
	CHECK_EQ(q.consumed_sum, P * q.per_producer * (q.per_producer + 1) / 2);
	printf("producer/consumer: %ld items, sum %ld\n", q.consumed_n,
	       q.consumed_sum);
}

/* ------------------------------------------- signal storm, lost wakes */

/* Tokens are handed out one at a time with pthread_cond_signal; every
   token has a waiter blocked for it, so each signal must wake one.  A
   waiter whose (generous) timed wait expires while a token has been
   pending for that long counts a lost wake-up.  The run is bounded by
   count and time and never hangs. */
struct storm {
	pthread_mutex_t m;
	pthread_cond_t cv;
	long tokens, consumed, misses, total;
	int stop;
};

static void *storm_waiter(void *p)
{
	struct storm *s = p;

	THREAD_CHECK();
	pthread_mutex_lock(&s->m);
	for (;;) {
		while (s->tokens == 0 && !s->stop) {
			struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000L);
			if (pthread_cond_timedwait(&s->cv, &s->m, &ts) == ETIMEDOUT &&
			    s->tokens > 0)
				s->misses++;
		}
		if (s->tokens == 0)
			break;
		s->tokens--;
		s->consumed++;
	}
	pthread_mutex_unlock(&s->m);
	return NULL;
}

static void test_storm(void)
{
	enum { W = 6 };
	struct storm s = {.m = PTHREAD_MUTEX_INITIALIZER,
			  .cv = PTHREAD_COND_INITIALIZER};
	pthread_t t[W];
	long end = mono_ns() + 3000000000L, rounds = 0;

	for (int i = 0; i < W; i++)
		pthread_create(&t[i], NULL, storm_waiter, &s);
	while (rounds < 200000 && mono_ns() < end) {
		pthread_mutex_lock(&s.m);
		s.tokens++;
		s.total++;
		/* Alternate signalling inside and outside the mutex. */
		if (rounds & 1)
			pthread_cond_signal(&s.cv);
		pthread_mutex_unlock(&s.m);
		if (!(rounds & 1))
			pthread_cond_signal(&s.cv);
		if ((rounds & 63) == 0)
			sched_yield();
		rounds++;
	}
	pthread_mutex_lock(&s.m);
	s.stop = 1;
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.m);
	for (int i = 0; i < W; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(s.consumed, s.total);
	CHECK_EQ(s.misses, 0);
	printf("signal storm: %ld tokens, %ld consumed, %ld lost wake-ups\n",
	       s.total, s.consumed, s.misses);
}

/* Broadcast rounds: every waiter must see every generation. */
struct bstorm {
	pthread_mutex_t m;
	pthread_cond_t cv, done_cv;
	long gen, acks, misses;
	int stop;
};

static void *bstorm_waiter(void *p)
{
	struct bstorm *b = p;
	long seen = 0;

	THREAD_CHECK();
	pthread_mutex_lock(&b->m);
	while (!b->stop) {
		while (b->gen == seen && !b->stop) {
			struct timespec ts = deadline_in(CLOCK_MONOTONIC, 1000000000L);
			if (pthread_cond_clockwait(&b->cv, &b->m, CLOCK_MONOTONIC,
						   &ts) == ETIMEDOUT &&
			    b->gen != seen)
				b->misses++;
		}
		seen = b->gen;
		b->acks++;
		pthread_cond_signal(&b->done_cv);
	}
	pthread_mutex_unlock(&b->m);
	return NULL;
}

static void test_broadcast_storm(void)
{
	enum { W = 8 };
	struct bstorm b = {.m = PTHREAD_MUTEX_INITIALIZER,
			   .cv = PTHREAD_COND_INITIALIZER,
			   .done_cv = PTHREAD_COND_INITIALIZER};
	pthread_t t[W];
	long end = mono_ns() + 2000000000L, rounds = 0, stalls = 0;

	for (int i = 0; i < W; i++)
		pthread_create(&t[i], NULL, bstorm_waiter, &b);
	pthread_mutex_lock(&b.m);
	while (rounds < 20000 && mono_ns() < end) {
		b.acks = 0;
		b.gen++;
		pthread_cond_broadcast(&b.cv);
		while (b.acks < W) {
			struct timespec ts = deadline_in(CLOCK_MONOTONIC, 2000000000L);
			if (pthread_cond_clockwait(&b.done_cv, &b.m, CLOCK_MONOTONIC,
						   &ts) == ETIMEDOUT) {
				stalls++;
				break;
			}
		}
		rounds++;
	}
	b.stop = 1;
	pthread_cond_broadcast(&b.cv);
	pthread_mutex_unlock(&b.m);
	for (int i = 0; i < W; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(b.misses, 0);
	CHECK_EQ(stalls, 0);
	printf("broadcast storm: %ld rounds x %d waiters, %ld missed\n", rounds,
	       W, b.misses);
}

/* ----------------------------------- broadcast, then destroy and free */

struct dyn {
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	int *flag;
	int *waiting;
};

static void *dyn_waiter(void *p)
{
	struct dyn *d = p;

	THREAD_CHECK();
	pthread_mutex_lock(d->m);
	++*d->waiting;
	while (!*d->flag)
		pthread_cond_wait(d->cv, d->m);
	pthread_mutex_unlock(d->m);
	return NULL;
}

static void test_destroy_after_broadcast(void)
{
	enum { W = 4, ROUNDS = 300 };
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	long end = mono_ns() + 3000000000L;
	int r;

	for (r = 0; r < ROUNDS && mono_ns() < end; r++) {
		pthread_cond_t *cv = malloc(sizeof *cv);
		int flag = 0, waiting = 0;
		struct dyn d = {&m, cv, &flag, &waiting};
		pthread_t t[W];

		pthread_cond_init(cv, NULL);
		for (int i = 0; i < W; i++)
			pthread_create(&t[i], NULL, dyn_waiter, &d);
		/* All W are inside the wait once they counted themselves and
		   we hold the mutex again. */
		for (;;) {
			pthread_mutex_lock(&m);
			if (waiting == W)
				break;
			pthread_mutex_unlock(&m);
			sched_yield();
		}
		flag = 1;
		/* glibc 2.36 does not report EBUSY: its destroy waits for
		   the waiters (forever, here). */
		if (!glibc_mode)
			CHECK_ERR(pthread_cond_destroy(cv), EBUSY);
		pthread_cond_broadcast(cv);
		/* Half the rounds: destroy under the mutex, half after. */
		if (r & 1)
			pthread_mutex_unlock(&m);
		CHECK_ERR(pthread_cond_destroy(cv), 0);
		memset(cv, 0xa5, sizeof *cv); /* any later use would misbehave */
		free(cv);
		if (!(r & 1))
			pthread_mutex_unlock(&m);
		for (int i = 0; i < W; i++)
			pthread_join(t[i], NULL);
	}
	printf("destroy after broadcast: %d rounds of %d waiters\n", r, W);
}

/* ------------------------------------- broadcast to 1..9 waiters, one
   or two mutexes

   A broadcast walks the list from both ends at once until the walks
   meet, and hands the batch on as one chain when its waiters share one
   mutex: every count from 1 to 9 (odd and even meetings), with the
   waiters on one mutex and, alternately, on two (undefined in POSIX, but
   each waiter must still be woken), under a mutex and after it. */

struct bsize {
	pthread_mutex_t m[2];
	pthread_cond_t cv;
	int waiting[2];
	int flag, woken, misses;
};

struct bsize_arg {
	struct bsize *b;
	int which;
};

static void *bsize_waiter(void *p)
{
	struct bsize_arg *a = p;
	struct bsize *b = a->b;
	pthread_mutex_t *m = &b->m[a->which];

	THREAD_CHECK();
	pthread_mutex_lock(m);
	b->waiting[a->which]++;
	while (!__atomic_load_n(&b->flag, __ATOMIC_ACQUIRE)) {
		struct timespec ts = deadline_in(CLOCK_MONOTONIC, 2000000000L);
		if (pthread_cond_clockwait(&b->cv, m, CLOCK_MONOTONIC, &ts) ==
			    ETIMEDOUT &&
		    __atomic_load_n(&b->flag, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&b->misses, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&b->woken, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(m);
	return NULL;
}

static int broadcast_sizes_round(int n, int two, int under_lock)
{
	struct bsize b = {.m = {PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_MUTEX_INITIALIZER},
			  .cv = PTHREAD_COND_INITIALIZER};
	struct bsize_arg a[9];
	pthread_t t[9];
	int want[2] = {0, 0};

	for (int i = 0; i < n; i++) {
		a[i] = (struct bsize_arg){&b, two ? i & 1 : 0};
		want[a[i].which]++;
		pthread_create(&t[i], NULL, bsize_waiter, &a[i]);
	}
	/* Every waiter is inside its wait once it counted itself and we
	   hold its mutex again. */
	for (;;) {
		pthread_mutex_lock(&b.m[0]);
		pthread_mutex_lock(&b.m[1]);
		if (b.waiting[0] == want[0] && b.waiting[1] == want[1])
			break;
		pthread_mutex_unlock(&b.m[1]);
		pthread_mutex_unlock(&b.m[0]);
		sched_yield();
	}
	__atomic_store_n(&b.flag, 1, __ATOMIC_RELEASE);
	if (!under_lock) {
		pthread_mutex_unlock(&b.m[1]);
		pthread_mutex_unlock(&b.m[0]);
	}
	pthread_cond_broadcast(&b.cv);
	if (under_lock) {
		pthread_mutex_unlock(&b.m[1]);
		pthread_mutex_unlock(&b.m[0]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	CHECK(b.woken == n && b.misses == 0,
	      "broadcast to %d waiters on %d mutex(es)%s: expected %d woken, "
	      "0 by their timeout (2 s); got %d woken, %d by the timeout",
	      n, two + 1, under_lock ? " under the lock" : "", n, b.woken,
	      b.misses);
	return b.woken == n && b.misses == 0;
}

static void test_broadcast_sizes(void)
{
	/* The first failure ends the test: each costs the 2 s timeout. */
	for (int n = 1; n <= 9; n++)
		for (int two = 0; two < 2; two++)
			for (int under = 0; under < 2; under++)
				if (!broadcast_sizes_round(n, two, under))
					return;
	printf("broadcast to 1..9 waiters, one and two mutexes: done\n");
}

/* ---------------------------------------------------------- cancellation */

struct cancel_case {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int ready, waiting, stop;
	int held_in_cleanup, cleanups;
};

static void cancel_cleanup(void *p)
{
	struct cancel_case *k = p;

	/* An error-checking mutex: unlock succeeds only for its owner. */
	if (pthread_mutex_unlock(&k->m) == 0)
		k->held_in_cleanup++;
	k->cleanups++;
}

static void *cancel_waiter(void *p)
{
	struct cancel_case *k = p;

	THREAD_CHECK();
	pthread_mutex_lock(&k->m);
	k->waiting++;
	pthread_cleanup_push(cancel_cleanup, k);
	while (!k->ready)
		pthread_cond_wait(&k->cv, &k->m);
	pthread_cleanup_pop(0);
	k->ready--; /* consume one */
	pthread_mutex_unlock(&k->m);
	return NULL;
}

static void *plain_waiter(void *p)
{
	struct cancel_case *k = p;
	int r = 0;

	THREAD_CHECK();
	pthread_mutex_lock(&k->m);
	k->waiting++;
	while (!k->ready && !k->stop && r != ETIMEDOUT) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 3000000000L);
		r = pthread_cond_timedwait(&k->cv, &k->m, &ts);
	}
	/* A token left after a 3 s timeout is a lost wake-up. */
	int got = k->ready > 0 && r != ETIMEDOUT;
	if (k->ready > 0)
		k->ready--;
	pthread_mutex_unlock(&k->m);
	return (void *)(intptr_t)got;
}

static void wait_waiting(struct cancel_case *k, int n)
{
	for (;;) {
		pthread_mutex_lock(&k->m);
		if (k->waiting == n)
			return; /* with the mutex held */
		pthread_mutex_unlock(&k->m);
		sched_yield();
	}
}

/* mode 0: cancel, join, then signal; mode 1: signal, then cancel at
   once (the cancelled waiter may have got the signal: it must pass it
   on); mode 2: cancel, then signal at once (the signaller must not pick
   the waiter that is being cancelled, or that one must pass it on). */
static int mode1_cancelled;

static void cancel_round(int mode, int *lost)
{
	struct cancel_case k = {.m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP,
				.cv = PTHREAD_COND_INITIALIZER};
	pthread_t a, b;
	void *res, *got;

	pthread_create(&a, NULL, cancel_waiter, &k);
	wait_waiting(&k, 1);
	pthread_mutex_unlock(&k.m);
	pthread_create(&b, NULL, plain_waiter, &k);
	wait_waiting(&k, 2);
	if (mode == 0) {
		pthread_mutex_unlock(&k.m);
		pthread_cancel(a);
		pthread_join(a, &res);
		pthread_mutex_lock(&k.m);
		k.ready = 1;
		pthread_cond_signal(&k.cv);
		pthread_mutex_unlock(&k.m);
	} else if (mode == 2) {
		pthread_mutex_unlock(&k.m);
		pthread_cancel(a);
		pthread_mutex_lock(&k.m);
		k.ready = 1;
		pthread_cond_signal(&k.cv);
		pthread_mutex_unlock(&k.m);
		pthread_join(a, &res);
	} else {
		k.ready = 1;
		pthread_cond_signal(&k.cv);
		pthread_mutex_unlock(&k.m);
		pthread_cancel(a);
		pthread_join(a, &res);
		if (res != PTHREAD_CANCELED) {
			/* A took the token before the cancel: release B. */
			pthread_mutex_lock(&k.m);
			k.stop = 1;
			pthread_cond_broadcast(&k.cv);
			pthread_mutex_unlock(&k.m);
		}
	}
	pthread_join(b, &got);
	if (res == PTHREAD_CANCELED) {
		CHECK_EQ(k.cleanups, 1);
		CHECK_EQ(k.held_in_cleanup, 1);
		/* A was cancelled: the single signal must reach B. */
		if (!got)
			++*lost;
		mode1_cancelled += mode == 1;
	} else {
		/* A consumed the token and returned before the cancel. */
		CHECK(mode == 1, "waiter not cancelled in mode %d", mode);
	}
	pthread_cond_destroy(&k.cv);
}

static void test_cancel(void)
{
	int lost0 = 0, lost1 = 0, lost2 = 0, rounds = 0;
	long end = mono_ns() + 4000000000L;

	cancel_round(0, &lost0);
	while (rounds < 40 && mono_ns() < end) {
		cancel_round(0, &lost0);
		cancel_round(1, &lost1);
		cancel_round(2, &lost2);
		rounds++;
	}
	CHECK_EQ(lost0, 0);
	CHECK_EQ(lost1, 0);
	CHECK_EQ(lost2, 0);
	printf("cancelled waits: %d rounds (signal racing the cancel: %d "
	       "cancelled), signals lost %d + %d + %d\n",
	       rounds + 1, mode1_cancelled, lost0, lost1, lost2);
}

/* ---------------------------------------------- no thundering herd */

/* Waits (at most 5 s) until the thread is blocked in the kernel. */
static void wait_asleep(pid_t tid)
{
	char path[64], buf[512];
	long end = mono_ns() + 5000000000L;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	while (mono_ns() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')'); /* state follows "(comm) " */
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		sched_yield();
	}
}

struct herd {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int go, waiting;
	pid_t tids[8];
};

static void *herd_waiter(void *p)
{
	struct herd *h = p;

	THREAD_CHECK();
	pthread_mutex_lock(&h->m);
	h->tids[h->waiting++] = (pid_t)syscall(SYS_gettid);
	while (!h->go)
		pthread_cond_wait(&h->cv, &h->m);
	pthread_mutex_unlock(&h->m);
	return NULL;
}

struct blocker {
	pthread_mutex_t *m;
	int state; /* 1 holding, 2 asked to release */
};

static void *block_thread(void *p)
{
	struct blocker *b = p;

	THREAD_CHECK();
	pthread_mutex_lock(b->m);
	__atomic_store_n(&b->state, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
	pthread_mutex_unlock(b->m);
	return NULL;
}

/* A broadcast to two waiters, after which the condvar's waiters sleep as
   a herd (docs/sync.md, "Herd release"). */
static void make_herd(struct herd *h)
{
	pthread_t t[2];

	h->go = h->waiting = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, herd_waiter, h);
	for (;;) {
		pthread_mutex_lock(&h->m);
		if (h->waiting == 2)
			break;
		pthread_mutex_unlock(&h->m);
		sched_yield();
	}
	h->go = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->m);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	h->go = h->waiting = 0;
}

/* A broadcast must not wake waiters that could only block on the mutex
   again.  under_lock: the broadcaster holds the mutex, so no waiter may
   run before it unlocks.  Otherwise another thread holds it: at most one
   waiter may wake (to queue on the mutex), the others stay asleep.
   herd: the condvar was broadcast to several waiters before, so these
   sleep as a herd, released all at once when the mutex is free.
   Waiters' voluntary context switches are compared, from when each is
   asleep in the kernel; the 20 ms grace only gives a woken thread time
   to run, it cannot make the check fail wrongly. */
static void test_no_herd(int under_lock, int herd)
{
	enum { W = 6 };
	struct herd h = {.m = PTHREAD_MUTEX_INITIALIZER,
			 .cv = PTHREAD_COND_INITIALIZER};
	struct blocker b = {.m = &h.m};
	pthread_t t[W], bt;
	long before[W];
	int woke = 0, allowed = under_lock ? 0 : 1;

	if (herd)
		make_herd(&h);
	for (int i = 0; i < W; i++)
		pthread_create(&t[i], NULL, herd_waiter, &h);
	for (;;) {
		pthread_mutex_lock(&h.m);
		if (h.waiting == W)
			break;
		pthread_mutex_unlock(&h.m);
		sched_yield();
	}
	h.go = 1;
	pthread_mutex_unlock(&h.m);
	if (under_lock) {
		pthread_mutex_lock(&h.m);
	} else {
		pthread_create(&bt, NULL, block_thread, &b);
		while (!__atomic_load_n(&b.state, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	for (int i = 0; i < W; i++) {
		wait_asleep(h.tids[i]);
		before[i] = task_vol_switches(h.tids[i]);
	}
	pthread_cond_broadcast(&h.cv);
	usleep(20000);
	for (int i = 0; i < W; i++)
		woke += task_vol_switches(h.tids[i]) != before[i];
	if (under_lock) {
		pthread_mutex_unlock(&h.m);
	} else {
		__atomic_store_n(&b.state, 2, __ATOMIC_RELEASE);
		pthread_join(bt, NULL);
	}
	for (int i = 0; i < W; i++)
		pthread_join(t[i], NULL);
	CHECK(woke <= allowed, "%s: %d of %d waiters ran while %s held the "
	      "mutex (at most %d expected)", herd ? "herd" : "first broadcast",
	      woke, W, under_lock ? "the broadcaster" : "another thread",
	      allowed);
	printf("broadcast %s (%s): %d of %d waiters woke while the mutex was "
	       "held\n", under_lock ? "under the mutex" : "by a non-holder",
	       herd ? "herd" : "first broadcast", woke, W);
}

/* ------------------------- a private condvar used from two processes */

/* PTS pthread_cond_init/1-3: a private condvar in MAP_SHARED memory, a
   thread of a child process waiting on it, the parent signalling it.
   Undefined in POSIX, but it must not crash: the parent cannot follow
   the child's waiter records (they are on the child's stacks), so its
   signal and broadcast reach nobody (as glibc's private futex wake),
   destroy says EBUSY and a wait says EINVAL; the child's own signal
   still wakes its waiter. */
struct xproc {
	pthread_mutex_t m; /* process-shared */
	pthread_cond_t c;  /* process-private */
	sem_t go;	   /* process-shared */
	int waiting, done;
};

static void *xproc_waiter(void *p)
{
	struct xproc *x = p;

	pthread_mutex_lock(&x->m);
	x->waiting = 1;
	while (!x->done)
		if (pthread_cond_wait(&x->c, &x->m))
			break;
	pthread_mutex_unlock(&x->m);
	return NULL;
}

static int xproc_child(struct xproc *x)
{
	pthread_t t;

	if (pthread_create(&t, NULL, xproc_waiter, x))
		return 3;
	while (sem_wait(&x->go))
		;
	pthread_mutex_lock(&x->m);
	pthread_cond_signal(&x->c);
	pthread_mutex_unlock(&x->m);
	pthread_join(t, NULL);
	return x->done == 1 ? 0 : 4;
}

static void test_foreign_process(void)
{
	struct xproc *x = mmap(NULL, sizeof *x, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t ma;
	int linked = 0, status = 0;
	pid_t pid;
	long end;

	CHECK(x != MAP_FAILED, "mmap");
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_mutex_init(&x->m, &ma), 0);
	CHECK_ERR(pthread_cond_init(&x->c, NULL), 0);
	CHECK(sem_init(&x->go, 1, 0) == 0, "sem_init");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(xproc_child(x));
	/* The waiter sets `waiting` under the mutex and releases it only
	   inside the wait, after linking itself. */
	end = mono_ns() + 10000000000L;
	while (!linked && mono_ns() < end) {
		pthread_mutex_lock(&x->m);
		linked = x->waiting;
		if (!linked)
			pthread_mutex_unlock(&x->m);
		else
			break;
		sched_yield();
	}
	CHECK(linked, "the child's waiter never waited");
	CHECK_ERR(pthread_cond_signal(&x->c), 0);
	CHECK_ERR(pthread_cond_broadcast(&x->c), 0);
	if (!glibc_mode) {
		/* glibc's destroy would wait for the other process's waiter
		   and its wait would sleep until the deadline. */
		struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000L);
		CHECK_ERR(pthread_cond_destroy(&x->c), EBUSY);
		CHECK_ERR(pthread_cond_timedwait(&x->c, &x->m, &ts), EINVAL);
	}
	x->done = 1;
	pthread_mutex_unlock(&x->m);
	CHECK(sem_post(&x->go) == 0, "sem_post");
	end = mono_ns() + 10000000000L;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (mono_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		sched_yield();
	}
	CHECK(WIFEXITED(status), "child status %#x", status);
	CHECK_EQ(WEXITSTATUS(status), 0);
	/* The child's waiter left: the condvar is free again here. */
	CHECK_ERR(pthread_cond_destroy(&x->c), 0);
	munmap(x, sizeof *x);
}

/* ------------- process-shared: destroy after broadcast, memory reused */

/* PTS pthread_cond_destroy/2-1: broadcast, destroy, memset the condvar to
   0 and init it again while woken waiters may not have gone to sleep
   yet.  A waiter that read the sequence word before the broadcast must
   not find that value back in it afterwards, or it sleeps forever. */
struct reuse {
	pthread_mutex_t m;
	pthread_cond_t c;
	int count, pred;
};

static void *reuse_waiter(void *p)
{
	struct reuse *r = p;

	pthread_mutex_lock(&r->m);
	r->count++;
	while (!r->pred)
		if (pthread_cond_wait(&r->c, &r->m))
			break;
	pthread_mutex_unlock(&r->m);
	return NULL;
}

static void test_pshared_reuse(void)
{
	static struct reuse r = {.m = PTHREAD_MUTEX_INITIALIZER};
	pthread_condattr_t ca;
	long end = mono_ns() + 2000000000L;
	int rounds = 0;

	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	if (!glibc_mode) {
		/* The sequence word (offset 24, cond.h) never starts at the
		   0 a reused, zeroed condvar would hold, nor at the value a
		   previous init left. */
		unsigned first, *seq = (unsigned *)((char *)&r.c + 24);
		CHECK_ERR(pthread_cond_init(&r.c, &ca), 0);
		first = *seq;
		CHECK(first != 0, "seq starts at 0");
		memset(&r.c, 0, sizeof r.c);
		CHECK_ERR(pthread_cond_init(&r.c, &ca), 0);
		CHECK(*seq != 0 && *seq != first, "seq %u after %u", *seq, first);
	}
	for (; rounds < 300 && mono_ns() < end; rounds++) {
		pthread_t t[4];
		CHECK_ERR(pthread_cond_init(&r.c, &ca), 0);
		r.count = r.pred = 0;
		for (int i = 0; i < 4; i++)
			CHECK_ERR(pthread_create(&t[i], NULL, reuse_waiter, &r), 0);
		pthread_mutex_lock(&r.m);
		while (r.count < 4) {
			pthread_mutex_unlock(&r.m);
			sched_yield();
			pthread_mutex_lock(&r.m);
		}
		r.pred = 1;
		CHECK_ERR(pthread_cond_broadcast(&r.c), 0);
		pthread_mutex_unlock(&r.m);
		CHECK_ERR(pthread_cond_destroy(&r.c), 0);
		memset(&r.c, 0, sizeof r.c); /* reuse the memory */
		CHECK_ERR(pthread_cond_init(&r.c, &ca), 0);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL); /* a stranded waiter hangs here */
	}
	printf("pshared destroy-and-reuse: %d rounds\n", rounds);
}

int main(void)
{
	glibc_mode = getenv("WEFT_TEST_GLIBC") != NULL;
	if (!glibc_mode) {
		WEFT_REQUIRE();
		REQUIRE_SERVED(pthread_cond_init);
		REQUIRE_SERVED(pthread_cond_destroy);
		REQUIRE_SERVED(pthread_cond_signal);
		REQUIRE_SERVED(pthread_cond_broadcast);
		REQUIRE_SERVED(pthread_cond_wait);
		REQUIRE_SERVED(pthread_cond_timedwait);
		REQUIRE_SERVED(pthread_cond_clockwait);
		REQUIRE_SERVED(pthread_condattr_init);
		REQUIRE_SERVED(pthread_condattr_destroy);
		REQUIRE_SERVED(pthread_condattr_setclock);
		REQUIRE_SERVED(pthread_condattr_getclock);
		REQUIRE_SERVED(pthread_condattr_setpshared);
		REQUIRE_SERVED(pthread_condattr_getpshared);
		REQUIRE_SERVED(pthread_mutex_lock);
	}
	test_basics();
	test_recursive();
	test_producer_consumer();
	test_storm();
	test_broadcast_storm();
	test_destroy_after_broadcast();
	test_broadcast_sizes();
	test_cancel();
	test_no_herd(1, 0);
	test_no_herd(0, 0);
	test_no_herd(1, 1);
	test_no_herd(0, 1);
	test_foreign_process();
	test_pshared_reuse();
	TEST_DONE();
}
