/* pthread_sigmask: the calling thread's signal mask, straight from the
   kernel (rt_sigprocmask acts on the calling task only, which is what
   POSIX asks of a per-thread mask).

   Signals 32 and 33 are glibc's SIGCANCEL and SIGSETXID, and weft keeps
   relying on both: the first carries cancellation to a thread whose
   type is asynchronous, the second is how setuid & co. reach every
   thread (docs/signals.md).  A program must not be able to block them,
   so they are dropped from the set it asks to block or install, and
   they never show in the mask reported back: the caller sees a mask in
   which they simply do not exist.  Everything else (the `how` check,
   SIGKILL and SIGSTOP, which the kernel ignores silently) is the
   kernel's.  No libc call: this is async-signal-safe, as POSIX
   requires of pthread_sigmask. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "kernel/syscall.h"
#include "export.h"

/* Bits of signals 32 and 33 in the kernel's 64-bit mask (signal n is
   bit n - 1). */
#define RESERVED_SIGNALS ((ksigset_t)3 << 31)

/* The first 64 bits of a libc sigset_t are the kernel's mask; the rest
   stay unused on Linux (the kernel knows 64 signals). */
static ksigset_t kmask_of(const sigset_t *set)
{
	return ((const unsigned long *)set)[0];
}

/* Writes the kernel mask into a libc sigset_t, every bit beyond the
   kernel's 64 cleared, as sigemptyset would leave them. */
static void kmask_store(sigset_t *set, ksigset_t k)
{
	unsigned long *w = (unsigned long *)set;

	w[0] = k;
	for (size_t i = 1; i < sizeof *set / sizeof *w; i++)
		w[i] = 0;
}

WEFT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	ksigset_t k, prev;
	long r;

	/* No start-up needed (it may be called first from a handler):
	   before start-up this is what glibc's does, which also keeps its
	   two internal signals out of the mask. */
	if (weft_forwarding())
		return GLIBC_FN(pthread_sigmask)(how, set, old);
	/* The kernel reads `how` only when there is a set; POSIX says the
	   same (with no set, `how` is not looked at). */
	if (set)
		k = kmask_of(set) & ~RESERVED_SIGNALS;
	r = sys_sigprocmask(how, set ? &k : NULL, old ? &prev : NULL);
	if (r < 0)
		return (int)-r;
	/* Were one of them ever blocked behind weft's back (a raw system
	   call), the program still does not see it. */
	if (old)
		kmask_store(old, prev & ~RESERVED_SIGNALS);
	return 0;
}
