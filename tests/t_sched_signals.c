/* Signals aimed at one weft thread: pthread_sigqueue delivers its value
   with SI_QUEUE, our pid and uid, to that thread; pthread_kill(t, 0)
   probes liveness (0 while it runs, ESRCH once it finished, joined or
   not); a signal a thread sends itself is handled before pthread_kill
   returns; internal and out-of-range signals are EINVAL; and a storm of
   signals at threads that are exiting neither hangs nor crashes (the
   exit waits for calls in flight, core/target.c).  Also: pthread_kill
   aimed at each of several weft threads runs the handler in that very
   thread (the handler records its tid), and several values queued with
   pthread_sigqueue on one real-time signal arrive in the order sent, in
   the target thread. */
#include <signal.h>
#include <time.h>
#include "t_sched_worker.h"

static siginfo_t got;
static pid_t got_tid;

static void wait_sigusr1(struct worker *w)
{
	sigset_t s;

	(void)w;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_EQ(sigwaitinfo(&s, &got), SIGUSR1);
	got_tid = (pid_t)syscall(SYS_gettid);
}

static volatile sig_atomic_t handled;
static void on_usr2(int sig)
{
	(void)sig;
	handled = 1;
}

/* The handler of SIGURG records which thread ran it. */
static volatile pid_t urg_tid;
static void on_urg(int sig)
{
	(void)sig;
	urg_tid = (pid_t)syscall(SYS_gettid);
}

/* Three parked workers; each pthread_kill must run the handler in the
   thread it names, never in main (which does not block SIGURG either).
   The worker sleeps in read(), which the handler interrupts and
   SA_RESTART resumes. */
static void kill_runs_in_target(void)
{
	enum { NW = 3 };
	struct worker w[NW];
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_urg;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGURG, &sa, NULL);
	for (int i = 0; i < NW; i++)
		REQUIRE(worker_start(&w[i], NULL) == 0, "worker");
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NW; i++) {
			long end = mono_ns() + 5000000000L;

			urg_tid = 0;
			CHECK_ERR(pthread_kill(w[i].th, SIGURG), 0);
			while (urg_tid == 0 && mono_ns() < end)
				sched_yield();
			CHECK_EQ(urg_tid, w[i].tid);
		}
	for (int i = 0; i < NW; i++) {
		worker_do(&w[i], W_QUIT);
		CHECK_ERR(pthread_join(w[i].th, NULL), 0);
		worker_close(&w[i]);
	}
}

/* Values queued on one real-time signal while the target blocks it are
   collected by the target in the order they were sent. */
#define NQ 16
static int queued[NQ];
static pid_t queued_tid;
static void collect_queued(struct worker *w)
{
	sigset_t s;
	siginfo_t si;

	(void)w;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 3);
	for (int i = 0; i < NQ; i++) {
		CHECK_EQ(sigwaitinfo(&s, &si), SIGRTMIN + 3);
		CHECK_EQ(si.si_code, SI_QUEUE);
		queued[i] = si.si_value.sival_int;
	}
	queued_tid = (pid_t)syscall(SYS_gettid);
}

static void sigqueue_order(void)
{
	pthread_attr_t a;
	struct worker w;
	sigset_t s, old;

	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 3);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	pthread_attr_init(&a);
	pthread_attr_setsigmask_np(&a, &s);
	REQUIRE(worker_start(&w, &a) == 0, "worker");
	pthread_attr_destroy(&a);
	for (int i = 0; i < NQ; i++)
		CHECK_ERR(pthread_sigqueue(w.th, SIGRTMIN + 3,
					   (union sigval){.sival_int = 1000 + i}),
			  0);
	w.hook = collect_queued;
	worker_do(&w, W_HOOK);
	for (int i = 0; i < NQ; i++)
		CHECK_EQ(queued[i], 1000 + i);
	CHECK_EQ(queued_tid, w.tid);
	worker_do(&w, W_QUIT);
	CHECK_ERR(pthread_join(w.th, NULL), 0);
	worker_close(&w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void kill_self(struct worker *w)
{
	(void)w;
	handled = 0;
	CHECK_ERR(pthread_kill(pthread_self(), SIGUSR2), 0);
	CHECK_EQ(handled, 1); /* synchronous, as in glibc */
}

static void sigqueue_value(void)
{
	pthread_attr_t a;
	struct worker w;
	sigset_t s;

	/* The worker starts with SIGUSR1 blocked and collects it with
	   sigwaitinfo; every other thread has it blocked too. */
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	pthread_attr_init(&a);
	pthread_attr_setsigmask_np(&a, &s);
	REQUIRE(worker_start(&w, &a) == 0, "worker");
	pthread_attr_destroy(&a);
	w.hook = wait_sigusr1;
	CHECK_ERR(pthread_sigqueue(w.th, SIGUSR1, (union sigval){.sival_int = 4242}), 0);
	worker_do(&w, W_HOOK);
	CHECK_EQ(got.si_signo, SIGUSR1);
	CHECK_EQ(got.si_code, SI_QUEUE);
	CHECK_EQ(got.si_value.sival_int, 4242);
	CHECK_EQ(got.si_pid, getpid());
	CHECK_EQ(got.si_uid, getuid());
	CHECK_EQ(got_tid, w.tid);

	CHECK_ERR(pthread_sigqueue(w.th, 32, (union sigval){0}), EINVAL);
	CHECK_ERR(pthread_sigqueue(w.th, 33, (union sigval){0}), EINVAL);
	CHECK_ERR(pthread_sigqueue(w.th, 65, (union sigval){0}), EINVAL);
	CHECK_ERR(pthread_sigqueue(w.th, -1, (union sigval){0}), EINVAL);
	CHECK_ERR(pthread_sigqueue(w.th, 0, (union sigval){0}), 0);

	worker_finish_unjoined(&w);
	CHECK_ERR(pthread_sigqueue(w.th, SIGUSR1, (union sigval){1}), ESRCH);
	CHECK_ERR(pthread_join(w.th, NULL), 0);
	CHECK_ERR(pthread_sigqueue(w.th, SIGUSR1, (union sigval){1}), ESRCH);
	worker_close(&w);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

static void kill_probe(void)
{
	struct worker w;

	REQUIRE(worker_start(&w, NULL) == 0, "worker");
	CHECK_ERR(pthread_kill(w.th, 0), 0);
	CHECK_ERR(pthread_kill(w.th, 32), EINVAL);
	CHECK_ERR(pthread_kill(w.th, 33), EINVAL);
	CHECK_ERR(pthread_kill(w.th, 65), EINVAL);
	CHECK_ERR(pthread_kill(w.th, -3), EINVAL);
	w.hook = kill_self;
	worker_do(&w, W_HOOK);
	CHECK_EQ(handled, 1);
	handled = 0;
	worker_finish_unjoined(&w);
	CHECK_ERR(pthread_kill(w.th, 0), ESRCH);
	CHECK_ERR(pthread_kill(w.th, SIGUSR2), ESRCH);
	CHECK_EQ(handled, 0);
	CHECK_ERR(pthread_join(w.th, NULL), 0);
	CHECK_ERR(pthread_kill(w.th, 0), ESRCH);
	worker_close(&w);
}

/* Many short threads; a second thread signals each one until ESRCH
   while it exits, and the main thread joins it. */
static pthread_t victim;
static int victim_seq, storm_done;
static long signalled;

static void *short_life(void *arg)
{
	(void)arg;
	return NULL;
}

static void *stormer(void *arg)
{
	int seen = 0;

	(void)arg;
	while (!__atomic_load_n(&storm_done, __ATOMIC_ACQUIRE)) {
		int seq = __atomic_load_n(&victim_seq, __ATOMIC_ACQUIRE);
		pthread_t v = victim;

		if (seq == seen || (seq & 1)) /* no new victim, or being replaced */
			continue;
		while (pthread_kill(v, SIGUSR2) == 0)
			signalled++;
		seen = seq;
	}
	return NULL;
}

static void storm(void)
{
	struct timespec t0, t;
	pthread_t st;
	int n = 0;

	CHECK_ERR(pthread_create(&st, NULL, stormer, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		__atomic_fetch_add(&victim_seq, 1, __ATOMIC_ACQ_REL); /* odd */
		CHECK_ERR(pthread_create(&victim, NULL, short_life, NULL), 0);
		__atomic_fetch_add(&victim_seq, 1, __ATOMIC_ACQ_REL); /* even */
		/* Joining waits for the exit, which waits for the stormer's
		   call in flight; the stormer stops at ESRCH. */
		CHECK_ERR(pthread_join(victim, NULL), 0);
		while (__atomic_load_n(&victim_seq, __ATOMIC_ACQUIRE) & 1)
			;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (++n < 20000 && t.tv_sec - t0.tv_sec < 3);
	__atomic_store_n(&storm_done, 1, __ATOMIC_RELEASE);
	pthread_join(st, NULL);
	fprintf(stderr, "storm: %d threads, %ld signals delivered\n", n, signalled);
}

int main(void)
{
	struct sigaction sa;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_sigqueue);
	REQUIRE_SERVED(pthread_kill);
	REQUIRE_SERVED(pthread_attr_setsigmask_np);
	REQUIRE_SERVED(pthread_create);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sigqueue_value();
	sigqueue_order();
	kill_probe();
	kill_runs_in_target();
	storm();
	TEST_DONE();
}
