/* pthread_getcpuclockid: the clock is the kernel's CPU-time clock of the
   thread, the same id glibc computes (checked against glibc's own
   function for the same weft thread, and for the main thread), usable with
   clock_gettime; it advances while the thread runs and not while it is
   blocked; a finished thread is ESRCH. */
#include <time.h>
#include "t_sched_worker.h"

/* The kernel's encoding of a thread CPU clock (scheduler time). */
static clockid_t expected_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 4 | 2);
}

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	REQUIRE(clock_gettime(c, &ts) == 0, "clock_gettime(%d): %s", (int)c,
		strerror(errno));
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spins until this thread has used 200 ms of CPU, at most 10 s. */
static void spin(struct worker *w)
{
	long long start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	long long wall = clock_ns(CLOCK_MONOTONIC);

	(void)w;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - start < 200000000LL &&
	       clock_ns(CLOCK_MONOTONIC) - wall < 10000000000LL)
		;
}

static clockid_t own_clock, glibc_clock;

/* Inside the worker: weft's answer for itself, and glibc's own
   pthread_getcpuclockid given the thread's TCB (the thread pointer),
   which glibc takes for its descriptor. */
static void own(struct worker *w)
{
	int (*glibc_fn)(pthread_t, clockid_t *);
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *tcb;

	(void)w;
	CHECK_ERR(pthread_getcpuclockid(pthread_self(), &own_clock), 0);
	glibc_fn = (int (*)(pthread_t, clockid_t *))dlvsym(
		libc, "pthread_getcpuclockid", "GLIBC_2.34");
	REQUIRE(glibc_fn != NULL, "glibc's pthread_getcpuclockid");
	__asm__("mov %%fs:0, %0" : "=r"(tcb));
	CHECK_ERR(glibc_fn((pthread_t)tcb, &glibc_clock), 0);
}

int main(void)
{
	struct worker blocked, busy;
	clockid_t cb, cs, cm;
	long long b0, b1, s0, s1;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_getcpuclockid);
	REQUIRE_SERVED(pthread_create);

	/* The encoding is glibc's: compare on the main thread. */
	CHECK_ERR(pthread_getcpuclockid(pthread_self(), &cm), 0);
	CHECK_EQ(cm, expected_clock(getpid()));

	REQUIRE(worker_start(&blocked, NULL) == 0, "worker");
	REQUIRE(worker_start(&busy, NULL) == 0, "worker");
	CHECK_ERR(pthread_getcpuclockid(blocked.th, &cb), 0);
	CHECK_ERR(pthread_getcpuclockid(busy.th, &cs), 0);
	CHECK_EQ(cb, expected_clock(blocked.tid));
	CHECK_EQ(cs, expected_clock(busy.tid));
	busy.hook = own;
	worker_do(&busy, W_HOOK);
	CHECK_EQ(own_clock, cs);
	CHECK_EQ(glibc_clock, cs);

	/* One spins for 200 ms of CPU while the other sits in read(). */
	b0 = clock_ns(cb);
	s0 = clock_ns(cs);
	busy.hook = spin;
	worker_do(&busy, W_HOOK);
	b1 = clock_ns(cb);
	s1 = clock_ns(cs);
	CHECK(s1 - s0 >= 200000000LL, "busy thread's clock advanced %lld ns",
	      s1 - s0);
	CHECK(b1 - b0 < 5000000LL, "blocked thread's clock advanced %lld ns",
	      b1 - b0);
	/* The clock of a thread reads the same from any thread. */
	CHECK(clock_ns(cs) >= s1, "clock went backwards");

	worker_finish_unjoined(&busy);
	CHECK_ERR(pthread_getcpuclockid(busy.th, &cs), ESRCH);
	CHECK_ERR(pthread_join(busy.th, NULL), 0);
	CHECK_ERR(pthread_getcpuclockid(busy.th, &cs), ESRCH);
	worker_do(&blocked, W_QUIT);
	pthread_join(blocked.th, NULL);
	worker_close(&busy);
	worker_close(&blocked);
	TEST_DONE();
}
