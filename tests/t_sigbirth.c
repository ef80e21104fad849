/* Signals at a thread's birth.  weft does not block signals around
   clone (it makes the thread complete before clone instead), so a
   handler may run in a new thread before its start routine.  Such a
   handler must find a working thread: TLS, errno, ctype tables,
   sched_getcpu, pthread_self.  A thread created with
   pthread_attr_setsigmask_np must start with exactly that mask, and a
   plain thread with its creator's mask. */
#include <ctype.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include "harness.h"

static __thread int tls_marker = 1234;
static __thread int role; /* 0: a new thread before its start routine */
static volatile int bad_tls, bad_ctype, bad_cpu, bad_self, handled, early;
static volatile int stop;

#define MAX_ROUNDS 10
#define MAX_SECONDS 30.0

static double harness_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	if (tls_marker != 1234)
		bad_tls++;
	if (!isalpha('q') || toupper('q') != 'Q' || isdigit('x'))
		bad_ctype++;
	if (sched_getcpu() < 0)
		bad_cpu++;
	if (pthread_self() == 0)
		bad_self++;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	if (role == 0)
		__atomic_add_fetch(&early, 1, __ATOMIC_RELAXED);
	errno = saved;
}

/* Sends process-directed signals as fast as it can: the kernel picks a
   thread that does not block it, often a brand-new one. */
static void *bombard(void *arg)
{
	(void)arg;
	role = 2;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		kill(getpid(), SIGUSR1);
		sched_yield();
	}
	return NULL;
}

static void *nothing(void *arg)
{
	role = 1;
	return arg;
}

static sigset_t seen_mask;
static void *report_mask(void *arg)
{
	CHECK_WEFT_THREAD();
	pthread_sigmask(SIG_BLOCK, NULL, &seen_mask);
	return arg;
}

int main(void)
{
	struct sigaction sa;
	pthread_t b, t;
	sigset_t only_usr1, want;

	WEFT_REQUIRE();
	role = 3;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);

	/* The bombarding thread and main block SIGUSR1, so it lands in the
	   short-lived threads (which inherit main's mask otherwise: unblock
	   it in main only while creating). */
	sigemptyset(&only_usr1);
	sigaddset(&only_usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &only_usr1, NULL);
	CHECK_ERR(pthread_create(&b, NULL, bombard, NULL), 0);
	pthread_sigmask(SIG_UNBLOCK, &only_usr1, NULL);
	/* Rounds of 4000 threads until a handler has hit one before its
	   start routine (the window is a few instructions wide, and whether
	   the kernel picks a new thread rather than main depends on timing:
	   on a loaded machine one round sometimes saw none), at most
	   MAX_ROUNDS rounds or MAX_SECONDS. */
	double t_end = harness_now() + MAX_SECONDS;
	int rounds = 0;

	do {
		for (int i = 0; i < 4000; i++) {
			if (pthread_create(&t, NULL, nothing, NULL) != 0) {
				FAIL("pthread_create failed at %d", i);
				break;
			}
			pthread_join(t, NULL);
		}
		rounds++;
	} while (!__atomic_load_n(&early, __ATOMIC_RELAXED) &&
		 rounds < MAX_ROUNDS && harness_now() < t_end);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(b, NULL);
	fprintf(stderr, "handlers run: %d, before a start routine: %d "
			"(%d round(s) of 4000 threads)\n", handled, early, rounds);
	CHECK(handled > 0, "no handler ran at all");
	CHECK(early > 0, "no handler hit a thread before its start routine: "
			 "the window was not exercised");
	CHECK_EQ(bad_tls, 0);
	CHECK_EQ(bad_ctype, 0);
	CHECK_EQ(bad_cpu, 0);
	CHECK_EQ(bad_self, 0);

	/* A plain thread starts with the creator's mask. */
	pthread_sigmask(SIG_BLOCK, &only_usr1, NULL);
	CHECK_ERR(pthread_create(&t, NULL, report_mask, NULL), 0);
	pthread_join(t, NULL);
	CHECK(sigismember(&seen_mask, SIGUSR1) == 1,
	      "creator blocked SIGUSR1; the new thread did not");
	CHECK(sigismember(&seen_mask, SIGUSR2) == 0,
	      "the new thread blocks SIGUSR2, its creator did not");
	pthread_sigmask(SIG_UNBLOCK, &only_usr1, NULL);

	/* pthread_attr_setsigmask_np: exactly the attribute's mask. */
	{
		pthread_attr_t a;
		sigemptyset(&want);
		sigaddset(&want, SIGUSR2);
		sigaddset(&want, SIGTERM);
		pthread_attr_init(&a);
		CHECK_ERR(pthread_attr_setsigmask_np(&a, &want), 0);
		CHECK_ERR(pthread_create(&t, &a, report_mask, NULL), 0);
		pthread_join(t, NULL);
		pthread_attr_destroy(&a);
		CHECK(sigismember(&seen_mask, SIGUSR2) == 1 &&
			      sigismember(&seen_mask, SIGTERM) == 1,
		      "attribute mask (USR2, TERM) not in force");
		CHECK(sigismember(&seen_mask, SIGUSR1) == 0,
		      "a signal outside the attribute mask is blocked");
	}
	TEST_DONE();
}
