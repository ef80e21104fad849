/* Broadcast storm (issue 17): broadcasts under the mutex, after its
   release and while another thread holds it, to a crowd of waiters that
   keep changing: some wait without a deadline and must be woken by every
   round, some time out all the time (deadlines of 0 to 1 ms) and wait
   again, some are cancelled in the middle of their wait and replaced by
   new ones.  More threads than CPUs, so waiters are preempted anywhere.

   Checked, per mutex type (normal, error-checking):
   - no lost wake-up: every strict (untimed) waiter returns with the new
     round after every broadcast; the broadcaster gives them 10 s per
     round, then reports the round and how many came back (a lost
     wake-up would otherwise hang here);
   - every wake is counted: the strict waiters saw exactly STRICT x
     ROUNDS new rounds; every wait of every waiter returned 0 or
     ETIMEDOUT (timed) and nothing else; returns that saw no new round
     are counted and printed (POSIX allows them);
   - a cancelled waiter's cleanup handler runs with the mutex held (the
     error-checking unlock there returns 0), and the thread ends with
     PTHREAD_CANCELED;
   - the herd path is the one exercised: after the first broadcasts to
     several waiters, a strict waiter is seen asleep on the mutex's herd
     word (docs/sync.md, "Herd release": FUTEX_WAIT_BITSET on byte 36 of
     the mutex), via /proc/self/task/TID/syscall.
   Bounded: ROUNDS rounds per mutex type, each with a 10 s limit. */
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

enum { STRICT = 6, TIMED = 6, CANCELLABLE = 4, ROUNDS = 3000 };

static pthread_mutex_t m;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t back = PTHREAD_COND_INITIALIZER;
static long gen;	    /* the round, under m */
static int stop;	    /* under m */
static int strict_back;	    /* strict waiters that saw this round */
static long strict_new;	    /* returns that saw a new round (strict) */
static long strict_same;    /* returns that saw none (strict) */
static long timed_ok, timed_out, timed_same, timed_bad;
static long cancel_wakes, cleanups, cleanup_bad;
static pid_t strict_tid0;

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *strict_waiter(void *arg)
{
	int first = (int)(intptr_t)arg == 0;

	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&m);
	if (first)
		strict_tid0 = gettid_();
	/* In place for the first round. */
	if (++strict_back == STRICT)
		pthread_cond_signal(&back);
	while (!stop) {
		long my = gen;
		while (gen == my && !stop) {
			int r = pthread_cond_wait(&cv, &m);
			CHECK(r == 0, "cond_wait: %s", strerror(r));
			if (gen == my && !stop)
				strict_same++;
		}
		if (stop)
			break;
		strict_new++;
		if (++strict_back == STRICT)
			pthread_cond_signal(&back);
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

/* Deadlines 0 to 1 ms away, on both clocks. */
static void *timed_waiter(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;

	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&m);
	while (!stop) {
		long my = gen;
		seed = seed * 1103515245u + 12345u;
		long ns = (long)(seed >> 8) % 1000000;
		int r;
		if (seed & 1) {
			struct timespec ts = deadline_in(CLOCK_REALTIME, ns);
			r = pthread_cond_timedwait(&cv, &m, &ts);
		} else {
			struct timespec ts = deadline_in(CLOCK_MONOTONIC, ns);
			r = pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &ts);
		}
		if (r == 0 && gen != my)
			timed_ok++;
		else if (r == 0)
			timed_same++;
		else if (r == ETIMEDOUT)
			timed_out++;
		else
			timed_bad++;
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

static void unlock_cleanup(void *arg)
{
	(void)arg;
	cleanups++;
	/* The error-checking mutex says EPERM unless we hold it. */
	if (pthread_mutex_unlock(&m) != 0)
		cleanup_bad++;
}

static void *cancellable_waiter(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock_cleanup, NULL);
	while (!stop) {
		long my = gen;
		while (gen == my && !stop)
			pthread_cond_wait(&cv, &m);
		cancel_wakes++;
	}
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(&m);
	return NULL;
}

/* A thread that takes the mutex on request, so that a broadcast is
   made while someone other than the broadcaster holds it. */
static int holder_state; /* 1 asked, 2 holding, 3 release, 0 idle; 4 quit */

static void *holder(void *arg)
{
	(void)arg;
	for (;;) {
		int s = __atomic_load_n(&holder_state, __ATOMIC_ACQUIRE);
		if (s == 4)
			return NULL;
		if (s != 1) {
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&m);
		__atomic_store_n(&holder_state, 2, __ATOMIC_RELEASE);
		while (__atomic_load_n(&holder_state, __ATOMIC_ACQUIRE) != 3)
			sched_yield();
		__atomic_store_n(&holder_state, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&m);
	}
}

static void wait_holder(int want)
{
	while (__atomic_load_n(&holder_state, __ATOMIC_ACQUIRE) != want)
		sched_yield();
}

/* Whether thread `tid` sleeps in a futex call on `addr` (the first
   argument in /proc/self/task/TID/syscall: "202 0xADDR ..."). */
static int asleep_on(pid_t tid, const void *addr)
{
	char path[64], buf[256];
	unsigned long nr, a0;
	FILE *f;
	int hit = 0;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(buf, sizeof buf, f) && sscanf(buf, "%lu %lx", &nr, &a0) == 2)
		hit = nr == SYS_futex && a0 == (uintptr_t)addr;
	fclose(f);
	return hit;
}

static void storm(int type, const char *name)
{
	pthread_mutexattr_t a;
	pthread_t st[STRICT], tt[TIMED], ct[CANCELLABLE], ht;
	long cancelled = 0, herd_seen = -1;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	gen = 0;
	stop = strict_back = 0;
	strict_tid0 = 0;
	strict_new = strict_same = 0;
	timed_ok = timed_out = timed_same = timed_bad = 0;
	cancel_wakes = cleanups = cleanup_bad = 0;
	holder_state = 0;

	pthread_mutex_lock(&m);
	for (int i = 0; i < STRICT; i++)
		pthread_create(&st[i], NULL, strict_waiter, (void *)(intptr_t)i);
	for (int i = 0; i < TIMED; i++)
		pthread_create(&tt[i], NULL, timed_waiter, (void *)(intptr_t)(i + 1));
	for (int i = 0; i < CANCELLABLE; i++)
		pthread_create(&ct[i], NULL, cancellable_waiter, NULL);
	pthread_create(&ht, NULL, holder, NULL);
	pthread_mutex_unlock(&m);

	for (long round = 0; round < ROUNDS; round++) {
		int how = (int)(round % 3);

		/* Every strict waiter waits for this round (it counted
		   itself and waits in the same hold of the mutex). */
		pthread_mutex_lock(&m);
		while (strict_back < STRICT) {
			struct timespec ts = deadline_in(CLOCK_REALTIME,
							 10000000000L);
			if (pthread_cond_timedwait(&back, &m, &ts) == ETIMEDOUT) {
				FAIL("%s, round %ld: %d of %d strict waiters came "
				     "back within 10 s (a lost wake-up)",
				     name, round, strict_back, STRICT);
				exit(1);
			}
		}
		strict_back = 0;
		gen++;
		if (how == 0) { /* under the mutex */
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&m);
		} else if (how == 1) { /* after the release */
			pthread_mutex_unlock(&m);
			pthread_cond_broadcast(&cv);
		} else { /* while another thread holds the mutex */
			pthread_mutex_unlock(&m);
			__atomic_store_n(&holder_state, 1, __ATOMIC_RELEASE);
			wait_holder(2);
			pthread_cond_broadcast(&cv);
			__atomic_store_n(&holder_state, 3, __ATOMIC_RELEASE);
			wait_holder(0);
		}
		/* Replace a cancellable waiter now and then: it may be asleep,
		   waking, or back in the mutex. */
		if (round % 7 == 3) {
			int i = (int)(round / 7 % CANCELLABLE);
			void *res;
			pthread_cancel(ct[i]);
			pthread_join(ct[i], &res);
			CHECK(res == PTHREAD_CANCELED || res == NULL,
			      "cancelled waiter ended with %p", res);
			cancelled += res == PTHREAD_CANCELED;
			pthread_create(&ct[i], NULL, cancellable_waiter, NULL);
		}
		/* Once the condvar has had broadcasts to several waiters, its
		   waiters sleep as a herd on the mutex's herd word. */
		if (herd_seen < 0 && round >= 20 && strict_tid0 &&
		    asleep_on(strict_tid0, (char *)&m + 36))
			herd_seen = round;
	}

	pthread_mutex_lock(&m);
	while (strict_back < STRICT) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
		if (pthread_cond_timedwait(&back, &m, &ts) == ETIMEDOUT) {
			FAIL("%s, last round: %d of %d strict waiters came back",
			     name, strict_back, STRICT);
			exit(1);
		}
	}
	stop = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	__atomic_store_n(&holder_state, 4, __ATOMIC_RELEASE);
	for (int i = 0; i < STRICT; i++)
		pthread_join(st[i], NULL);
	for (int i = 0; i < TIMED; i++)
		pthread_join(tt[i], NULL);
	for (int i = 0; i < CANCELLABLE; i++)
		pthread_join(ct[i], NULL);
	pthread_join(ht, NULL);

	CHECK(strict_new == (long)STRICT * ROUNDS,
	      "%s: strict waiters saw %ld new rounds, expected %d x %d",
	      name, strict_new, STRICT, ROUNDS);
	CHECK(timed_bad == 0, "%s: %ld timed waits returned neither 0 nor "
	      "ETIMEDOUT", name, timed_bad);
	CHECK(cleanups == cancelled, "%s: %ld cleanup handlers ran for %ld "
	      "cancelled waiters", name, cleanups, cancelled);
	CHECK(cleanup_bad == 0, "%s: %ld cleanup handlers ran without the "
	      "mutex", name, cleanup_bad);
	CHECK(cancelled > 0, "%s: no waiter was cancelled in its wait", name);
	if (!getenv("WEFT_TEST_GLIBC"))
		CHECK(herd_seen >= 0, "%s: expected a strict waiter asleep on "
		      "the mutex's herd word (byte 36) after round 20, never "
		      "seen", name);
	printf("%s: %d rounds, strict %ld new + %ld other returns, timed %ld "
	       "woken + %ld same round + %ld timed out, cancellable %ld "
	       "woken, %ld cancelled, herd seen from round %ld\n",
	       name, ROUNDS, strict_new, strict_same, timed_ok, timed_same,
	       timed_out, cancel_wakes, cancelled, herd_seen);
	pthread_mutex_destroy(&m);
}

int main(void)
{
	if (!getenv("WEFT_TEST_GLIBC")) {
		WEFT_REQUIRE();
		REQUIRE_SERVED(pthread_cond_broadcast);
		REQUIRE_SERVED(pthread_cond_wait);
	}
	storm(PTHREAD_MUTEX_NORMAL, "normal mutex");
	storm(PTHREAD_MUTEX_ERRORCHECK, "error-checking mutex");
	TEST_DONE();
}
