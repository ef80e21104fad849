/* WEFT_GUARD: how a thread's guard pages are made (docs/lifecycle.md,
   "Guards that debuggers can read").
   - mprotect: a PROT_NONE mapping of its own, directly below the stack,
     as glibc 2.36 makes it (gdb's gcore can read around it);
   - advise: marks in the page tables (MADV_GUARD_INSTALL), no mapping
     of its own, where the kernel has the advice;
   - auto, the default: the mapping for the first WEFT_GUARD_AUTO_MAPPINGS
     (1024) blocks that exist at once, the marks for the blocks beyond.
   The test runs itself again for each explicit mode.  In every mode a
   thread finds what its mode promises below its stack, and a write just
   below its stack kills a forked copy with SIGSEGV.  In the default mode
   it also keeps 1,100 threads alive: about 1,024 of them have a guard
   mapping, the rest (where the kernel has the advice) none, and the
   mappings that touch their stacks and guards are at most two per mapped
   guard and one per other thread, plus a few.  Only those are counted: a sanitizer's runtime makes
   mappings of its own for every thread, elsewhere. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

#define AUTO_MAPPINGS 1024 /* WEFT_GUARD_AUTO_MAPPINGS */
#define MANY 1100

/* The end addresses of the process's PROT_NONE ("---p") mappings. */
static uintptr_t none_ends[4 * MANY];
static int n_none;

static void read_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	n_none = 0;
	REQUIRE(f, "cannot open /proc/self/maps");
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char p[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 &&
		    strcmp(p, "---p") == 0 && n_none < (int)(sizeof none_ends /
							     sizeof none_ends[0]))
			none_ends[n_none++] = hi;
	}
	fclose(f);
}

/* How many mappings of the process touch one of the n ranges [lo, hi). */
static int maps_touching(const uintptr_t *lo, const uintptr_t *hi, int n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int count = 0;

	REQUIRE(f, "cannot open /proc/self/maps");
	while (fgets(line, sizeof line, f)) {
		unsigned long mlo, mhi;

		if (sscanf(line, "%lx-%lx", &mlo, &mhi) != 2)
			continue;
		for (int i = 0; i < n; i++)
			if (mlo < hi[i] && lo[i] < mhi) {
				count++;
				break;
			}
	}
	fclose(f);
	return count;
}

static int guard_is_mapping(uintptr_t stack_lo)
{
	for (int i = 0; i < n_none; i++)
		if (none_ends[i] == stack_lo)
			return 1;
	return 0;
}

static void stack_of(pthread_t t, void **lo, size_t *guard)
{
	pthread_attr_t a;
	size_t size;

	REQUIRE(pthread_getattr_np(t, &a) == 0, "getattr_np");
	pthread_attr_getstack(&a, lo, &size);
	pthread_attr_getguardsize(&a, guard);
	pthread_attr_destroy(&a);
}

/* A forked copy writes the guard's top byte: it must die of SIGSEGV. */
static void check_guard_faults(void *lo, const char *what)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		*((volatile char *)lo - 1) = 1;
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "%s: expected SIGSEGV "
	      "writing below the stack, got status %#x", what, st);
}

static void *probe(void *arg)
{
	const char *mode = arg;
	int want_mapping = strcmp(mode, "advise") != 0 || !guard_advice_supported();
	void *lo;
	size_t guard;

	CHECK_WEFT_THREAD();
	stack_of(pthread_self(), &lo, &guard);
	CHECK(guard > 0, "expected a guard, got guardsize 0");
	read_maps();
	printf("WEFT_GUARD=%s: the guard below the stack is %s\n", mode,
	       guard_is_mapping((uintptr_t)lo) ? "a ---p mapping" : "no mapping");
	CHECK(guard_is_mapping((uintptr_t)lo) == want_mapping,
	      "WEFT_GUARD=%s: expected %s ending at the stack's low end %p",
	      mode, want_mapping ? "a ---p mapping" : "no ---p mapping", lo);
	check_guard_faults(lo, mode);
	return NULL;
}

static void run_probe(const char *mode)
{
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, probe, (void *)mode) == 0, "pthread_create");
	REQUIRE(pthread_join(t, NULL) == 0, "pthread_join");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, ready;

static void *idle(void *arg)
{
	pthread_mutex_lock(&mu);
	ready++;
	pthread_cond_broadcast(&cv);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return arg;
}

/* Default mode, many threads: mappings first, then marks. */
static void run_many(void)
{
	static pthread_t t[MANY];
	pthread_attr_t a;
	static uintptr_t range_lo[MANY], range_hi[MANY];
	int made, mapped = 0, touching, first_unmapped = -1, last_mapped = -1;
	int advice = guard_advice_supported();
	void *lo;
	size_t guard;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 16 * 1024);
	for (made = 0; made < MANY; made++)
		if (pthread_create(&t[made], &a, idle, NULL) != 0)
			break;
	pthread_mutex_lock(&mu);
	while (ready < made)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	read_maps();
	for (int i = 0; i < made; i++) {
		stack_of(t[i], &lo, &guard);
		range_lo[i] = (uintptr_t)lo - guard;
		range_hi[i] = (uintptr_t)lo + 16 * 1024;
		if (guard_is_mapping((uintptr_t)lo)) {
			mapped++;
			last_mapped = i;
		} else if (first_unmapped < 0) {
			first_unmapped = i;
		}
	}
	printf("default: %d threads: %d guards are mappings (the last, thread "
	       "%d), the first without is thread %d\n",
	       made, mapped, last_mapped, first_unmapped);
	touching = maps_touching(range_lo, range_hi, made);
	printf("default: %d mappings touch the threads' stacks and guards\n",
	       touching);
	CHECK_EQ(made, MANY);
	if (advice) {
		/* The probe threads' cached block holds one mapped guard. */
		CHECK(mapped >= AUTO_MAPPINGS - 8 && mapped <= AUTO_MAPPINGS,
		      "expected about %d mapped guards, got %d", AUTO_MAPPINGS,
		      mapped);
		CHECK(first_unmapped > last_mapped,
		      "expected mapped guards first, then none: thread %d has "
		      "none, thread %d has one", first_unmapped, last_mapped);
		/* A block with a guard mapping is at most two mappings, one
		   without at most one (they merge with their neighbours
		   unless something else, e.g. ASan, touches them). */
		CHECK(touching <= 2 * mapped + (made - mapped) + 16,
		      "%d threads: %d mappings touch their stacks and guards, "
		      "expected <= %d", made, touching,
		      2 * mapped + (made - mapped) + 16);
	} else {
		CHECK_EQ(mapped, made);
	}
	stack_of(t[0], &lo, &guard);
	check_guard_faults(lo, "default, first thread");
	stack_of(t[made - 1], &lo, &guard);
	check_guard_faults(lo, "default, last thread");
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	pthread_attr_destroy(&a);
}

static void run_mode(char *self, const char *mode)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		char *args[] = { self, (char *)mode, NULL };
		setenv("WEFT_GUARD", mode, 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the WEFT_GUARD=%s run "
	      "failed: status %#x", mode, st);
}

int main(int argc, char **argv)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	if (argc == 2) {
		run_probe(argv[1]);
		return harness_failures ? 1 : 0;
	}
	if (getenv("WEFT_GUARD")) {
		/* The default mode is tested as the default: without it. */
		unsetenv("WEFT_GUARD");
		execv("/proc/self/exe", argv);
		FAIL("execv failed");
		return 1;
	}
	run_probe("auto");
	run_many();
	run_mode(argv[0], "mprotect");
	run_mode(argv[0], "advise");
	run_mode(argv[0], "auto");
	TEST_DONE();
}
