/* No touch after release: mutexes and condition variables (docs/sync.md,
   "No touch after release").  The completion pattern, as programs write
   it: a releaser thread lets the main thread go (a mutex unlock; a
   condvar signal or broadcast, with the mutex held or after releasing
   it), the main thread destroys the mutex and the condvar at once and
   reuses their memory (tests/reuse.h: a counter pattern, munmap, 0xff,
   0xab), and the releaser must not have written to, read from, or
   waited on that memory after its release.  Checked for the mutex of
   every type (the main thread asleep on it when it is unlocked), and for
   the condvar's four ways with a normal mutex plus signal-under-the-lock
   with the other types.  A library that touched the mutex after its
   release corrupts the pattern (reported with the word and the values),
   dies of SIGSEGV on the unmapped page, or hangs (the watchdog's
   SIGALRM).  WEFT_REUSE_ITERS sets the iterations per case and mode,
   WEFT_REUSE_ONLY=TEXT runs only the cases whose name contains TEXT,
   WEFT_REUSE_MODE=NAME only that mode. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include "reuse.h"

/* ------------------------------------------ the test's own hand-shake

   Raw futex words, so that the hand-shake does not use the primitives
   under test. */
static void flag_set(int *f, int v)
{
	__atomic_store_n(f, v, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, f, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void flag_wait(int *f, int v)
{
	int cur;

	for (int i = 0; i < 200; i++) {
		if (__atomic_load_n(f, __ATOMIC_ACQUIRE) == v)
			return;
		__builtin_ia32_pause();
	}
	while ((cur = __atomic_load_n(f, __ATOMIC_ACQUIRE)) != v)
		syscall(SYS_futex, f, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ------------------------------------------------------- the cases */

enum how { UNLOCK, SIGNAL_HELD, SIGNAL_AFTER, BROADCAST_HELD, BROADCAST_AFTER };

struct tcase {
	const char *name;
	int type;
	enum how how;
};

static const struct tcase cases[] = {
	{"mutex normal: unlock", PTHREAD_MUTEX_NORMAL, UNLOCK},
	{"mutex recursive: unlock", PTHREAD_MUTEX_RECURSIVE, UNLOCK},
	{"mutex error-checking: unlock", PTHREAD_MUTEX_ERRORCHECK, UNLOCK},
	{"mutex adaptive: unlock", PTHREAD_MUTEX_ADAPTIVE_NP, UNLOCK},
	{"cond: signal under the mutex", PTHREAD_MUTEX_NORMAL, SIGNAL_HELD},
	{"cond: signal after unlock", PTHREAD_MUTEX_NORMAL, SIGNAL_AFTER},
	{"cond: broadcast under the mutex", PTHREAD_MUTEX_NORMAL, BROADCAST_HELD},
	{"cond: broadcast after unlock", PTHREAD_MUTEX_NORMAL, BROADCAST_AFTER},
	{"cond: signal under a recursive mutex", PTHREAD_MUTEX_RECURSIVE, SIGNAL_HELD},
	{"cond: signal under an error-checking mutex", PTHREAD_MUTEX_ERRORCHECK, SIGNAL_HELD},
	{"cond: signal under an adaptive mutex", PTHREAD_MUTEX_ADAPTIVE_NP, SIGNAL_HELD},
	{"cond: broadcast under a recursive mutex", PTHREAD_MUTEX_RECURSIVE, BROADCAST_HELD},
};

/* The objects, at the start of the iteration's page. */
struct objs {
	pthread_mutex_t m;
	pthread_cond_t c;
	int ready, done;
};

/* Shared with the releaser, outside the reused page. */
static struct {
	int go;	      /* iteration number the releaser may start */
	int locked;   /* UNLOCK: the releaser holds the mutex */
	int trying;   /* UNLOCK: the main thread is about to lock it */
	int finished; /* the releaser returned from its release call */
	int quit;
	pid_t main_tid;
	const struct tcase *tc;
	struct objs *o;
	long asleep_seen; /* UNLOCK: releases made with main asleep */
} sh;

/* The unlock comes while the main thread spins, is about to sleep, or
   sleeps: a delay that varies from one iteration to the next (a
   library that reads the mutex after freeing the word is caught when
   the main thread takes the word without waiting for that unlock's
   wake-up).  Every eighth iteration waits (bounded) until the main
   thread is asleep.  Correctness does not depend on the delay; the
   coverage does. */
static void release_unlock(struct objs *o, int iter)
{
	pthread_mutex_lock(&o->m);
	flag_set(&sh.locked, iter);
	flag_wait(&sh.trying, iter);
	if (iter % 8 == 0) {
		if (task_asleep(sh.main_tid, 2000000))
			sh.asleep_seen++;
	} else {
		unsigned spins = (unsigned)iter * 2654435761u >> 21; /* 0..2047 */
		for (unsigned i = 0; i < spins; i++)
			__builtin_ia32_pause();
	}
	pthread_mutex_unlock(&o->m);
}

static void release_cond(struct objs *o, enum how how)
{
	/* The main thread set `ready` under the mutex and released it only
	   in pthread_cond_wait: once we hold it with `ready`, it waits. */
	for (;;) {
		pthread_mutex_lock(&o->m);
		if (o->ready)
			break;
		pthread_mutex_unlock(&o->m);
		sched_yield();
	}
	o->done = 1;
	switch (how) {
	case SIGNAL_HELD:
		pthread_cond_signal(&o->c);
		pthread_mutex_unlock(&o->m);
		break;
	case BROADCAST_HELD:
		pthread_cond_broadcast(&o->c);
		pthread_mutex_unlock(&o->m);
		break;
	case SIGNAL_AFTER:
		/* Legal here because a weft waiter returns only when
		   signalled: it cannot see `done` before this call. */
		pthread_mutex_unlock(&o->m);
		pthread_cond_signal(&o->c);
		break;
	default:
		pthread_mutex_unlock(&o->m);
		pthread_cond_broadcast(&o->c);
		break;
	}
}

static void *releaser(void *arg)
{
	int iter = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	for (;;) {
		flag_wait(&sh.go, ++iter);
		if (__atomic_load_n(&sh.quit, __ATOMIC_ACQUIRE))
			return NULL;
		if (sh.tc->how == UNLOCK)
			release_unlock(sh.o, iter);
		else
			release_cond(sh.o, sh.tc->how);
		flag_set(&sh.finished, iter);
	}
}

static void init_objs(struct objs *o, int type)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	CHECK_ERR(pthread_mutex_init(&o->m, &a), 0);
	pthread_mutexattr_destroy(&a);
	CHECK_ERR(pthread_cond_init(&o->c, NULL), 0);
	o->ready = o->done = 0;
}

/* The main thread's side of one iteration: released, it destroys and
   reuses at once. */
static void be_released(struct objs *o, enum how how)
{
	pthread_mutex_lock(&o->m);
	if (how != UNLOCK) {
		o->ready = 1;
		while (!o->done)
			pthread_cond_wait(&o->c, &o->m);
	}
	pthread_mutex_unlock(&o->m);
	CHECK_ERR(pthread_mutex_destroy(&o->m), 0);
	CHECK_ERR(pthread_cond_destroy(&o->c), 0);
}

static int iter_no;

static int run_case(const struct tcase *tc, enum reuse_mode mode,
		    unsigned iters)
{
	int bad_iters = 0;

	sh.tc = tc;
	for (unsigned i = 0; i < iters; i++) {
		struct objs *o = reuse_alloc();
		int it = ++iter_no;

		init_objs(o, tc->type);
		sh.o = o;
		flag_set(&sh.go, it);
		if (tc->how == UNLOCK) {
			flag_wait(&sh.locked, it);
			flag_set(&sh.trying, it);
		}
		be_released(o, tc->how);
		reuse_memory(o, mode, (unsigned)it);
		flag_wait(&sh.finished, it);
		if (reuse_check(o, mode, (unsigned)it, tc->name))
			bad_iters++;
		if (bad_iters >= 5) /* enough to show; keep the log short */
			break;
	}
	return bad_iters;
}

int main(void)
{
	unsigned iters = reuse_iters(20000);
	const char *only = getenv("WEFT_REUSE_ONLY"); /* a case-name part */
	pthread_t t;
	double t0 = now_s();

	setvbuf(stdout, NULL, _IOLBF, 0);
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_unlock);
	REQUIRE_SERVED(pthread_cond_signal);
	reuse_watchdog(240);
	sh.main_tid = gettid_();
	REQUIRE(pthread_create(&t, NULL, releaser, NULL) == 0,
		"pthread_create failed");
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		if (only && !strstr(cases[c].name, only))
			continue;
		for (int mode = 0; mode < REUSE_MODES; mode++) {
			if (!reuse_mode_wanted(mode))
				continue;
			long asleep0 = sh.asleep_seen;
			int bad = run_case(&cases[c], (enum reuse_mode)mode, iters);
			if (bad)
				FAIL("%s (%s): reused memory changed in %d "
				     "iteration(s) (expected none)",
				     cases[c].name, reuse_mode_name[mode], bad);
			printf("%-44s %-7s %u iterations", cases[c].name,
			       reuse_mode_name[mode], iters);
			if (cases[c].how == UNLOCK)
				printf(", %ld with the main thread seen asleep",
				       sh.asleep_seen - asleep0);
			printf("\n");
		}
	}
	__atomic_store_n(&sh.quit, 1, __ATOMIC_RELEASE);
	flag_set(&sh.go, iter_no + 1);
	pthread_join(t, NULL);
	printf("%zu cases x %d modes x %u iterations in %.1f s\n",
	       sizeof cases / sizeof cases[0], REUSE_MODES, iters,
	       now_s() - t0);
	TEST_DONE();
}
