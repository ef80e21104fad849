/* Thread attributes round-trip through weft's setters and getters, with
   glibc's error rules; the affinity and signal-mask extension is in
   glibc's layout (glibc's own getters read what weft stored and the
   reverse), pthread_attr_destroy frees it, and pthread_create honours
   both (the thread starts on the allowed CPU, with the given mask). */
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include "harness.h"

typedef int (*getaff_fn)(const pthread_attr_t *, size_t, cpu_set_t *);
typedef int (*setmask_fn)(pthread_attr_t *, const sigset_t *);
typedef int (*destroy_fn)(pthread_attr_t *);

/* glibc's own definition of a function weft also exports. */
static void *glibc_fn(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.32",
					       "GLIBC_2.2.5"};
	void *p = NULL;

	for (int i = 0; libc && !p && i < 3; i++)
		p = dlvsym(libc, name, versions[i]);
	REQUIRE(p != NULL, "glibc's %s not found", name);
	return p;
}

static void defaults(void)
{
	pthread_attr_t a;
	struct sched_param p = {.sched_priority = -1};
	cpu_set_t set;
	sigset_t m;
	size_t sz;
	void *addr;
	int v;

	CHECK_ERR(pthread_attr_init(&a), 0);
	pthread_attr_getdetachstate(&a, &v);
	CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
	pthread_attr_getguardsize(&a, &sz);
	CHECK_EQ(sz, (size_t)sysconf(_SC_PAGESIZE));
	pthread_attr_getstacksize(&a, &sz);
	CHECK(sz >= (size_t)PTHREAD_STACK_MIN, "default stack size %zu", sz);
	pthread_attr_getinheritsched(&a, &v);
	CHECK_EQ(v, PTHREAD_INHERIT_SCHED);
	pthread_attr_getschedpolicy(&a, &v);
	CHECK_EQ(v, SCHED_OTHER);
	pthread_attr_getschedparam(&a, &p);
	CHECK_EQ(p.sched_priority, 0);
	pthread_attr_getscope(&a, &v);
	CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
	pthread_attr_getstack(&a, &addr, &sz);
	CHECK_EQ(sz, 0);
	/* No affinity: every CPU; no mask: the "none" answer. */
	memset(&set, 0, sizeof set);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, sizeof set, &set), 0);
	CHECK_EQ(CPU_COUNT(&set), CPU_SETSIZE);
	sigaddset(&m, SIGUSR1);
	CHECK_ERR(pthread_attr_getsigmask_np(&a, &m), PTHREAD_ATTR_NO_SIGMASK_NP);
	CHECK_EQ(sigismember(&m, SIGUSR1), 0);
	pthread_attr_destroy(&a);
}

static void setters_and_errors(void)
{
	pthread_attr_t a;
	struct sched_param p;
	static char stack[1 << 17] __attribute__((aligned(64)));
	size_t sz;
	void *addr;
	int v;

	pthread_attr_init(&a);
	CHECK_ERR(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	pthread_attr_getdetachstate(&a, &v);
	CHECK_EQ(v, PTHREAD_CREATE_DETACHED);
	CHECK_ERR(pthread_attr_setdetachstate(&a, 7), EINVAL);

	CHECK_ERR(pthread_attr_setguardsize(&a, 12345), 0);
	pthread_attr_getguardsize(&a, &sz);
	CHECK_EQ(sz, 12345); /* as given, not rounded (POSIX) */

	CHECK_ERR(pthread_attr_setstacksize(&a, 1 << 20), 0);
	pthread_attr_getstacksize(&a, &sz);
	CHECK_EQ(sz, 1 << 20);
	CHECK_ERR(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
	pthread_attr_getstacksize(&a, &sz);
	CHECK_EQ(sz, 1 << 20); /* unchanged by the refused call */

	CHECK_ERR(pthread_attr_setstack(&a, stack, sizeof stack), 0);
	pthread_attr_getstack(&a, &addr, &sz);
	CHECK(addr == stack, "getstack address %p, expected %p", addr, (void *)stack);
	CHECK_EQ(sz, sizeof stack);
	CHECK_ERR(pthread_attr_setstack(&a, stack, PTHREAD_STACK_MIN - 16), EINVAL);

	CHECK_ERR(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
	pthread_attr_getinheritsched(&a, &v);
	CHECK_EQ(v, PTHREAD_EXPLICIT_SCHED);
	CHECK_ERR(pthread_attr_setinheritsched(&a, 99), EINVAL);

	CHECK_ERR(pthread_attr_setschedpolicy(&a, SCHED_FIFO), 0);
	pthread_attr_getschedpolicy(&a, &v);
	CHECK_EQ(v, SCHED_FIFO);
	CHECK_ERR(pthread_attr_setschedpolicy(&a, 4242), EINVAL);
	pthread_attr_getschedpolicy(&a, &v);
	CHECK_EQ(v, SCHED_FIFO);
	p.sched_priority = 42;
	CHECK_ERR(pthread_attr_setschedparam(&a, &p), 0);
	p.sched_priority = 0;
	pthread_attr_getschedparam(&a, &p);
	CHECK_EQ(p.sched_priority, 42);
	/* The priority must fit the policy in the attribute. */
	p.sched_priority = 100;
	CHECK_ERR(pthread_attr_setschedparam(&a, &p), EINVAL);
	p.sched_priority = 0;
	CHECK_ERR(pthread_attr_setschedparam(&a, &p), EINVAL); /* FIFO: 1..99 */
	CHECK_ERR(pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
	p.sched_priority = 1;
	CHECK_ERR(pthread_attr_setschedparam(&a, &p), EINVAL); /* OTHER: 0 */
	pthread_attr_getschedparam(&a, &p);
	CHECK_EQ(p.sched_priority, 42);

	CHECK_ERR(pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS), ENOTSUP);
	CHECK_ERR(pthread_attr_setscope(&a, 77), EINVAL);
	CHECK_ERR(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM), 0);
	pthread_attr_getscope(&a, &v);
	CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
	pthread_attr_destroy(&a);
}

static void extension(void)
{
	getaff_fn glibc_getaff = (getaff_fn)glibc_fn("pthread_attr_getaffinity_np");
	setmask_fn glibc_setmask = (setmask_fn)glibc_fn("pthread_attr_setsigmask_np");
	destroy_fn glibc_destroy = (destroy_fn)glibc_fn("pthread_attr_destroy");
	pthread_attr_t a;
	cpu_set_t set, got;
	cpu_set_t *big;
	size_t bigsize = CPU_ALLOC_SIZE(4096);
	sigset_t m, mg;

	pthread_attr_init(&a);
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	CPU_SET(5, &set);
	CHECK_ERR(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	memset(&got, 0xff, sizeof got);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, sizeof got, &got), 0);
	CHECK(CPU_EQUAL(&set, &got), "affinity read back differs");
	/* glibc's getter reads weft's extension. */
	memset(&got, 0, sizeof got);
	CHECK_ERR(glibc_getaff(&a, sizeof got, &got), 0);
	CHECK(CPU_EQUAL(&set, &got), "glibc reads a different affinity");
	/* A smaller buffer is fine while the stored bits fit in it... */
	memset(&got, 0xff, sizeof got);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, 8, &got), 0);
	CHECK(CPU_ISSET(1, &got) && CPU_ISSET(5, &got) && CPU_COUNT_S(8, &got) == 2,
	      "8-byte read back wrong");
	/* ...and EINVAL when a stored CPU lies beyond it. */
	big = CPU_ALLOC(4096);
	CPU_ZERO_S(bigsize, big);
	CPU_SET_S(4000, bigsize, big);
	CHECK_ERR(pthread_attr_setaffinity_np(&a, bigsize, big), 0);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, sizeof got, &got), EINVAL);
	/* A larger buffer gets zeros past the stored set. */
	CPU_SET(0, &set);
	CHECK_ERR(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	memset(big, 0xff, bigsize);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, bigsize, big), 0);
	CHECK_EQ(CPU_COUNT_S(bigsize, big), 3);
	CPU_FREE(big);
	/* NULL or size 0 removes it: every CPU again. */
	CHECK_ERR(pthread_attr_setaffinity_np(&a, 0, &set), 0);
	CHECK_ERR(pthread_attr_getaffinity_np(&a, sizeof got, &got), 0);
	CHECK_EQ(CPU_COUNT(&got), CPU_SETSIZE);

	/* Signal mask: internal signals 32 and 33 are filtered out. */
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	/* (glibc's sigaddset refuses them: set the bits directly) */
	((unsigned long *)&m)[0] |= 3UL << 31;
	CHECK_ERR(pthread_attr_setsigmask_np(&a, &m), 0);
	CHECK_ERR(pthread_attr_getsigmask_np(&a, &mg), 0);
	CHECK_EQ(sigismember(&mg, SIGUSR2), 1);
	CHECK_EQ(((unsigned long *)&mg)[0] >> 31 & 3, 0);
	CHECK_ERR(pthread_attr_setsigmask_np(&a, NULL), 0);
	CHECK_ERR(pthread_attr_getsigmask_np(&a, &mg), PTHREAD_ATTR_NO_SIGMASK_NP);
	/* weft's getter reads what glibc's setter stored. */
	sigemptyset(&m);
	sigaddset(&m, SIGWINCH);
	CHECK_ERR(glibc_setmask(&a, &m), 0);
	CHECK_ERR(pthread_attr_getsigmask_np(&a, &mg), 0);
	CHECK_EQ(sigismember(&mg, SIGWINCH), 1);
	/* glibc's destroy frees weft's extension and the reverse (a
	   mismatch would abort in free). */
	CHECK_ERR(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	CHECK_ERR(glibc_destroy(&a), 0);
	pthread_attr_init(&a);
	CHECK_ERR(glibc_setmask(&a, &m), 0);
	CHECK_ERR(pthread_attr_destroy(&a), 0);
}

/* pthread_attr_destroy frees the extension: 200,000 attributes with
   both parts would hold ~40 MB if it did not. */
static void no_leak(void)
{
	cpu_set_t set;
	sigset_t m;
	long before, after;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sigemptyset(&m);
	before = rss_kib();
	for (int i = 0; i < 200000; i++) {
		pthread_attr_t a;

		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
		pthread_attr_setsigmask_np(&a, &m);
		pthread_attr_destroy(&a);
	}
	after = rss_kib();
#ifndef HARNESS_ASAN /* ASan's quarantine keeps freed blocks (256 MB) */
	CHECK(after - before < 4096, "RSS grew by %ld KiB over 200,000 attrs",
	      after - before);
#else
	(void)before;
	(void)after;
#endif
}

struct seen {
	int cpu, ncpus;
	sigset_t mask;
};

static void *report(void *arg)
{
	struct seen *s = arg;
	cpu_set_t set;

	CHECK_WEFT_THREAD();
	s->cpu = sched_getcpu();
	sched_getaffinity(0, sizeof set, &set);
	s->ncpus = CPU_COUNT(&set);
	pthread_sigmask(SIG_SETMASK, NULL, &s->mask);
	return NULL;
}

static void creation_honours_both(void)
{
	int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	pthread_attr_t a;
	cpu_set_t set;
	sigset_t m, mine;
	struct seen s;
	pthread_t t;

	pthread_attr_init(&a);
	CPU_ZERO(&set);
	CPU_SET(last, &set);
	pthread_attr_setaffinity_np(&a, sizeof set, &set);
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigaddset(&m, SIGHUP);
	pthread_attr_setsigmask_np(&a, &m);
	/* The creator's own mask differs: it must not leak through. */
	sigemptyset(&mine);
	sigaddset(&mine, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &mine, NULL);
	memset(&s, 0, sizeof s);
	s.cpu = -1;
	CHECK_ERR(pthread_create(&t, &a, report, &s), 0);
	pthread_join(t, NULL);
	pthread_sigmask(SIG_UNBLOCK, &mine, NULL);
	CHECK_EQ(s.cpu, last);
	CHECK_EQ(s.ncpus, 1);
	CHECK_EQ(sigismember(&s.mask, SIGUSR1), 1);
	CHECK_EQ(sigismember(&s.mask, SIGHUP), 1);
	CHECK_EQ(sigismember(&s.mask, SIGUSR2), 0);
	pthread_attr_destroy(&a);
}

/* pthread_setattr_default_np keeps its own copy of the affinity and
   mask: threads made without attributes get them, and
   pthread_getattr_default_np hands out a copy. */
static void default_extension(void)
{
	int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	pthread_attr_t a, d;
	cpu_set_t set, got;
	sigset_t m, mg;
	struct seen s;
	pthread_t t;

	pthread_attr_init(&a);
	CPU_ZERO(&set);
	CPU_SET(last, &set);
	pthread_attr_setaffinity_np(&a, sizeof set, &set);
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	pthread_attr_setsigmask_np(&a, &m);
	CHECK_ERR(pthread_setattr_default_np(&a), 0);
	pthread_attr_destroy(&a); /* the defaults are a copy */

	CHECK_ERR(pthread_getattr_default_np(&d), 0);
	CHECK_ERR(pthread_attr_getaffinity_np(&d, sizeof got, &got), 0);
	CHECK(CPU_EQUAL(&got, &set), "default affinity read back differs");
	CHECK_ERR(pthread_attr_getsigmask_np(&d, &mg), 0);
	CHECK_EQ(sigismember(&mg, SIGUSR1), 1);
	pthread_attr_destroy(&d);

	memset(&s, 0, sizeof s);
	CHECK_ERR(pthread_create(&t, NULL, report, &s), 0);
	pthread_join(t, NULL);
	CHECK_EQ(s.cpu, last);
	CHECK_EQ(s.ncpus, 1);
	CHECK_EQ(sigismember(&s.mask, SIGUSR1), 1);

	/* Back to plain defaults. */
	pthread_attr_init(&a);
	CHECK_ERR(pthread_setattr_default_np(&a), 0);
	pthread_attr_destroy(&a);
	memset(&s, 0, sizeof s);
	CHECK_ERR(pthread_create(&t, NULL, report, &s), 0);
	pthread_join(t, NULL);
	CHECK_EQ(s.ncpus, (int)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK_EQ(sigismember(&s.mask, SIGUSR1), 0);
	CHECK_ERR(pthread_getattr_default_np(&d), 0);
	CHECK_ERR(pthread_attr_getsigmask_np(&d, &mg), PTHREAD_ATTR_NO_SIGMASK_NP);
	pthread_attr_destroy(&d);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_attr_init);
	REQUIRE_SERVED(pthread_attr_destroy);
	REQUIRE_SERVED(pthread_attr_setdetachstate);
	REQUIRE_SERVED(pthread_attr_getdetachstate);
	REQUIRE_SERVED(pthread_attr_setguardsize);
	REQUIRE_SERVED(pthread_attr_getguardsize);
	REQUIRE_SERVED(pthread_attr_setstacksize);
	REQUIRE_SERVED(pthread_attr_getstacksize);
	REQUIRE_SERVED(pthread_attr_setstack);
	REQUIRE_SERVED(pthread_attr_getstack);
	REQUIRE_SERVED(pthread_attr_setschedpolicy);
	REQUIRE_SERVED(pthread_attr_getschedpolicy);
	REQUIRE_SERVED(pthread_attr_setschedparam);
	REQUIRE_SERVED(pthread_attr_getschedparam);
	REQUIRE_SERVED(pthread_attr_setinheritsched);
	REQUIRE_SERVED(pthread_attr_getinheritsched);
	REQUIRE_SERVED(pthread_attr_setscope);
	REQUIRE_SERVED(pthread_attr_getscope);
	REQUIRE_SERVED(pthread_attr_setaffinity_np);
	REQUIRE_SERVED(pthread_attr_getaffinity_np);
	REQUIRE_SERVED(pthread_attr_setsigmask_np);
	REQUIRE_SERVED(pthread_attr_getsigmask_np);
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_setattr_default_np);
	REQUIRE_SERVED(pthread_getattr_default_np);

	defaults();
	setters_and_errors();
	extension();
	no_leak();
	creation_honours_both();
	default_extension();
	TEST_DONE();
}
