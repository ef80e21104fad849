/* WEFT_GUARD=mprotect: a thread's guard pages are a PROT_NONE mapping of
   their own, directly below the stack, as glibc makes them (gdb's gcore
   cannot read guards made with MADV_GUARD_INSTALL and then loses the
   stacks).  The test runs itself again with the variable set; there a
   thread finds the "---p" mapping ending where its stack begins, and a
   write just below its stack kills a forked copy with SIGSEGV.  The
   default (advise) is reported for information: on a kernel with
   MADV_GUARD_INSTALL its guard has no mapping of its own. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

/* The permissions of the mapping that ends exactly at `addr`, or "". */
static void mapping_ending_at(uintptr_t addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	perms[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char p[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && hi == addr) {
			memcpy(perms, p, 5);
			break;
		}
	}
	fclose(f);
}

static void *probe(void *arg)
{
	int strict = *(int *)arg, st;
	pthread_attr_t a;
	void *lo;
	size_t size, guard;
	char perms[5];
	pid_t pid;

	CHECK_WEFT_THREAD();
	REQUIRE(pthread_getattr_np(pthread_self(), &a) == 0, "getattr_np");
	pthread_attr_getstack(&a, &lo, &size);
	pthread_attr_getguardsize(&a, &guard);
	pthread_attr_destroy(&a);
	CHECK(guard > 0, "expected a guard, got guardsize 0");
	mapping_ending_at((uintptr_t)lo, perms);
	printf("WEFT_GUARD=%s: mapping ending at the stack's low end: \"%s\"\n",
	       strict ? "mprotect" : "(default)", perms);
	if (strict)
		CHECK(strcmp(perms, "---p") == 0, "expected a ---p guard mapping "
		      "ending at %p, got \"%s\"", lo, perms);
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		*((volatile char *)lo - 1) = 1; /* the guard's top byte */
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "expected SIGSEGV "
	      "writing below the stack, got status %#x", st);
	return NULL;
}

static int run_probe(int strict)
{
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, probe, &strict) == 0, "pthread_create");
	REQUIRE(pthread_join(t, NULL) == 0, "pthread_join");
	return harness_failures;
}

int main(int argc, char **argv)
{
	int st;
	pid_t pid;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	if (argc == 2 && strcmp(argv[1], "--mprotect") == 0)
		return run_probe(1) ? 1 : 0;
	run_probe(0);
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		char *args[] = { argv[0], "--mprotect", NULL };
		setenv("WEFT_GUARD", "mprotect", 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the WEFT_GUARD=mprotect run "
	      "failed: status %#x", st);
	TEST_DONE();
}
