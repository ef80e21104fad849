/* The contended paths of weft's internal lock (lock.h): a short spin,
   then the kernel's priority-inheritance futex.  Raw system calls only:
   these paths run during thread start and exit, in fork children and
   in start-up, before or after libc can be trusted. */
#include <errno.h>
#include "lock.h"
#include "runstate.h"
#include "spin_policy.h"

#define LOCK_SPIN 100
#define W_WAITERS ((int)FUTEX_WAITERS)

/* Set when a PI futex call answered ENOSYS: a kernel built without PI
   futexes (CONFIG_FUTEX_PI, which only a minimal configuration turns
   off).  The kernel's answer never changes, so every contended path
   takes the plain protocol below from then on; an unlock that has not
   seen the flag yet asks the kernel, gets ENOSYS too and does the same.
   The flag only saves that call. */
static int no_pi_futex;

static int cas(weft_lock_t *l, int *expect, int val)
{
	return __atomic_compare_exchange_n(&l->word, expect, val, 0,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Spins while the holder is likely running and taking the word soon
   pays: nobody sleeps on it yet (a sleeper means a long hold or a
   preempted holder, and queueing behind it keeps the kernel's priority
   order), this thread may run beside the holder (spin_policy.h), and
   the holder named in the word may be running (runstate.h: looked at
   every 4 pauses).  Bounded: 100 pauses, a few microseconds. */
static int spin_take(weft_lock_t *l, int self)
{
	if (!spin_worthwhile_for(__atomic_load_n(&l->word, __ATOMIC_RELAXED) &
				 FUTEX_TID_MASK))
		return 0;
	for (int i = 0; i < LOCK_SPIN; i++) {
		int v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

		if (v == 0 && cas(l, &v, self))
			return 1;
		if (v & W_WAITERS)
			return 0;
		if (i % 4 == 0 && !runstate_may_run(v & FUTEX_TID_MASK))
			return 0;
		arch_spin_pause();
	}
	return 0;
}

/* Without PI futexes: the same word, the tid and FUTEX_WAITERS kept by
   user space, plain FUTEX_WAIT/WAKE (never mixed with the PI calls on
   one kernel, see no_pi_futex).  A thread that slept takes the word
   with the bit, since others may still sleep. */
static void plain_lock(weft_lock_t *l, int self)
{
	int v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	for (;;) {
		if (v == 0) {
			if (cas(l, &v, self | W_WAITERS))
				return;
			continue;
		}
		if (!(v & W_WAITERS) && !cas(l, &v, v | W_WAITERS))
			continue;
		futex_wait(&l->word, v | W_WAITERS, WEFT_FUTEX_PRIVATE);
		v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
	}
}

static void plain_unlock(weft_lock_t *l)
{
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) & W_WAITERS)
		futex_wake(&l->word, 1, WEFT_FUTEX_PRIVATE);
}

/* The lock can never be had: the caller holds it already (EDEADLK: a
   signal handler re-entering weft in the middle of a critical section,
   which POSIX does not allow for these functions), or its holder is
   gone without releasing it (ESRCH).  A correct program never gets
   here; the thread deadlocks as it did with the earlier 0/1/2 lock,
   asleep rather than spinning. */
static __attribute__((noreturn)) void lock_never_free(void)
{
	volatile int never = 0;

	for (;;)
		futex_wait(&never, 0, WEFT_FUTEX_PRIVATE);
}

void weft_lock_slow(weft_lock_t *l, int self)
{
	if (spin_take(l, self))
		return;
	while (!__atomic_load_n(&no_pi_futex, __ATOMIC_RELAXED)) {
		switch (futex_lock_pi_untimed(&l->word, WEFT_FUTEX_PRIVATE)) {
		case 0:
			return; /* ours, maybe handed over by the kernel */
		case -EINTR:  /* not returned without a deadline; harmless */
		case -EAGAIN: /* the holder is exiting: ask again */
		case -ENOMEM: /* no memory for the kernel's PI state yet */
			continue;
		case -ENOSYS:
			__atomic_store_n(&no_pi_futex, 1, __ATOMIC_RELAXED);
			break;
		default: /* EDEADLK, ESRCH; EINVAL, EPERM, EFAULT cannot be */
			lock_never_free();
		}
	}
	plain_lock(l, self);
}

/* The word is not just our tid: sleepers (FUTEX_WAITERS).  The kernel
   gives the lock to the highest-priority one and ends our boost; the
   lock's memory is not touched after it (docs/sync.md, "No touch after
   release": the condvar's lock is in the user's condvar). */
void weft_unlock_slow(weft_lock_t *l, int self)
{
	while (!__atomic_load_n(&no_pi_futex, __ATOMIC_RELAXED)) {
		long r = futex_unlock_pi(&l->word, WEFT_FUTEX_PRIVATE);
		int held = self;

		if (r == -ENOSYS) {
			__atomic_store_n(&no_pi_futex, 1, __ATOMIC_RELAXED);
			break;
		}
		if (r != -EAGAIN)
			return; /* 0; EPERM would mean we did not hold it */
		/* The word changed while the kernel looked: still ours. */
		if (__atomic_compare_exchange_n(&l->word, &held, 0, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
	plain_unlock(l);
}
