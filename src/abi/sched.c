/* sched_setscheduler and sched_setparam, interposed only to see a
   program give a thread a real-time policy (core/rt_hint.h: from then
   on weft's own queues order waiters by priority).  The call itself is
   the kernel's, as in glibc. */
#include <errno.h>
#include <sched.h>

#include "core/rt_hint.h"
#include "kernel/sched.h"
#include "export.h"

static int result(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

WEFT_EXPORT int sched_setscheduler(pid_t pid, int policy,
				   const struct sched_param *p)
{
	long r = sys_sched_setscheduler(pid, policy, p);

	if (r == 0)
		rt_hint_note(policy, 0);
	return result(r);
}

WEFT_EXPORT int sched_setparam(pid_t pid, const struct sched_param *p)
{
	long r = sys_sched_setparam(pid, p);

	if (r == 0)
		rt_hint_note(-1, p->sched_priority);
	return result(r);
}
