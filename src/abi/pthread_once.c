/* pthread_once and glibc's alias __pthread_once.  Compiled with
   -fexceptions (see the Makefile) so that a cancellation unwinding out of
   the init routine passes through here cleanly. */
#include "sync/once.h"
#include "export.h"

/* Out of line, so that the fast path below needs no stack frame. */
__attribute__((noinline)) static int once_not_done(pthread_once_t *once,
						   void (*init)(void))
{
	if (!weft_serving())
		return GLIBC_FN(pthread_once)(once, init);
	if (__atomic_load_n(once, __ATOMIC_ACQUIRE) == ONCE_DONE)
		return 0;
	return once_slow(once, init);
}

WEFT_FAST_ENTRY int pthread_once(pthread_once_t *once, void (*init)(void))
{
	/* Fast path: done already; the acquire pairs with the runner's
	   release, so the routine's effects are visible.  No test of
	   weft_is_active: glibc's word says done with the same value (2,
	   its __PTHREAD_ONCE_DONE, stored alone), so the answer is the same
	   whichever library ran the routine or would serve the call. */
	if (__builtin_expect(__atomic_load_n(once, __ATOMIC_ACQUIRE) == ONCE_DONE, 1))
		return 0;
	return once_not_done(once, init);
}

WEFT_ALIAS(__pthread_once, pthread_once);
