/* Error returns: EINVAL for bad stack attributes, EDEADLK for joining
   oneself, EINVAL for joining/detaching a detached thread, ESRCH for
   stale handles (also after their memory was reused), EAGAIN when the
   kernel refuses memory (RLIMIT_AS) or tasks (RLIMIT_NPROC). */
#include "harness.h"
#include "child.h"

#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#define SMALL_STACK (64 * 1024)

static void test_attr_einval(void)
{
	pthread_attr_t a;
	size_t sz = 0;
	void *addr = NULL;
	size_t min = PTHREAD_STACK_MIN;
	void *buf = NULL;

	CHECK_ERR(pthread_attr_init(&a), 0);
	CHECK_ERR(pthread_attr_setstacksize(&a, min - 1), EINVAL);
	CHECK_ERR(pthread_attr_setstacksize(&a, 0), EINVAL);
	CHECK_ERR(pthread_attr_setstacksize(&a, 4096), EINVAL);
	CHECK_ERR(pthread_attr_setstacksize(&a, min), 0);
	CHECK_ERR(pthread_attr_getstacksize(&a, &sz), 0);
	CHECK_EQ(sz, min);
	CHECK_ERR(pthread_attr_setdetachstate(&a, 42), EINVAL);

	REQUIRE(posix_memalign(&buf, 65536, 4 * SMALL_STACK) == 0, "posix_memalign");
	/* Any address, as glibc 2.36 (t_user_stack runs threads there). */
	CHECK_ERR(pthread_attr_setstack(&a, (char *)buf + 1, SMALL_STACK), 0);
	CHECK_ERR(pthread_attr_setstack(&a, buf, min - 1), EINVAL);
	CHECK_ERR(pthread_attr_setstack(&a, buf, 1024), EINVAL);
	CHECK_ERR(pthread_attr_setstack(&a, buf, SMALL_STACK), 0);
	CHECK_ERR(pthread_attr_getstack(&a, &addr, &sz), 0);
	CHECK(addr == buf, "getstack address %p, expected %p", addr, buf);
	CHECK_EQ(sz, SMALL_STACK);
	pthread_attr_destroy(&a);
	free(buf);
}

/* -------------------------------------------------------------- EDEADLK */

static void *join_self(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	return (void *)(intptr_t)pthread_join(pthread_self(), NULL);
}

/* ------------------------------------------------------- detached: EINVAL */

static pthread_barrier_t bar2;

static void *wait_on_barrier(void *arg)
{
	CHECK_WEFT_THREAD();
	pthread_barrier_wait(&bar2);
	return arg;
}

static void test_detached_einval(void)
{
	pthread_t t;

	CHECK_ERR(pthread_barrier_init(&bar2, NULL, 2), 0);
	CHECK_ERR(pthread_create(&t, NULL, wait_on_barrier, NULL), 0);
	CHECK_ERR(pthread_detach(t), 0);
	/* The thread is blocked on the barrier: the handle is valid. */
	CHECK_ERR(pthread_join(t, NULL), EINVAL);
	CHECK_ERR(pthread_detach(t), EINVAL);
	pthread_barrier_wait(&bar2);
	/* bar2 is not destroyed: the detached thread may still be inside
	   pthread_barrier_wait. */
}

/* ----------------------------------------------------------------- ESRCH */

static void *ret_arg(void *arg)
{
	return arg;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int release_live;

static void *live_until_released(void *arg)
{
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&mu);
	while (!release_live)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return arg;
}

static void test_stale_esrch(void)
{
	enum { NSTALE = 50, NLIVE = 16 };
	pthread_t stale[NSTALE], live[NLIVE];

	for (int i = 0; i < NSTALE; i++) {
		CHECK_ERR(pthread_create(&stale[i], NULL, ret_arg, NULL), 0);
		CHECK_ERR(pthread_join(stale[i], NULL), 0);
	}
	CHECK_ERR(pthread_join(stale[0], NULL), ESRCH);
	CHECK_ERR(pthread_detach(stale[0]), ESRCH);

	/* Many more threads: descriptors, stacks and registry slots are
	   reused; the old handles must stay stale. */
	for (int i = 0; i < 2000; i++) {
		pthread_t t;
		void *r = NULL;
		CHECK_ERR(pthread_create(&t, NULL, ret_arg, (void *)(intptr_t)i), 0);
		CHECK_ERR(pthread_join(t, &r), 0);
		CHECK_EQ((intptr_t)r, i);
	}
	/* Live threads now occupy reused memory while the stale handles
	   are used. */
	for (int i = 0; i < NLIVE; i++)
		CHECK_ERR(pthread_create(&live[i], NULL, live_until_released,
					 (void *)(intptr_t)(i + 1)), 0);
	int bad_join = 0, bad_detach = 0;
	for (int i = 0; i < NSTALE; i++) {
		int e = pthread_join(stale[i], NULL);
		if (e != ESRCH && bad_join++ < 3)
			FAIL("pthread_join(stale handle %d): expected ESRCH, got %d (%s)",
			     i, e, strerror(e));
		e = pthread_detach(stale[i]);
		if (e != ESRCH && bad_detach++ < 3)
			FAIL("pthread_detach(stale handle %d): expected ESRCH, got %d "
			     "(%s)", i, e, strerror(e));
	}
	pthread_mutex_lock(&mu);
	release_live = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	/* Each live thread is still joinable (not stolen by a stale join). */
	for (int i = 0; i < NLIVE; i++) {
		void *r = NULL;
		CHECK_ERR(pthread_join(live[i], &r), 0);
		CHECK_EQ((intptr_t)r, i + 1);
	}
}

/* ------------------------------------------------------ EAGAIN: RLIMIT_AS */

static void *small_worker(void *arg)
{
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		return (void *)-1;
	volatile char buf[8192];
	for (size_t i = 0; i < sizeof buf; i += 512)
		buf[i] = (char)(i / 512);
	return (void *)((intptr_t)arg * 2 + buf[512]); /* buf[512] == 1 */
}

static int rlimit_as_child(int wfd, void *arg)
{
	pthread_attr_t big, small;
	pthread_t t;
	struct rlimit old, lim;
	(void)wfd;
	(void)arg;

	harness_failures = 0; /* count this child's failures only */
	CHECK_ERR(pthread_attr_init(&big), 0);
	CHECK_ERR(pthread_attr_setstacksize(&big, 64 << 20), 0);
	CHECK_ERR(pthread_attr_init(&small), 0);
	CHECK_ERR(pthread_attr_setstacksize(&small, SMALL_STACK), 0);
	long vm = proc_status_kib("VmSize");
	REQUIRE(vm > 0, "VmSize unreadable");
	REQUIRE(getrlimit(RLIMIT_AS, &old) == 0, "getrlimit");
	lim = old;
	lim.rlim_cur = (rlim_t)vm * 1024 + (4 << 20);
	REQUIRE(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS): %s",
		strerror(errno));
	for (int i = 0; i < 3; i++)
		CHECK_ERR(pthread_create(&t, &big, small_worker, NULL), EAGAIN);
	/* The process still works: a small thread fits. */
	void *r = NULL;
	int e = pthread_create(&t, &small, small_worker, (void *)21);
	CHECK_ERR(e, 0);
	if (e == 0) {
		CHECK_ERR(pthread_join(t, &r), 0);
		CHECK_EQ((intptr_t)r, 43);
	}
	/* With the limit lifted, the big thread works too. */
	REQUIRE(setrlimit(RLIMIT_AS, &old) == 0, "restoring RLIMIT_AS");
	e = pthread_create(&t, &big, small_worker, (void *)5);
	CHECK_ERR(e, 0);
	if (e == 0) {
		CHECK_ERR(pthread_join(t, &r), 0);
		CHECK_EQ((intptr_t)r, 11);
	}
	fflush(stderr);
	return harness_failures ? 1 : 0;
}

/* --------------------------------------------------- EAGAIN: RLIMIT_NPROC */

static int nproc_child(int wfd, void *arg)
{
	enum { LIMIT = 8, MAXTRY = 64 };
	pthread_t t[MAXTRY];
	pthread_attr_t small;
	int created = 0, err = 0;
	char msg[160];
	(void)arg;

	harness_failures = 0; /* count this child's failures only */
	if (getuid() == 0) {
		/* Root is exempt from RLIMIT_NPROC: become nobody. */
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0) {
			snprintf(msg, sizeof msg,
				 "SKIP: cannot become uid 65534 (%s)\n", strerror(errno));
			put(wfd, msg);
			return 0;
		}
	}
	struct rlimit lim = {LIMIT, LIMIT};
	REQUIRE(setrlimit(RLIMIT_NPROC, &lim) == 0, "setrlimit(RLIMIT_NPROC): %s",
		strerror(errno));
	CHECK_ERR(pthread_attr_init(&small), 0);
	CHECK_ERR(pthread_attr_setstacksize(&small, SMALL_STACK), 0);
	while (created < MAXTRY) {
		err = pthread_create(&t[created], &small, live_until_released,
				     (void *)(intptr_t)(created + 1));
		if (err)
			break;
		created++;
	}
	snprintf(msg, sizeof msg, "created %d threads under RLIMIT_NPROC=%d, then "
		 "error %d\n", created, LIMIT, err);
	put(wfd, msg);
	CHECK_ERR(err, EAGAIN);
	CHECK(created < LIMIT, "created %d threads with RLIMIT_NPROC %d", created,
	      LIMIT);
	pthread_mutex_lock(&mu);
	release_live = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < created; i++) {
		void *r = NULL;
		CHECK_ERR(pthread_join(t[i], &r), 0);
		CHECK_EQ((intptr_t)r, i + 1);
	}
	fflush(stderr);
	return harness_failures ? 1 : 0;
}

int main(void)
{
	WEFT_REQUIRE();

	test_attr_einval();

	CHECK_ERR(pthread_join(pthread_self(), NULL), EDEADLK);
	pthread_t t;
	void *r = NULL;
	CHECK_ERR(pthread_create(&t, NULL, join_self, NULL), 0);
	CHECK_ERR(pthread_join(t, &r), 0);
	CHECK_ERR((int)(intptr_t)r, EDEADLK);

	test_detached_einval();
	test_stale_esrch();

	struct child_result cr;
	REQUIRE(run_child(rlimit_as_child, NULL, 30000, &cr) == 0, "fork");
	CHECK(!cr.timed_out && WIFEXITED(cr.status) && WEXITSTATUS(cr.status) == 0,
	      "RLIMIT_AS child: expected exit 0, got %s", status_str(&cr));

	release_live = 0; /* the child starts from this value */
	REQUIRE(run_child(nproc_child, NULL, 30000, &cr) == 0, "fork");
	printf("RLIMIT_NPROC child: %s", cr.out);
	CHECK(!cr.timed_out && WIFEXITED(cr.status) && WEXITSTATUS(cr.status) == 0,
	      "RLIMIT_NPROC child: expected exit 0, got %s", status_str(&cr));
	TEST_DONE();
}
