/* The stack cache, its bounds and what it keeps resident.
   - by default, sequential create/join reuses one block: nearly no new
     mappings;
   - a cached block is reused only for the same size and guard;
   - a thread that used 1 MiB of its 8 MiB stack gives it back when it
     dies (WEFT_STACK_TRIM=dontneed, the default): RSS falls back; with
     WEFT_STACK_TRIM=none it stays (so the check can fail);
   - transparent huge pages: a small stack's block is marked "no huge
     pages" (VmFlags nh) and holds no AnonHugePages;
   - WEFT_STACK_CACHE=0: every dead thread's block is unmapped;
   - a small cache (1 MiB of resident bound) with 64 KiB threads holds at
     most ~15 blocks: after 64 threads alive at once end, the rest are
     unmapped and the address space (VmSize) shrinks accordingly;
   - WEFT_STACK_CACHE_COUNT=8 keeps at most 8 blocks, also in a fork
     child, which inherits the blocks of the parent's running threads.
   The test re-executes itself with each setting (tunables are read at
   start-up). */
#include <stdint.h>
#include <sys/resource.h>
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

/* Touches `n` bytes of stack, one write per page. */
static void __attribute__((noinline)) use_stack(long n)
{
	char buf[n];

	for (long i = 0; i < n; i += 4096)
		buf[i] = (char)i;
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static void *deep(void *a)
{
	use_stack(1L << 20);
	return a;
}

/* RSS kept after a thread that used 1 MiB of an 8 MiB stack is joined;
   its block stays in the cache. */
static long rss_kept_after_deep_thread(void)
{
	pthread_t t;
	pthread_attr_t a;
	long before;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 8 << 20);
	/* Once to have the block cached, then measure a reuse. */
	CHECK_ERR(pthread_create(&t, &a, nothing, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	before = rss_kib();
	CHECK_ERR(pthread_create(&t, &a, deep, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
	return rss_kib() - before;
}

static pthread_barrier_t bar;
static void *wait_all(void *a)
{
	pthread_barrier_wait(&bar);
	return a;
}

/* The smaps entry of the mapping holding `addr`: VmFlags has "nh", and
   no AnonHugePages. */
static void check_no_huge_pages(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, seen_flags = 0;
	long huge = -1;

	REQUIRE(f, "cannot open /proc/self/smaps");
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char c;

		if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (!in)
			continue;
		if (strncmp(line, "AnonHugePages:", 14) == 0)
			huge = strtol(line + 14, NULL, 10);
		if (strncmp(line, "VmFlags:", 8) == 0) {
			seen_flags = 1;
			CHECK(strstr(line, " nh") != NULL,
			      "stack block flags: expected nh (no huge pages), "
			      "got%s", line + 8);
		}
	}
	fclose(f);
	CHECK(seen_flags, "no smaps entry for the stack at %p", addr);
	CHECK_EQ(huge, 0);
}

static void *touch_and_wait(void *a)
{
	use_stack(48 << 10);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	return a;
}

static void run_thp(void)
{
	pthread_t t;
	pthread_attr_t a, ga;
	void *addr;
	size_t size;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_barrier_init(&bar, NULL, 2);
	CHECK_ERR(pthread_create(&t, &a, touch_and_wait, NULL), 0);
	pthread_barrier_wait(&bar);
	CHECK_ERR(pthread_getattr_np(t, &ga), 0);
	CHECK_ERR(pthread_attr_getstack(&ga, &addr, &size), 0);
	check_no_huge_pages((char *)addr + size - 1);
	pthread_barrier_wait(&bar);
	CHECK_ERR(pthread_join(t, NULL), 0);
	pthread_barrier_destroy(&bar);
	pthread_attr_destroy(&ga);
	pthread_attr_destroy(&a);
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

	long kept = rss_kept_after_deep_thread();
	fprintf(stderr, "RSS kept after a thread used 1 MiB of stack: %ld KiB\n",
		kept);
	CHECK(kept < 256, "a dead thread's used stack was not given back: "
	      "RSS grew by %ld KiB (expected < 256)", kept);
	run_thp();
	return 0;
}

static int run_no_trim(void)
{
	long kept = rss_kept_after_deep_thread();

	fprintf(stderr, "WEFT_STACK_TRIM=none: RSS kept %ld KiB\n", kept);
	CHECK(kept >= 900, "with trimming off, expected the 1 MiB used to "
	      "stay resident, RSS grew by %ld KiB", kept);
	return 0;
}

static void *wait_twice(void *a)
{
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	return a;
}

/* At fork, the blocks of the threads that were running in the parent
   go into the child's cache under the same bounds: beyond 8 they are
   unmapped in the child before fork returns there, so the child's
   address space is smaller than the parent's by about that much. */
static void run_fork_bound(void)
{
	enum { N = 64 };
	pthread_t t[N];
	pthread_attr_t a;
	long vm_parent, vm_child = -1;
	int p[2], st;
	pid_t pid;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_barrier_init(&bar, NULL, N + 1);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_create(&t[i], &a, wait_twice, NULL), 0);
	pthread_barrier_wait(&bar);
	REQUIRE(pipe(p) == 0, "pipe failed");
	vm_parent = proc_status_kib("VmSize");
	pid = fork();
	if (pid == 0) {
		vm_child = proc_status_kib("VmSize");
		_exit(write(p[1], &vm_child, sizeof vm_child) == sizeof vm_child ? 0 : 1);
	}
	REQUIRE(pid > 0, "fork failed");
	CHECK_EQ(read(p[0], &vm_child, sizeof vm_child), (long)sizeof vm_child);
	waitpid(pid, &st, 0);
	close(p[0]);
	close(p[1]);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&bar);
	pthread_attr_destroy(&a);
	fprintf(stderr, "fork with %d threads running: VmSize %ld KiB in the "
			"parent, %ld in the child\n", N, vm_parent, vm_child);
	/* 56 blocks of 68 KiB, less some slack for what stdio may map. */
	CHECK(vm_parent - vm_child >= (N - 8) * 68 - 512,
	      "the child's cache kept the parent threads' blocks: VmSize fell "
	      "by %ld KiB, expected >= %d", vm_parent - vm_child,
	      (N - 8) * 68 - 512);
}

static int run_count(void)
{
	enum { N = 64 };
	pthread_t t[N];
	pthread_attr_t a;
	struct weft_stats s0 = stats(), s1;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_barrier_init(&bar, NULL, N + 1);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_create(&t[i], &a, wait_all, NULL), 0);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	s1 = stats();
	fprintf(stderr, "WEFT_STACK_CACHE_COUNT=8: %lu blocks held after %d "
			"threads\n",
		s1.stacks_mapped - s1.stacks_unmapped, N);
	CHECK(s1.stacks_mapped - s1.stacks_unmapped <= 8,
	      "expected at most 8 blocks held, got %lu",
	      s1.stacks_mapped - s1.stacks_unmapped);
	CHECK(s1.stacks_unmapped - s0.stacks_unmapped >= N - 8,
	      "expected >= %d unmapped, got %lu", N - 8,
	      s1.stacks_unmapped - s0.stacks_unmapped);
	pthread_attr_destroy(&a);
	run_fork_bound();
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

/* Minor page faults the child of a fork takes before fork returns there
   (weft's and libc's fork handlers), and whether a thread it creates
   reuses a cached block. */
static void fork_probe(long *faults, long *reused)
{
	long r[2] = {-1, -1};
	int p[2], st;
	pid_t pid;

	REQUIRE(pipe(p) == 0, "pipe failed");
	pid = fork();
	if (pid == 0) {
		struct rusage ru;
		struct weft_stats a, b;
		pthread_t t;

		getrusage(RUSAGE_SELF, &ru);
		r[0] = ru.ru_minflt;
		weft_get_stats(&a);
		if (pthread_create(&t, NULL, nothing, NULL) == 0)
			pthread_join(t, NULL);
		weft_get_stats(&b);
		r[1] = (long)(b.stacks_reused - a.stacks_reused);
		_exit(write(p[1], r, sizeof r) == sizeof r ? 0 : 1);
	}
	REQUIRE(pid > 0, "fork failed");
	CHECK_EQ(read(p[0], r, sizeof r), (long)sizeof r);
	waitpid(pid, &st, 0);
	close(p[0]);
	close(p[1]);
	*faults = r[0];
	*reused = r[1];
}

/* A fork child must not touch the parent's cached blocks: it shares
   their pages copy-on-write, and touching each of hundreds of blocks
   made every fork cost a page fault (and on this project's VM a
   hypervisor exit) per block.  The child's faults with 500 cached
   blocks are compared with those of a fork with none; the child still
   reuses a cached block for its first thread. */
static void run_fork_untouched(void)
{
	enum { N = 500 };
	static pthread_t t[N];
	long base, base_reused, faults, reused;
	struct weft_stats s;

	fork_probe(&base, &base_reused);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, nothing, NULL), 0);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	s = stats();
	CHECK(s.stacks_mapped - s.stacks_unmapped >= N - 10,
	      "expected about %d cached blocks, got %lu", N,
	      s.stacks_mapped - s.stacks_unmapped);
	fork_probe(&faults, &reused);
	fprintf(stderr, "fork child: %ld page faults with %d cached blocks, "
			"%ld with none\n", faults, N, base);
	CHECK(faults >= 0 && faults < base + 100,
	      "fork child with %d cached blocks: expected fewer than %ld page "
	      "faults (%ld without them + 100), got %ld", N, base + 100, base,
	      faults);
	CHECK(reused == 1, "fork child's first thread: expected a cached "
	      "block reused, got %ld", reused);
}

/* Re-runs this program with one more environment setting. */
static void rerun(char **argv, const char *var, const char *value)
{
	int st;

	setenv("T_STACK_CACHE_PHASE", var, 1);
	setenv(var, value, 1);
	if (fork() == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	wait(&st);
	unsetenv(var);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s=%s run: expected exit 0, got 0x%x", var, value, st);
}

int main(int argc, char **argv)
{
	const char *phase = getenv("T_STACK_CACHE_PHASE");

	(void)argc;
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	if (!phase) {
		/* Parent: default settings here, then re-run for the others. */
		run_default();
		run_fork_untouched();
		rerun(argv, "WEFT_STACK_CACHE", "0");
		rerun(argv, "WEFT_STACK_CACHE", "1M");
		rerun(argv, "WEFT_STACK_CACHE_COUNT", "8");
		rerun(argv, "WEFT_STACK_TRIM", "none");
	} else if (strcmp(phase, "WEFT_STACK_CACHE") == 0) {
		if (strcmp(getenv("WEFT_STACK_CACHE"), "0") == 0)
			run_no_cache();
		else
			run_small_cache();
	} else if (strcmp(phase, "WEFT_STACK_CACHE_COUNT") == 0) {
		run_count();
	} else {
		run_no_trim();
	}
	TEST_DONE();
}
