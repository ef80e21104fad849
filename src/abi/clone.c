/* clone(): glibc's, after noting a thread glibc will not count.

   A clone that shares the address space (CLONE_VM) and lets its caller
   run on (no CLONE_VFORK) makes a second thread behind glibc's back:
   __libc_single_threaded stays true.  weft's mutex takes plain stores
   while the process has one thread (sync/mutex.h), so it must know;
   host/single.h's host_one_thread() reads the flag set here.  The flag
   is set before the clone exists, in the one thread that can make it,
   and the clone system call orders it before the child's first step.
   A vfork-like clone suspends its caller until the child execs or
   exits, so the two never run at once: no flag, as for posix_spawn.

   Everything else is glibc's clone, in every mode (the flag costs
   nothing to set, weft serving or not), given the optional arguments
   the flags name (glibc's takes its registers whatever the flags say;
   C lets a variadic function read only what was passed). */
#include <sched.h>
#include <stdarg.h>
#include <sys/types.h>

#include "export.h"
#include "host/single.h"

/* How many of clone's optional arguments (parent_tid, tls, child_tid,
   in that order) a caller with these flags must pass: up to the last
   one a flag uses.  CLONE_PIDFD returns the pidfd through parent_tid. */
static int optional_args(int flags)
{
	if (flags & (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID))
		return 3;
	if (flags & CLONE_SETTLS)
		return 2;
	if (flags & (CLONE_PARENT_SETTID | CLONE_PIDFD))
		return 1;
	return 0;
}

WEFT_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	pid_t *parent_tid = NULL, *child_tid = NULL;
	void *tls = NULL;
	int given = optional_args(flags);

	/* Only the optional arguments the flags say the caller passed
	   (those before the last one needed included, as the prototype
	   orders them); the kernel ignores the others, so NULL serves. */
	va_start(ap, arg);
	if (given >= 1)
		parent_tid = va_arg(ap, pid_t *);
	if (given >= 2)
		tls = va_arg(ap, void *);
	if (given >= 3)
		child_tid = va_arg(ap, pid_t *);
	va_end(ap);
	if ((flags & CLONE_VM) && !(flags & CLONE_VFORK))
		__atomic_store_n(&host_foreign_thread, 1, __ATOMIC_RELAXED);
	return GLIBC_FN(clone)(fn, stack, flags, arg, parent_tid, tls,
			       child_tid);
}
/* glibc exports the same function as __clone too. */
WEFT_ALIAS(__clone, clone);
