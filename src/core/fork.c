/* fork() from any thread.  glibc's fork does the kernel part and its own
   bookkeeping (the child's TID lands in the surviving thread's tid word,
   the robust list is re-registered, __nptl_nthreads becomes 1).  weft's
   handlers keep its own state consistent: the prepare handler takes
   the internal locks, so that no other thread holds one across the
   fork, and the child resets them rather than unlocking them (a lock's
   word holds its holder's tid, core/lock.h, and the child's tid is not
   the parent's).  In the child every other thread is gone, so its
   slot, TLS, malloc state and mapping are reclaimed there. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "host/glibc.h"
#include "kernel/futex.h"
#include "stats.h"
#include "runstate.h"
#include "thread.h"
#include "yield_wait.h"

/* fork_register's state (a futex word): 0 not registered, the tid of the
   thread registering, or FORK_REGISTERED. */
#define FORK_REGISTERED (-1)
static int fork_registered;

static int cached_pid; /* 0: not read yet (or a fork child's stale one) */

/* Cached only once weft's child handler, which clears it, is registered:
   before, a fork child would keep its parent's pid. */
int weft_self_pid(void)
{
	int pid = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);

	if (!pid) {
		pid = sys_getpid();
		if (__atomic_load_n(&fork_registered, __ATOMIC_ACQUIRE) ==
		    FORK_REGISTERED)
			__atomic_store_n(&cached_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/* Whether fork_prepare took the locks.  With one thread nobody else can
   hold them, and the forking thread may be a signal handler that
   interrupted its own holder: glibc takes none of its locks then (so
   that fork from a handler works in a single-threaded program), and
   neither does weft. */
static int fork_locked;

void core_fork_prepare(void)
{
	int lock = weft_is_active && !host_single_threaded();

	if (fork_locked != lock) /* a write each fork would copy a page */
		fork_locked = lock;
	if (!lock)
		return;
	thread_default_lock_for_fork();
	stack_cache_lock_for_fork();
	registry_lock_for_fork();
}

void core_fork_parent(void)
{
	if (!fork_locked)
		return;
	registry_unlock_after_fork();
	stack_cache_unlock_after_fork();
	thread_default_unlock_after_fork();
}

/* A thread that existed in the parent but not in the child. */
static void drop_in_child(struct weft_thread *t)
{
	/* Its thread-specific values are gone with it (no destructors run,
	   as POSIX says), but the blocks holding them are our memory. */
	tsd_free_blocks(t);
	switch (t->origin) {
	case WEFT_ORIGIN_CREATED:
		/* Its TLS is released when the block is reused or unmapped. */
		if (!t->has_malloc_state)
			t->has_malloc_state =
				host_malloc_state_take(t->tcb, t->malloc_state);
		*t->tidp = 0;
		stack_release(t);
		break;
	case WEFT_ORIGIN_ADOPTED:
		adopted_free(t);
		break;
	default:
		break;
	}
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

/* In the child every write to a page it shares with its parent copies
   the page (a fault each): what is already in its reset state is left
   alone, so that the child of a program that never made a thread pays
   for no page of weft's. */
void core_fork_child(void)
{
	struct weft_thread *self = weft_tls_self;

	/* This handler runs, so glibc lists weft's triple: a registration
	   another thread had under way at the fork is done (fork_register). */
	if (__atomic_load_n(&fork_registered, __ATOMIC_RELAXED) != FORK_REGISTERED)
		__atomic_store_n(&fork_registered, FORK_REGISTERED, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&weft_threads_seen, __ATOMIC_RELAXED)) {
		/* No thread was ever made or adopted: no descriptor, stack,
		   slot or counter to reset, and fork_prepare took no
		   internal lock (one thread).  A lock the forking thread
		   itself held, when a signal handler forks, stays held in
		   the child, where, as after glibc's own fork from a
		   handler, only async-signal-safe calls may follow.  Only
		   the cached pid is the parent's, and with WEFT_STATS the
		   parent's lock records (a process-shared mutex can be
		   contended without threads). */
		if (__atomic_load_n(&cached_pid, __ATOMIC_RELAXED))
			__atomic_store_n(&cached_pid, 0, __ATOMIC_RELAXED);
		/* Statistics start with start-up: its word is read only
		   then, its page being one the child has not touched. */
		if (__atomic_load_n(&weft_init_done, __ATOMIC_RELAXED) &&
		    stats_enabled())
			stats_reset_in_child();
		return;
	}

	/* <weft.h> promises counters "since fork" in a child. */
	if (!all_zero(&weft_counters, sizeof weft_counters))
		__builtin_memset(&weft_counters, 0, sizeof weft_counters);
	stats_reset_in_child();
	if (__atomic_load_n(&cached_pid, __ATOMIC_RELAXED))
		__atomic_store_n(&cached_pid, 0, __ATOMIC_RELAXED);
	/* A probe another thread was running is gone with that thread (the
	   prober waits for the probe thread, so it is not the one forking):
	   the child's first creation runs its own. */
	if (__atomic_load_n(&weft_threads_state, __ATOMIC_RELAXED) == 1)
		__atomic_store_n(&weft_threads_state, 0, __ATOMIC_RELAXED);
	thread_default_reset_in_child();
	stack_cache_reset_in_child();
	tsd_reset_in_child();
	registry_reset_in_child(self, drop_in_child);
	if (weft_runstate_self.slot)
		runstate_reset_in_child(sys_gettid(), weft_runstate_self.slot->cpu);
	else
		runstate_reset_in_child(0, NULL);
	/* Yielders of the parent were other threads: gone. */
	if (__atomic_load_n(&yield_waiters.n, __ATOMIC_RELAXED))
		__atomic_store_n(&yield_waiters.n, 0, __ATOMIC_RELAXED);
	if (self)
		thread_ops_reset_in_child(self);
	if (self && self->origin == WEFT_ORIGIN_CREATED)
		host_fork_child(self->tcb);
}

/* The registration, once per process, of weft_fork_handlers (the one
   triple of the whole library, which the top layer defines: it calls the
   sync layer's handlers and core's, in their order; docs/lifecycle.md,
   "fork").  Not at load (issue 16: a process that never makes a thread
   pays for nothing): from libweft's __register_atfork, the function behind
   every pthread_atfork, before it registers the caller's handlers, so that
   weft's come first in glibc's list whatever the order of constructors
   (prepare handlers run last to first: weft's prepare after every
   program's, its child handler before theirs); and, if no program handler
   came first, from the first thread creation (init.c) or the adoption of
   a thread other than the first (self.c).  Not from start-up, which may
   run in a signal handler that interrupted glibc's own registration or
   dlclose's unregistration on its thread, both under glibc's
   fork-handler lock: until a second thread exists the handlers have
   nothing to do (one thread: no lock to take; the pid is not cached
   meanwhile, weft_self_pid), but for WEFT_STATS's counters, which
   register at start-up (init.c).  A second thread arriving meanwhile waits,
   so that its own handlers cannot slip in before weft's (such a thread
   predates start-up: a raw clone's, or one glibc made for itself); the
   registering thread itself, re-entering from a signal handler (start-up
   there), goes on. */

static void fork_register_now(void)
{
	struct runstate_slot *mine = weft_runstate_self.slot;
	int tid = sys_gettid();

	/* A fork child of a process that adopted its thread before weft's
	   child handler existed: the slot still names the parent's tid
	   (only this thread can have one yet: any other would have
	   registered first). */
	if (mine && __atomic_load_n(&mine->tid, __ATOMIC_RELAXED) != tid)
		runstate_reset_in_child(tid, mine->cpu);
	/* ENOMEM (glibc's list cannot grow): nothing better to do than what
	   glibc does for any program then. */
	(void)host_register_atfork_weft(weft_fork_handlers.prepare,
					weft_fork_handlers.parent,
					weft_fork_handlers.child);
	__atomic_store_n(&fork_registered, FORK_REGISTERED, __ATOMIC_RELEASE);
	futex_wake(&fork_registered, 0x7fffffff, WEFT_FUTEX_PRIVATE);
}

void fork_register(void)
{
	int me, s = __atomic_load_n(&fork_registered, __ATOMIC_ACQUIRE);

	if (s == FORK_REGISTERED)
		return;
	me = sys_gettid();
	for (;;) {
		if (s == FORK_REGISTERED || s == me)
			return;
		if (s == 0 || sys_tgkill(sys_getpid(), s, 0) == -ESRCH) {
			/* Free, or the registering thread is not in this
			   process: a fork child of a process one of whose
			   threads was registering.  Had glibc listed the
			   triple before the fork, core_fork_child would
			   have said so; that thread is gone, so register
			   here (the child has one thread). */
			if (__atomic_compare_exchange_n(&fork_registered, &s, me, 0,
							__ATOMIC_ACQUIRE,
							__ATOMIC_ACQUIRE)) {
				fork_register_now();
				return;
			}
			continue; /* s reloaded by the failed exchange */
		}
		futex_wait(&fork_registered, s, WEFT_FUTEX_PRIVATE);
		s = __atomic_load_n(&fork_registered, __ATOMIC_ACQUIRE);
	}
}
