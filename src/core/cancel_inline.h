/* The cancellable system call, expanded in the caller (docs/cancel.md):
   the libc cancellation points weft interposes (src/abi/cancel_points/)
   and the futex waits of cancel_cp.c use this, so a point that is not
   cancelled makes no call besides the system call itself.  The window
   is arch/x86_64/syscall_cp_window.h's; what it tests (the thread's
   cancellation word: due when enabled, requested and not exiting) and
   what it does when due (weft_cp_act) are this layer's. */
#ifndef WEFT_CORE_CANCEL_INLINE_H
#define WEFT_CORE_CANCEL_INLINE_H

#include <errno.h>

#include "arch/syscall_cp_window.h"
#include "cancel.h"
#include "kernel/syscall.h"

extern int weft_init_done; /* init.c: 2 once start-up has finished */

/* cancel_cp.c: after -EINTR, acts on a due cancellation (not for close). */
long weft_cp_interrupted(long nr);

/* cancel.c: the window's cancel path (cancel_act, from inside the
   function that expanded the window). */
__attribute__((noreturn, visibility("hidden"))) void weft_cp_act(void);

static inline __attribute__((always_inline)) long
cancel_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	/* With other threads alive (one may ask for a cancellation during
	   the call), one mark: weft_in_cp, which tells the handler that
	   this code decides, and tells a canceller (cancel_request, which
	   reads it in this thread's TLS after its CAS on the word) to send
	   the signal.  Set with an exchange, a full barrier, before the
	   window reads the word: the canceller either sees the flag or
	   this thread sees the request.  Cheaper than glibc's two atomic
	   updates of the word. */
	int marked, outer = 0;
	long r;

	/* Before start-up has finished (or on the thread running it) no
	   weft cancellation can be pending and glibc's layout may be
	   unknown: the plain system call.  An interposed point called for
	   the first time from a signal handler thus needs no lookup of
	   glibc's function, no lock and no malloc (docs/glibc-host.md,
	   "Signal handlers before start-up"). */
	if (__builtin_expect(__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) != 2, 0))
		return sys_call6(nr, a1, a2, a3, a4, a5, a6);
	marked = __atomic_load_n(host_layout.nthreads, __ATOMIC_RELAXED) > 1;
	if (__builtin_expect(marked, 1))
		outer = __atomic_exchange_n(&weft_in_cp, 1, __ATOMIC_SEQ_CST);
	r = arch_syscall_cp_window(nr, a1, a2, a3, a4, a5, a6,
				   host_layout.cancelhandling,
				   HOST_CANCEL_DISABLED | HOST_CANCELED |
					   HOST_EXITING | HOST_TERMINATED,
				   HOST_CANCELED, weft_cp_act);
	if (__builtin_expect(marked, 1))
		__atomic_store_n(&weft_in_cp, outer, __ATOMIC_RELEASE);
	if (__builtin_expect(r == -EINTR, 0))
		return weft_cp_interrupted(nr);
	/* The thread's own type is asynchronous: a request that came in
	   during the call (the handler only recorded it) acts now.  In a
	   nested point the outer one decides. */
	if (__builtin_expect(!outer, 1) &&
	    __builtin_expect(cancel_due_async(__atomic_load_n(
				     cancel_self_word(), __ATOMIC_ACQUIRE)),
			     0))
		cancel_act();
	return r;
}

#define cp_sys0(n) cancel_syscall(n, 0, 0, 0, 0, 0, 0)
#define cp_sys1(n, a) cancel_syscall(n, (long)(a), 0, 0, 0, 0, 0)
#define cp_sys2(n, a, b) cancel_syscall(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define cp_sys3(n, a, b, c)                                                    \
	cancel_syscall(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define cp_sys4(n, a, b, c, d)                                                 \
	cancel_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define cp_sys5(n, a, b, c, d, e)                                              \
	cancel_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d),         \
		       (long)(e), 0)
#define cp_sys6(n, a, b, c, d, e, f)                                           \
	cancel_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d),         \
		       (long)(e), (long)(f))

#endif
