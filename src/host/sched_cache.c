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
   descriptors (host_layout; they moved by 8 bytes in 2.43), which glibc
   keeps current for gdb; without them nothing is stored. */
#include "layout.h"
#include "sched_cache.h"

void host_sched_cache_store(char *tcb, int policy, int priority)
{
	if (!host_layout.sched_priority)
		return;
	if (policy >= 0)
		__atomic_store_n((int *)(tcb + host_layout.sched_policy), policy,
				 __ATOMIC_RELAXED);
	__atomic_store_n((int *)(tcb + host_layout.sched_priority), priority,
			 __ATOMIC_RELAXED);
}
