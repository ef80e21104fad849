/* Calls that act on another thread named by a pthread_t.  weft's handles
   are not glibc's (see core/registry.c), so every such call glibc
   implements must be caught here: a stale handle gets ESRCH, and a live
   one is either served by weft or handed to glibc's implementation with
   the thread's TCB, which glibc accepts as its own descriptor (the
   fields these functions read, such as the tid, are maintained by the
   host adapter).  Scheduling, affinity, names, CPU clocks and
   cancellation get weft-native implementations in later work. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "../host/attr_layout.h"
#include "export.h"

/* SIGCANCEL (32) and SIGSETXID (33) belong to the implementation. */
static int internal_signal(int sig)
{
	return sig == 32 || sig == 33;
}

WEFT_EXPORT int pthread_kill(pthread_t th, int sig)
{
	struct target x;
	int tid;

	if (!weft_serving())
		return host_real.pthread_kill(th, sig);
	x = target_of(th);
	if (x.err)
		return x.err;
	if (!x.t)
		return host_real.pthread_kill(th, sig);
	if (sig < 0 || sig >= 65 || internal_signal(sig))
		return EINVAL;
	tid = __atomic_load_n(x.t->tidp, __ATOMIC_ACQUIRE);
	if (tid <= 0)
		return ESRCH; /* finished, not yet joined */
	return (int)-sys_tgkill(sys_getpid(), tid, sig);
}

#define FORWARD(call, h, ...)                                                  \
	do {                                                                   \
		struct target x_;                                              \
		if (!weft_serving())                                           \
			return host_real.call(h, __VA_ARGS__);                 \
		x_ = target_of(h);                                             \
		if (x_.err)                                                    \
			return x_.err;                                         \
		if (x_.t && __atomic_load_n(x_.t->tidp, __ATOMIC_ACQUIRE) <= 0) \
			return ESRCH;                                          \
		return host_real.call(x_.glibc, __VA_ARGS__);                  \
	} while (0)

WEFT_EXPORT int pthread_sigqueue(pthread_t th, int sig, const union sigval v)
{
	FORWARD(pthread_sigqueue, th, sig, v);
}

WEFT_EXPORT int pthread_setschedparam(pthread_t th, int policy,
				      const struct sched_param *p)
{
	FORWARD(pthread_setschedparam, th, policy, p);
}

WEFT_EXPORT int pthread_getschedparam(pthread_t th, int *policy,
				      struct sched_param *p)
{
	FORWARD(pthread_getschedparam, th, policy, p);
}

WEFT_EXPORT int pthread_setschedprio(pthread_t th, int prio)
{
	FORWARD(pthread_setschedprio, th, prio);
}

WEFT_EXPORT int pthread_setaffinity_np(pthread_t th, size_t n,
				       const cpu_set_t *set)
{
	FORWARD(pthread_setaffinity_np, th, n, set);
}

WEFT_EXPORT int pthread_getaffinity_np(pthread_t th, size_t n, cpu_set_t *set)
{
	FORWARD(pthread_getaffinity_np, th, n, set);
}

WEFT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	FORWARD(pthread_setname_np, th, name);
}

WEFT_EXPORT int pthread_getname_np(pthread_t th, char *buf, size_t len)
{
	FORWARD(pthread_getname_np, th, buf, len);
}

WEFT_EXPORT int pthread_getcpuclockid(pthread_t th, clockid_t *clock)
{
	FORWARD(pthread_getcpuclockid, th, clock);
}

WEFT_EXPORT int pthread_cancel(pthread_t th)
{
	struct target x;

	if (!weft_serving())
		return host_real.pthread_cancel(th);
	x = target_of(th);
	if (x.err)
		return x.err;
	return host_real.pthread_cancel(x.glibc);
}

/* The attributes a thread actually has, in glibc's layout. */
WEFT_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	struct target x;
	struct glibc_attr *ga = gattr(attr);
	struct weft_thread *t;

	if (!weft_serving())
		return host_real.pthread_getattr_np(th, attr);
	x = target_of(th);
	if (x.err)
		return x.err;
	if (!x.t || x.t->origin != WEFT_ORIGIN_CREATED)
		return host_real.pthread_getattr_np(x.glibc, attr);
	t = x.t;
	memset(attr, 0, sizeof *attr);
	ga->flags = (t->attr_flags & ~GATTR_DETACHSTATE) | GATTR_STACKADDR;
	if (__atomic_load_n(&t->join_state, __ATOMIC_ACQUIRE) == WEFT_DETACHED)
		ga->flags |= GATTR_DETACHSTATE;
	ga->guardsize = t->guard_size;
	/* As glibc reports it: the whole block above the guard, whose top
	   holds the TLS and descriptor. */
	if (t->map_base) {
		ga->stackaddr = t->map_base + t->map_size;
		ga->stacksize = t->map_size - t->guard_size;
	} else {
		ga->stackaddr = t->stack_lo + t->attr_stacksize;
		ga->stacksize = t->attr_stacksize;
	}
	return 0;
}
