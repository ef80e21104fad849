/* Signal-wait cancellation points: sigwait, sigwaitinfo, sigtimedwait,
   sigsuspend.  See cp.h.

   Signals 32 (SIGCANCEL) and 33 (SIGSETXID) belong to the
   implementation: a program cannot normally put them in a set
   (glibc's sigaddset and sigfillset refuse or skip them), and a set
   that has them anyway must not take them away from their handlers: a
   sigwait that consumed SIGCANCEL would lose a cancellation.  So they
   are removed from the set waited for, and never blocked by
   sigsuspend's mask. */
#include <signal.h>
#include <string.h>

#include "cp.h"

#define INTERNAL_SIGS ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))

static ksigset_t wait_set(const sigset_t *set)
{
	ksigset_t k;

	memcpy(&k, set, sizeof k);
	return k & ~INTERNAL_SIGS;
}

/* Returns the signal number or -errno.  The kernel reports tkill's
   (raise's) SI_TKILL; glibc folds it into SI_USER. */
static long timed_wait(const sigset_t *set, siginfo_t *info,
		       const struct timespec *tmo)
{
	ksigset_t k = wait_set(set);
	long r = cp_sys4(SYS_rt_sigtimedwait, &k, info, tmo, CP_NSIG_BYTES);

	if (r > 0 && info && info->si_code == SI_TKILL)
		info->si_code = SI_USER;
	return r;
}

WEFT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info,
			     const struct timespec *tmo)
{
	if (!cp_serving())
		return GLIBC_FN(sigtimedwait)(set, info, tmo);
	return (int)cp_ret(timed_wait(set, info, tmo));
}

WEFT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	if (!cp_serving())
		return GLIBC_FN(sigwaitinfo)(set, info);
	return (int)cp_ret(timed_wait(set, info, NULL));
}

/* Returns an error number; an interruption by a handler is retried
   (programs do not expect EINTR here, as glibc says). */
WEFT_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	siginfo_t si;
	long r;

	if (!cp_serving())
		return GLIBC_FN(sigwait)(set, sig);
	do
		r = timed_wait(set, &si, NULL);
	while (r == -EINTR);
	if (r < 0)
		return (int)-r;
	*sig = si.si_signo;
	return 0;
}

WEFT_EXPORT int sigsuspend(const sigset_t *mask)
{
	ksigset_t k;

	if (!cp_serving())
		return GLIBC_FN(sigsuspend)(mask);
	k = wait_set(mask);
	return (int)cp_ret(cp_sys2(SYS_rt_sigsuspend, &k, CP_NSIG_BYTES));
}
