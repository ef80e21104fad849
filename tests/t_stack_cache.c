/* The stack cache and its tunable WEFT_STACK_CACHE.
   - by default, sequential create/join reuses one block: nearly no new
     mappings;
   - WEFT_STACK_CACHE=0: every dead thread's block is unmapped;
   - a small cache (1 MiB) with 64 KiB threads holds at most ~16 blocks:
     after 64 threads alive at once end, the rest are unmapped and the
     address space (VmSize) shrinks accordingly;
   - a cached block is reused only for the same size and guard.
   The test re-executes itself with each setting (the tunable is read at
   start-up). */
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

static void *nothing(void *a)
{
	return a;
}

static struct weft_stats stats(void)
{
	struct weft_stats s;

	weft_get_stats(&s);
	return s;
}

static int run_default(void)
{
	pthread_t t;
	pthread_attr_t a;
	struct weft_stats s0 = stats(), s1;

	for (int i = 0; i < 1000; i++) {
		CHECK_ERR(pthread_create(&t, NULL, nothing, NULL), 0);
		CHECK_ERR(pthread_join(t, NULL), 0);
	}
	s1 = stats();
	CHECK(s1.stacks_mapped - s0.stacks_mapped <= 2,
	      "1000 sequential threads mapped %lu blocks, expected <= 2",
	      s1.stacks_mapped - s0.stacks_mapped);
	CHECK(s1.stacks_reused - s0.stacks_reused >= 998,
	      "expected >= 998 reuses, got %lu", s1.stacks_reused - s0.stacks_reused);

	/* Another size is not served from blocks of the default size. */
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 256 * 1024);
	s0 = stats();
	CHECK_ERR(pthread_create(&t, &a, nothing, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	s1 = stats();
	CHECK_EQ(s1.stacks_mapped - s0.stacks_mapped, 1);
	pthread_attr_destroy(&a);
	return 0;
}

static int run_no_cache(void)
{
	pthread_t t;
	struct weft_stats s0 = stats(), s1;

	for (int i = 0; i < 200; i++) {
		CHECK_ERR(pthread_create(&t, NULL, nothing, NULL), 0);
		CHECK_ERR(pthread_join(t, NULL), 0);
	}
	s1 = stats();
	CHECK_EQ(s1.stacks_reused - s0.stacks_reused, 0);
	CHECK_EQ(s1.stacks_mapped - s0.stacks_mapped, 200);
	CHECK_EQ(s1.stacks_unmapped - s0.stacks_unmapped, 200);
	return 0;
}

static pthread_barrier_t bar;
static void *wait_all(void *a)
{
	pthread_barrier_wait(&bar);
	return a;
}

static int run_small_cache(void)
{
	enum { N = 64 };
	pthread_t t[N];
	pthread_attr_t a;
	long vm_peak, vm_end;
	struct weft_stats s0, s1;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_barrier_init(&bar, NULL, N + 1);
	s0 = stats();
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_create(&t[i], &a, wait_all, NULL), 0);
	vm_peak = proc_status_kib("VmSize");
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	/* One more release trims what the last joins left over. */
	CHECK_ERR(pthread_create(&t[0], &a, nothing, NULL), 0);
	CHECK_ERR(pthread_join(t[0], NULL), 0);
	s1 = stats();
	vm_end = proc_status_kib("VmSize");
	fprintf(stderr, "VmSize: %ld KiB with %d threads, %ld KiB after; "
			"unmapped %lu\n",
		vm_peak, N, vm_end, s1.stacks_unmapped - s0.stacks_unmapped);
	/* 1 MiB holds 15 blocks of 64 KiB + guard. */
	CHECK(s1.stacks_unmapped - s0.stacks_unmapped >= N - 16,
	      "expected >= %d blocks unmapped, got %lu", N - 16,
	      s1.stacks_unmapped - s0.stacks_unmapped);
	/* ... and really returned to the kernel: 48 blocks of 68 KiB. */
	CHECK(vm_peak - vm_end >= (N - 16) * 68,
	      "address space fell by %ld KiB, expected >= %d",
	      vm_peak - vm_end, (N - 16) * 68);
	pthread_attr_destroy(&a);
	return 0;
}

int main(int argc, char **argv)
{
	const char *phase = getenv("T_STACK_CACHE_PHASE");

	(void)argc;
	WEFT_REQUIRE();
	if (!phase) {
		/* Parent: default setting here, then re-run for the others. */
		run_default();
		setenv("T_STACK_CACHE_PHASE", "0", 1);
		setenv("WEFT_STACK_CACHE", "0", 1);
		if (fork() == 0) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		int st;
		wait(&st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "WEFT_STACK_CACHE=0 run: expected exit 0, got 0x%x", st);
		setenv("T_STACK_CACHE_PHASE", "1M", 1);
		setenv("WEFT_STACK_CACHE", "1M", 1);
		if (fork() == 0) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		wait(&st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "WEFT_STACK_CACHE=1M run: expected exit 0, got 0x%x", st);
	} else if (strcmp(phase, "0") == 0) {
		run_no_cache();
	} else {
		run_small_cache();
	}
	TEST_DONE();
}
