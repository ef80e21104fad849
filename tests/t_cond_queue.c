/* Signals to a queue of waiters (issue 17): WAITERS threads wait on one
   condition variable that is only ever signalled, never broadcast; each
   round the main thread waits until all of them have joined the
   condvar's list, then signals it WAITERS times with the mutex held.

   Checked:
   - every signal wakes a waiter: each round, every waiter returns with
     the new round and joins the list again (the main thread gives them
     10 s, then reports the round and how many came back), and the
     waiters saw exactly WAITERS x ROUNDS new rounds in all;
   - every wait returns 0.
   tests/t_cond_yield.sh runs it with WEFT_STATS=1 and checks which
   waiters yielded before they slept (docs/sync.md, "A condvar waiter
   yields too"): only one that joined an empty list may, so at most one
   a round (ROUNDS + 1 with the first joins), where a waiter queued
   behind others yielded for nothing.
   Bounded: ROUNDS rounds, each with a 10 s limit. */
#include <stdint.h>
#include "harness.h"

enum { WAITERS = 4, ROUNDS = 300 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long round_no;	/* under m */
static int joined;	/* waiters on the list this round, under m */
static long seen_new;	/* returns that saw a new round, under m */
static long bad_waits;	/* waits that returned other than 0, under m */

static void *waiter(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&m);
	for (;;) {
		long seen = round_no;

		/* On the list before the mutex is let go: the main thread
		   sees this count only once we are queued. */
		joined++;
		while (round_no == seen) {
			int r = pthread_cond_wait(&cv, &m);

			if (r != 0)
				bad_waits++;
		}
		seen_new++;
		if (round_no == ROUNDS)
			break;
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

/* Waits (the mutex held on return) until every waiter has joined the
   list for the coming round. */
static void wait_all_joined(long r)
{
	double limit = now_s() + 10;

	pthread_mutex_lock(&m);
	while (joined < WAITERS) {
		pthread_mutex_unlock(&m);
		if (now_s() > limit)
			FAIL("round %ld: expected %d waiters on the list within "
			     "10 s, got %d", r, WAITERS, joined);
		sched_yield();
		pthread_mutex_lock(&m);
	}
}

int main(void)
{
	pthread_t t[WAITERS];

	if (!getenv("WEFT_TEST_GLIBC")) {
		WEFT_REQUIRE();
		REQUIRE_SERVED(pthread_cond_signal);
		REQUIRE_SERVED(pthread_cond_wait);
	}
	for (int i = 0; i < WAITERS; i++)
		if (pthread_create(&t[i], NULL, waiter, NULL) != 0)
			FAIL("pthread_create: expected 0, got an error");
	for (long r = 1; r <= ROUNDS; r++) {
		wait_all_joined(r);
		joined = 0;
		round_no = r;
		for (int i = 0; i < WAITERS; i++)
			pthread_cond_signal(&cv);
		pthread_mutex_unlock(&m);
	}
	for (int i = 0; i < WAITERS; i++)
		pthread_join(t[i], NULL);
	if (seen_new != (long)WAITERS * ROUNDS)
		FAIL("expected %ld returns with a new round, got %ld",
		     (long)WAITERS * ROUNDS, seen_new);
	if (bad_waits != 0)
		FAIL("expected every pthread_cond_wait to return 0, got %ld "
		     "errors", bad_waits);
	printf("rounds=%d waiters=%d\n", ROUNDS, WAITERS);
	TEST_DONE();
}
