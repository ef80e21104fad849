/* Scheduling, affinity, signal queueing and small file I/O system calls
   on a thread id, for the calls that act on one thread (abi/pthread_target.c,
   core/create.c).  Like syscall.h: kernel results, negative errno on
   failure, errno never touched. */
#ifndef WEFT_KERNEL_SCHED_H
#define WEFT_KERNEL_SCHED_H

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include "syscall.h"

static inline long sys_sched_setscheduler(int tid, int policy,
					  const struct sched_param *p)
{
	return sys_call3(SYS_sched_setscheduler, tid, policy, p);
}

/* The policy (possibly with SCHED_RESET_ON_FORK or'ed in), or -errno. */
static inline long sys_sched_getscheduler(int tid)
{
	return sys_call1(SYS_sched_getscheduler, tid);
}

/* The first version of the kernel's struct sched_attr (48 bytes). */
struct sched_attr_v0 {
	unsigned size, sched_policy;
	unsigned long long sched_flags;
	int sched_nice;
	unsigned sched_priority;
	unsigned long long sched_runtime, sched_deadline, sched_period;
};

static inline long sys_sched_getattr(int tid, struct sched_attr_v0 *a)
{
	return sys_call4(SYS_sched_getattr, tid, a, sizeof *a, 0);
}

static inline long sys_sched_setparam(int tid, const struct sched_param *p)
{
	return sys_call2(SYS_sched_setparam, tid, p);
}

static inline long sys_sched_getparam(int tid, struct sched_param *p)
{
	return sys_call2(SYS_sched_getparam, tid, p);
}

static inline long sys_sched_setaffinity(int tid, size_t size,
					 const cpu_set_t *set)
{
	return sys_call3(SYS_sched_setaffinity, tid, size, set);
}

/* Returns the number of bytes the kernel wrote (its mask size). */
static inline long sys_sched_getaffinity(int tid, size_t size, cpu_set_t *set)
{
	return sys_call3(SYS_sched_getaffinity, tid, size, set);
}

static inline long sys_sched_yield(void)
{
	return sys_call0(SYS_sched_yield);
}

static inline long sys_rt_tgsigqueueinfo(int tgid, int tid, int sig,
					 siginfo_t *info)
{
	return sys_call4(SYS_rt_tgsigqueueinfo, tgid, tid, sig, info);
}

static inline int sys_getuid(void)
{
	return (int)sys_call0(SYS_getuid);
}

static inline long sys_prctl(int op, unsigned long arg)
{
	return sys_call5(SYS_prctl, op, arg, 0, 0, 0);
}

static inline long sys_open(const char *path, int flags)
{
	return sys_call4(SYS_openat, AT_FDCWD, path, flags, 0);
}

static inline long sys_read(int fd, void *buf, size_t n)
{
	return sys_call3(SYS_read, fd, buf, n);
}

static inline long sys_write(int fd, const void *buf, size_t n)
{
	return sys_call3(SYS_write, fd, buf, n);
}

static inline long sys_close(int fd)
{
	return sys_call1(SYS_close, fd);
}

#endif
