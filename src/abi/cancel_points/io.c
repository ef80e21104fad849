/* File I/O cancellation points: read, write, readv, writev, pread,
   pwrite (and their 64 names), open, openat, creat (and 64), close,
   fsync, fdatasync, fcntl (F_SETLKW, F_OFD_SETLKW), lockf (F_LOCK),
   tcdrain.  See cp.h. */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include "cp.h"

WEFT_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (!cp_serving())
		return GLIBC_FN(read)(fd, buf, n);
	return cp_ret(cp_sys3(SYS_read, fd, buf, n));
}

WEFT_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (!cp_serving())
		return GLIBC_FN(write)(fd, buf, n);
	return cp_ret(cp_sys3(SYS_write, fd, buf, n));
}

WEFT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	if (!cp_serving())
		return GLIBC_FN(readv)(fd, iov, n);
	return cp_ret(cp_sys3(SYS_readv, fd, iov, n));
}

WEFT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (!cp_serving())
		return GLIBC_FN(writev)(fd, iov, n);
	return cp_ret(cp_sys3(SYS_writev, fd, iov, n));
}

/* off_t is 64 bits on x86-64: the 64 names are the same functions. */
WEFT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (!cp_serving())
		return GLIBC_FN(pread)(fd, buf, n, off);
	return cp_ret(cp_sys4(SYS_pread64, fd, buf, n, off));
}
WEFT_ALIAS(pread64, pread);

WEFT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (!cp_serving())
		return GLIBC_FN(pwrite)(fd, buf, n, off);
	return cp_ret(cp_sys4(SYS_pwrite64, fd, buf, n, off));
}
WEFT_ALIAS(pwrite64, pwrite);

/* The mode argument exists only when the file may be created. */
static int wants_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)cp_ret(cp_sys4(SYS_openat, dirfd, path, flags, mode));
}

WEFT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (wants_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!cp_serving())
		return GLIBC_FN(openat)(dirfd, path, flags, mode);
	return do_openat(dirfd, path, flags, mode);
}
WEFT_ALIAS(openat64, openat);

WEFT_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (wants_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!cp_serving())
		return GLIBC_FN(open)(path, flags, mode);
	return do_openat(AT_FDCWD, path, flags, mode);
}
WEFT_ALIAS(open64, open);

WEFT_EXPORT int creat(const char *path, mode_t mode)
{
	if (!cp_serving())
		return GLIBC_FN(creat)(path, mode);
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
WEFT_ALIAS(creat64, creat);

/* close releases the descriptor even when interrupted, so an EINTR
   never turns into a cancellation here (cancel_syscall knows). */
WEFT_EXPORT int close(int fd)
{
	if (!cp_serving())
		return GLIBC_FN(close)(fd);
	return (int)cp_ret(cp_sys1(SYS_close, fd));
}

WEFT_EXPORT int fsync(int fd)
{
	if (!cp_serving())
		return GLIBC_FN(fsync)(fd);
	return (int)cp_ret(cp_sys1(SYS_fsync, fd));
}

WEFT_EXPORT int fdatasync(int fd)
{
	if (!cp_serving())
		return GLIBC_FN(fdatasync)(fd);
	return (int)cp_ret(cp_sys1(SYS_fdatasync, fd));
}

/* A command that does not wait, as glibc's fcntl64 makes it: the system
   call, except F_GETOWN, asked as F_GETOWN_EX so that a process group
   (returned negative) is told from an error. */
static int fcntl_plain(int fd, int cmd, void *arg)
{
	struct f_owner_ex ex;
	long r;

	if (cmd != F_GETOWN)
		return (int)cp_ret(sys_call3(SYS_fcntl, fd, cmd, arg));
	r = sys_call3(SYS_fcntl, fd, F_GETOWN_EX, &ex);
	if (r < 0)
		return (int)cp_ret(r);
	return ex.type == F_OWNER_PGRP ? -ex.pid : ex.pid;
}

/* Only the waiting lock commands are cancellation points.  Every other
   command is glibc's once weft has started (it has special cases, e.g.
   F_GETOWN); before, weft's plain version above, so that a first fcntl
   in a signal handler looks nothing up (cp.h). */
static int fcntl_common(int fd, int cmd, void *arg)
{
	if (cp_serving() && (cmd == F_SETLKW || cmd == F_OFD_SETLKW))
		return (int)cp_ret(cp_sys3(SYS_fcntl, fd, cmd, arg));
	if (__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) != 2)
		return fcntl_plain(fd, cmd, arg);
	return GLIBC_FN(fcntl64)(fd, cmd, arg);
}

WEFT_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(fd, cmd, arg);
}

/* The name programs built with 64-bit file offsets bind to. */
WEFT_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(fd, cmd, arg);
}

/* lockf(F_LOCK) waits for a POSIX record lock: a cancellation point;
   the other commands do not wait and stay glibc's. */
WEFT_EXPORT int lockf(int fd, int cmd, off_t len)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = 0,
		.l_len = len};

	if (!cp_serving() || cmd != F_LOCK)
		return GLIBC_FN(lockf)(fd, cmd, len);
	return (int)cp_ret(cp_sys3(SYS_fcntl, fd, F_SETLKW, &fl));
}
WEFT_ALIAS(lockf64, lockf);

/* Waits until the terminal has sent its output (glibc: TCSBRK, 1). */
WEFT_EXPORT int tcdrain(int fd)
{
	if (!cp_serving())
		return GLIBC_FN(tcdrain)(fd);
	return (int)cp_ret(cp_sys3(SYS_ioctl, fd, TCSBRK, 1));
}
