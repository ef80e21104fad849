/* How a thread dies, and who reclaims it.

   The thread itself runs the exit duties (thread_local destructors,
   thread-specific data destructors, libc's per-thread state) and hands its malloc state to the
   descriptor, then decides with a compare-and-swap on join_state who
   reclaims the descriptor and mapping:

     JOINABLE -> EXITING          a later join or detach reclaims it
     DETACHED                     it reclaims itself now, before exit
     JOINING -> JOINING_EXITED    a joiner is already waiting and
                                  reclaims it (or, cancelled, gives the
                                  claim back as EXITING)

   "Reclaim" never waits for the kernel: the mapping goes to the stack
   cache, which hands it out only after the kernel cleared the tid word. */
#include <stdlib.h>
#include <signal.h>

#include "host/glibc.h"
#include "cancel.h"
#include "runstate.h"
#include "thread.h"

void thread_reclaim(struct weft_thread *t)
{
	registry_remove(t);
	switch (t->origin) {
	case WEFT_ORIGIN_CREATED:
		stack_release(t);
		break;
	case WEFT_ORIGIN_ADOPTED:
		adopted_free(t);
		break;
	default: /* the main thread's descriptor is static */
		break;
	}
}

/* Records that `t` has finished running; returns the state it found.
   A claim stays a claim (the joiner reclaims), but one given back later
   by a cancelled joiner must become EXITING, not JOINABLE (join.c). */
static int mark_finished(struct weft_thread *t)
{
	int s = __atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE);

	for (;;) {
		int next;

		if (s == WEFT_JOINABLE)
			next = WEFT_EXITING;
		else if (s == WEFT_JOINING)
			next = WEFT_JOINING_EXITED;
		else
			return s; /* DETACHED */
		if (__atomic_compare_exchange_n(&t->join_state, &s, next, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return s;
	}
}

struct exit_duty {
	void (*run)(struct weft_thread *);
	struct weft_thread *t;
	int done;
};

static void *run_duty(void *p)
{
	struct exit_duty *d = p;

	d->run(d->t);
	d->done = 1;
	return NULL;
}

/* glibc keeps a thread's bottom unwind buffer registered while its
   destructors run, so a destructor that calls pthread_exit unwinds to
   it; the thread's exit code then starts again after the start routine,
   with that exit value.  weft gives the duty a buffer of its own (the
   one cancel_run gives a start routine) and runs it again until it
   completes; the duty itself knows what is left to do (__call_tls_dtors
   takes each destructor off its list before calling it, tsd.c decides
   for the key destructors). */
void thread_exit_duty(struct weft_thread *t, void (*duty)(struct weft_thread *))
{
	struct exit_duty d = { duty, t, 0 };
	void *value;

	while (value = cancel_run(run_duty, &d), !d.done)
		t->result = value;
}

/* C++ thread_local destructors first, then the key destructors, in
   glibc's order. */
static void destructors(struct weft_thread *t)
{
	host_call_tls_dtors();
	tsd_run_destructors(t);
}

__attribute__((noreturn)) void thread_finish(struct weft_thread *t)
{
	ksigset_t all = ~(ksigset_t)0;
	/* Read before mark_finished: after it a detach may reclaim the
	   descriptor, and on a user stack that lets the owner free it. */
	int mapped = t->map_base != NULL;

	thread_exit_duty(t, destructors);
	host_libc_freeres(t->tcb);
	/* G4: glibc's count of live threads; the last one ends the process
	   the way returning from main would (atexit handlers run). */
	if (host_nthreads_add(-1) == 0)
		exit(0);
	host_thread_unlist(t->tcb);
	/* From here calls on this thread's handle answer ESRCH, and none
	   still using its tid is left behind (target.c). */
	thread_ops_close(t);
	/* glibc's own calls on this TCB now see an ended thread. */
	host_tcb_set_ended(t->tcb);
	/* A user stack may be freed by its owner as soon as the thread is
	   gone, so that thread gives its DTV back itself, with no handler
	   able to run on the half-released TLS, and its malloc state must
	   be in the descriptor before a detach can reclaim it.  The DTV of
	   a weft-mapped block is given back by whoever reuses or unmaps the
	   block (stack.c), so its TLS stays valid to the end. */
	if (!mapped) {
		sys_sigprocmask(SIG_BLOCK, &all, NULL);
		t->tls_released = 1;
		host_tls_release(t->tcb);
		t->has_malloc_state =
			host_malloc_state_take(t->tcb, t->malloc_state);
	}
	/* Before anyone may cache the block: its resident bound must be
	   final when it enters the cache. */
	if (mapped)
		stack_trim_unused(t);
	/* Before the block may be reclaimed (runstate.h). */
	runstate_leave();
	if (mark_finished(t) == WEFT_DETACHED)
		thread_reclaim(t);
	/* Last: reclaiming may free memory (the stack cache trims other
	   blocks), and those frees must land in the cache handed on, not
	   in a new one nobody owns.  Nobody reads it before the kernel has
	   cleared the tid word, which is after this: the block is ours
	   until then, whoever reclaimed it. */
	if (mapped)
		t->has_malloc_state =
			host_malloc_state_take(t->tcb, t->malloc_state);
	sys_exit_thread(0);
}
