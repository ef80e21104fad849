/* How a thread is born (docs/lifecycle.md has the whole story). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_hint.h"
#include "host/attr_layout.h"
#include "host/glibc.h"
#include "cancel.h"
#include "kernel/clone.h"
#include "lock.h"
#include "runstate.h"
#include "thread.h"

static int thread_entry(void *p) __attribute__((noreturn));

/* pthread_setattr_default_np: what a thread created without attributes
   gets (stack size, guard, detach state, scheduling fields, and in the
   extension CPU affinity and signal mask).  The extension is weft's own
   copy; every reader takes a copy of it under the lock, since a later
   pthread_setattr_default_np frees it. */
static struct glibc_attr default_attr = {.guardsize = 4096};
static int default_attr_changed;
static weft_lock_t default_lock = WEFT_LOCK_INIT;

/* A deep copy of an attribute's extension: NULL with *err = 0 when
   there is nothing in it, NULL with *err = ENOMEM on failure. */
static struct glibc_attr_extension *
ext_copy(const struct glibc_attr_extension *e, int *err)
{
	struct glibc_attr_extension *c;

	*err = 0;
	if (!e || (!e->cpuset && !e->sigmask_set))
		return NULL;
	c = malloc(sizeof *c);
	if (!c)
		goto nomem;
	*c = *e;
	if (e->cpuset) {
		c->cpuset = malloc(e->cpusetsize);
		if (!c->cpuset) {
			free(c);
			goto nomem;
		}
		memcpy(c->cpuset, e->cpuset, e->cpusetsize);
	}
	return c;
nomem:
	*err = ENOMEM;
	return NULL;
}

static void ext_free(struct glibc_attr_extension *e)
{
	if (e) {
		free(e->cpuset);
		free(e);
	}
}

/* fork: the lock is held across it, so the child finds the defaults
   whole.  The child resets it rather than unlocking it: the word holds
   the forking thread's tid in the parent, and the child's tid is
   another (lock.h). */
void thread_default_lock_for_fork(void)
{
	weft_lock(&default_lock);
}

void thread_default_unlock_after_fork(void)
{
	weft_unlock(&default_lock);
}

void thread_default_reset_in_child(void)
{
	weft_lock_reset(&default_lock);
}

int thread_default_attr_get(pthread_attr_t *out)
{
	struct glibc_attr *ga = gattr(out);
	int err;

	weft_lock(&default_lock);
	*ga = default_attr;
	ga->extension = ext_copy(default_attr.extension, &err);
	weft_unlock(&default_lock);
	ga->stacksize = stack_default_size();
	return err;
}

int thread_default_attr_set(const pthread_attr_t *in)
{
	const struct glibc_attr *ga = gattr_c(in);
	struct glibc_attr_extension *ext, *old;
	int policy = ga->schedpolicy, err;

	if (!gattr_policy_valid(policy))
		return EINVAL;
	if (ga->schedparam.sched_priority > 0 &&
	    (ga->schedparam.sched_priority < sched_get_priority_min(policy) ||
	     ga->schedparam.sched_priority > sched_get_priority_max(policy)))
		return EINVAL;
	if (ga->stacksize != 0 && ga->stacksize < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	if (ga->flags & GATTR_STACKADDR)
		return EINVAL; /* one stack can't serve every thread */
	ext = ext_copy(ga->extension, &err);
	if (err)
		return err;
	weft_lock(&default_lock);
	old = default_attr.extension;
	default_attr = *ga;
	default_attr.extension = ext;
	default_attr.stacksize = 0;
	default_attr_changed = 1;
	if (ga->stacksize)
		stack_set_default_size(ga->stacksize);
	weft_unlock(&default_lock);
	ext_free(old);
	return 0;
}

/* The start gate: a thread whose attributes ask for scheduling or CPU
   affinity waits before user code until its creator has applied them;
   if the kernel refuses, the thread ends without running user code and
   pthread_create reports the error (as glibc does).  The gate is an
   internal lock the creator takes before clone and releases when the
   setup is done, so the waiting thread lends the creator its priority:
   once the creator has made it, say, SCHED_FIFO 90, a thread of middle
   priority cannot keep the creator, and so the new thread, from going
   on (docs/sync.md, "Internal locks and waits"). */

static void *run_c11(void *p)
{
	struct weft_thread *t = p;
	int (*fn)(void *) = (int (*)(void *))(void *)t->start;

	return (void *)(intptr_t)fn(t->arg);
}

/* First code of the new thread, on its own stack, with TP, TLS and
   everything a signal handler could use already in place. */
static int thread_entry(void *p)
{
	struct weft_thread *t = p;

	host_thread_begin(t->tcb);
	/* Only a block weft maps is kept until no spinner reads it. */
	runstate_enter(host_self_tid(),
		       t->map_base ? host_rseq_cpu(t->tcb) : NULL);
	if (t->gated) {
		weft_lock(&t->start_gate);
		weft_unlock(&t->start_gate);
		if (t->setup_failed)
			thread_finish(t);
	}
	if (t->set_sigmask)
		sys_sigprocmask(SIG_SETMASK, &t->sigmask, NULL);
	t->result = t->c11 ? cancel_run(run_c11, t)
			   : cancel_run(t->start, t->arg);
	thread_finish(t);
}

/* What the attribute asks the creator to apply to the new thread. */
struct start_setup {
	const cpu_set_t *cpuset;
	size_t cpusetsize;
	int explicit_sched;
	int policy;
	struct sched_param param;
};

static int wants_setup(const struct glibc_attr *ga, struct start_setup *s)
{
	memset(s, 0, sizeof *s);
	if (!ga)
		return 0;
	if (ga->extension && ga->extension->cpuset) {
		s->cpuset = ga->extension->cpuset;
		s->cpusetsize = ga->extension->cpusetsize;
	}
	if (ga->flags & GATTR_NOTINHERITSCHED) {
		/* What the attribute leaves unset comes from the creator. */
		s->explicit_sched = 1;
		s->policy = (ga->flags & GATTR_POLICY_SET)
				    ? ga->schedpolicy
				    : (int)sys_call1(SYS_sched_getscheduler, 0);
		if (ga->flags & GATTR_SCHED_SET)
			s->param = ga->schedparam;
		else
			sys_call2(SYS_sched_getparam, 0, &s->param);
	}
	return s->cpuset || s->explicit_sched;
}

static int apply_setup(int tid, const struct start_setup *s)
{
	long r;

	if (s->cpuset) {
		r = sys_call3(SYS_sched_setaffinity, tid, s->cpusetsize, s->cpuset);
		if (r < 0)
			return (int)-r;
	}
	if (s->explicit_sched) {
		r = sys_call3(SYS_sched_setscheduler, tid, s->policy, &s->param);
		if (r < 0)
			return (int)-r;
		rt_hint_note(s->policy, 0);
	}
	return 0;
}

/* After clone: apply the setup, then let the thread run or end it. */
static int finish_setup(struct weft_thread *t, int tid,
			const struct start_setup *s)
{
	int err = apply_setup(tid, s);

	if (err == 0) {
		weft_unlock(&t->start_gate); /* `t` is the thread's from here */
		return 0;
	}
	/* The thread has not run user code; reap it like a join would. */
	t->join_state = WEFT_JOINABLE;
	t->setup_failed = 1;
	weft_unlock(&t->start_gate);
	thread_join(t, NULL, CLOCK_REALTIME, NULL, WEFT_JOIN_REAP);
	return err;
}

static void request_from_attr(const struct glibc_attr *ga,
			      struct weft_stack_request *req)
{
	req->stacksize = 0;
	req->guardsize = 4096;
	req->user_top = NULL;
	req->user_size = 0;
	if (!ga)
		return;
	req->guardsize = ga->guardsize;
	if (ga->flags & GATTR_STACKADDR) {
		req->user_top = ga->stackaddr;
		req->user_size = ga->stacksize;
	} else {
		req->stacksize = ga->stacksize;
	}
}

static int create_with(pthread_t *out, const struct glibc_attr *ga,
		       void *(*start)(void *), void *arg, int c11)
{
	struct weft_stack_request req;
	struct weft_thread *t;
	struct start_setup setup;
	ksigset_t all = ~(ksigset_t)0, old;
	long rc;
	int err = 0, set_mask = 0, gated;

	request_from_attr(ga, &req);
	if (req.user_top && req.user_size < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	t = stack_acquire(&req, &err);
	if (!t)
		return err;
	t->start = start;
	t->arg = arg;
	t->c11 = c11;
	gated = t->gated = wants_setup(ga, &setup);
	t->origin = WEFT_ORIGIN_CREATED;
	t->attr_flags = ga ? ga->flags : 0;
	t->attr_stacksize = req.user_top ? req.user_size : req.stacksize;
	t->join_state = (t->attr_flags & GATTR_DETACHSTATE) ? WEFT_DETACHED
							    : WEFT_JOINABLE;
	if (registry_add(t) != 0) {
		stack_release(t);
		return EAGAIN;
	}
	self_tls_set(t->tcb, t);
	if (t->join_state == WEFT_DETACHED)
		host_tcb_set_detached(t->tcb);
	*out = (pthread_t)t->handle;

	/* On glibc's list before signals are blocked: a set*id call holding
	   the list lock waits for this thread to answer SIGSETXID. */
	host_list_add(t->tcb);
	host_nthreads_add(1);
	/* S1, done differently: glibc blocks every signal around clone so
	   that no handler runs on a half-built thread, and pays three
	   system calls for it.  A weft thread is complete before clone (TLS,
	   TCB, ctype tables, rseq marked unregistered, weft_tls_self), so it
	   simply inherits the creator's mask, as POSIX asks.  Only a thread
	   that must start with another mask (pthread_attr_setsigmask_np)
	   starts with everything blocked and installs that mask itself. */
	if (ga && ga->extension && ga->extension->sigmask_set) {
		sys_sigprocmask(SIG_BLOCK, &all, &old);
		t->sigmask = *(const ksigset_t *)&ga->extension->sigmask;
		t->set_sigmask = set_mask = 1;
	}
	if (gated)
		weft_lock(&t->start_gate);
	/* From here a detached thread may finish and reclaim itself at any
	   moment: `t` must not be touched once clone succeeded (unless
	   gated: then not after the gate is open). */
	rc = weft_clone(WEFT_CLONE_THREAD_FLAGS, (char *)t, (int *)t->tidp,
			(int *)t->tidp, t->tcb, thread_entry, t);
	if (rc < 0) {
		if (gated)
			weft_unlock(&t->start_gate);
		if (set_mask)
			sys_sigprocmask(SIG_SETMASK, &old, NULL);
		host_list_del(t->tcb);
		host_nthreads_add(-1);
		registry_remove(t);
		stack_release(t);
		return EAGAIN;
	}
	if (set_mask)
		sys_sigprocmask(SIG_SETMASK, &old, NULL);
	if (gated && (err = finish_setup(t, (int)rc, &setup)) != 0)
		return err;
	WEFT_COUNT(created);
	return 0;
}

/* Without attributes a thread gets the defaults, once they were set. */
static int create(pthread_t *out, const pthread_attr_t *attr,
		  void *(*start)(void *), void *arg, int c11)
{
	struct glibc_attr defaults;
	int err;

	if (attr || !__atomic_load_n(&default_attr_changed, __ATOMIC_ACQUIRE))
		return create_with(out, attr ? gattr_c(attr) : NULL, start, arg,
				   c11);
	weft_lock(&default_lock);
	defaults = default_attr;
	defaults.extension = ext_copy(default_attr.extension, &err);
	weft_unlock(&default_lock);
	if (err)
		return err == ENOMEM ? EAGAIN : err;
	err = create_with(out, &defaults, start, arg, c11);
	ext_free(defaults.extension);
	return err;
}

int thread_create(pthread_t *out, const pthread_attr_t *attr,
		  void *(*start)(void *), void *arg)
{
	return create(out, attr, start, arg, 0);
}

int thread_create_c11(pthread_t *out, int (*start)(void *), void *arg)
{
	return create(out, NULL, (void *(*)(void *))(void *)start, arg, 1);
}
