/* Socket cancellation points: accept, accept4, connect, recv, recvfrom,
   recvmsg, send, sendto, sendmsg.  See cp.h.  An accepted connection or
   received data is returned even when a cancellation arrives meanwhile
   (it then acts at the next cancellation point). */
#include <sys/socket.h>

#include "cp.h"

WEFT_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	if (!cp_serving())
		return GLIBC_FN(accept)(fd, addr, len);
	return (int)cp_ret(cp_sys3(SYS_accept, fd, addr, len));
}

WEFT_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len,
			int flags)
{
	if (!cp_serving())
		return GLIBC_FN(accept4)(fd, addr, len, flags);
	return (int)cp_ret(cp_sys4(SYS_accept4, fd, addr, len, flags));
}

WEFT_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (!cp_serving())
		return GLIBC_FN(connect)(fd, addr, len);
	return (int)cp_ret(cp_sys3(SYS_connect, fd, addr, len));
}

WEFT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			     struct sockaddr *addr, socklen_t *len)
{
	if (!cp_serving())
		return GLIBC_FN(recvfrom)(fd, buf, n, flags, addr, len);
	return cp_ret(cp_sys6(SYS_recvfrom, fd, buf, n, flags, addr, len));
}

WEFT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(recv)(fd, buf, n, flags);
	return cp_ret(cp_sys6(SYS_recvfrom, fd, buf, n, flags, NULL, NULL));
}

WEFT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(recvmsg)(fd, msg, flags);
	return cp_ret(cp_sys3(SYS_recvmsg, fd, msg, flags));
}

WEFT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			   const struct sockaddr *addr, socklen_t len)
{
	if (!cp_serving())
		return GLIBC_FN(sendto)(fd, buf, n, flags, addr, len);
	return cp_ret(cp_sys6(SYS_sendto, fd, buf, n, flags, addr, len));
}

WEFT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(send)(fd, buf, n, flags);
	return cp_ret(cp_sys6(SYS_sendto, fd, buf, n, flags, NULL, 0));
}

WEFT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(sendmsg)(fd, msg, flags);
	return cp_ret(cp_sys3(SYS_sendmsg, fd, msg, flags));
}
