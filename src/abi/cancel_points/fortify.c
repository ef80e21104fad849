/* The _FORTIFY_SOURCE entry points of the cancellation points weft
   serves: a program built with fortification calls __read_chk instead of
   read, and glibc's __read_chk calls its internal read (glibc's kind of
   cancellation point, bug 12683 included).  These check the same bounds
   and go to weft's point.  See cp.h. */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cp.h"

/* libc's (GLIBC_2.3.4): "buffer overflow detected", abort. */
extern void __chk_fail(void) __attribute__((noreturn));

extern ssize_t __read_chk(int, void *, size_t, size_t);
extern ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
extern ssize_t __recv_chk(int, void *, size_t, size_t, int);
extern ssize_t __recvfrom_chk(int, void *, size_t, size_t, int,
			      struct sockaddr *, socklen_t *);
extern int __poll_chk(struct pollfd *, nfds_t, int, size_t);
extern int __ppoll_chk(struct pollfd *, nfds_t, const struct timespec *,
		       const sigset_t *, size_t);
extern int __open_2(const char *, int);
extern int __openat_2(int, const char *, int);

WEFT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return read(fd, buf, n);
}

WEFT_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
				size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return pread(fd, buf, n, off);
}
WEFT_ALIAS(__pread64_chk, __pread_chk);

WEFT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen,
			       int flags)
{
	if (n > buflen)
		__chk_fail();
	return recv(fd, buf, n, flags);
}

WEFT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen,
				   int flags, struct sockaddr *addr,
				   socklen_t *len)
{
	if (n > buflen)
		__chk_fail();
	return recvfrom(fd, buf, n, flags, addr, len);
}

WEFT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout,
			   size_t fdslen)
{
	if (fdslen / sizeof *fds < n)
		__chk_fail();
	return poll(fds, n, timeout);
}

WEFT_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n,
			    const struct timespec *tmo, const sigset_t *mask,
			    size_t fdslen)
{
	if (fdslen / sizeof *fds < n)
		__chk_fail();
	return ppoll(fds, n, tmo, mask);
}

/* open without a mode but with O_CREAT or O_TMPFILE: glibc's fortify
   failure (its __fortify_fail is private: same message, abort). */
static void open_needs_mode(int flags)
{
	static const char msg[] = "*** invalid open call: O_CREAT or O_TMPFILE "
				  "without mode ***: terminated\n";

	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		sys_call3(SYS_write, 2, msg, sizeof msg - 1);
		abort();
	}
}

WEFT_EXPORT int __open_2(const char *path, int flags)
{
	open_needs_mode(flags);
	return open(path, flags);
}
WEFT_ALIAS(__open64_2, __open_2);

WEFT_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	open_needs_mode(flags);
	return openat(dirfd, path, flags);
}
WEFT_ALIAS(__openat64_2, __openat_2);
