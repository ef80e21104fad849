/* Thread attributes, stored in glibc's own layout (host/attr_layout.h),
   so objects pass unchanged between weft and glibc's helper threads.
   The affinity and signal-mask attributes live in glibc's extension
   object, allocated with malloc as glibc does, so that either library's
   pthread_attr_destroy frees it. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "host/attr_layout.h"
#include "export.h"

#define PAGE 4096

WEFT_EXPORT int pthread_attr_init(pthread_attr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_init)(a);
	memset(a, 0, sizeof *a);
	gattr(a)->guardsize = PAGE;
	return 0;
}

WEFT_EXPORT int pthread_attr_destroy(pthread_attr_t *a)
{
	struct glibc_attr_extension *ext;

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_destroy)(a);
	ext = gattr(a)->extension;
	if (ext) {
		free(ext->cpuset);
		free(ext);
		gattr(a)->extension = NULL;
	}
	return 0;
}

WEFT_EXPORT int pthread_attr_setdetachstate(pthread_attr_t *a, int s)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setdetachstate)(a, s);
	if (s == PTHREAD_CREATE_DETACHED)
		gattr(a)->flags |= GATTR_DETACHSTATE;
	else if (s == PTHREAD_CREATE_JOINABLE)
		gattr(a)->flags &= ~GATTR_DETACHSTATE;
	else
		return EINVAL;
	return 0;
}

WEFT_EXPORT int pthread_attr_getdetachstate(const pthread_attr_t *a, int *s)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getdetachstate)(a, s);
	*s = (gattr_c(a)->flags & GATTR_DETACHSTATE) ? PTHREAD_CREATE_DETACHED
						      : PTHREAD_CREATE_JOINABLE;
	return 0;
}

WEFT_EXPORT int pthread_attr_setguardsize(pthread_attr_t *a, size_t g)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setguardsize)(a, g);
	gattr(a)->guardsize = g;
	return 0;
}

WEFT_EXPORT int pthread_attr_getguardsize(const pthread_attr_t *a, size_t *g)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getguardsize)(a, g);
	*g = gattr_c(a)->guardsize;
	return 0;
}

WEFT_EXPORT int pthread_attr_setstacksize(pthread_attr_t *a, size_t s)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setstacksize)(a, s);
	if (s < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	gattr(a)->stacksize = s;
	return 0;
}

WEFT_EXPORT int pthread_attr_getstacksize(const pthread_attr_t *a, size_t *s)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getstacksize)(a, s);
	/* 0 means "the default", which is what a thread would get. */
	*s = gattr_c(a)->stacksize ? gattr_c(a)->stacksize
				   : stack_default_size();
	return 0;
}

/* Any address and size from PTHREAD_STACK_MIN up, as glibc: programs
   pass malloc'd memory of odd sizes.  pthread_create aligns inside it
   (TCB, descriptor and first stack pointer are placed at aligned
   addresses below the top, src/core/stack.c), and refuses a size that
   leaves no room below the TLS blocks or that wraps around. */
WEFT_EXPORT int pthread_attr_setstack(pthread_attr_t *a, void *addr, size_t s)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setstack)(a, addr, s);
	if (s < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	gattr(a)->stackaddr = (char *)addr + s;
	gattr(a)->stacksize = s;
	gattr(a)->flags |= GATTR_STACKADDR;
	return 0;
}

WEFT_EXPORT int pthread_attr_getstack(const pthread_attr_t *a, void **addr,
				      size_t *s)
{
	const struct glibc_attr *g = gattr_c(a);

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getstack)(a, addr, s);
	*s = g->stacksize;
	*addr = (char *)g->stackaddr - g->stacksize;
	return 0;
}

#pragma GCC diagnostic push
/* Forwarding names the deprecated functions. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* Obsolete: stackaddr is the top of the stack on x86-64 (grows down). */
WEFT_EXPORT int pthread_attr_setstackaddr(pthread_attr_t *a, void *addr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setstackaddr)(a, addr);
	gattr(a)->stackaddr = addr;
	gattr(a)->flags |= GATTR_STACKADDR;
	return 0;
}

WEFT_EXPORT int pthread_attr_getstackaddr(const pthread_attr_t *a, void **addr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getstackaddr)(a, addr);
	*addr = gattr_c(a)->stackaddr;
	return 0;
}
#pragma GCC diagnostic pop

/* The priority must suit the policy already in the attribute (as in
   glibc: set the policy first). */
WEFT_EXPORT int pthread_attr_setschedparam(pthread_attr_t *a,
					   const struct sched_param *p)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setschedparam)(a, p);
	if (!gattr_priority_valid(gattr(a)->schedpolicy, p->sched_priority))
		return EINVAL;
	gattr(a)->schedparam = *p;
	gattr(a)->flags |= GATTR_SCHED_SET;
	return 0;
}

WEFT_EXPORT int pthread_attr_getschedparam(const pthread_attr_t *a,
					   struct sched_param *p)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getschedparam)(a, p);
	*p = gattr_c(a)->schedparam;
	return 0;
}

WEFT_EXPORT int pthread_attr_setschedpolicy(pthread_attr_t *a, int policy)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setschedpolicy)(a, policy);
	if (!gattr_policy_valid(policy))
		return EINVAL;
	gattr(a)->schedpolicy = policy;
	gattr(a)->flags |= GATTR_POLICY_SET;
	return 0;
}

WEFT_EXPORT int pthread_attr_getschedpolicy(const pthread_attr_t *a, int *p)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getschedpolicy)(a, p);
	*p = gattr_c(a)->schedpolicy;
	return 0;
}

WEFT_EXPORT int pthread_attr_setinheritsched(pthread_attr_t *a, int inh)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setinheritsched)(a, inh);
	if (inh == PTHREAD_EXPLICIT_SCHED)
		gattr(a)->flags |= GATTR_NOTINHERITSCHED;
	else if (inh == PTHREAD_INHERIT_SCHED)
		gattr(a)->flags &= ~GATTR_NOTINHERITSCHED;
	else
		return EINVAL;
	return 0;
}

WEFT_EXPORT int pthread_attr_getinheritsched(const pthread_attr_t *a, int *i)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getinheritsched)(a, i);
	*i = (gattr_c(a)->flags & GATTR_NOTINHERITSCHED) ? PTHREAD_EXPLICIT_SCHED
							  : PTHREAD_INHERIT_SCHED;
	return 0;
}

/* Linux threads are all system-scope. */
WEFT_EXPORT int pthread_attr_setscope(pthread_attr_t *a, int scope)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setscope)(a, scope);
	if (scope == PTHREAD_SCOPE_SYSTEM) {
		gattr(a)->flags &= ~GATTR_SCOPEPROCESS;
		return 0;
	}
	return scope == PTHREAD_SCOPE_PROCESS ? ENOTSUP : EINVAL;
}

WEFT_EXPORT int pthread_attr_getscope(const pthread_attr_t *a, int *scope)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getscope)(a, scope);
	*scope = (gattr_c(a)->flags & GATTR_SCOPEPROCESS) ? PTHREAD_SCOPE_PROCESS
							   : PTHREAD_SCOPE_SYSTEM;
	return 0;
}

WEFT_EXPORT int pthread_getattr_default_np(pthread_attr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_getattr_default_np)(a);
	return thread_default_attr_get(a);
}

WEFT_EXPORT int pthread_setattr_default_np(const pthread_attr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_setattr_default_np)(a);
	return thread_default_attr_set(a);
}

/* --- the extension: CPU affinity and initial signal mask ------------- */

static int extension(struct glibc_attr *ga)
{
	if (!ga->extension) {
		ga->extension = calloc(1, sizeof *ga->extension);
		if (!ga->extension)
			return ENOMEM;
	}
	return 0;
}

/* An empty set (NULL or size 0) removes the affinity.  A set naming
   CPUs the machine lacks is accepted here, as glibc does; creation then
   fails with the kernel's EINVAL if no CPU of the set exists. */
WEFT_EXPORT int pthread_attr_setaffinity_np(pthread_attr_t *a, size_t n,
					    const cpu_set_t *set)
{
	struct glibc_attr *ga = gattr(a);
	void *copy;

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setaffinity_np)(a, n, set);
	/* The header says `set` is never NULL, but glibc accepts NULL:
	   hide the pointer from the optimiser so the test stays. */
	const void *given = set;

	__asm__("" : "+r"(given));
	if (!given || n == 0) {
		if (ga->extension) {
			free(ga->extension->cpuset);
			ga->extension->cpuset = NULL;
			ga->extension->cpusetsize = 0;
		}
		return 0;
	}
	if (extension(ga))
		return ENOMEM;
	if (ga->extension->cpusetsize != n) {
		copy = realloc(ga->extension->cpuset, n);
		if (!copy)
			return ENOMEM;
		ga->extension->cpuset = copy;
		ga->extension->cpusetsize = n;
	}
	memcpy(ga->extension->cpuset, set, n);
	return 0;
}

/* Without an affinity in the attribute every CPU is allowed: all bits
   set.  A stored set with CPUs beyond the caller's buffer is EINVAL. */
WEFT_EXPORT int pthread_attr_getaffinity_np(const pthread_attr_t *a, size_t n,
					    cpu_set_t *set)
{
	const struct glibc_attr *ga = gattr_c(a);
	const unsigned char *have;
	size_t size;

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getaffinity_np)(a, n, set);
	if (!ga->extension || !ga->extension->cpuset) {
		memset(set, 0xff, n);
		return 0;
	}
	have = (const unsigned char *)ga->extension->cpuset;
	size = ga->extension->cpusetsize;
	for (size_t i = n; i < size; i++)
		if (have[i])
			return EINVAL;
	memcpy(set, have, n < size ? n : size);
	if (n > size)
		memset((char *)set + size, 0, n - size);
	return 0;
}

/* NULL removes the mask: the thread then inherits its creator's.
   SIGCANCEL and SIGSETXID are the implementation's and never blocked. */
WEFT_EXPORT int pthread_attr_setsigmask_np(pthread_attr_t *a,
					   const sigset_t *mask)
{
	struct glibc_attr *ga = gattr(a);

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_setsigmask_np)(a, mask);
	if (!mask) {
		if (ga->extension)
			ga->extension->sigmask_set = false;
		return 0;
	}
	if (extension(ga))
		return ENOMEM;
	ga->extension->sigmask = *mask;
	/* Signals 32 and 33 are bits 31 and 32 of the first word
	   (sigdelset refuses to touch them). */
	((unsigned long *)&ga->extension->sigmask)[0] &= ~(3UL << 31);
	ga->extension->sigmask_set = true;
	return 0;
}

/* PTHREAD_ATTR_NO_SIGMASK_NP (and an empty set) when none was given. */
WEFT_EXPORT int pthread_attr_getsigmask_np(const pthread_attr_t *a,
					   sigset_t *mask)
{
	const struct glibc_attr *ga = gattr_c(a);

	if (!weft_serving())
		return GLIBC_FN(pthread_attr_getsigmask_np)(a, mask);
	if (!ga->extension || !ga->extension->sigmask_set) {
		sigemptyset(mask);
		return PTHREAD_ATTR_NO_SIGMASK_NP;
	}
	*mask = ga->extension->sigmask;
	return 0;
}
