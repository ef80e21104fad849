/* pthread_once.

   The pthread_once_t word (0 from PTHREAD_ONCE_INIT):

     bits 31..3  fork generation of the process that started the routine
     bit 2       WAITERS: some thread sleeps on the word
     bit 1       DONE: the routine has finished (final state)
     bit 0       RUNNING: a thread is running the routine

   Fast path (in the entry point): one acquire load that sees DONE.
   Otherwise a caller either claims the word (0 -> gen|RUNNING) and runs
   the routine, or marks WAITERS and sleeps on the word.  The runner
   stores DONE and wakes all sleepers only if WAITERS was set.

   Cancellation: if the routine is cancelled (or throws), the cleanup
   attribute below runs during the unwind -- this file is compiled with
   -fexceptions for that -- and puts the word back to 0 and wakes the
   sleepers, so one of them runs the routine again.

   fork: a child of a process in which a routine was running has no
   runner.  The child handler bumps the generation, so a caller in the
   child that finds RUNNING with an older generation claims the word
   instead of waiting forever (as glibc does). */
#include <limits.h>
#include <pthread.h>

#include "host/single.h"
#include "kernel/futex.h"
#include "once.h"

#define ONCE_RUNNING 1u
#define ONCE_WAITERS 4u
#define ONCE_GEN_STEP 8u

static unsigned fork_generation;

/* A once another thread was running at the fork is stale in the child.
   With one thread (glibc's flag, which the child inherits) only the
   forking thread can be running one, and it goes on running it in the
   child: no new generation, and no write, which would copy a page at
   every fork (issue 16). */
void once_fork_child(void)
{
	if (!host_single_threaded())
		fork_generation += ONCE_GEN_STEP;
}

static unsigned *word(pthread_once_t *once)
{
	return (unsigned *)once;
}

static void set_and_wake(pthread_once_t *once, unsigned v)
{
	if (__atomic_exchange_n(word(once), v, __ATOMIC_ACQ_REL) & ONCE_WAITERS)
		futex_wake((volatile int *)once, INT_MAX, WEFT_FUTEX_PRIVATE);
}

/* Runs during the unwind of a cancelled or throwing init routine (the
   pointer is cleared when the routine returned normally). */
static void once_abandon(pthread_once_t **running)
{
	if (*running)
		set_and_wake(*running, 0);
}

static void run_init(pthread_once_t *once, void (*init)(void))
{
	pthread_once_t *running __attribute__((cleanup(once_abandon))) = once;

	init();
	running = NULL;
	set_and_wake(once, ONCE_DONE);
}

int once_slow(pthread_once_t *once, void (*init)(void))
{
	unsigned *w = word(once);

	for (;;) {
		unsigned v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		unsigned gen = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);

		if (v & ONCE_DONE)
			return 0;
		if (!(v & ONCE_RUNNING) || (v & ~(ONCE_GEN_STEP - 1)) != gen) {
			/* Free, or abandoned by a fork: claim it. */
			if (!__atomic_compare_exchange_n(w, &v, gen | ONCE_RUNNING,
							 0, __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				continue;
			run_init(once, init);
			return 0;
		}
		if (!(v & ONCE_WAITERS) &&
		    !__atomic_compare_exchange_n(w, &v, v | ONCE_WAITERS, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			continue;
		futex_wait((volatile int *)once, (int)(v | ONCE_WAITERS),
			   WEFT_FUTEX_PRIVATE);
	}
}
