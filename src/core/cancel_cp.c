/* weft_syscall_cp: the cancellable system call (kernel/syscall_cp.h,
   docs/cancel.md).

   The C part brackets the assembly part with two marks:
     - weft_in_cp, a TLS flag, tells the SIGCANCEL handler that this
       code decides: outside the assembly window the handler only
       records the request;
     - the ASYNC bit of the word tells pthread_cancel in another thread
       to send the signal (as glibc's own points do), so that a thread
       asleep in the kernel is woken.
   After the call, -EINTR with a due cancellation acts (the call had no
   effect); any other result is returned (fix of glibc bug 12683). */
#include <errno.h>

#include "../kernel/syscall_cp.h"
#include "cancel.h"

/* After -EINTR: the call did nothing, so a due cancellation acts
   (close excepted: the descriptor is released anyway). */
__attribute__((noinline)) long weft_cp_interrupted(long nr)
{
	if (nr != SYS_close && cancel_due(__atomic_load_n(cancel_self_word(),
							   __ATOMIC_ACQUIRE)))
		cancel_act();
	return -EINTR;
}

/* With other threads alive, which may ask for a cancellation during
   the call and must then signal this thread. */
__attribute__((noinline)) static long marked(long a1, long a2, long a3,
					     long a4, long a5, long a6,
					     long nr)
{
	int *w = cancel_self_word();
	int outer = weft_in_cp; /* a handler may nest a point in a point */
	int old;
	long r;

	weft_in_cp = 1;
	old = __atomic_fetch_or(w, HOST_CANCEL_ASYNC, __ATOMIC_ACQ_REL);
	r = weft_syscall_cp_asm(a1, a2, a3, a4, a5, a6, nr);
	if (!(old & HOST_CANCEL_ASYNC))
		__atomic_fetch_and(w, ~HOST_CANCEL_ASYNC, __ATOMIC_ACQ_REL);
	weft_in_cp = outer;
	if (r == -EINTR)
		weft_cp_interrupted(nr);
	/* The thread's own type is asynchronous: a request that came in
	   during the call acts now, as it would have anywhere else.  (In a
	   nested point the bit is the outer point's.) */
	if (!outer && (old & HOST_CANCEL_ASYNC) &&
	    cancel_due_async(__atomic_load_n(w, __ATOMIC_ACQUIRE)))
		cancel_act();
	return r;
}

long weft_syscall_cp(long a1, long a2, long a3, long a4, long a5, long a6,
		     long nr)
{
	long r;

	/* Alone in the process: no other thread can ask for a cancellation
	   during the call, so no signal is needed and no marks either; one
	   made before (by the thread itself) is seen by the assembly check.
	   This keeps single-threaded programs near glibc's cost. */
	if (__builtin_expect(
		    __atomic_load_n(host_nthreads_word, __ATOMIC_RELAXED) > 1, 1))
		return marked(a1, a2, a3, a4, a5, a6, nr);
	r = weft_syscall_cp_asm(a1, a2, a3, a4, a5, a6, nr);
	if (__builtin_expect(r == -EINTR, 0))
		return weft_cp_interrupted(nr);
	return r;
}
