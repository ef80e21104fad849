/* How a thread is born (docs/lifecycle.md has the whole story). */
#include <errno.h>
#include <sched.h>
#include <signal.h>

#include "../host/attr_layout.h"
#include "../host/glibc.h"
#include "../kernel/clone.h"
#include "lock.h"
#include "thread.h"

static int thread_entry(void *p) __attribute__((noreturn));

/* pthread_setattr_default_np: what a thread created without attributes
   gets (stack size, guard, detach state, scheduling fields). */
static struct glibc_attr default_attr = {.guardsize = 4096};
static int default_attr_changed;
static weft_lock_t default_lock = WEFT_LOCK_INIT;

void thread_default_attr_get(pthread_attr_t *out)
{
	struct glibc_attr *ga = gattr(out);

	weft_lock(&default_lock);
	*ga = default_attr;
	weft_unlock(&default_lock);
	ga->stacksize = stack_default_size();
}

int thread_default_attr_set(const pthread_attr_t *in)
{
	const struct glibc_attr *ga = gattr_c(in);
	int policy = ga->schedpolicy;

	if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR)
		return EINVAL;
	if (ga->schedparam.sched_priority > 0 &&
	    (ga->schedparam.sched_priority < sched_get_priority_min(policy) ||
	     ga->schedparam.sched_priority > sched_get_priority_max(policy)))
		return EINVAL;
	if (ga->stacksize != 0 && ga->stacksize < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	if (ga->flags & GATTR_STACKADDR)
		return EINVAL; /* one stack can't serve every thread */
	weft_lock(&default_lock);
	default_attr = *ga;
	default_attr.extension = NULL; /* affinity/sigmask defaults: later */
	default_attr.stacksize = 0;
	default_attr_changed = 1;
	if (ga->stacksize)
		stack_set_default_size(ga->stacksize);
	weft_unlock(&default_lock);
	return 0;
}

/* First code of the new thread, on its own stack, with TP, TLS and
   everything a signal handler could use already in place. */
static int thread_entry(void *p)
{
	struct weft_thread *t = p;

	host_thread_begin(t->tcb);
	if (t->set_sigmask)
		sys_sigprocmask(SIG_SETMASK, &t->sigmask, NULL);
	t->result = host_run_thread(t->start, t->arg);
	thread_finish(t);
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

int thread_create(pthread_t *out, const pthread_attr_t *attr,
		  void *(*start)(void *), void *arg)
{
	const struct glibc_attr *ga = attr ? gattr_c(attr) : NULL;
	struct glibc_attr defaults;
	struct weft_stack_request req;
	struct weft_thread *t;
	ksigset_t all = ~(ksigset_t)0, old;
	long rc;
	int err = 0, set_mask = 0;

	if (!ga && __atomic_load_n(&default_attr_changed, __ATOMIC_ACQUIRE)) {
		weft_lock(&default_lock);
		defaults = default_attr;
		weft_unlock(&default_lock);
		ga = &defaults;
	}
	request_from_attr(ga, &req);
	if (req.user_top && req.user_size < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	t = stack_acquire(&req, &err);
	if (!t)
		return err;
	t->start = start;
	t->arg = arg;
	t->origin = WEFT_ORIGIN_CREATED;
	t->attr_flags = ga ? ga->flags : 0;
	t->attr_stacksize = req.user_top ? req.user_size : req.stacksize;
	t->join_state = (t->attr_flags & GATTR_DETACHSTATE) ? WEFT_DETACHED
							    : WEFT_JOINABLE;
	if (registry_add(t) != 0) {
		stack_release(t);
		return EAGAIN;
	}
	host_set_tls_self(t->tcb, t);
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
	/* From here a detached thread may finish and reclaim itself at any
	   moment: `t` must not be touched once clone succeeded. */
	rc = weft_clone(WEFT_CLONE_THREAD_FLAGS, (char *)t, (int *)t->tidp,
			(int *)t->tidp, t->tcb, thread_entry, t);
	if (rc < 0) {
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
	WEFT_COUNT(created);
	return 0;
}
