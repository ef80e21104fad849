/* Process-wait cancellation points: wait, waitpid, waitid, wait4.  A
   child reaped is reported even when a cancellation arrives meanwhile
   (its status would otherwise be lost for good).  See cp.h. */
#include <sys/resource.h>
#include <sys/wait.h>

#include "cp.h"

WEFT_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	if (!cp_serving())
		return GLIBC_FN(wait4)(pid, status, options, ru);
	return (pid_t)cp_ret(cp_sys4(SYS_wait4, pid, status, options, ru));
}

WEFT_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	if (!cp_serving())
		return GLIBC_FN(waitpid)(pid, status, options);
	return (pid_t)cp_ret(cp_sys4(SYS_wait4, pid, status, options, NULL));
}

WEFT_EXPORT pid_t wait(int *status)
{
	if (!cp_serving())
		return GLIBC_FN(wait)(status);
	return (pid_t)cp_ret(cp_sys4(SYS_wait4, -1, status, 0, NULL));
}

WEFT_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	if (!cp_serving())
		return GLIBC_FN(waitid)(type, id, info, options);
	return (int)cp_ret(cp_sys5(SYS_waitid, type, id, info, options, NULL));
}
