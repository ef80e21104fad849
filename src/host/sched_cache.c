/* glibc keeps a copy of each thread's scheduling policy and priority in
   its struct pthread (schedpolicy, schedparam), valid when the
   descriptor's ATTR_FLAG_POLICY_SET / ATTR_FLAG_SCHED_SET bits say so.
   glibc's own code still reads that copy inside weft threads: the
   priority-protection (PTHREAD_PRIO_PROTECT) mutex code restores a
   thread's priority from it when the thread unlocks, and glibc's
   pthread_create copies it into the helper threads it makes.

   weft never reads the copy (it asks the kernel), but when it changes a
   thread's scheduling it stores the new values there too, as glibc's
   pthread_setschedparam does.  The flag bits are left alone: if they are
   clear glibc asks the kernel, which has the new values; if they are set
   the copy is now current.  The field offsets come from libthread_db's
   descriptors, which glibc keeps current for gdb; without them nothing
   is stored. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "sched_cache.h"

static struct {
	int state; /* 0 unresolved, 1 resolved, -1 unavailable */
	size_t policy, priority;
} C;

/* libthread_db field descriptor: bit size, count, byte offset. */
static int field(const char *name, size_t *off)
{
	const uint32_t *d = dlvsym(RTLD_DEFAULT, name, "GLIBC_PRIVATE");

	if (!d || d[0] != 32)
		return -1;
	*off = d[2];
	return 0;
}

static int resolve(void)
{
	int s = __atomic_load_n(&C.state, __ATOMIC_ACQUIRE);

	if (s)
		return s;
	if (field("_thread_db_pthread_schedpolicy", &C.policy) ||
	    field("_thread_db_pthread_schedparam_sched_priority", &C.priority))
		s = -1;
	else
		s = 1;
	__atomic_store_n(&C.state, s, __ATOMIC_RELEASE);
	return s;
}

void host_sched_cache_store(char *tcb, int policy, int priority)
{
	if (resolve() < 0)
		return;
	if (policy >= 0)
		__atomic_store_n((int *)(tcb + C.policy), policy, __ATOMIC_RELAXED);
	__atomic_store_n((int *)(tcb + C.priority), priority, __ATOMIC_RELAXED);
}
