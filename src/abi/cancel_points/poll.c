/* Multiplexing cancellation points: poll, ppoll, select, pselect,
   epoll_wait, epoll_pwait.  See cp.h. */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "cp.h"

WEFT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!cp_serving())
		return GLIBC_FN(poll)(fds, n, timeout);
	return (int)cp_ret(cp_sys3(SYS_poll, fds, n, timeout));
}

/* glibc's ppoll leaves the caller's timeout alone (the system call
   writes the time left back): the kernel gets a copy. */
WEFT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		      const sigset_t *mask)
{
	struct timespec copy, *t = NULL;

	if (!cp_serving())
		return GLIBC_FN(ppoll)(fds, n, tmo, mask);
	if (tmo) {
		copy = *tmo;
		t = &copy;
	}
	return (int)cp_ret(cp_sys5(SYS_ppoll, fds, n, t, mask, CP_NSIG_BYTES));
}

/* Linux's select writes the time left into *tv, as glibc's does. */
WEFT_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e,
		       struct timeval *tv)
{
	if (!cp_serving())
		return GLIBC_FN(select)(n, r, w, e, tv);
	return (int)cp_ret(cp_sys5(SYS_select, n, r, w, e, tv));
}

/* pselect6's sixth argument: the mask and its size. */
struct ksigmask_arg {
	const sigset_t *mask;
	size_t size;
};

WEFT_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e,
			const struct timespec *tmo, const sigset_t *mask)
{
	struct timespec copy, *t = NULL;
	struct ksigmask_arg m = {mask, CP_NSIG_BYTES};

	if (!cp_serving())
		return GLIBC_FN(pselect)(n, r, w, e, tmo, mask);
	if (tmo) {
		copy = *tmo;
		t = &copy;
	}
	return (int)cp_ret(cp_sys6(SYS_pselect6, n, r, w, e, t, &m));
}

WEFT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max,
			   int timeout)
{
	if (!cp_serving())
		return GLIBC_FN(epoll_wait)(epfd, ev, max, timeout);
	return (int)cp_ret(cp_sys4(SYS_epoll_wait, epfd, ev, max, timeout));
}

WEFT_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max,
			    int timeout, const sigset_t *mask)
{
	if (!cp_serving())
		return GLIBC_FN(epoll_pwait)(epfd, ev, max, timeout, mask);
	return (int)cp_ret(cp_sys6(SYS_epoll_pwait, epfd, ev, max, timeout,
				   mask, CP_NSIG_BYTES));
}
