/* Futex wrappers.  A futex is a 32-bit word in user memory on which the
   kernel lets threads sleep until another thread changes it and calls
   wake.  "private" futexes are keyed by (mm, address) and cheaper; they
   must not be used for words shared between processes, nor for the
   CLONE_CHILD_CLEARTID word, which the kernel wakes with a shared wake.

   Deadlines are absolute, on CLOCK_MONOTONIC or CLOCK_REALTIME, through
   FUTEX_WAIT_BITSET (plain FUTEX_WAIT takes a relative timeout, which
   would drift across retries).  */
#ifndef WEFT_KERNEL_FUTEX_H
#define WEFT_KERNEL_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <time.h>
#include "syscall.h"

#define WEFT_FUTEX_SHARED 0
#define WEFT_FUTEX_PRIVATE FUTEX_PRIVATE_FLAG

static inline long futex_wait(volatile int *addr, int expect, int priv)
{
	return sys_call4(SYS_futex, addr, FUTEX_WAIT | priv, expect, NULL);
}

static inline long futex_wake(volatile int *addr, int n, int priv)
{
	return sys_call3(SYS_futex, addr, FUTEX_WAKE | priv, n);
}

/* Sleep while *addr == expect, until the absolute deadline `abstime`
   (NULL: forever) on `clock` (CLOCK_MONOTONIC or CLOCK_REALTIME).
   Returns 0 when woken (possibly spuriously), -EAGAIN when the word had
   already changed, -ETIMEDOUT, -EINTR or -EINVAL. */
long futex_wait_until(volatile int *addr, int expect, clockid_t clock,
		      const struct timespec *abstime, int priv);

/* The same wait as a cancellation point (kernel/syscall_cp.h): a due
   cancellation acts before the sleep or when it interrupts the sleep;
   a wake-up that has happened is returned (0), never lost. */
long futex_wait_until_cp(volatile int *addr, int expect, clockid_t clock,
			 const struct timespec *abstime, int priv);

/* Bitset variants: a waiter sleeps with a mask, and a wake reaches only
   waiters whose mask shares a bit with its own, so two kinds of
   sleepers can share one word (read-write locks: readers and writers)
   and still be woken apart. */
long futex_wait_bits_until(volatile int *addr, int expect, unsigned bits,
			   clockid_t clock, const struct timespec *abstime,
			   int priv);

/* The same as a cancellation point (see futex_wait_until_cp). */
long futex_wait_bits_until_cp(volatile int *addr, int expect, unsigned bits,
			      clockid_t clock, const struct timespec *abstime,
			      int priv);

static inline long futex_wake_bits(volatile int *addr, int n, unsigned bits,
				   int priv)
{
	return sys_call6(SYS_futex, addr, FUTEX_WAKE_BITSET | priv, n, NULL,
			 NULL, bits);
}

/* The checks glibc makes on a deadline before trying to take a lock:
   EINVAL for a clock futexes cannot wait on, or nanoseconds outside
   0..999,999,999; else 0. */
static inline int futex_abstime_check(clockid_t clock,
				      const struct timespec *abstime)
{
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000)
		return EINVAL;
	return 0;
}

/* Wake up to `nwake` waiters of addr and move up to `nmove` others to
   wait on addr2 instead, provided *addr still equals `expect`. */
static inline long futex_cmp_requeue(volatile int *addr, int nwake, int nmove,
				     volatile int *addr2, int expect, int priv)
{
	return sys_call6(SYS_futex, addr, FUTEX_CMP_REQUEUE | priv, nwake,
			 (long)nmove, addr2, expect);
}

/* Priority-inheritance futexes.  The word holds the owner's tid (and
   FUTEX_WAITERS / FUTEX_OWNER_DIED); once the word is contended the
   kernel owns the queue and boosts the owner, so a PI word must never
   see plain FUTEX_WAIT/WAKE.  futex_lock_pi sleeps until the kernel has
   made the caller the owner, or the absolute deadline on `clock` passes
   (FUTEX_LOCK_PI takes CLOCK_REALTIME deadlines only; CLOCK_MONOTONIC
   ones need FUTEX_LOCK_PI2, Linux 5.14, and give -EINVAL without it, as
   under glibc).  0 or -ETIMEDOUT, -EDEADLK (the caller owns it), -ESRCH
   (the owner is gone), -EAGAIN (the owner is exiting), -EINVAL. */
long futex_lock_pi(volatile int *addr, clockid_t clock,
		   const struct timespec *abstime, int priv);

/* FUTEX_LOCK_PI without a deadline, with the kernel's answer as it is
   (-ENOSYS from a kernel built without PI futexes, which
   futex_lock_pi reports as -EINVAL): weft's internal lock
   (core/lock.c) falls back to plain futexes on it. */
static inline long futex_lock_pi_untimed(volatile int *addr, int priv)
{
	return sys_call4(SYS_futex, addr, FUTEX_LOCK_PI | priv, 0, NULL);
}

/* Gives a PI word to its first waiter (or frees it); the kernel reads
   and writes the word, the caller no longer touches it. */
static inline long futex_unlock_pi(volatile int *addr, int priv)
{
	return sys_call2(SYS_futex, addr, FUTEX_UNLOCK_PI | priv);
}

/* The kernel's side of a trylock, for a word that is not simply 0 (a
   dead owner's): 0, or -EAGAIN when someone else holds it. */
static inline long futex_trylock_pi(volatile int *addr, int priv)
{
	return sys_call2(SYS_futex, addr, FUTEX_TRYLOCK_PI | priv);
}

/* Requeue-PI: a condition variable's waiter sleeps on its own word
   (`addr`, while it equals `expect`) naming the PI mutex it will need
   (`mutex`); a signaller's futex_cmp_requeue_pi then either gives it the
   mutex at once (the mutex was free: the waiter returns 0 as its owner)
   or queues it on the mutex as a PI waiter, boosting the mutex's owner,
   without waking it.  Returns 0 (the caller owns the mutex), -EAGAIN
   (the word had changed, or the wait was interrupted after the requeue:
   the caller does not own the mutex), -ETIMEDOUT (it does not own it
   either, requeued or not), -EINVAL.  A cancellation point.  The
   deadline is absolute on CLOCK_MONOTONIC or CLOCK_REALTIME.  Both
   calls must use the same private/shared flag (the kernel keys the two
   words with it). */
long futex_wait_requeue_pi_cp(volatile int *addr, int expect, clockid_t clock,
			      const struct timespec *abstime,
			      volatile int *mutex, int priv);

/* The same wait without deadline, not a cancellation point. */
static inline long futex_wait_requeue_pi(volatile int *addr, int expect,
					 volatile int *mutex, int priv)
{
	return sys_call5(SYS_futex, addr, FUTEX_WAIT_REQUEUE_PI | priv, expect,
			 NULL, mutex);
}

/* Moves the one waiter of `addr` (if *addr still equals `expect`) onto
   the PI mutex word `mutex`: 1 or more when it was woken or queued, 0
   when nobody slept there, -EAGAIN when *addr differs, -EINVAL when the
   waiter named another mutex or the mutex word is invalid. */
static inline long futex_cmp_requeue_pi(volatile int *addr, volatile int *mutex,
					int expect, int priv)
{
	return sys_call6(SYS_futex, addr, FUTEX_CMP_REQUEUE_PI | priv, 1, 0L,
			 mutex, expect);
}

#endif
