/* The caller's kernel tid, read from glibc's struct pthread: glibc (and
   weft, for its own threads: CLONE_PARENT_SETTID) keeps that field
   current in every thread, and the kernel writes a fork child's before
   the child returns to user space (CLONE_CHILD_SETTID), so two loads
   give it, no system call.  Its own header so that core/lock.h, which
   core/thread.h includes, needs nothing else of the host. */
#ifndef WEFT_HOST_TID_H
#define WEFT_HOST_TID_H

#include <stddef.h>
#include "kernel/syscall.h"
#include "layout.h"

static inline int host_self_tid(void)
{
	return arch_tp_load32(host_layout.tid);
}

/* The same at any time, also during start-up before the layout has
   the field (weft's internal lock can be taken then): gettid gives the
   same number. */
static inline int host_self_tid_any(void)
{
	size_t off = __atomic_load_n(&host_layout.tid, __ATOMIC_RELAXED);

	if (__builtin_expect(off != 0, 1))
		return arch_tp_load32(off);
	return sys_gettid();
}

#endif
