/* fork with weft threads around.
   A: fork from a created thread (not main) while other parent threads
      create/join threads and malloc; the child (one thread: a copy of
      the forking thread) creates and joins 100 threads, which must be
      weft threads, and exits 0.  Repeated, to catch weft's internal
      locks held at fork time.  The parent's threads carry on unaffected.
   B: fork from main with live threads blocked on a condvar; the child
      makes threads again; the parent's threads are then released. */
#include "harness.h"
#include "child.h"

#include <stdint.h>
#include <sys/syscall.h>

#define FORKS_A 20
#define CHILD_THREADS 100

static int stop;			/* parent's busy threads stop */
static int prepare_calls, parent_calls, child_calls;

static void at_prepare(void) { __atomic_fetch_add(&prepare_calls, 1, __ATOMIC_SEQ_CST); }
static void at_parent(void) { __atomic_fetch_add(&parent_calls, 1, __ATOMIC_SEQ_CST); }
static void at_child(void) { child_calls++; }

/* ----------------------------------------------------- parent's busy work */

static void *tiny(void *arg)
{
	return (void *)((uintptr_t)arg + 1);
}

static void *churn_threads(void *arg)
{
	long n = 0;
	(void)arg;
	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && n < 2000000) {
		pthread_t t;
		void *r = NULL;
		int e = pthread_create(&t, NULL, tiny, (void *)(uintptr_t)n);
		if (e) {
			FAIL("parent churn: pthread_create: %d (%s)", e, strerror(e));
			break;
		}
		e = pthread_join(t, &r);
		if (e || (uintptr_t)r != (uintptr_t)n + 1) {
			FAIL("parent churn: join %d result %lu, expected 0 and %lu", e,
			     (unsigned long)(uintptr_t)r, (unsigned long)n + 1);
			break;
		}
		n++;
	}
	return (void *)n;
}

static void *churn_malloc(void *arg)
{
	long n = 0;
	(void)arg;
	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && n < 50000000) {
		char *p = malloc(16 + (n % 2000));
		if (!p) {
			FAIL("parent malloc failed");
			break;
		}
		p[0] = (char)n;
		free(p);
		n++;
	}
	return (void *)n;
}

/* ------------------------------------------------------------ child side */

static void *child_thread(void *arg)
{
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		return (void *)-1;
	char *p = malloc(100);
	if (!p)
		return (void *)-2;
	snprintf(p, 100, "%lu", (unsigned long)(uintptr_t)arg);
	uintptr_t v = strtoul(p, NULL, 10);
	free(p);
	return (void *)(v * 2);
}

/* Creates and joins n threads; returns the number of failures. */
static int child_make_threads(int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *r = NULL;
		int e = pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)i);
		if (e) {
			FAIL("child: pthread_create #%d: %d (%s)", i, e, strerror(e));
			return bad + 1;
		}
		e = pthread_join(t, &r);
		if (e || (intptr_t)r != 2 * i) {
			FAIL("child: thread #%d: join %d, result %ld (expected %d; -1 "
			     "means weft_self_origin() was wrong)", i, e,
			     (long)(intptr_t)r, 2 * i);
			bad++;
		}
	}
	return bad;
}

struct fork_ctx {
	pthread_t self_before; /* pthread_self() of the forking thread */
	int from_main;
};

static int child_scenario(int wfd, void *arg)
{
	struct fork_ctx *c = arg;
	struct weft_stats st;

	(void)wfd;
	harness_failures = 0; /* count this child's failures only */
	CHECK_EQ(child_calls, 1);
	CHECK(pthread_equal(pthread_self(), c->self_before),
	      "child: pthread_self differs from the forking thread's");
	CHECK_EQ(syscall(SYS_gettid), getpid());
	CHECK(weft_active(), "child: weft inactive");
	CHECK_EQ(weft_self_origin(), c->from_main ? WEFT_THREAD_MAIN
						  : WEFT_THREAD_CREATED);
	CHECK_EQ(weft_get_stats(&st), 0);
	CHECK_EQ(st.threads_live, 1);	 /* only the forking thread */
	CHECK_EQ(st.threads_created, 0); /* counters restart in a child */
	child_make_threads(CHILD_THREADS);
	CHECK_EQ(weft_get_stats(&st), 0);
	CHECK_EQ(st.threads_created, CHILD_THREADS);
	CHECK_EQ(st.threads_live, 1);
	fflush(stderr);
	exit(harness_failures ? 1 : 0);
}

static void *forker(void *arg)
{
	int *forks_ok = arg;
	struct fork_ctx c = {.self_before = pthread_self(), .from_main = 0};
	struct child_result r;

	CHECK_WEFT_THREAD();
	for (int i = 0; i < FORKS_A; i++) {
		if (run_child(child_scenario, &c, 30000, &r) != 0) {
			FAIL("fork from a thread failed: %s", strerror(errno));
			break;
		}
		if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
			FAIL("fork #%d from a thread: expected the child to exit 0, "
			     "got %s", i, status_str(&r));
			break;
		}
		(*forks_ok)++;
	}
	return NULL;
}

/* ------------------------------------------------------------ scenario B */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released, waiting;

static void *sleeper(void *arg)
{
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&mu);
	waiting++;
	pthread_cond_broadcast(&cv);
	while (!released)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return (void *)((uintptr_t)arg + 100);
}

int main(void)
{
	WEFT_REQUIRE();
	CHECK_ERR(pthread_atfork(at_prepare, at_parent, at_child), 0);

	/* A */
	pthread_t ct, cm, fk;
	int forks_ok = 0;
	CHECK_ERR(pthread_create(&ct, NULL, churn_threads, NULL), 0);
	CHECK_ERR(pthread_create(&cm, NULL, churn_malloc, NULL), 0);
	CHECK_ERR(pthread_create(&fk, NULL, forker, &forks_ok), 0);
	CHECK_ERR(pthread_join(fk, NULL), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	void *n_threads = NULL, *n_mallocs = NULL;
	CHECK_ERR(pthread_join(ct, &n_threads), 0);
	CHECK_ERR(pthread_join(cm, &n_mallocs), 0);
	CHECK_EQ(forks_ok, FORKS_A);
	CHECK((long)n_threads > 0, "parent's churn thread made no threads");
	CHECK((long)n_mallocs > 0, "parent's malloc thread did nothing");
	CHECK_EQ(prepare_calls, FORKS_A);
	CHECK_EQ(parent_calls, FORKS_A);
	CHECK_EQ(child_calls, 0); /* the child handler ran in children only */
	printf("A: %d forks; meanwhile the parent made %ld threads and %ld "
	       "mallocs\n", forks_ok, (long)n_threads, (long)n_mallocs);

	/* B */
	enum { NS = 4 };
	pthread_t s[NS];
	for (int i = 0; i < NS; i++)
		CHECK_ERR(pthread_create(&s[i], NULL, sleeper, (void *)(uintptr_t)i), 0);
	pthread_mutex_lock(&mu);
	while (waiting < NS)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	struct fork_ctx c = {.self_before = pthread_self(), .from_main = 1};
	struct child_result r;
	REQUIRE(run_child(child_scenario, &c, 30000, &r) == 0, "fork from main failed");
	CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "fork from main with live threads: expected the child to exit 0, "
	      "got %s", status_str(&r));
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < NS; i++) {
		void *v = NULL;
		CHECK_ERR(pthread_join(s[i], &v), 0);
		CHECK_EQ((uintptr_t)v, (uintptr_t)i + 100);
	}
	CHECK_EQ(prepare_calls, FORKS_A + 1);
	CHECK_EQ(parent_calls, FORKS_A + 1);
	TEST_DONE();
}
