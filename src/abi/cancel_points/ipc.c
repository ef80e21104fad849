/* Message-queue cancellation points: msgsnd, msgrcv (System V), and
   mq_send, mq_receive, mq_timedsend, mq_timedreceive (POSIX, in libc
   since 2.34).  See cp.h. */
#include <mqueue.h>
#include <sys/msg.h>

#include "cp.h"

WEFT_EXPORT int msgsnd(int id, const void *msg, size_t size, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(msgsnd)(id, msg, size, flags);
	return (int)cp_ret(cp_sys4(SYS_msgsnd, id, msg, size, flags));
}

WEFT_EXPORT ssize_t msgrcv(int id, void *msg, size_t size, long type,
			   int flags)
{
	if (!cp_serving())
		return GLIBC_FN(msgrcv)(id, msg, size, type, flags);
	return cp_ret(cp_sys5(SYS_msgrcv, id, msg, size, type, flags));
}

WEFT_EXPORT int mq_timedsend(mqd_t q, const char *msg, size_t len,
			     unsigned prio, const struct timespec *tmo)
{
	if (!cp_serving())
		return GLIBC_FN(mq_timedsend)(q, msg, len, prio, tmo);
	return (int)cp_ret(cp_sys5(SYS_mq_timedsend, q, msg, len, prio, tmo));
}

WEFT_EXPORT int mq_send(mqd_t q, const char *msg, size_t len, unsigned prio)
{
	if (!cp_serving())
		return GLIBC_FN(mq_send)(q, msg, len, prio);
	return (int)cp_ret(cp_sys5(SYS_mq_timedsend, q, msg, len, prio, NULL));
}

WEFT_EXPORT ssize_t mq_timedreceive(mqd_t q, char *msg, size_t len,
				    unsigned *prio, const struct timespec *tmo)
{
	if (!cp_serving())
		return GLIBC_FN(mq_timedreceive)(q, msg, len, prio, tmo);
	return cp_ret(cp_sys5(SYS_mq_timedreceive, q, msg, len, prio, tmo));
}

WEFT_EXPORT ssize_t mq_receive(mqd_t q, char *msg, size_t len, unsigned *prio)
{
	if (!cp_serving())
		return GLIBC_FN(mq_receive)(q, msg, len, prio);
	return cp_ret(cp_sys5(SYS_mq_timedreceive, q, msg, len, prio, NULL));
}
