/* Kernel interface: typed wrappers over the raw syscall instructions.
   Every function returns the kernel's result (negative errno on error)
   and never reads or writes errno, so the thread core can use them in
   signal handlers, in a fork child and while a thread is being built
   or torn down.  */
#ifndef WEFT_KERNEL_SYSCALL_H
#define WEFT_KERNEL_SYSCALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include "arch/syscall_arch.h"

#define sys_call0(n) __syscall0(n)
#define sys_call1(n, a) __syscall1(n, (long)(a))
#define sys_call2(n, a, b) __syscall2(n, (long)(a), (long)(b))
#define sys_call3(n, a, b, c) __syscall3(n, (long)(a), (long)(b), (long)(c))
#define sys_call4(n, a, b, c, d)                                               \
	__syscall4(n, (long)(a), (long)(b), (long)(c), (long)(d))
#define sys_call5(n, a, b, c, d, e)                                            \
	__syscall5(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e))
#define sys_call6(n, a, b, c, d, e, f)                                         \
	__syscall6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e),  \
		   (long)(f))

/* The kernel's sigset_t is 64 bits on x86-64; libc's is 1024. */
typedef uint64_t ksigset_t;

static inline int sys_gettid(void)
{
	return (int)sys_call0(SYS_gettid);
}

static inline int sys_getpid(void)
{
	return (int)sys_call0(SYS_getpid);
}

static inline long sys_sigprocmask(int how, const ksigset_t *set,
				   ksigset_t *old)
{
	return sys_call4(SYS_rt_sigprocmask, how, set, old, sizeof(ksigset_t));
}

static inline long sys_tgkill(int tgid, int tid, int sig)
{
	return sys_call3(SYS_tgkill, tgid, tid, sig);
}

static inline void *sys_mmap(void *addr, size_t len, int prot, int flags,
			     int fd, long off)
{
	return (void *)sys_call6(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* mmap reports failure as a small negative number cast to a pointer. */
static inline int sys_mmap_failed(void *p)
{
	return (unsigned long)p > -4096UL;
}

static inline long sys_munmap(void *addr, size_t len)
{
	return sys_call2(SYS_munmap, addr, len);
}

static inline long sys_mprotect(void *addr, size_t len, int prot)
{
	return sys_call3(SYS_mprotect, addr, len, prot);
}

static inline long sys_madvise(void *addr, size_t len, int advice)
{
	return sys_call3(SYS_madvise, addr, len, advice);
}

static inline long sys_mincore(void *addr, size_t len, unsigned char *vec)
{
	return sys_call3(SYS_mincore, addr, len, vec);
}

static inline long sys_set_robust_list(void *head, size_t len)
{
	return sys_call2(SYS_set_robust_list, head, len);
}

static inline long sys_get_robust_list(int tid, void **head, size_t *len)
{
	return sys_call3(SYS_get_robust_list, tid, head, len);
}

static inline long sys_getrlimit(int res, void *rl)
{
	return sys_call4(SYS_prlimit64, 0, res, NULL, rl);
}

/* Ends the calling thread only; the kernel then clears and wakes the
   CLONE_CHILD_CLEARTID word. */
__attribute__((noreturn)) static inline void sys_exit_thread(int code)
{
	for (;;)
		sys_call1(SYS_exit, code);
}

#endif
