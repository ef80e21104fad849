/* Thread stacks: the requested size is usable and reported; user stacks
   (pthread_attr_setstack) are really used and are free to reuse or unmap
   after the join; attribute get/set round trips; pthread_getattr_np
   inside threads; default size; the guard page stops an overflow. */
#include "harness.h"
#include "child.h"

#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1024 * 1024)

struct report {
	uintptr_t local;	/* address of a local variable */
	uintptr_t lo, hi;	/* stack range from pthread_getattr_np */
	size_t size, guard;
	int detach;
	int err;
	long touched;		/* bytes of stack touched */
};

static void get_report(struct report *r)
{
	pthread_attr_t a;
	void *addr = NULL;
	volatile int local = 1;

	r->local = (uintptr_t)&local;
	r->err = pthread_getattr_np(pthread_self(), &a);
	if (r->err)
		return;
	pthread_attr_getstack(&a, &addr, &r->size);
	pthread_attr_getguardsize(&a, &r->guard);
	pthread_attr_getdetachstate(&a, &r->detach);
	r->lo = (uintptr_t)addr;
	r->hi = r->lo + r->size;
	pthread_attr_destroy(&a);
}

/* Touches `n` bytes of stack in one frame, every page. */
static __attribute__((noinline)) long touch_stack(size_t n)
{
	volatile char *big = __builtin_alloca(n);
	long sum = 0;

	for (size_t i = 0; i < n; i += 1024)
		big[i] = (char)(i >> 10);
	big[n - 1] = 1;
	for (size_t i = 0; i < n; i += 1024)
		sum += big[i];
	return sum + big[n - 1];
}

static void *reporter(void *arg)
{
	struct report *r = arg;

	CHECK_WEFT_THREAD();
	get_report(r);
	/* Touch only what the thread's reported stack can hold (with 64 KiB
	   to spare): a too small stack is reported by the caller's size
	   check instead of crashing the test. */
	if (r->touched > 0 &&
	    (r->err || r->size < (size_t)r->touched + 64 * 1024)) {
		r->touched = -r->touched;
	} else if (r->touched > 0) {
		long want = 0;
		for (long i = 0; i < r->touched; i += 1024)
			want += (char)(i >> 10);
		long got = touch_stack((size_t)r->touched);
		if (got != want + 1)
			FAIL("stack contents: expected sum %ld, got %ld", want + 1, got);
	}
	return r;
}

static sem_t det_sem;
static void *detached_reporter(void *arg)
{
	reporter(arg);
	sem_post(&det_sem);
	return NULL;
}

static void check_inside(const char *what, const struct report *r)
{
	CHECK_ERR(r->err, 0);
	CHECK(r->local >= r->lo && r->local < r->hi,
	      "%s: a local at %#lx lies outside the reported stack "
	      "[%#lx, %#lx)", what, (unsigned long)r->local,
	      (unsigned long)r->lo, (unsigned long)r->hi);
}

/* ------------------------------------------------------------- requested */

static void test_stacksize(void)
{
	pthread_attr_t a;
	pthread_t t;
	struct report r = {.touched = (long)(0.8 * MIB)};
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	CHECK_ERR(pthread_attr_init(&a), 0);
	CHECK_ERR(pthread_attr_setstacksize(&a, MIB), 0);
	CHECK_ERR(pthread_create(&t, &a, reporter, &r), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	check_inside("1 MiB stack", &r);
	CHECK(r.size >= MIB, "1 MiB stack: getattr_np reports %zu bytes", r.size);
	CHECK_EQ(r.guard, pg);
	CHECK_EQ(r.detach, PTHREAD_CREATE_JOINABLE);

	/* Guard size and detach state as requested, seen from inside. */
	CHECK_ERR(pthread_attr_setguardsize(&a, 16 * pg), 0);
	CHECK_ERR(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	CHECK_ERR(sem_init(&det_sem, 0, 0), 0);
	struct report d = {0};
	CHECK_ERR(pthread_create(&t, &a, detached_reporter, &d), 0);
	while (sem_wait(&det_sem) != 0)
		;
	check_inside("detached, 16-page guard", &d);
	CHECK_EQ(d.guard, 16 * pg);
	CHECK_EQ(d.detach, PTHREAD_CREATE_DETACHED);
	CHECK(d.size >= MIB, "reported %zu bytes", d.size);
	pthread_attr_destroy(&a);

	/* Default size: at least the process default, as reported by
	   pthread_getattr_default_np. */
	pthread_attr_t def;
	size_t defsize = 0;
	CHECK_ERR(pthread_getattr_default_np(&def), 0);
	CHECK_ERR(pthread_attr_getstacksize(&def, &defsize), 0);
	struct report dr = {.touched = 256 * 1024};
	CHECK_ERR(pthread_create(&t, NULL, reporter, &dr), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	check_inside("default stack", &dr);
	CHECK(dr.size >= defsize && defsize >= 64 * 1024,
	      "default stack: reported %zu bytes, default attribute %zu",
	      dr.size, defsize);

	/* A changed default applies to new threads: a larger one than
	   before, so that no cached stack can satisfy it. */
	pthread_attr_t nd;
	CHECK_ERR(pthread_attr_init(&nd), 0);
	CHECK_ERR(pthread_attr_setstacksize(&nd, defsize + 8 * MIB), 0);
	CHECK_ERR(pthread_setattr_default_np(&nd), 0);
	struct report nr = {.touched = (long)(defsize + 6 * MIB)};
	CHECK_ERR(pthread_create(&t, NULL, reporter, &nr), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	check_inside("larger default", &nr);
	CHECK(nr.size >= defsize + 8 * MIB,
	      "after pthread_setattr_default_np(%zu): reported %zu",
	      defsize + 8 * MIB, nr.size);
	CHECK_ERR(pthread_setattr_default_np(&def), 0);
	pthread_attr_destroy(&nd);
	pthread_attr_destroy(&def);
}

/* ------------------------------------------------------------ user stack */

static void run_on(void *buf, size_t size, const char *what)
{
	pthread_attr_t a;
	pthread_t t;
	struct report r = {.touched = (long)size / 2};

	CHECK_ERR(pthread_attr_init(&a), 0);
	CHECK_ERR(pthread_attr_setstack(&a, buf, size), 0);
	CHECK_ERR(pthread_create(&t, &a, reporter, &r), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
	check_inside(what, &r);
	uintptr_t lo = (uintptr_t)buf, hi = lo + size;
	CHECK(r.local >= lo && r.local < hi,
	      "%s: a local at %#lx is outside the user's stack [%#lx, %#lx)", what,
	      (unsigned long)r.local, (unsigned long)lo, (unsigned long)hi);
	CHECK(r.lo >= lo && r.hi <= hi,
	      "%s: reported stack [%#lx, %#lx) is not inside the user's "
	      "[%#lx, %#lx)", what, (unsigned long)r.lo, (unsigned long)r.hi,
	      (unsigned long)lo, (unsigned long)hi);
}

static void test_user_stack(void)
{
	const size_t size = 512 * 1024;
	void *buf = NULL;

	REQUIRE(posix_memalign(&buf, 65536, size) == 0, "posix_memalign");
	memset(buf, 0x5a, size);
	run_on(buf, size, "malloc'd user stack");
	/* Reused: the same memory again and again after each join. */
	for (int i = 0; i < 50; i++) {
		memset(buf, i, size); /* the owner may scribble on it */
		run_on(buf, size, "reused user stack");
	}
	free(buf);

	/* An mmap'd user stack unmapped right after the join: weft must
	   not touch it any more (no cache, no late writes). */
	for (int i = 0; i < 50; i++) {
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		REQUIRE(m != MAP_FAILED, "mmap: %s", strerror(errno));
		run_on(m, size, "mmap'd user stack");
		CHECK_EQ(munmap(m, size), 0);
	}
	/* Threads on weft's own stacks still work after all that. */
	pthread_t t;
	struct report r = {0};
	CHECK_ERR(pthread_create(&t, NULL, reporter, &r), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	check_inside("after user stacks", &r);
}

/* ------------------------------------------------------------ round trip */

static void test_round_trip(void)
{
	pthread_attr_t a;
	int ds = -1;
	size_t sz = 0, g = 0;
	void *addr = NULL;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	static char ubuf[256 * 1024] __attribute__((aligned(4096)));

	CHECK_ERR(pthread_attr_init(&a), 0);
	/* defaults */
	CHECK_ERR(pthread_attr_getdetachstate(&a, &ds), 0);
	CHECK_EQ(ds, PTHREAD_CREATE_JOINABLE);
	CHECK_ERR(pthread_attr_getguardsize(&a, &g), 0);
	CHECK_EQ(g, pg);

	CHECK_ERR(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	CHECK_ERR(pthread_attr_getdetachstate(&a, &ds), 0);
	CHECK_EQ(ds, PTHREAD_CREATE_DETACHED);
	CHECK_ERR(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE), 0);
	CHECK_ERR(pthread_attr_getdetachstate(&a, &ds), 0);
	CHECK_EQ(ds, PTHREAD_CREATE_JOINABLE);

	CHECK_ERR(pthread_attr_setstacksize(&a, 3 * MIB + 12345), 0);
	CHECK_ERR(pthread_attr_getstacksize(&a, &sz), 0);
	CHECK_EQ(sz, 3 * MIB + 12345);

	CHECK_ERR(pthread_attr_setguardsize(&a, 3 * pg), 0);
	CHECK_ERR(pthread_attr_getguardsize(&a, &g), 0);
	CHECK_EQ(g, 3 * pg);
	CHECK_ERR(pthread_attr_setguardsize(&a, 0), 0);
	CHECK_ERR(pthread_attr_getguardsize(&a, &g), 0);
	CHECK_EQ(g, 0);

	CHECK_ERR(pthread_attr_setstack(&a, ubuf, sizeof ubuf), 0);
	CHECK_ERR(pthread_attr_getstack(&a, &addr, &sz), 0);
	CHECK(addr == (void *)ubuf, "getstack: %p, expected %p", addr, (void *)ubuf);
	CHECK_EQ(sz, sizeof ubuf);
	CHECK_ERR(pthread_attr_getstacksize(&a, &sz), 0);
	CHECK_EQ(sz, sizeof ubuf);
	pthread_attr_destroy(&a);

	/* The main thread's stack is described too. */
	struct report m;
	get_report(&m);
	check_inside("main thread", &m);
}

/* ----------------------------------------------------------------- guard */

static __attribute__((noinline)) long recurse(long depth)
{
	volatile char frame[1024];

	frame[0] = (char)depth;
	frame[1023] = (char)depth;
	if (depth <= 0)
		return frame[0];
	return recurse(depth - 1) + frame[1023];
}

static void *overflow(void *arg)
{
	(void)arg;
	/* 64 KiB of stack, asked to recurse through ~100 MiB. */
	return (void *)recurse(100000);
}

static int guard_child(int wfd, void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	(void)arg;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	if (pthread_create(&t, &a, overflow, NULL) != 0)
		return 3;
	pthread_join(t, NULL);
	put(wfd, "overflow returned\n");
	return 0;
}

int main(void)
{
	WEFT_REQUIRE();
	test_stacksize();
	test_user_stack();
	test_round_trip();

	struct child_result r;
	REQUIRE(run_child(guard_child, NULL, 30000, &r) == 0, "fork");
	CHECK(!r.timed_out && WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV,
	      "stack overflow of a 64 KiB thread: expected death by SIGSEGV "
	      "(guard page), got %s, output \"%s\"", status_str(&r), r.out);
	TEST_DONE();
}
