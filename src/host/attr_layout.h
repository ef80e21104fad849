/* glibc's internal layout of pthread_attr_t (sysdeps/nptl/internaltypes.h
   in glibc 2.34 ... master).  weft stores attributes in exactly this
   layout because glibc's own helper threads (timer_create, mq_notify,
   aio, getaddrinfo_a with SIGEV_THREAD) read attribute objects a program
   hands them with glibc's code. */
#ifndef WEFT_HOST_ATTR_LAYOUT_H
#define WEFT_HOST_ATTR_LAYOUT_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include "kernel/syscall.h"

struct glibc_attr {
	struct sched_param schedparam;
	int schedpolicy;
	int flags;
	size_t guardsize;
	void *stackaddr; /* top of the stack (setstack stores addr + size) */
	size_t stacksize;
	struct glibc_attr_extension *extension;
	void *unused;
};

struct glibc_attr_extension {
	cpu_set_t *cpuset;
	size_t cpusetsize;
	sigset_t sigmask;
	bool sigmask_set;
};

/* Bits of glibc_attr.flags. */
#define GATTR_DETACHSTATE 0x0001
#define GATTR_NOTINHERITSCHED 0x0002
#define GATTR_SCOPEPROCESS 0x0004
#define GATTR_STACKADDR 0x0008
#define GATTR_OLDATTR 0x0010
#define GATTR_SCHED_SET 0x0020
#define GATTR_POLICY_SET 0x0040

_Static_assert(sizeof(struct glibc_attr) <= sizeof(pthread_attr_t),
	       "glibc_attr must fit in pthread_attr_t");

/* The policies a thread can be given: Linux's (glibc's attributes accept
   only the first three). */
static inline int gattr_policy_valid(int policy)
{
	return policy == SCHED_OTHER || policy == SCHED_FIFO ||
	       policy == SCHED_RR || policy == SCHED_BATCH || policy == SCHED_IDLE;
}

/* Whether `prio` is in the kernel's range for `policy` (0 for the
   non-real-time policies). */
static inline bool gattr_priority_valid(int policy, int prio)
{
	long lo = sys_call1(SYS_sched_get_priority_min, policy);
	long hi = sys_call1(SYS_sched_get_priority_max, policy);

	return lo >= 0 && hi >= 0 && prio >= lo && prio <= hi;
}

static inline struct glibc_attr *gattr(pthread_attr_t *a)
{
	return (struct glibc_attr *)a;
}

static inline const struct glibc_attr *gattr_c(const pthread_attr_t *a)
{
	return (const struct glibc_attr *)a;
}

#endif
