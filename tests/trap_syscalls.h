/* System calls a test must not make, counted: a seccomp filter turns
   the listed calls into SIGSYS, whose handler counts them (those of
   thread `trap_tid` only, or every thread's while it is 0) and makes
   each return `trap_result` without entering the kernel.  A filter
   cannot be removed and binds the threads created after it: install it
   in a forked child, before the threads it is to watch. */
#ifndef WEFT_TEST_TRAP_SYSCALLS_H
#define WEFT_TEST_TRAP_SYSCALLS_H

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define TRAP_MAX 8

static int trap_count;
static pid_t trap_tid;
static long trap_result;

static void trap_handler(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	if (!trap_tid || syscall(SYS_gettid) == trap_tid)
		__atomic_add_fetch(&trap_count, 1, __ATOMIC_RELAXED);
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = trap_result;
}

/* Traps the `n` (at most TRAP_MAX) system calls in nrs[]: 0, or -1 with
   errno. */
static inline int trap_syscalls(const int *nrs, int n)
{
	struct sock_filter f[6 + TRAP_MAX];
	struct sock_fprog prog = {.len = (unsigned short)(n + 6), .filter = f};
	struct sigaction sa = {.sa_sigaction = trap_handler,
			       .sa_flags = SA_SIGINFO};
	int k = 0;

	if (n < 1 || n > TRAP_MAX) {
		errno = EINVAL;
		return -1;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) /* a match jumps to the last statement */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned)nrs[i],
						      (unsigned char)(n - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Runs fn in a forked child, which ends with its checks' verdict (and
   by its `alarm_s` alarm if it hangs: the inherited watchdog, or the
   default action); the parent fails with `what` unless the child
   passed. */
static inline void trap_in_child(void (*fn)(void), unsigned alarm_s,
				 const char *what)
{
	pid_t pid = fork();
	int st;

	if (pid < 0) {
		FAIL("%s: fork: %s", what, strerror(errno));
		return;
	}
	if (pid == 0) {
		alarm(alarm_s);
		fn();
		_exit(harness_failures ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid)
		FAIL("%s: waitpid: %s", what, strerror(errno));
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s: child status %#x (a hang ends it by its %u s alarm)",
		      what, st, alarm_s);
}

#endif
