/* glibc 2.41's per-thread getrandom state (struct pthread's
   getrandom_buf): getrandom and arc4random take their state from a pool
   of mapped pages on a thread's first call, and glibc's thread exit
   gives it back.  A weft thread's exit cannot reach that (libc's
   __getrandom_vdso_release is hidden), so weft hands the state to the
   next thread it creates, as it does malloc's thread cache
   (docs/glibc-host.md).  Without that (2.36's facts on 2.41) each
   thread leaves its state behind: about 200 bytes of mapped pages a
   thread, +390 KiB over this test's 2,000 threads.

   2,000 threads, one at a time, each calling arc4random and getrandom;
   the process's mapped size (VmSize) must not grow by more than
   LIMIT_KIB after a warm-up of 100.  Releases (or kernels) that keep no
   per-thread state are detected and SKIPped (exit 77): the first
   arc4random of the process maps no state page there. */
#include "harness.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/random.h>
#include <unistd.h>

#define THREADS 2000
#define WARMUP 100
#define LIMIT_KIB 64

/* VmSize in KiB, read without stdio or malloc (they map memory too). */
static long vm_size_kib(void)
{
	char buf[4096], *p;
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "VmSize:");
	return p ? strtol(p + 7, NULL, 10) : -1;
}

static int bad_random, bad_origin;

static void *worker(void *arg)
{
	uint32_t a = arc4random(), b = arc4random();
	unsigned char buf[32];

	(void)arg;
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_fetch_add(&bad_origin, 1, __ATOMIC_RELAXED);
	if (getrandom(buf, sizeof buf, 0) != (ssize_t)sizeof buf || a == b)
		__atomic_fetch_add(&bad_random, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void run_threads(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t th;

		REQUIRE(pthread_create(&th, NULL, worker, NULL) == 0,
			"pthread_create %d", i);
		REQUIRE(pthread_join(th, NULL) == 0, "pthread_join %d", i);
	}
}

int main(void)
{
	long before, after;

	WEFT_REQUIRE();
	before = vm_size_kib();
	(void)arc4random();
	after = vm_size_kib();
	REQUIRE(before > 0 && after > 0, "VmSize not readable");
	if (after == before) {
		printf("SKIP: this glibc keeps no per-thread getrandom state "
		       "(the first arc4random mapped nothing: glibc before "
		       "2.41, or a kernel without vDSO getrandom)\n");
		return 77;
	}
	run_threads(WARMUP);
	before = vm_size_kib();
	run_threads(THREADS);
	after = vm_size_kib();
	CHECK(after - before <= LIMIT_KIB,
	      "VmSize after %d threads that used getrandom: expected at most "
	      "+%d KiB, got %+ld KiB (%ld -> %ld): their getrandom states "
	      "were not handed on", THREADS, LIMIT_KIB, after - before, before,
	      after);
	CHECK_EQ(bad_origin, 0);
	CHECK_EQ(bad_random, 0);
	return harness_failures ? 1 : 0;
}
