/* weft's cancellation engine (docs/cancel.md).

   The state lives in glibc's TCB word `cancelhandling` (bits in
   host/glibc.h), so every thread (weft's, main, glibc-made ones) has it
   at the same place and libc's own cancellation points see it.

   cancel.c    the state machine: request, act, setcancelstate/-type,
               testcancel, the SIGCANCEL handler
   cancel_cp.c the cancellable futex waits (the cancellable system
               call itself is inline: cancel_inline.h)
   unwind.c    the forced unwind and glibc's cleanup-buffer ABI */
#ifndef WEFT_CORE_CANCEL_H
#define WEFT_CORE_CANCEL_H

#include <pthread.h>
#include <time.h>
#include "host/glibc.h"
#include "kernel/futex.h"

/* The signal glibc reserves for cancellation (SIGCANCEL). */
#define WEFT_SIGCANCEL 32

/* A cancellation that must act: requested, enabled, not already
   exiting (the test glibc calls "enabled and canceled"). */
static inline int cancel_due(int word)
{
	return (word & (HOST_CANCEL_DISABLED | HOST_CANCELED | HOST_EXITING |
			HOST_TERMINATED)) == HOST_CANCELED;
}

/* ... and the type is asynchronous: act at once. */
static inline int cancel_due_async(int word)
{
	return (word & (HOST_CANCEL_DISABLED | HOST_CANCEL_ASYNC |
			HOST_CANCELED | HOST_EXITING | HOST_TERMINATED)) ==
	       (HOST_CANCEL_ASYNC | HOST_CANCELED);
}

static inline int *cancel_self_word(void)
{
	return host_cancel_word(arch_thread_pointer());
}

/* The word pthread_testcancel tests with glibc's test, read in one
   %fs-relative load (cancel.c says which word it is before start-up,
   while weft serves and while it forwards). */
extern long cancel_test_off;
void cancel_test_init(int serving);

static inline int cancel_test_load(void)
{
	return arch_tp_load32(__atomic_load_n(&cancel_test_off, __ATOMIC_RELAXED));
}

/* Nonzero while the thread is inside a cancellable system call's C part
   (cancel_inline.h): the SIGCANCEL handler then only records the
   request (see cancel.c). */
extern __thread int weft_in_cp __attribute__((tls_model("initial-exec")));

/* Installs the SIGCANCEL handler (once per process, at start-up). */
void cancel_init(void);

/* pthread_cancel's bookkeeping on the thread with this TCB.  Returns 1
   when the target must be sent SIGCANCEL (it is enabled and
   asynchronous, or inside a cancellation point), else 0; a thread
   cancelling itself acts at once instead. */
int cancel_request(char *tcb);

/* The calling thread acts on its cancellation: result = PTHREAD_CANCELED,
   EXITING, unwind.  Never returns. */
__attribute__((noreturn)) void cancel_act(void);

/* Acts if a cancellation is due (pthread_testcancel). */
static inline void cancel_test(void)
{
	if (__builtin_expect(
		    cancel_due(__atomic_load_n(cancel_self_word(), __ATOMIC_RELAXED)),
		    0))
		cancel_act();
}

int cancel_set_state(int state, int *old);
int cancel_set_type(int type, int *old);

/* Condition waits, joins and semaphore waits are cancellation points
   but not async-cancel-safe: an unwind from an arbitrary instruction
   could leave a condvar's internal lock held or a waiter linked.  A
   thread with the asynchronous type runs them as deferred, so it is
   cancelled only at their cancellation point (before or in the futex
   sleep), as a deferred thread is, and gets its type back on return
   (acting then on a request that came meanwhile, as setcanceltype does).
   The deferred default costs one load. */
static inline int cancel_defer_begin(void)
{
	if (__builtin_expect(!(__atomic_load_n(cancel_self_word(),
					       __ATOMIC_RELAXED) &
			       HOST_CANCEL_ASYNC),
			     1))
		return 0;
	cancel_set_type(PTHREAD_CANCEL_DEFERRED, NULL);
	return 1;
}

static inline void cancel_defer_end(int was_async)
{
	if (was_async)
		cancel_set_type(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
}

/* --- cancel_cp.c: futex waits that are cancellation points ------------

   futex_wait_until (kernel/futex.h) as a cancellation point: a due
   cancellation acts before the sleep or when it interrupts the sleep; a
   wake-up that has happened is returned (0), never lost. */
long futex_wait_until_cp(volatile int *addr, int expect, clockid_t clock,
			 const struct timespec *abstime, int priv);
/* The same with a bitset (futex_wait_bits_until, kernel/futex.h). */
long futex_wait_bits_until_cp(volatile int *addr, int expect, unsigned bits,
			      clockid_t clock, const struct timespec *abstime,
			      int priv);

/* futex_wait_requeue_pi (kernel/futex.h) with an absolute deadline on
   CLOCK_MONOTONIC or CLOCK_REALTIME (-ETIMEDOUT: the caller does not own
   the mutex, requeued or not), as a cancellation point. */
long futex_wait_requeue_pi_cp(volatile int *addr, int expect, clockid_t clock,
			      const struct timespec *abstime,
			      volatile int *mutex, int priv);

/* --- unwind.c --------------------------------------------------------- */

/* Runs fn(arg) above a bottom unwind buffer, so that pthread_exit and
   cancellation (weft's unwinder or glibc's) unwind back here.  Returns
   fn's value, or the thread's exit value when it was unwound. */
void *cancel_run(void *(*fn)(void *), void *arg);

/* pthread_exit: records the value, sets EXITING, unwinds. */
__attribute__((noreturn)) void cancel_exit(void *value);

/* Unwinds from the calling frame to the registered buffer `buf`
   (__pthread_unwind_buf_t *), running old-style cleanup buffers, C++
   destructors and -fexceptions cleanups on the way. */
__attribute__((noreturn)) void cancel_unwind(void *buf);

/* glibc's cleanup ABI, on the shared chains. */
void cancel_register(__pthread_unwind_buf_t *buf);
void cancel_unregister(__pthread_unwind_buf_t *buf);
void cancel_register_defer(__pthread_unwind_buf_t *buf);
void cancel_unregister_restore(__pthread_unwind_buf_t *buf);
__attribute__((noreturn)) void cancel_unwind_next(__pthread_unwind_buf_t *buf);
void cancel_push_old(struct _pthread_cleanup_buffer *b, void (*fn)(void *),
		     void *arg, int defer);
void cancel_pop_old(struct _pthread_cleanup_buffer *b, int execute,
		    int restore);

#endif
