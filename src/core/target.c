/* Calls that act on another thread through its kernel thread id
   (signals, scheduling, affinity, names, CPU clocks).

   The hazard is a reused tid: the kernel frees a thread's tid when the
   thread exits, and a later clone (in this process or another) may get
   it back.  Two facts rule out acting on a stale tid from a stale
   handle: a handle is generation-checked (registry.c), so it stops
   naming the thread once the thread is joined or its detached
   descriptor reclaimed; and the tid word is cleared by the kernel
   (CLONE_CHILD_CLEARTID) before the tid is freed, so a zero word means
   "finished".  That still leaves a window between reading a non-zero
   tid and the system call that uses it, during which the thread could
   exit and its tid be reused.  The pin closes it:

       caller                               target, in thread_finish
       ops_busy += 1                        ops_closed = 1
       if ops_closed: ESRCH                 wait until ops_busy == 0
       syscall(tid)                         ... exit (tid freed later)
       ops_busy -= 1, wake if closed

   Both sides use sequentially consistent operations, so either the
   caller sees ops_closed (and does not use the tid) or the target sees
   the caller's increment (and waits for it before it may exit).  The
   caller blocks every signal while pinned, as glibc does around its
   exit_lock: a handler that never returns (longjmp, pthread_exit) would
   otherwise leave the target waiting forever.  A thread acting on
   itself needs no pin.

   The pin is taken on a descriptor the registry holds (registry.c): a
   handle looked up just before its thread was joined would otherwise
   lead here to a descriptor already reused by a new thread, or
   unmapped (a crash once seen in t_sched_signals' storm).

   Using the handle of a detached thread that may have ended is
   undefined (POSIX); weft then returns ESRCH in the common cases but
   cannot promise it, since the descriptor may already be reused. */
#include <signal.h>
#include <errno.h>

#include "kernel/futex.h"
#include "thread.h"

int thread_pin(struct weft_thread *t, pthread_t h, struct weft_pin *pin)
{
	ksigset_t all = ~(ksigset_t)0;
	int tid;

	pin->pinned = 0;
	if (t == weft_tls_self)
		return sys_gettid();
	sys_sigprocmask(SIG_BLOCK, &all, &pin->old_mask);
	/* `t` came from a lookup that may be stale by now: the held
	   descriptor is the one to use, and stays ours until unpinned. */
	if (!(t = registry_hold(h))) {
		sys_sigprocmask(SIG_SETMASK, &pin->old_mask, NULL);
		return -ESRCH;
	}
	pin->held = h;
	__atomic_fetch_add(&t->ops_busy, 1, __ATOMIC_SEQ_CST);
	pin->pinned = 1;
	if (__atomic_load_n(&t->ops_closed, __ATOMIC_SEQ_CST)) {
		thread_unpin(t, pin);
		return -ESRCH;
	}
	tid = __atomic_load_n(t->tidp, __ATOMIC_ACQUIRE);
	if (tid <= 0) {
		thread_unpin(t, pin);
		return -ESRCH;
	}
	return tid;
}

void thread_unpin(struct weft_thread *t, struct weft_pin *pin)
{
	if (!pin->pinned)
		return;
	if (__atomic_sub_fetch(&t->ops_busy, 1, __ATOMIC_SEQ_CST) <= 0 &&
	    __atomic_load_n(&t->ops_closed, __ATOMIC_SEQ_CST))
		futex_wake(&t->ops_busy, 1, WEFT_FUTEX_PRIVATE);
	registry_release(pin->held);
	sys_sigprocmask(SIG_SETMASK, &pin->old_mask, NULL);
	pin->pinned = 0;
}

void thread_ops_close(struct weft_thread *t)
{
	int busy;

	__atomic_store_n(&t->ops_closed, 1, __ATOMIC_SEQ_CST);
	/* "> 0": a count left negative by undefined use (see above) must
	   not keep the thread from exiting. */
	while ((busy = __atomic_load_n(&t->ops_busy, __ATOMIC_SEQ_CST)) > 0)
		futex_wait(&t->ops_busy, busy, WEFT_FUTEX_PRIVATE);
}

/* In a fork child the threads that had pinned the survivor are gone. */
void thread_ops_reset_in_child(struct weft_thread *self)
{
	self->ops_busy = 0;
}
