/* Unnamed semaphores, bit-compatible with glibc 2.36 so that a weft
   process and a glibc process can share one in memory.

     data (64 bits):  | waiters (32) | value (32) |
                                      ^ the futex word (low half)

   post:  CAS value+1 (EOVERFLOW at SEM_VALUE_MAX); if the waiter count
          was nonzero, FUTEX_WAKE one sleeper on the value word.
   wait:  CAS value-1 while value > 0.  Otherwise add 1 to the waiter
          count and loop: while the value is 0, FUTEX_WAIT on the value
          word expecting 0; when it is positive, one CAS takes a unit and
          leaves the waiter count in the same step.  A timed-out or
          interrupted waiter removes itself from the count.

   Because the sleeper registers before it sleeps and the poster reads
   the count in the same atomic word it incremented, a post can never
   miss a registered sleeper; FUTEX_WAIT refuses to sleep when the value
   is no longer 0, so a post between the check and the sleep is not
   lost either.  Waking one per post is enough: each post makes one unit.

   The `private` field holds glibc's own encoding (0 means private, 128
   shared), again so that both libraries read it the same way. */
#include <errno.h>
#include <semaphore.h>

#include "core/cancel.h"
#include "core/stats.h"
#include "core/yield_wait.h"
#include "kernel/futex.h"
#include "sem.h"

#define SEM_ONE_WAITER ((uint64_t)1 << 32)

_Static_assert(sizeof(struct weft_sem) <= sizeof(sem_t), "sem_t layout");

static inline struct weft_sem *wsem(sem_t *sem)
{
	return (struct weft_sem *)sem;
}

static inline int sem_priv(const struct weft_sem *s)
{
	return s->private == SEM_GLIBC_PRIVATE ? WEFT_FUTEX_PRIVATE
					       : WEFT_FUTEX_SHARED;
}

static inline volatile int *value_word(struct weft_sem *s)
{
	return (volatile int *)&s->data; /* little-endian: the low half */
}

void sem_setup(struct weft_sem *s, unsigned value, int shared)
{
	s->data = value;
	s->private = shared ? SEM_GLIBC_SHARED : SEM_GLIBC_PRIVATE;
	s->pad = 0;
}

int sem_do_init(sem_t *sem, int pshared, unsigned value)
{
	if (value > SEM_VALUE_MAX)
		return EINVAL;
	sem_setup(wsem(sem), value, pshared != 0);
	return 0;
}

/* glibc destroys silently; a semaphore somebody sleeps on is reported. */
int sem_do_destroy(sem_t *sem)
{
	if (__atomic_load_n(&wsem(sem)->data, __ATOMIC_ACQUIRE) >>
	    32)
		return EBUSY;
	return 0;
}

/* The CAS that adds the unit releases: a waiter may take it, return,
   destroy the semaphore and free its memory at once.  So everything
   needed afterwards is read before it (the private/shared flag; the
   waiter count comes with the CAS's own result), and afterwards the
   semaphore is touched only by the wake, which the kernel does by
   address (docs/sync.md, "No touch after release"). */
int sem_do_post(sem_t *sem)
{
	struct weft_sem *s = wsem(sem);
	int priv = sem_priv(s);
	uint64_t d = __atomic_load_n(&s->data, __ATOMIC_RELAXED);

	do {
		if ((uint32_t)d >= SEM_VALUE_MAX)
			return EOVERFLOW;
	} while (!__atomic_compare_exchange_n(&s->data, &d, d + 1, 0,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if (d >> 32)
		futex_wake(value_word(s), 1, priv);
	return 0;
}

/* Takes a unit if there is one; `leave` is what to subtract besides (the
   caller's waiter registration, or nothing). */
static int take(struct weft_sem *s, uint64_t *d, uint64_t leave)
{
	while ((uint32_t)*d > 0)
		if (__atomic_compare_exchange_n(&s->data, d, *d - 1 - leave, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 1;
	return 0;
}

int sem_do_trywait(sem_t *sem)
{
	struct weft_sem *s = wsem(sem);
	uint64_t d = __atomic_load_n(&s->data, __ATOMIC_RELAXED);

	return take(s, &d, 0) ? 0 : EAGAIN;
}

/* Yields the CPU for a while before the waiter registers and sleeps;
   1 when it took a unit meanwhile.  The reason is the condvar
   waiter's (core/yield_wait.h): a post to a sleeper on an idle CPU
   waits for that CPU to wake, tens of microseconds on a guest whose
   idle CPUs halt, while a waiter that yields keeps its CPU awake and
   takes the unit at its next look.  The yielder is not registered, so
   a post meanwhile makes no futex call; a unit another thread takes
   first only sends it on to register and sleep, as before.  Untimed
   waits on private semaphores only, by threads of no real-time policy
   free to run on two or more CPUs, within the process-wide cap of
   yielders (the same rules as a condvar waiter's, sync/cond.c
   node_yield). */
static __attribute__((noinline)) int sem_yield(struct weft_sem *s)
{
	struct yield_turn t;
	int took = 0;

	if (!yield_turn_begin_woken(&t))
		return 0;
	while (yield_turn_yield(&t)) {
		uint64_t d = __atomic_load_n(&s->data, __ATOMIC_RELAXED);

		if (take(s, &d, 0)) {
			took = 1;
			break;
		}
	}
	yield_turn_end(&t);
	if (stats_enabled())
		stats_count_sem_yield(took);
	return took;
}

/* A registered waiter being unwound by cancellation leaves the count
   (this file is compiled with -fexceptions for it). */
struct sem_waiter {
	struct weft_sem *s;
	int armed;
};

static void sem_unwound(struct sem_waiter *w)
{
	if (w->armed)
		__atomic_fetch_sub(&w->s->data, SEM_ONE_WAITER, __ATOMIC_RELAXED);
}

/* A cancellation point (POSIX: "shall occur"), so a due cancellation
   acts even when a token is there, as in glibc; the sleep is a
   cancellable futex wait, and a wake-up that has happened is not lost
   to a cancellation (the token stays for another waiter). */
static int sem_wait_deferred(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
	struct weft_sem *s = wsem(sem);
	struct sem_waiter w __attribute__((cleanup(sem_unwound))) = {.s = s};
	uint64_t d;
	long r;

	cancel_test();
	d = __atomic_load_n(&s->data, __ATOMIC_RELAXED);
	if (take(s, &d, 0))
		return 0;
	if (!abstime && sem_priv(s) == WEFT_FUTEX_PRIVATE && sem_yield(s))
		return 0;
	d = __atomic_add_fetch(&s->data, SEM_ONE_WAITER, __ATOMIC_RELAXED);
	w.armed = 1;
	for (;;) {
		if (take(s, &d, SEM_ONE_WAITER)) {
			w.armed = 0;
			return 0;
		}
		r = futex_wait_until_cp(value_word(s), 0, clock, abstime,
					sem_priv(s));
		if (r == -ETIMEDOUT || r == -EINTR || r == -EINVAL) {
			w.armed = 0;
			__atomic_fetch_sub(&s->data, SEM_ONE_WAITER,
					   __ATOMIC_RELAXED);
			return (int)-r;
		}
		d = __atomic_load_n(&s->data, __ATOMIC_RELAXED);
	}
}

/* The asynchronous type is deferred meanwhile (core/cancel.h). */
int sem_do_wait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
	int was_async = cancel_defer_begin();
	int r = sem_wait_deferred(sem, clock, abstime);

	cancel_defer_end(was_async);
	return r;
}

int sem_do_getvalue(sem_t *sem, int *out)
{
	*out = (int)(uint32_t)__atomic_load_n(&wsem(sem)->data,
					      __ATOMIC_RELAXED);
	return 0;
}
