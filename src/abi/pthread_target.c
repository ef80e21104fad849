/* Calls that act on another thread named by a pthread_t: signals,
   scheduling, affinity, names, CPU clocks, attributes (cancellation is
   in pthread_cancel.c).

   weft's handles are not glibc's (see core/registry.c), so each call is
   routed (route() below):
     * a stale weft handle gets ESRCH;
     * a thread weft created is served here, natively, through its kernel
       tid, pinned by core/target.c so that a tid reused after the
       thread's exit is never acted on;
     * a thread glibc created (the main thread, glibc's helper threads,
       adopted or not) goes to glibc's implementation with its TCB.
       glibc made and tears down those threads, so its own code is the
       one that is right for them: its exit_lock protocol guards their
       tids, and its scheduling cache in their descriptor stays its own.
   In fallback mode (weft not serving) everything goes to glibc. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rt_hint.h"
#include "core/spin_policy.h"
#include "host/attr_layout.h"
#include "host/sched_cache.h"
#include "kernel/sched.h"
#include "sync/mutex_pp.h"
#include "export.h"

enum route { NATIVE, GLIBC, FAILED };

/* Decides who serves a call on `h` (see above); x->err for FAILED. */
static enum route route(pthread_t h, struct target *x)
{
	if (!weft_serving()) {
		x->t = NULL;
		x->glibc = h;
		x->err = 0;
		return GLIBC;
	}
	*x = target_of(h);
	if (x->err)
		return FAILED;
	if (!x->t || x->origin != WEFT_ORIGIN_CREATED)
		return GLIBC;
	return NATIVE;
}

/* Scheduling calls: as route(), but weft serves the calling thread
   whoever made it, so that the priority-protect ceilings it holds are
   kept (glibc's own functions do not see weft's; sync/mutex_pp.h).
   x->t is then the caller's descriptor or NULL: thread_pin gives the
   caller's tid either way. */
static enum route sched_route(pthread_t h, struct target *x)
{
	enum route r = route(h, x);

	if (r == GLIBC && weft_serving() &&
	    (void *)x->glibc == arch_thread_pointer()) {
		x->t = weft_tls_self;
		return NATIVE;
	}
	return r;
}

/* A kernel result as an error number (0 on success). */
/* The first step of every call below: a thread glibc made goes to
   glibc's implementation (`glibc_call`), a stale handle returns its
   error, and only weft's own threads go on. */
#define ROUTE_OR_RETURN(th, x, glibc_call)                                     \
	do {                                                                   \
		enum route r_ = route(th, &(x));                               \
		if (r_ == GLIBC)                                               \
			return glibc_call;                                     \
		if (r_ == FAILED)                                              \
			return (x).err;                                        \
	} while (0)

static int kerr(long r)
{
	return r < 0 ? (int)-r : 0;
}

/* SIGCANCEL (32) and SIGSETXID (33) belong to the implementation. */
static int internal_signal(int sig)
{
	return sig == 32 || sig == 33;
}

WEFT_EXPORT int pthread_kill(pthread_t th, int sig)
{
	struct target x;
	struct weft_pin pin;
	int tid, err;

	ROUTE_OR_RETURN(th, x, host_real.pthread_kill(x.glibc, sig));
	if (sig < 0 || sig >= 65 || internal_signal(sig))
		return EINVAL;
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid; /* finished, not yet joined */
	err = kerr(sys_tgkill(sys_getpid(), tid, sig));
	thread_unpin(x.t, &pin);
	return err;
}

/* sigqueue() aimed at one thread: the receiver sees SI_QUEUE, our pid
   and uid, and the value. */
WEFT_EXPORT int pthread_sigqueue(pthread_t th, int sig, const union sigval v)
{
	struct target x;
	struct weft_pin pin;
	siginfo_t info;
	int tid, err;

	ROUTE_OR_RETURN(th, x, host_real.pthread_sigqueue(x.glibc, sig, v));
	if (sig < 0 || sig >= 65 || internal_signal(sig))
		return EINVAL;
	memset(&info, 0, sizeof info);
	info.si_signo = sig;
	info.si_code = SI_QUEUE;
	info.si_pid = sys_getpid();
	info.si_uid = (uid_t)sys_getuid();
	info.si_value = v;
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	err = kerr(sys_rt_tgsigqueueinfo(info.si_pid, tid, sig, &info));
	thread_unpin(x.t, &pin);
	return err;
}

/* --- scheduling --------------------------------------------------------
   The kernel is the record weft keeps: getters ask it, so a change made
   behind weft's back (sched_setscheduler on the tid) is seen too.  The
   exception is a thread holding priority-protect mutexes: the kernel
   then shows the ceiling, and the base priority a setter gives takes
   effect when the ceilings are released (sync/mutex_pp.c, as glibc).
   Setters also update glibc's copy in the TCB (host/sched_cache.c). */

WEFT_EXPORT int pthread_setschedparam(pthread_t th, int policy,
				      const struct sched_param *p)
{
	struct target x;
	struct weft_pin pin;
	enum route r = sched_route(th, &x);
	int tid, err;

	if (r == FAILED)
		return x.err;
	if (r == GLIBC) {
		err = host_real.pthread_setschedparam(x.glibc, policy, p);
		if (err == 0)
			rt_hint_note(policy, 0);
		if (err == 0 && weft_serving())
			pp_sched_note((char *)x.glibc, policy, p->sched_priority);
		return err;
	}
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	/* The kernel checks the policy, the priority's range for it, and
	   the caller's rights (EPERM); `p` is declared non-null. */
	err = pp_sched_set((char *)x.glibc, tid, policy, p->sched_priority);
	if (err == 0) {
		rt_hint_note(policy, 0);
		host_sched_cache_store((char *)x.glibc, policy, p->sched_priority);
	}
	thread_unpin(x.t, &pin);
	return err;
}

/* Called directly by pthread_getattr_np, not through the exported
   symbol: AddressSanitizer asks pthread_getattr_np for a new thread's
   stack before it clears that stack's shadow, and its
   pthread_getschedparam interceptor checked `policy`, a local on that
   stack, against poison left by the stack's previous owner (a thread of
   the parent after fork: a stack-buffer-underflow report in
   t_sched_fork).  glibc's pthread_getattr_np makes no interceptable
   call either. */
static int getschedparam(pthread_t th, int *policy, struct sched_param *p)
{
	struct target x;
	struct weft_pin pin;
	enum route r = sched_route(th, &x);
	long pol;
	int tid, err;

	if (r == FAILED)
		return x.err;
	if (r == GLIBC)
		return host_real.pthread_getschedparam(x.glibc, policy, p);
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	pol = sys_sched_getscheduler(tid);
	err = pol < 0 ? kerr(pol) : kerr(sys_sched_getparam(tid, p));
	if (err == 0) {
		int base_pol, base_prio;
		*policy = (int)pol;
		if (pp_sched_base((char *)x.glibc, &base_pol, &base_prio)) {
			*policy = base_pol;
			p->sched_priority = base_prio;
		}
	}
	thread_unpin(x.t, &pin);
	return err;
}

WEFT_EXPORT int pthread_getschedparam(pthread_t th, int *policy,
				      struct sched_param *p)
{
	return getschedparam(th, policy, p);
}

WEFT_EXPORT int pthread_setschedprio(pthread_t th, int prio)
{
	struct target x;
	struct weft_pin pin;
	enum route r = sched_route(th, &x);
	int tid, err;

	if (r == FAILED)
		return x.err;
	if (r == GLIBC) {
		err = host_real.pthread_setschedprio(x.glibc, prio);
		if (err == 0)
			rt_hint_note(-1, prio);
		if (err == 0 && weft_serving())
			pp_sched_note((char *)x.glibc, -1, prio);
		return err;
	}
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	err = pp_sched_set((char *)x.glibc, tid, -1, prio);
	if (err == 0) {
		rt_hint_note(-1, prio);
		host_sched_cache_store((char *)x.glibc, -1, prio);
	}
	thread_unpin(x.t, &pin);
	return err;
}

/* --- affinity ---------------------------------------------------------- */

/* Every thread's spin decision is looked up again at its next slow path
   (core/spin_policy.h), after the change: also after a failed call, and
   for a thread glibc made. */
static int spin_policy_forget_after(int err)
{
	spin_policy_forget();
	return err;
}

WEFT_EXPORT int pthread_setaffinity_np(pthread_t th, size_t n,
				       const cpu_set_t *set)
{
	struct target x;
	struct weft_pin pin;
	int tid, err;

	ROUTE_OR_RETURN(th, x, spin_policy_forget_after(
		host_real.pthread_setaffinity_np(x.glibc, n, set)));
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	/* EINVAL when no allowed CPU is in the set. */
	err = kerr(sys_sched_setaffinity(tid, n, set));
	thread_unpin(x.t, &pin);
	return spin_policy_forget_after(err);
}

WEFT_EXPORT int pthread_getaffinity_np(pthread_t th, size_t n, cpu_set_t *set)
{
	struct target x;
	struct weft_pin pin;
	long r;
	int tid;

	ROUTE_OR_RETURN(th, x, host_real.pthread_getaffinity_np(x.glibc, n, set));
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	/* EINVAL when `n` is smaller than the kernel's mask. */
	r = sys_sched_getaffinity(tid, n, set);
	thread_unpin(x.t, &pin);
	if (r < 0)
		return kerr(r);
	/* The kernel wrote its mask size; the rest of the caller's set is
	   CPUs that do not exist. */
	memset((char *)set + r, 0, n - (size_t)r);
	return 0;
}

/* --- names ------------------------------------------------------------- */

#define COMM_LEN 16 /* the kernel's TASK_COMM_LEN, with the NUL */

/* "/proc/self/task/<tid>/comm" into buf. */
static void comm_path(char *buf, int tid)
{
	static const char head[] = "/proc/self/task/";
	char digits[12];
	int n = 0;

	do
		digits[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) > 0);
	memcpy(buf, head, sizeof head - 1);
	buf += sizeof head - 1;
	while (n > 0)
		*buf++ = digits[--n];
	memcpy(buf, "/comm", 6);
}

static int comm_write(int tid, const char *name, size_t len)
{
	char path[48];
	long fd, w;

	comm_path(path, tid);
	fd = sys_open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return kerr(fd);
	w = sys_write((int)fd, name, len);
	sys_close((int)fd);
	return w < 0 ? kerr(w) : (size_t)w != len ? EIO : 0;
}

static int comm_read(int tid, char *buf, size_t len)
{
	char path[48];
	long fd, r;

	comm_path(path, tid);
	fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kerr(fd);
	r = sys_read((int)fd, buf, len);
	sys_close((int)fd);
	if (r < 0)
		return kerr(r);
	/* The file is the name and a newline. */
	if (r > 0 && buf[r - 1] == '\n')
		buf[r - 1] = '\0';
	else if ((size_t)r == len)
		return ERANGE;
	else
		buf[r] = '\0';
	return 0;
}

/* The calling thread names itself with prctl; another thread's name is
   its /proc comm file (the kernel offers nothing else). */
WEFT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	struct target x;
	struct weft_pin pin;
	size_t len;
	int tid, err;

	ROUTE_OR_RETURN(th, x, host_real.pthread_setname_np(x.glibc, name));
	len = strlen(name);
	if (len >= COMM_LEN)
		return ERANGE;
	if (x.t == weft_tls_self)
		return kerr(sys_prctl(PR_SET_NAME, (unsigned long)name));
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	err = comm_write(tid, name, len);
	thread_unpin(x.t, &pin);
	return err;
}

WEFT_EXPORT int pthread_getname_np(pthread_t th, char *buf, size_t len)
{
	struct target x;
	struct weft_pin pin;
	int tid, err;

	ROUTE_OR_RETURN(th, x, host_real.pthread_getname_np(x.glibc, buf, len));
	if (len < COMM_LEN)
		return ERANGE;
	if (x.t == weft_tls_self)
		return kerr(sys_prctl(PR_GET_NAME, (unsigned long)buf));
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	err = comm_read(tid, buf, len);
	thread_unpin(x.t, &pin);
	return err;
}

/* --- CPU-time clock ----------------------------------------------------
   The kernel names a thread's CPU-time clock by its tid: the bitwise
   complement of the tid shifted left by 3, or'ed with "per thread" (4)
   and "scheduler time" (2).  The clock id is only meaningful while the
   thread lives, so no pin is held beyond computing it. */
#define CPUCLOCK_PERTHREAD 4
#define CPUCLOCK_SCHED 2

WEFT_EXPORT int pthread_getcpuclockid(pthread_t th, clockid_t *clock)
{
	struct target x;
	struct weft_pin pin;
	int tid;

	ROUTE_OR_RETURN(th, x, host_real.pthread_getcpuclockid(x.glibc, clock));
	if ((tid = thread_pin(x.t, th, &pin)) < 0)
		return -tid;
	thread_unpin(x.t, &pin);
	*clock = (clockid_t)((~(unsigned)tid << 3) | CPUCLOCK_PERTHREAD |
			     CPUCLOCK_SCHED);
	return 0;
}

/* --- pthread_gettid_np (glibc 2.42) -----------------------------------
   The thread's kernel tid, or -1 once it has ended (errno untouched, as
   glibc).  weft must serve it for its own threads: their handle is not a
   TCB address, and glibc's version reads the tid through it (SIGSEGV).
   One of weft's threads is pinned for the read, so that a join racing
   with the call cannot have its block reused or unmapped under it; from
   the moment it begins to exit its tid reads as ended. */
pid_t pthread_gettid_np(pthread_t th);

WEFT_EXPORT pid_t pthread_gettid_np(pthread_t th)
{
	struct target x;
	struct weft_pin pin;
	int tid;

	if (!weft_serving())
		return host_real.pthread_gettid_np ? host_real.pthread_gettid_np(th)
						   : -1;
	x = target_of(th);
	if (x.err)
		return -1;
	if (!x.t && host_real.pthread_gettid_np)
		return host_real.pthread_gettid_np(th);
	if (x.t && x.origin == WEFT_ORIGIN_CREATED) {
		/* Pinned: the TCB may be reused or unmapped by a join racing
		   with this call (core/registry.c). */
		if ((tid = thread_pin(x.t, th, &pin)) < 0)
			return -1;
		thread_unpin(x.t, &pin);
		return tid;
	}
	tid = __atomic_load_n(host_tid_word((char *)x.glibc), __ATOMIC_RELAXED);
	return tid > 0 ? tid : -1;
}

/* --- pthread_getattr_np ------------------------------------------------ */

/* The thread's CPU set, in an extension as glibc's pthread_getattr_np
   fills it: the smallest power-of-two buffer of at least 32 bytes the
   kernel accepts. */
static int getattr_affinity(pthread_t th, pthread_attr_t *attr)
{
	cpu_set_t *set = NULL;
	size_t size = 16;
	int err;

	do {
		void *p;

		size *= 2;
		p = realloc(set, size);
		if (!p) {
			free(set);
			return ENOMEM;
		}
		set = p;
		err = pthread_getaffinity_np(th, size, set);
	} while (err == EINVAL && size < 1024 * 1024);
	if (err == 0)
		err = pthread_attr_setaffinity_np(attr, size, set);
	free(set);
	return err;
}

/* Scheduling as the kernel has it now. */
static int getattr_sched(pthread_t th, struct glibc_attr *ga)
{
	int policy, err;

	err = getschedparam(th, &policy, &ga->schedparam);
	if (err)
		return err;
	ga->schedpolicy = policy & ~SCHED_RESET_ON_FORK;
	ga->flags |= GATTR_SCHED_SET | GATTR_POLICY_SET;
	return 0;
}

/* The attributes a thread actually has, in glibc's layout. */
WEFT_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	struct target x;
	struct glibc_attr *ga = gattr(attr);
	struct weft_thread *t;
	struct weft_pin pin;
	int err;

	ROUTE_OR_RETURN(th, x, host_real.pthread_getattr_np(x.glibc, attr));
	t = x.t;
	/* The descriptor is read pinned: a join racing with this call
	   could otherwise hand it to a new thread (or unmap it) meanwhile
	   (core/registry.c).  Ended: ESRCH, as getattr_sched would say. */
	if (thread_pin(t, th, &pin) < 0)
		return ESRCH;
	memset(attr, 0, sizeof *attr);
	/* The creation flags carry inherit-sched and scope. */
	ga->flags = (t->attr_flags & ~(GATTR_DETACHSTATE | GATTR_SCHED_SET |
				       GATTR_POLICY_SET)) |
		    GATTR_STACKADDR;
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
	thread_unpin(t, &pin);
	err = getattr_sched(th, ga);
	if (err == 0)
		err = getattr_affinity(th, attr);
	if (err)
		pthread_attr_destroy(attr);
	return err;
}
