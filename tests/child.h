/* Helper for tests whose scenario must end a process (pthread_exit from
   main, exit() from a thread, fork, resource limits): the scenario runs
   in a forked child, the parent collects what the child wrote to a pipe
   and its wait status, with a deadline (never a sleep). */
#ifndef WEFT_TEST_CHILD_H
#define WEFT_TEST_CHILD_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct child_result {
	int status;	/* wait status (valid unless timed_out) */
	int timed_out;	/* the deadline passed; the child was killed */
	size_t len;	/* bytes of output collected */
	char out[16384]; /* what the child wrote to its pipe, NUL-terminated */
	double seconds; /* from fork to the end of the child's output */
};

static inline double child_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs scenario(wfd, arg) in a forked child; wfd is the write end of the
   pipe the parent reads.  If the scenario returns, the child exits with
   its return value via _exit.  Returns 0, or -1 if fork/pipe failed. */
static inline int run_child(int (*scenario)(int wfd, void *arg), void *arg,
			    int timeout_ms, struct child_result *r)
{
	int p[2];
	pid_t pid;
	double start = child_now(), deadline = start + timeout_ms / 1000.0;

	memset(r, 0, sizeof *r);
	if (pipe(p) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		_exit(scenario(p[1], arg));
	}
	close(p[1]);
	for (;;) {
		double left = deadline - child_now();
		struct pollfd pf = {p[0], POLLIN, 0};
		int n;

		if (left <= 0) {
			r->timed_out = 1;
			break;
		}
		n = poll(&pf, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue; /* deadline re-checked above */
		if (r->len + 1 >= sizeof r->out) {
			char sink[256];
			ssize_t k = read(p[0], sink, sizeof sink);
			if (k <= 0)
				break;
			continue;
		}
		ssize_t k = read(p[0], r->out + r->len, sizeof r->out - 1 - r->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* EOF: every writer is gone */
		r->len += (size_t)k;
	}
	r->out[r->len] = 0;
	r->seconds = child_now() - start;
	close(p[0]);
	if (r->timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* Writes a whole string to fd (async-signal-safe). */
static inline void put(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t k = write(fd, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* Describes a wait status for failure messages. */
static inline const char *status_str(const struct child_result *r)
{
	static __thread char buf[64];

	if (r->timed_out)
		snprintf(buf, sizeof buf, "timed out (killed)");
	else if (WIFEXITED(r->status))
		snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(r->status));
	else if (WIFSIGNALED(r->status))
		snprintf(buf, sizeof buf, "killed by signal %d (%s)",
			 WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
	else
		snprintf(buf, sizeof buf, "status 0x%x", r->status);
	return buf;
}

/* Starts this test's preload build (.../preload/NAME, found from
   .../linked/NAME) as a plain glibc process: exec'd with the environment
   minus LD_PRELOAD, argv = {exe, args...}.  Returns the child's pid, or
   -1 with errno set when the program is missing or fork failed. */
static inline pid_t spawn_glibc_peer(char *const args[])
{
	extern char **environ;
	char exe[4096], *p;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	pid_t pid;

	if (len <= 0)
		return -1;
	exe[len] = 0;
	p = strstr(exe, "/linked/");
	if (p) {
		char tail[4096];
		snprintf(tail, sizeof tail, "%s", p + 8);
		snprintf(p, sizeof exe - (size_t)(p - exe), "/preload/%s", tail);
	}
	if (access(exe, X_OK) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char *env[256], *argv[16];
		int k = 0, a = 0;
		for (char **e = environ; *e && k < 255; e++)
			if (strncmp(*e, "LD_PRELOAD=", 11))
				env[k++] = *e;
		env[k] = NULL;
		argv[a++] = exe;
		while (args[a - 1] && a < 15) {
			argv[a] = args[a - 1];
			a++;
		}
		argv[a] = NULL;
		execve(exe, argv, env);
		_exit(127);
	}
	return pid;
}

/* spawn_glibc_peer for the usual shape of a peer's arguments: a role
   word, the shared memory's descriptor and, unless it is negative, a
   count.  Fails the test when the peer cannot be started. */
static inline pid_t spawn_glibc_peer_for(const char *role, int fd, long n)
{
	char fdarg[16], narg[32];
	char *args[] = {(char *)role, fdarg, n >= 0 ? narg : NULL, NULL};
	pid_t pid;

	snprintf(fdarg, sizeof fdarg, "%d", fd);
	snprintf(narg, sizeof narg, "%ld", n);
	pid = spawn_glibc_peer(args);
	if (pid <= 0) {
		fprintf(stderr, "FAIL: glibc peer (the preload build of this "
			"test): expected to start it, got %s\n", strerror(errno));
		exit(1);
	}
	return pid;
}

#endif
