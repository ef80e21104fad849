/* WEFT_REPORT in fork children: the exit report must not allocate.
   dprintf's malloc'd buffer made glibc consolidate the arena's free
   chunks in every exiting child, a copy-on-write fault per page holding
   one (40 ms per child in PTS pthread_cond_broadcast/1-2).  The test
   re-executes itself with WEFT_REPORT set, leaves ~4 MiB of small free
   chunks in the arena, forks children that exit at once, and compares
   their page faults (wait4's rusage, which covers the exit handlers)
   with those of children forked before the chunks existed. */
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

static long child_faults(void)
{
	struct rusage ru;
	int st;
	pid_t pid = fork();

	if (pid == 0)
		exit(0); /* runs the atexit handlers, weft's report among them */
	REQUIRE(pid > 0, "fork failed");
	REQUIRE(wait4(pid, &st, 0, &ru) == pid, "wait4 failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	return ru.ru_minflt;
}

static long median_faults(void)
{
	long v[5];

	for (int i = 0; i < 5; i++)
		v[i] = child_faults();
	for (int i = 1; i < 5; i++) /* insertion sort */
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			long t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[2];
}

int main(int argc, char **argv)
{
	enum { N = 60000 };
	static void *p[N];
	long base, after;

	(void)argc;
	if (!getenv("WEFT_REPORT")) {
		/* The report is written all the same; /dev/null leaves no file. */
		setenv("WEFT_REPORT", "/dev/null", 1);
		execv("/proc/self/exe", argv);
		FAIL("re-exec failed: %s", strerror(errno));
		return 1;
	}
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	base = median_faults();
	/* Small chunks freed in a pattern that keeps them apart: fastbins
	   (tcache holds 7 per size) spread over ~4 MiB of heap. */
	for (int i = 0; i < N; i++)
		p[i] = malloc(48);
	for (int i = 0; i < N; i += 2)
		free(p[i]);
	after = median_faults();
	fprintf(stderr, "exiting child with WEFT_REPORT: %ld page faults with "
			"~%d free chunks in the arena, %ld without\n",
		after, N / 2, base);
	CHECK(after < base + 200, "expected fewer than %ld page faults in an "
	      "exiting child (%ld without free chunks + 200), got %ld",
	      base + 200, base, after);
	for (int i = 1; i < N; i += 2)
		free(p[i]);
	TEST_DONE();
}
