/* The less common cancellation points glibc 2.36 has: vector I/O at an
   offset, multi-message sockets, epoll_pwait2, msync, fallocate,
   sync_file_range, copy_file_range, splice, tee, vmsplice, getrandom,
   open_by_handle_at.  See cp.h. */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cp.h"

/* The kernel takes an offset as two longs (low, high); on x86-64 the
   low one holds all of it. */
#define OFF_LO(off) (long)(off)
#define OFF_HI(off) (long)((unsigned long)(off) >> 32)

WEFT_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	if (!cp_serving())
		return GLIBC_FN(preadv)(fd, iov, n, off);
	return cp_ret(cp_sys5(SYS_preadv, fd, iov, n, OFF_LO(off), OFF_HI(off)));
}
WEFT_ALIAS(preadv64, preadv);

WEFT_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	if (!cp_serving())
		return GLIBC_FN(pwritev)(fd, iov, n, off);
	return cp_ret(cp_sys5(SYS_pwritev, fd, iov, n, OFF_LO(off), OFF_HI(off)));
}
WEFT_ALIAS(pwritev64, pwritev);

WEFT_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off,
			    int flags)
{
	if (!cp_serving())
		return GLIBC_FN(preadv2)(fd, iov, n, off, flags);
	return cp_ret(cp_sys6(SYS_preadv2, fd, iov, n, OFF_LO(off), OFF_HI(off), flags));
}
WEFT_ALIAS(preadv64v2, preadv2);

WEFT_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off,
			     int flags)
{
	if (!cp_serving())
		return GLIBC_FN(pwritev2)(fd, iov, n, off, flags);
	return cp_ret(cp_sys6(SYS_pwritev2, fd, iov, n, OFF_LO(off), OFF_HI(off), flags));
}
WEFT_ALIAS(pwritev64v2, pwritev2);

WEFT_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags,
			 struct timespec *tmo)
{
	if (!cp_serving())
		return GLIBC_FN(recvmmsg)(fd, v, n, flags, tmo);
	return (int)cp_ret(cp_sys5(SYS_recvmmsg, fd, v, n, flags, tmo));
}

WEFT_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(sendmmsg)(fd, v, n, flags);
	return (int)cp_ret(cp_sys4(SYS_sendmmsg, fd, v, n, flags));
}

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

WEFT_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			     const struct timespec *tmo, const sigset_t *mask)
{
	if (!cp_serving())
		return GLIBC_FN(epoll_pwait2)(epfd, ev, max, tmo, mask);
	return (int)cp_ret(cp_sys6(SYS_epoll_pwait2, epfd, ev, max, tmo, mask,
				   CP_NSIG_BYTES));
}

WEFT_EXPORT int msync(void *addr, size_t len, int flags)
{
	if (!cp_serving())
		return GLIBC_FN(msync)(addr, len, flags);
	return (int)cp_ret(cp_sys3(SYS_msync, addr, len, flags));
}

WEFT_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (!cp_serving())
		return GLIBC_FN(fallocate)(fd, mode, off, len);
	return (int)cp_ret(cp_sys4(SYS_fallocate, fd, mode, off, len));
}
WEFT_ALIAS(fallocate64, fallocate);

WEFT_EXPORT int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
	if (!cp_serving())
		return GLIBC_FN(sync_file_range)(fd, off, n, flags);
	return (int)cp_ret(cp_sys4(SYS_sync_file_range, fd, off, n, flags));
}

WEFT_EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out,
				    off_t *out_off, size_t n, unsigned int flags)
{
	if (!cp_serving())
		return GLIBC_FN(copy_file_range)(in, in_off, out, out_off, n, flags);
	return cp_ret(cp_sys6(SYS_copy_file_range, in, in_off, out, out_off, n,
			      flags));
}

WEFT_EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off,
			   size_t n, unsigned int flags)
{
	if (!cp_serving())
		return GLIBC_FN(splice)(in, in_off, out, out_off, n, flags);
	return cp_ret(cp_sys6(SYS_splice, in, in_off, out, out_off, n, flags));
}

WEFT_EXPORT ssize_t tee(int in, int out, size_t n, unsigned int flags)
{
	if (!cp_serving())
		return GLIBC_FN(tee)(in, out, n, flags);
	return cp_ret(cp_sys4(SYS_tee, in, out, n, flags));
}

WEFT_EXPORT ssize_t vmsplice(int fd, const struct iovec *iov, size_t n,
			     unsigned int flags)
{
	if (!cp_serving())
		return GLIBC_FN(vmsplice)(fd, iov, n, flags);
	return cp_ret(cp_sys4(SYS_vmsplice, fd, iov, n, flags));
}

/* From glibc 2.41 getrandom takes the vDSO's path (no system call, a
   tenth of the time) and is a cancellation point through libc's window,
   which weft follows (HOST_CANCEL_WINDOW): glibc's own serves it then,
   and before start-up too (a program that never calls weft keeps the
   vDSO's path). */
WEFT_EXPORT ssize_t getrandom(void *buf, size_t n, unsigned int flags)
{
	if (__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) != 2 ||
	    !weft_is_active || host_layout.cancel_protocol == HOST_CANCEL_WINDOW)
		return GLIBC_FN(getrandom)(buf, n, flags);
	return cp_ret(cp_sys3(SYS_getrandom, buf, n, flags));
}

WEFT_EXPORT int open_by_handle_at(int mountfd, struct file_handle *h,
				  int flags)
{
	if (!cp_serving())
		return GLIBC_FN(open_by_handle_at)(mountfd, h, flags);
	return (int)cp_ret(cp_sys3(SYS_open_by_handle_at, mountfd, h, flags));
}
