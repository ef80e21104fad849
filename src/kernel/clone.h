/* Thread creation at the kernel level. */
#ifndef WEFT_KERNEL_CLONE_H
#define WEFT_KERNEL_CLONE_H

#include <sched.h>

/* The flag set of a POSIX thread: shared memory, files, fs info, signal
   handlers and SysV semaphore undo lists; same thread group; the new
   thread's TLS pointer set by the kernel; its TID written to
   *parent_tid before clone returns in either thread; *child_tid cleared
   and futex-woken by the kernel when the thread has fully exited. */
#define WEFT_CLONE_THREAD_FLAGS                                                \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |   \
	 CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |                 \
	 CLONE_CHILD_CLEARTID)

/* Implemented in arch/x86_64/clone.S.  Returns the child's TID in the
   parent or a negative errno; in the child, runs fn(arg) on stack_top
   and never returns. */
long weft_clone(unsigned long flags, void *stack_top, int *parent_tid,
		int *child_tid, void *tls, int (*fn)(void *), void *arg);

#endif
