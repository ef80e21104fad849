/* Calls that act on a thread by its handle (pthread_kill,
   pthread_sigqueue, pthread_getschedparam, pthread_getattr_np,
   pthread_cancel), made by several threads
   while the main thread joins that very thread and creates the next:
   each call answers 0 or ESRCH and none crashes.

   A call that looked the handle up just before the join used to go on
   with the descriptor it had found: a new thread could be zeroing and
   filling it again (the route then took a NULL TCB to glibc's
   pthread_kill), or, with the stack cache off, the join had already
   unmapped it (a fault in thread_pin).  With WEFT_STACK_CACHE=0 the
   second happened within seconds on two CPUs; the default settings hit
   the first once in about 1,400 runs of t_sched_signals' storm
   (core/registry.c explains the hold that fixed both).  pthread_cancel
   and pthread_getattr_np read the TCB or the descriptor too (the
   cancel word, the tid, the stack's place) and take the same hold.

   The test runs with the default settings, then again (a fresh
   process, same mode) with WEFT_STACK_CACHE=0.  Each run is bounded by
   its time and its number of threads. */
#include <signal.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

enum { CALLERS = 5, MAX_THREADS = 200000 };

static pthread_t current;
static int stop;
static long calls[CALLERS], unexpected[CALLERS];

static void on_usr2(int sig)
{
	(void)sig;
}

static void *short_life(void *arg)
{
	return arg;
}

/* Caller i uses one of the five calls on whatever thread is current
   (its start routine returns at once: a cancel changes only its result,
   which nobody reads). */
static int act_on(int i, pthread_t v)
{
	struct sched_param sp;
	pthread_attr_t a;
	int policy, r;

	switch (i % CALLERS) {
	case 0:
		return pthread_kill(v, SIGUSR2);
	case 1:
		return pthread_sigqueue(v, SIGUSR2, (union sigval){.sival_int = i});
	case 2:
		return pthread_getschedparam(v, &policy, &sp);
	case 3:
		if ((r = pthread_getattr_np(v, &a)) == 0)
			pthread_attr_destroy(&a);
		return r;
	default:
		return pthread_cancel(v);
	}
}

static void *caller(void *arg)
{
	int i = (int)(long)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int r = act_on(i, __atomic_load_n(&current, __ATOMIC_ACQUIRE));

		if (r != 0 && r != ESRCH && unexpected[i]++ == 0)
			fprintf(stderr, "caller %d: expected 0 or ESRCH, got %d\n",
				i, r);
		calls[i]++;
	}
	return NULL;
}

static void race(double secs)
{
	pthread_t callers[CALLERS], v;
	long end = mono_ns() + (long)(secs * 1e9), total = 0, bad = 0;
	int n = 0;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	CHECK_ERR(pthread_create(&v, NULL, short_life, NULL), 0);
	__atomic_store_n(&current, v, __ATOMIC_RELEASE);
	for (int i = 0; i < CALLERS; i++)
		CHECK_ERR(pthread_create(&callers[i], NULL, caller,
					 (void *)(long)i), 0);
	do {
		/* The callers keep using `current` while it is joined. */
		CHECK_ERR(pthread_join(current, NULL), 0);
		CHECK_ERR(pthread_create(&v, NULL, short_life, NULL), 0);
		__atomic_store_n(&current, v, __ATOMIC_RELEASE);
	} while (++n < MAX_THREADS && mono_ns() < end);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CALLERS; i++) {
		CHECK_ERR(pthread_join(callers[i], NULL), 0);
		total += calls[i];
		bad += unexpected[i];
	}
	CHECK_ERR(pthread_join(current, NULL), 0);
	CHECK(bad == 0, "expected only 0 or ESRCH, got %ld other answers", bad);
	fprintf(stderr, "%s: %d threads joined under %ld calls\n",
		getenv("T_KILL_JOIN_RERUN") ? "WEFT_STACK_CACHE=0" : "defaults",
		n, total);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int st = 0;

	(void)argc;
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_kill);
	REQUIRE_SERVED(pthread_sigqueue);
	REQUIRE_SERVED(pthread_getschedparam);
	REQUIRE_SERVED(pthread_getattr_np);
	REQUIRE_SERVED(pthread_cancel);
	REQUIRE_SERVED(pthread_create);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	if (getenv("T_KILL_JOIN_RERUN")) {
		race(3.0); /* the re-run below */
		TEST_DONE();
	}
	race(1.0);
	/* A joined thread's block is unmapped at once: a call still using
	   its descriptor faults. */
	setenv("T_KILL_JOIN_RERUN", "1", 1);
	setenv("WEFT_STACK_CACHE", "0", 1);
	if (fork() == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	CHECK(wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "WEFT_STACK_CACHE=0 run: expected exit 0, got wait status 0x%x",
	      st);
	TEST_DONE();
}
