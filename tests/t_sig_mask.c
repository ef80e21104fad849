/* pthread_sigmask (weft's) hides glibc's reserved signals 32 and 33
   (SIGCANCEL, SIGSETXID), as glibc does:
   - blocking a full set, in the main thread and in a weft thread, reads
     back every signal but 32, 33 (and SIGKILL/SIGSTOP, which the kernel
     refuses); the raw rt_sigprocmask agrees that 32 and 33 are not
     blocked; SIG_SETMASK likewise; glibc's sigprocmask hides them too;
   - a mask in which 32 was blocked behind weft's back (raw system call)
     is still reported without it;
   - sigaction and signal refuse 32 and 33 (glibc's, EINVAL);
   - a bad `how` is EINVAL (and ignored with no set, as POSIX says);
   - the proof that it matters: a thread that blocked everything can
     still be cancelled asynchronously (SIGCANCEL reaches it), and
     setresgid still reaches it (SIGSETXID; in a forked child, as root). */
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

/* The calling thread's mask as the kernel has it. */
static uint64_t raw_mask(void)
{
	uint64_t m = 0;

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof m);
	return m;
}

static void raw_block(int sig)
{
	uint64_t m = 1ULL << (sig - 1);

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &m, NULL, sizeof m);
}

/* Every bit set, 32 and 33 included: glibc's sigfillset and sigaddset
   refuse those two, but a program can fill the bytes itself (memset),
   and the kernel mask is then what pthread_sigmask must protect. */
static void fill_all(sigset_t *s)
{
	memset(s, 0xff, sizeof *s);
}

/* Adds `sig` by its bit, even 32 and 33. */
static void add_raw(sigset_t *s, int sig)
{
	((unsigned long *)s)[(sig - 1) / 64] |= 1UL << ((sig - 1) % 64);
}

/* Expects every catchable signal except 32 and 33 in `s`. */
static void check_all_but_reserved(const sigset_t *s, const char *who)
{
	for (int sig = 1; sig < 65; sig++) {
		int want = !(sig == 32 || sig == 33 || sig == SIGKILL ||
			     sig == SIGSTOP);
		if (sigismember(s, sig) != want)
			FAIL("%s: signal %d: expected %s in the mask", who, sig,
			     want ? "" : "not");
	}
}

static void check_raw(const char *who)
{
	uint64_t m = raw_mask();

	CHECK((m & (1ULL << 31)) == 0, "%s: kernel mask blocks 32 (0x%llx)", who,
	      (unsigned long long)m);
	CHECK((m & (1ULL << 32)) == 0, "%s: kernel mask blocks 33 (0x%llx)", who,
	      (unsigned long long)m);
	CHECK((m & (1ULL << (SIGUSR1 - 1))) != 0, "%s: SIGUSR1 not blocked", who);
	CHECK((m & (1ULL << 63)) != 0, "%s: signal 64 not blocked", who);
}

static void mask_checks(const char *who)
{
	sigset_t full, old, s, saved;

	CHECK_ERR(pthread_sigmask(SIG_SETMASK, NULL, &saved), 0);
	fill_all(&full);
	CHECK_ERR(pthread_sigmask(SIG_BLOCK, &full, NULL), 0);
	CHECK_ERR(pthread_sigmask(SIG_BLOCK, NULL, &old), 0);
	check_all_but_reserved(&old, who);
	check_raw(who);

	/* SIG_SETMASK with a set that names 32 and 33 explicitly. */
	sigemptyset(&s);
	add_raw(&s, 32);
	add_raw(&s, 33);
	sigaddset(&s, SIGUSR2);
	CHECK_ERR(pthread_sigmask(SIG_SETMASK, &s, &old), 0);
	check_all_but_reserved(&old, who); /* the previous (full) mask */
	CHECK_ERR(pthread_sigmask(SIG_SETMASK, NULL, &old), 0);
	CHECK_EQ(sigismember(&old, SIGUSR2), 1);
	CHECK_EQ(sigismember(&old, 32), 0);
	CHECK_EQ(sigismember(&old, 33), 0);
	CHECK_EQ(sigismember(&old, SIGUSR1), 0);
	CHECK_EQ(raw_mask(), 1ULL << (SIGUSR2 - 1));

	/* glibc's sigprocmask hides them as well. */
	CHECK_EQ(sigprocmask(SIG_SETMASK, &full, NULL), 0);
	CHECK_EQ(sigprocmask(SIG_BLOCK, NULL, &old), 0);
	check_all_but_reserved(&old, who);
	check_raw(who);

	/* 32 blocked behind weft's back: still not reported. */
	sigemptyset(&s);
	CHECK_ERR(pthread_sigmask(SIG_SETMASK, &s, NULL), 0);
	raw_block(32);
	CHECK((raw_mask() & (1ULL << 31)) != 0, "raw block of 32 did not take");
	CHECK_ERR(pthread_sigmask(SIG_BLOCK, NULL, &old), 0);
	CHECK_EQ(sigismember(&old, 32), 0);
	/* Installing the reported mask clears it again. */
	CHECK_ERR(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	CHECK_EQ(raw_mask(), 0);

	/* `how`: EINVAL with a set, ignored without one; the mask is
	   unchanged after the error. */
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	errno = 0;
	CHECK_ERR(pthread_sigmask(99, &s, NULL), EINVAL);
	CHECK_ERR(errno, 0); /* an error number, not -1 and errno */
	CHECK_ERR(pthread_sigmask(-1, &s, &old), EINVAL);
	CHECK_EQ(raw_mask(), 0);
	CHECK_ERR(pthread_sigmask(99, NULL, &old), 0);

	CHECK_ERR(pthread_sigmask(SIG_SETMASK, &saved, NULL), 0);
}

static void *in_thread(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	mask_checks("weft thread");
	return NULL;
}

/* Blocks everything through pthread_sigmask, then spins (at most 5 s)
   with asynchronous cancellation: only SIGCANCEL can stop it. */
static volatile int spinning;
static void *blocked_spinner(void *arg)
{
	sigset_t full;
	long end = mono_ns() + 5000000000L;

	(void)arg;
	CHECK_WEFT_THREAD();
	fill_all(&full);
	pthread_sigmask(SIG_SETMASK, &full, NULL);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	spinning = 1;
	while (mono_ns() < end)
		;
	return (void *)1;
}

static void cancel_blocked_thread(void)
{
	pthread_t t;
	void *res = NULL;

	CHECK_ERR(pthread_create(&t, NULL, blocked_spinner, NULL), 0);
	while (!spinning)
		sched_yield();
	CHECK_ERR(pthread_cancel(t), 0);
	CHECK_ERR(pthread_join(t, &res), 0);
	CHECK(res == PTHREAD_CANCELED,
	      "a thread that blocked every signal was not cancelled (got %p)",
	      res);
}

/* setresgid must reach a thread that blocked every signal. */
static pthread_barrier_t bar;
static void *blocked_waiter(void *arg)
{
	sigset_t full;
	gid_t r, e, s;

	(void)arg;
	fill_all(&full);
	pthread_sigmask(SIG_SETMASK, &full, NULL);
	pthread_barrier_wait(&bar); /* mask in place */
	pthread_barrier_wait(&bar); /* gid changed */
	syscall(SYS_getresgid, &r, &e, &s);
	return (void *)(intptr_t)(r == 65534 && e == 65534 && s == 65534);
}

static int setxid_scenario(int wfd, void *arg)
{
	pthread_t t;
	void *ok = NULL;

	(void)wfd;
	(void)arg;
	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&t, NULL, blocked_waiter, NULL) != 0)
		return 3;
	pthread_barrier_wait(&bar);
	if (setresgid(65534, 65534, 65534) != 0)
		return 4;
	pthread_barrier_wait(&bar);
	pthread_join(t, &ok);
	return ok ? 0 : 5;
}

/* Nor can they be caught: glibc's sigaction refuses them. */
static void not_catchable(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	for (int sig = 32; sig <= 33; sig++) {
		errno = 0;
		CHECK_EQ(sigaction(sig, &sa, NULL), -1);
		CHECK_ERR(errno, EINVAL);
		CHECK(signal(sig, SIG_IGN) == SIG_ERR, "signal(%d) accepted", sig);
	}
}

int main(void)
{
	pthread_t t;
	struct child_result r;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_sigmask);
	REQUIRE_SERVED(pthread_create);
	mask_checks("main thread");
	CHECK_ERR(pthread_create(&t, NULL, in_thread, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	cancel_blocked_thread();
	not_catchable();
	if (getuid() == 0) {
		REQUIRE(run_child(setxid_scenario, NULL, 10000, &r) == 0, "fork");
		CHECK(!r.timed_out && WIFEXITED(r.status) &&
			      WEXITSTATUS(r.status) == 0,
		      "setresgid with a thread that blocked everything: %s",
		      status_str(&r));
	} else {
		printf("note: not root, set*id part skipped\n");
	}
	TEST_DONE();
}
