/* weft's WEFT_* variables when weft starts from a .preinit_array function.

   AddressSanitizer's start-up calls a pthread function from the program's
   .preinit_array, which runs before libc's own initialisation, when
   `environ` is still NULL: getenv found nothing there, so every WEFT_*
   variable was ignored for the whole run.  This program has such a
   function (it creates a key, which starts weft); the test runs it again
   with WEFT_REPORT set and checks that the report was written, which only
   happens if start-up read the variable, and that main still sees the
   environment.  Reading the variables early used to go through a
   dlopen("libc.so.6", RTLD_NOLOAD), which ran libc's initialiser before
   its time without the environment, so `environ` stayed NULL in main.
   With the old library the child exits 3 and no report appears. */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

extern char **environ;
static int environ_was_null = -1;

static void early(int argc, char **argv, char **envp)
{
	pthread_key_t k;

	(void)argc;
	(void)argv;
	(void)envp;
	environ_was_null = environ == NULL;
	if (pthread_key_create(&k, NULL) == 0)
		pthread_key_delete(k);
}

__attribute__((section(".preinit_array"), used)) static void (*const
	preinit_entry)(int, char **, char **) = early;

int main(int argc, char **argv)
{
	char path[] = "/tmp/weft-preinit-XXXXXX", buf[512] = "";
	int fd, st;
	pid_t pid;
	ssize_t n;

	if (argc == 2 && strcmp(argv[1], "--child") == 0) {
		printf("environ was %s in .preinit_array\n",
		       environ_was_null ? "NULL" : "set");
		/* weft's start-up once made libc initialise itself early,
		   without the environment: environ stayed NULL for good. */
		if (!environ || !getenv("WEFT_REPORT")) {
			printf("FAIL: expected the environment in main, got "
			       "environ %p and no WEFT_REPORT\n", (void *)environ);
			return 3;
		}
		return 0; /* the report is written at exit */
	}
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_key_create);
	fd = mkstemp(path);
	REQUIRE(fd >= 0, "mkstemp failed");
	close(fd);
	unlink(path); /* weft must create it */
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		char *args[] = { argv[0], "--child", NULL };
		setenv("WEFT_REPORT", path, 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "expected weft's report in %s (WEFT_REPORT read at "
	      "start-up from .preinit_array), got no file", path);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
		unlink(path);
		CHECK(strstr(buf, "active=1") != NULL, "expected active=1 in the "
		      "report, got: %s", buf);
	}
	TEST_DONE();
}
