/* libweft loaded by dlopen.

   In a process where weft already serves (both test modes), dlopen of
   libweft.so must return the loaded library, still active.

   In a plain glibc process that loads libweft.so late, the program and
   libc keep calling glibc's pthread functions, so weft must stay out of
   the way: dlopen returns (it hung before: weft's constructor ran its
   probe thread under the loader's lock, and the probe thread called
   dlsym), weft reports itself inactive with one line on stderr, and
   glibc's own threads still work, cancellation included (weft must not
   have replaced glibc's SIGCANCEL handler).  The late scenario runs in
   the plain build of this test (build/tests/preload/t_dlopen) started
   without LD_PRELOAD; its own alarm turns a hang into a failure. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>
#include "child.h"
#include "harness.h"

static int late_pipe[2];

static void *blocked_reader(void *arg)
{
	char c;

	(void)arg;
	/* read is a cancellation point; nobody ever writes */
	if (read(late_pipe[0], &c, 1) < 0)
		return (void *)1;
	return (void *)2;
}

static void *returns_arg(void *arg)
{
	return arg;
}

/* The plain process: prints "late ok" on success. */
static int late_load(const char *lib)
{
	pthread_t t;
	void *res = NULL;
	int (*active)(void);
	void *h;

	alarm(30); /* SIGALRM: dlopen or a thread call hung */
	if (dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {
		printf("libweft is loaded already: not a plain process\n");
		return 1;
	}
	if (pipe(late_pipe) != 0 ||
	    pthread_create(&t, NULL, blocked_reader, NULL) != 0) {
		printf("glibc pthread_create failed before the dlopen\n");
		return 1;
	}
	h = dlopen(lib, RTLD_NOW);
	if (!h) {
		printf("dlopen(%s) failed: %s\n", lib, dlerror());
		return 1;
	}
	active = (int (*)(void))dlsym(h, "weft_active");
	if (!active) {
		printf("weft_active not found in %s\n", lib);
		return 1;
	}
	if (active() != 0) {
		printf("expected weft_active() == 0 after a late dlopen, got %d\n",
		       active());
		return 1;
	}
	/* glibc cancels its own thread blocked in read */
	if (pthread_cancel(t) != 0 || pthread_join(t, &res) != 0 ||
	    res != PTHREAD_CANCELED) {
		printf("expected glibc's thread cancelled (%p), got %p\n",
		       PTHREAD_CANCELED, res);
		return 1;
	}
	if (pthread_create(&t, NULL, returns_arg, (void *)7) != 0 ||
	    pthread_join(t, &res) != 0 || res != (void *)7) {
		printf("a glibc thread created after the dlopen returned %p, "
		       "expected 0x7\n", res);
		return 1;
	}
	printf("late ok\n");
	return 0;
}

struct late_args {
	char *plain;
	char *lib;
};

static int exec_plain(int wfd, void *arg)
{
	struct late_args *a = arg;
	char *argv[] = { a->plain, "--late", a->lib, NULL };
	extern char **environ;

	dup2(wfd, 1);
	dup2(wfd, 2);
	unsetenv("LD_PRELOAD");
	execve(a->plain, argv, environ);
	printf("execve(%s) failed: %s\n", a->plain, strerror(errno));
	return 127;
}

/* The plain build of this test: this program itself in preload mode,
   its sibling in linked mode. */
static void plain_binary(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	REQUIRE(n > 0, "readlink /proc/self/exe failed");
	self[n] = '\0';
	slash = strrchr(self, '/');
	REQUIRE(slash != NULL, "no directory in %s", self);
	*slash = '\0';
	slash = strrchr(self, '/');
	REQUIRE(slash != NULL, "no parent directory in %s", self);
	*slash = '\0';
	REQUIRE(snprintf(out, size, "%s/preload/t_dlopen", self) < (int)size,
		"path too long");
}

int main(int argc, char **argv)
{
	static char plain[PATH_MAX], lib[PATH_MAX];
	struct child_result r;
	Dl_info info;
	int (*active)(void);
	void *h;

	if (argc == 3 && strcmp(argv[1], "--late") == 0)
		return late_load(argv[2]);
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	REQUIRE(dladdr((void *)weft_active, &info) && info.dli_fname,
		"dladdr(weft_active) failed");
	snprintf(lib, sizeof lib, "%s", info.dli_fname);

	/* Already loaded: the same library, still serving. */
	h = dlopen(lib, RTLD_NOW);
	REQUIRE(h != NULL, "dlopen(%s) failed: %s", lib, dlerror());
	active = (int (*)(void))dlsym(h, "weft_active");
	CHECK(active == weft_active, "dlsym gave %p, expected the loaded "
	      "weft_active %p", (void *)active, (void *)weft_active);
	if (active)
		CHECK_EQ(active(), 1);
	dlclose(h);

	plain_binary(plain, sizeof plain);
	REQUIRE(access(plain, X_OK) == 0, "plain build %s missing", plain);
	struct late_args a = { plain, lib };
	REQUIRE(run_child(exec_plain, &a, 60000, &r) == 0, "fork failed");
	fprintf(stderr, "plain process, libweft loaded late:\n%s", r.out);
	CHECK(!r.timed_out, "the plain process did not finish in 60 s");
	if (!r.timed_out && WIFSIGNALED(r.status))
		FAIL("expected exit 0, got killed by signal %d%s",
		     WTERMSIG(r.status), WTERMSIG(r.status) == SIGALRM ?
		     " (its 30 s alarm: something hung)" : "");
	else
		CHECK(!r.timed_out && WIFEXITED(r.status) &&
		      WEXITSTATUS(r.status) == 0,
		      "expected exit 0, got status %#x", r.status);
	CHECK(strstr(r.out, "late ok") != NULL, "expected \"late ok\" in its "
	      "output");
	CHECK(strstr(r.out, "loaded after libc") != NULL, "expected weft's "
	      "line saying it was loaded after libc in its output");
	TEST_DONE();
}
