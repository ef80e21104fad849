/* Process-directed signals in a process of weft threads (glibc serves
   sigwait*, raise, abort and kill; the threads are weft's):
   - sigwait / sigwaitinfo / sigtimedwait in three weft threads while two
     more weft threads and main merely block the signal: K
     kill(getpid(), SIGUSR1), each sent once the previous one was taken,
     are each consumed by exactly one waiter; then K real-time signals
     queued to the process in one burst with distinct values are all
     consumed, none twice; sigtimedwait with nothing pending times out
     with EAGAIN after its timeout;
   - a process-directed signal goes to the one thread that does not block
     it (the handler records its tid), round after round, with the
     unblocking thread changing;
   - raise() in a weft thread runs the handler in that thread before it
     returns;
   - abort() in a weft thread ends the process with SIGABRT, also when a
     SIGABRT handler returns and other threads block SIGABRT (forked
     children). */
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static sigset_t set_of(int a, int b)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	return s;
}

/* --- several waiters ------------------------------------------------ */

#define K_USR 100
#define K_RT 300
#define SIG_RT (SIGRTMIN + 4)
#define SIG_QUIT SIGUSR2

static int taken_usr;		  /* SIGUSR1s consumed */
static int taken_rt;		  /* SIG_RTs consumed */
static int by_waiter[3];	  /* consumed per waiter */
static unsigned char seen_rt[K_RT]; /* value -> times consumed */

static void took(int who, int sig, const siginfo_t *si)
{
	__atomic_fetch_add(&by_waiter[who], 1, __ATOMIC_RELAXED);
	if (sig == SIGUSR1) {
		if (si) {
			CHECK_EQ(si->si_code, SI_USER);
			CHECK_EQ(si->si_pid, getpid());
		}
		__atomic_fetch_add(&taken_usr, 1, __ATOMIC_RELEASE);
	} else if (sig == SIG_RT) {
		if (si) {
			int v = si->si_value.sival_int;
			if (v < 0 || v >= K_RT)
				FAIL("value %d out of range", v);
			else
				__atomic_fetch_add(&seen_rt[v], 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&taken_rt, 1, __ATOMIC_RELEASE);
	} else {
		FAIL("waiter %d got signal %d", who, sig);
	}
}

/* Waiter 0: sigwait; 1: sigwaitinfo; 2: sigtimedwait (50 ms slices).
   Each ends when SIG_QUIT is aimed at it. */
static void *waiter(void *arg)
{
	int who = (int)(intptr_t)arg;
	sigset_t s = set_of(SIGUSR1, SIG_QUIT);
	struct timespec slice = {0, 50000000};

	CHECK_WEFT_THREAD();
	sigaddset(&s, SIG_RT);
	for (;;) {
		siginfo_t si;
		int sig;

		if (who == 0) {
			int err = sigwait(&s, &sig);
			CHECK_ERR(err, 0);
			if (err)
				break;
		} else if (who == 1) {
			sig = sigwaitinfo(&s, &si);
		} else {
			sig = sigtimedwait(&s, &si, &slice);
			if (sig < 0 && errno == EAGAIN)
				continue;
		}
		/* The kernel woke this waiter for a process-wide signal
		   another waiter took first (sigwait retries by itself). */
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig == SIG_QUIT)
			break;
		if (sig < 0) {
			FAIL("waiter %d: %s", who, strerror(errno));
			break;
		}
		took(who, sig, who ? &si : NULL);
	}
	return NULL;
}

/* Blocks everything main blocks (inherited) and parks on a pipe. */
static int park[2];
static void *bystander(void *arg)
{
	char c;

	(void)arg;
	CHECK_WEFT_THREAD();
	if (read(park[0], &c, 1) != 1)
		FAIL("bystander: read");
	return NULL;
}

/* Waits (at most 5 s) until *counter reaches want. */
static int wait_count(int *counter, int want)
{
	long end = mono_ns() + 5000000000L;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want)
		if (mono_ns() > end)
			return 0;
		else
			sched_yield();
	return 1;
}

static void several_waiters(void)
{
	pthread_t w[3], b[2];
	sigset_t s = set_of(SIGUSR1, SIG_QUIT), old;
	struct timespec t0 = {0, 30000000};
	siginfo_t si;
	long start;

	sigaddset(&s, SIG_RT);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	REQUIRE(pipe(park) == 0, "pipe");
	for (int i = 0; i < 3; i++)
		CHECK_ERR(pthread_create(&w[i], NULL, waiter, (void *)(intptr_t)i), 0);
	for (int i = 0; i < 2; i++)
		CHECK_ERR(pthread_create(&b[i], NULL, bystander, NULL), 0);

	/* Standard signals do not queue: one at a time. */
	for (int i = 0; i < K_USR; i++) {
		CHECK_EQ(kill(getpid(), SIGUSR1), 0);
		if (!wait_count(&taken_usr, i + 1)) {
			FAIL("SIGUSR1 #%d not consumed within 5 s", i + 1);
			break;
		}
	}
	/* Real-time signals queue: all at once. */
	for (int i = 0; i < K_RT; i++)
		CHECK_EQ(sigqueue(getpid(), SIG_RT, (union sigval){.sival_int = i}), 0);
	CHECK(wait_count(&taken_rt, K_RT), "%d of %d queued signals consumed",
	      taken_rt, K_RT);

	for (int i = 0; i < 3; i++) {
		CHECK_ERR(pthread_kill(w[i], SIG_QUIT), 0);
		CHECK_ERR(pthread_join(w[i], NULL), 0);
	}
	CHECK(write(park[1], "xx", 2) == 2, "park");
	for (int i = 0; i < 2; i++)
		CHECK_ERR(pthread_join(b[i], NULL), 0);
	close(park[0]);
	close(park[1]);

	CHECK_EQ(taken_usr, K_USR);
	CHECK_EQ(taken_rt, K_RT);
	for (int i = 0; i < K_RT; i++)
		if (seen_rt[i] > 1)
			FAIL("queued value %d consumed %d times", i, seen_rt[i]);
	/* Nothing left behind for anybody. */
	CHECK_EQ(sigtimedwait(&s, &si, &(struct timespec){0, 0}), -1);
	fprintf(stderr, "waiters: sigwait %d, sigwaitinfo %d, sigtimedwait %d\n",
		by_waiter[0], by_waiter[1], by_waiter[2]);

	/* A timeout with nothing pending. */
	start = mono_ns();
	errno = 0;
	CHECK_EQ(sigtimedwait(&s, &si, &t0), -1);
	CHECK_ERR(errno, EAGAIN);
	CHECK(mono_ns() - start >= 29000000, "returned after %ld ns",
	      mono_ns() - start);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void *timeout_in_thread(void *arg)
{
	sigset_t s = set_of(SIGUSR1, 0);
	struct timespec t = {0, 20000000};
	long start = mono_ns();
	int r;

	(void)arg;
	CHECK_WEFT_THREAD();
	errno = 0;
	r = sigtimedwait(&s, NULL, &t);
	CHECK_EQ(r, -1);
	CHECK_ERR(errno, EAGAIN);
	CHECK(mono_ns() - start >= 19000000, "returned after %ld ns",
	      mono_ns() - start);
	return NULL;
}

/* --- the one thread that does not block it -------------------------- */

#define NB 4
static volatile pid_t hup_tid;
static int hup_pipe[2];
static void on_hup(int sig)
{
	int e = errno;

	(void)sig;
	hup_tid = gettid_();
	if (write(hup_pipe[1], "h", 1) != 1)
		abort();
	errno = e;
}

struct blocker {
	pthread_t th;
	pid_t tid;
	int cmd[2], ack[2];
};

/* Each command byte: 'u' unblock SIGHUP, 'b' block it again, 'q' quit. */
static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	sigset_t s = set_of(SIGHUP, 0);
	char c;

	CHECK_WEFT_THREAD();
	b->tid = gettid_();
	while (read(b->cmd[0], &c, 1) == 1 && c != 'q') {
		pthread_sigmask(c == 'u' ? SIG_UNBLOCK : SIG_BLOCK, &s, NULL);
		if (write(b->ack[1], &c, 1) != 1)
			abort();
	}
	return NULL;
}

static void blocker_do(struct blocker *b, char c)
{
	REQUIRE(write(b->cmd[1], &c, 1) == 1, "command");
	REQUIRE(read(b->ack[0], &c, 1) == 1, "answer");
}

static void to_the_unblocked_one(void)
{
	struct blocker b[NB];
	struct sigaction sa;
	sigset_t s = set_of(SIGHUP, 0), old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_hup;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGHUP, &sa, NULL);
	REQUIRE(pipe(hup_pipe) == 0, "pipe");
	pthread_sigmask(SIG_BLOCK, &s, &old); /* inherited by the blockers */
	for (int i = 0; i < NB; i++) {
		REQUIRE(pipe(b[i].cmd) == 0 && pipe(b[i].ack) == 0, "pipe");
		CHECK_ERR(pthread_create(&b[i].th, NULL, blocker_main, &b[i]), 0);
	}
	for (int round = 0; round < 3 * NB; round++) {
		struct blocker *u = &b[round % NB];
		struct pollfd pf = {.fd = hup_pipe[0], .events = POLLIN};
		char c;

		blocker_do(u, 'u');
		hup_tid = 0;
		CHECK_EQ(kill(getpid(), SIGHUP), 0);
		if (poll(&pf, 1, 5000) != 1) {
			FAIL("round %d: no handler ran within 5 s", round);
			break;
		}
		CHECK(read(hup_pipe[0], &c, 1) == 1, "handler pipe");
		CHECK(hup_tid == u->tid, "round %d: handler ran in %d, expected %d",
		      round, (int)hup_tid, (int)u->tid);
		blocker_do(u, 'b');
	}
	for (int i = 0; i < NB; i++) {
		CHECK(write(b[i].cmd[1], "q", 1) == 1, "quit");
		CHECK_ERR(pthread_join(b[i].th, NULL), 0);
		close(b[i].cmd[0]), close(b[i].cmd[1]);
		close(b[i].ack[0]), close(b[i].ack[1]);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(hup_pipe[0]);
	close(hup_pipe[1]);
	signal(SIGHUP, SIG_DFL);
}

/* --- raise and abort -------------------------------------------------- */

static volatile pid_t winch_tid;
static void on_winch(int sig)
{
	(void)sig;
	winch_tid = gettid_();
}

static void *raiser(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	winch_tid = 0;
	CHECK_EQ(raise(SIGWINCH), 0);
	CHECK_EQ(winch_tid, gettid_()); /* before raise returned, here */
	return NULL;
}

static void on_abrt(int sig)
{
	(void)sig; /* returns: abort must still end the process */
}

static void *aborter(void *arg)
{
	(void)arg;
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		_exit(7);
	abort();
}

static void *abrt_blocker(void *arg)
{
	sigset_t s = set_of(SIGABRT, 0);

	pthread_sigmask(SIG_BLOCK, &s, NULL);
	pthread_barrier_wait(arg);
	for (;;)
		pause();
	return NULL;
}

static int abort_scenario(int wfd, void *arg)
{
	pthread_t t, blk[3];
	pthread_barrier_t bar;
	sigset_t s = set_of(SIGABRT, 0);

	(void)wfd;
	/* No core file left behind, whatever the machine's setting. */
	setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
	if (arg) {
		signal(SIGABRT, on_abrt);
		/* Others block SIGABRT, main included. */
		pthread_barrier_init(&bar, NULL, 4);
		for (int i = 0; i < 3; i++)
			if (pthread_create(&blk[i], NULL, abrt_blocker, &bar))
				return 3;
		pthread_barrier_wait(&bar);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
	}
	if (pthread_create(&t, NULL, aborter, NULL))
		return 4;
	pthread_join(t, NULL);
	return 5; /* abort returned */
}

static void abort_from_thread(void)
{
	struct child_result r;

	for (int variant = 0; variant < 2; variant++) {
		REQUIRE(run_child(abort_scenario, variant ? (void *)1 : NULL, 10000,
				  &r) == 0,
			"fork");
		CHECK(!r.timed_out && WIFSIGNALED(r.status) &&
			      WTERMSIG(r.status) == SIGABRT,
		      "abort() in a weft thread (variant %d): %s", variant,
		      status_str(&r));
	}
}

int main(void)
{
	pthread_t t;
	struct sigaction sa;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_sigmask);
	REQUIRE_SERVED(pthread_kill);
	several_waiters();
	CHECK_ERR(pthread_create(&t, NULL, timeout_in_thread, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	to_the_unblocked_one();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	CHECK_ERR(pthread_create(&t, NULL, raiser, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	abort_from_thread();
	TEST_DONE();
}
