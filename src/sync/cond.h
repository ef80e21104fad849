/* weft's condition variables, in glibc's 48-byte pthread_cond_t.  Zero
   bytes (PTHREAD_COND_INITIALIZER) are a private condvar on
   CLOCK_REALTIME.  Design: docs/sync.md.

     0  lock     internal lock of the waiter list (private condvars)
     4  flags    CF_PSHARED, CF_MONOTONIC (set by init from the attribute)
     8  head     waiter list by priority, oldest first within one: nodes
                 on the waiters' stacks
    16  tail
    24  seq      process-shared condvars: the sequence futex word;
                 private: moved on by a leaving waiter that a destroy
                 waits for (cond_destroy)
    28  shared_waiters  process-shared: "someone may sleep on seq";
                 private: a destroy waits for leaving waiters
    32  pid      private condvars: the process whose threads are listed
    36  herd     private condvars: set by a broadcast that found several
                 waiters; later waiters sleep as a herd (cond.c, "Herd
                 release")
    40  herd_next  the next herd waiter's bit number (mod 32)
    44  unused */
#ifndef WEFT_SYNC_COND_H
#define WEFT_SYNC_COND_H

#include <pthread.h>
#include <time.h>
#include "core/lock.h"
#include "mutex.h"

/* Same bits as the condattr word. */
#define CF_PSHARED 1u
#define CF_MONOTONIC 2u

struct cnode;

struct wcond {
	weft_lock_t lock;
	unsigned flags;
	struct cnode *head, *tail;
	unsigned seq;
	int shared_waiters;
	int pid;
	int herd;
	unsigned herd_next;
	char unused[4];
};
_Static_assert(sizeof(struct wcond) == sizeof(pthread_cond_t),
	       "glibc's condvar is 48 bytes");

static inline struct wcond *wcond_of(pthread_cond_t *c)
{
	return (struct wcond *)c;
}

/* Zero when there is nobody to wake: a process-private condvar with no
   waiter listed (a process-shared one's waiters are not listed here).
   The exported signal and broadcast test it inline, so that a wake with
   no waiter costs a few loads and no call, as glibc's. */
static inline uintptr_t cond_maybe_waiter(const struct wcond *c)
{
	/* or-ed, not &&-ed: one branch for the caller, none between the
	   loads (on this machine the branches cost more than the loads) */
	return (uintptr_t)__atomic_load_n(&c->head, __ATOMIC_ACQUIRE) |
	       (c->flags & CF_PSHARED);
}

int cond_init(struct wcond *c, unsigned attr);
int cond_destroy(struct wcond *c);
int cond_signal(struct wcond *c);
int cond_broadcast(struct wcond *c);
/* `clock` -1: the condvar's own clock.  abstime NULL: no deadline. */
int cond_wait(struct wcond *c, struct wmutex *m, int clock,
	      const struct timespec *abstime);

/* Wakes the first waiter of a chain of condvar waiters deferred to a
   mutex's release (mutex.h, mutex_set_deferred); the mutex's release
   calls it after freeing the word.  Touches only the waiters' nodes. */
void cond_release_chain(struct cnode *head);

/* Requeues the PI condvar waiters whose requeue the caller deferred to
   its release of `m` (cond.c, "Deferred requeues"); the PI mutex's
   release calls it after freeing the word. */
extern __thread struct cnode *weft_cond_deferred_pi
	__attribute__((tls_model("initial-exec")));
void cond_requeue_deferred(struct wmutex *m);

static inline void cond_pi_released(struct wmutex *m)
{
	if (__builtin_expect(weft_cond_deferred_pi != NULL, 0))
		cond_requeue_deferred(m);
}

#endif
