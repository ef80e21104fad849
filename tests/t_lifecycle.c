/* Thread life cycle: return values of pthread_create/join/detach/self/
   equal/exit, results passed by return and by pthread_exit, identity of
   pthread_self, 10,000 sequential create/join, 1,000 threads alive at
   once. */
#include "harness.h"

#include <stdint.h>

/* ---------------------------------------------------------------- results */

static void *ret_arg_times_3(void *arg)
{
	CHECK_WEFT_THREAD();
	return (void *)((uintptr_t)arg * 3);
}

/* pthread_exit from two calls down, not from the start routine. */
static __attribute__((noinline)) void exit_inner(uintptr_t v)
{
	pthread_exit((void *)(v + 1000));
}

static __attribute__((noinline)) int exit_outer(uintptr_t v)
{
	volatile int pad[16] = {0};
	exit_inner(v + (uintptr_t)pad[3]);
	return pad[0];
}

static void *exit_via_pthread_exit(void *arg)
{
	CHECK_WEFT_THREAD();
	exit_outer((uintptr_t)arg);
	FAIL("pthread_exit returned");
	return (void *)1;
}

/* ------------------------------------------------------------- identity */

struct ident {
	pthread_barrier_t *bar;
	pthread_t self1, self2;
};

static void *record_self(void *arg)
{
	struct ident *id = arg;

	CHECK_WEFT_THREAD();
	id->self1 = pthread_self();
	pthread_barrier_wait(id->bar); /* both threads alive together */
	id->self2 = pthread_self();
	CHECK(pthread_equal(id->self1, id->self2),
	      "pthread_self changed within one thread");
	return NULL;
}

/* -------------------------------------------------------------- detach */

static pthread_mutex_t det_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t det_cv = PTHREAD_COND_INITIALIZER;
static int det_go, det_done;

static void *detached_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&det_mu);
	while (!det_go)
		pthread_cond_wait(&det_cv, &det_mu);
	det_done++;
	pthread_cond_broadcast(&det_cv);
	pthread_mutex_unlock(&det_mu);
	return NULL;
}

/* ------------------------------------------------------------ 1000 alive */

#define ALIVE 1000
static pthread_barrier_t alive_bar;
static int alive_count;

static void *alive_worker(void *arg)
{
	CHECK_WEFT_THREAD();
	__atomic_fetch_add(&alive_count, 1, __ATOMIC_SEQ_CST);
	pthread_barrier_wait(&alive_bar);
	/* Nobody passes the barrier before all ALIVE threads and main
	   arrived, so every thread must see the full count here. */
	int seen = __atomic_load_n(&alive_count, __ATOMIC_SEQ_CST);
	if (seen != ALIVE)
		FAIL("after the barrier: expected %d threads counted, got %d",
		     ALIVE, seen);
	return (void *)((uintptr_t)arg ^ 0x5a5a);
}

int main(void)
{
	WEFT_REQUIRE();

	/* Result by return. */
	pthread_t t;
	void *res = (void *)0xdead;
	CHECK_ERR(pthread_create(&t, NULL, ret_arg_times_3, (void *)14), 0);
	CHECK_ERR(pthread_join(t, &res), 0);
	CHECK_EQ((uintptr_t)res, 42);

	/* Result by pthread_exit from a nested call. */
	res = (void *)0xdead;
	CHECK_ERR(pthread_create(&t, NULL, exit_via_pthread_exit, (void *)7), 0);
	CHECK_ERR(pthread_join(t, &res), 0);
	CHECK_EQ((uintptr_t)res, 1007);

	/* Join with a NULL result pointer. */
	CHECK_ERR(pthread_create(&t, NULL, ret_arg_times_3, (void *)1), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);

	/* pthread_self / pthread_equal. */
	pthread_t me = pthread_self();
	CHECK(pthread_equal(me, pthread_self()), "main: pthread_self unstable");
	CHECK(pthread_equal(me, me) != 0, "pthread_equal(x, x) is false");

	pthread_barrier_t bar;
	struct ident a = {.bar = &bar}, b = {.bar = &bar};
	pthread_t ta, tb;
	CHECK_ERR(pthread_barrier_init(&bar, NULL, 2), 0);
	CHECK_ERR(pthread_create(&ta, NULL, record_self, &a), 0);
	CHECK_ERR(pthread_create(&tb, NULL, record_self, &b), 0);
	CHECK_ERR(pthread_join(ta, NULL), 0);
	CHECK_ERR(pthread_join(tb, NULL), 0);
	pthread_barrier_destroy(&bar);
	CHECK(pthread_equal(ta, a.self1), "pthread_self in thread A differs "
	      "from the handle pthread_create returned");
	CHECK(pthread_equal(tb, b.self1), "pthread_self in thread B differs "
	      "from the handle pthread_create returned");
	CHECK(!pthread_equal(a.self1, b.self1),
	      "two threads alive at once have equal pthread_self (%#lx)",
	      (unsigned long)a.self1);
	CHECK(!pthread_equal(a.self1, me), "thread A's self equals main's");
	CHECK(!pthread_equal(b.self1, me), "thread B's self equals main's");

	/* pthread_detach on a running thread returns 0; the thread still
	   runs to completion afterwards. */
	pthread_t td[4];
	for (int i = 0; i < 4; i++) {
		CHECK_ERR(pthread_create(&td[i], NULL, detached_worker, NULL), 0);
		CHECK_ERR(pthread_detach(td[i]), 0);
	}
	pthread_mutex_lock(&det_mu);
	det_go = 1;
	pthread_cond_broadcast(&det_cv);
	while (det_done < 4)
		pthread_cond_wait(&det_cv, &det_mu);
	pthread_mutex_unlock(&det_mu);
	CHECK_EQ(det_done, 4);

	/* 10,000 sequential create/join, every result checked. */
	int bad = 0;
	for (uintptr_t i = 0; i < 10000; i++) {
		pthread_t th;
		void *r = NULL;
		int e = pthread_create(&th, NULL, ret_arg_times_3, (void *)i);
		if (e) {
			FAIL("create #%lu: expected 0, got %d (%s)",
			     (unsigned long)i, e, strerror(e));
			break;
		}
		e = pthread_join(th, &r);
		if (e || (uintptr_t)r != i * 3) {
			if (bad++ < 5)
				FAIL("join #%lu: expected 0 and result %lu, got "
				     "%d and %lu", (unsigned long)i,
				     (unsigned long)(i * 3), e,
				     (unsigned long)(uintptr_t)r);
		}
	}
	CHECK_EQ(bad, 0);

	/* 1,000 threads alive at once. */
	static pthread_t many[ALIVE];
	int created = 0;
	CHECK_ERR(pthread_barrier_init(&alive_bar, NULL, ALIVE + 1), 0);
	for (int i = 0; i < ALIVE; i++) {
		int e = pthread_create(&many[i], NULL, alive_worker,
				       (void *)(uintptr_t)i);
		if (e) {
			/* Cannot continue: the barrier would never open. */
			FAIL("creating thread %d of %d alive at once: got %d (%s)",
			     i, ALIVE, e, strerror(e));
			exit(1);
		}
		created++;
	}
	CHECK_EQ(created, ALIVE);
	pthread_barrier_wait(&alive_bar);
	CHECK_EQ(__atomic_load_n(&alive_count, __ATOMIC_SEQ_CST), ALIVE);
	bad = 0;
	for (int i = 0; i < ALIVE; i++) {
		void *r = NULL;
		int e = pthread_join(many[i], &r);
		if (e || (uintptr_t)r != ((uintptr_t)i ^ 0x5a5a)) {
			if (bad++ < 5)
				FAIL("joining alive thread %d: expected 0 and %lu, "
				     "got %d and %lu", i,
				     (unsigned long)((uintptr_t)i ^ 0x5a5a), e,
				     (unsigned long)(uintptr_t)r);
		}
	}
	CHECK_EQ(bad, 0);
	pthread_barrier_destroy(&alive_bar);

	struct weft_stats st;
	CHECK_EQ(weft_get_stats(&st), 0);
	/* 3 + 2 + 4 + 10000 + 1000 threads made by pthread_create. */
	CHECK_EQ(st.threads_created, 3 + 2 + 4 + 10000 + ALIVE);
	printf("threads_created=%lu stacks_mapped=%lu stacks_reused=%lu\n",
	       st.threads_created, st.stacks_mapped, st.stacks_reused);
	TEST_DONE();
}
