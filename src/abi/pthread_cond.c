/* pthread_cond_* and pthread_condattr_*: glibc's ABI, weft's condition
   variables (src/sync/cond.c).  The condattr word: bit 0 process-shared,
   bit 1 CLOCK_MONOTONIC (glibc's encoding). */
#include "export.h"
#include "sync/cond.h"

static unsigned *cattr(pthread_condattr_t *a)
{
	return (unsigned *)a;
}

static unsigned cattr_get(const pthread_condattr_t *a)
{
	return *(const unsigned *)a;
}

WEFT_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_init)(c, a);
	return cond_init(wcond_of(c), a ? cattr_get(a) : 0);
}

WEFT_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_destroy)(c);
	return cond_destroy(wcond_of(c));
}

/* With no waiter, signal and broadcast need no stack frame and take one
   branch: weft_is_active and cond_maybe_waiter's loads or-ed together.
   The rest is out of line. */
static inline int nobody_to_wake(pthread_cond_t *c)
{
	return (cond_maybe_waiter(wcond_of(c)) | (uintptr_t)!weft_active_now()) == 0;
}

__attribute__((noinline)) static int signal_slow(pthread_cond_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_signal)(c);
	return cond_signal(wcond_of(c));
}

WEFT_FAST_ENTRY int pthread_cond_signal(pthread_cond_t *c)
{
	if (__builtin_expect(nobody_to_wake(c), 1))
		return 0;
	return signal_slow(c);
}

__attribute__((noinline)) static int broadcast_slow(pthread_cond_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_broadcast)(c);
	return cond_broadcast(wcond_of(c));
}

WEFT_FAST_ENTRY int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (__builtin_expect(nobody_to_wake(c), 1))
		return 0;
	return broadcast_slow(c);
}

WEFT_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_wait)(c, m);
	return cond_wait(wcond_of(c), wmutex_of(m), -1, NULL);
}

WEFT_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_timedwait)(c, m, abstime);
	return cond_wait(wcond_of(c), wmutex_of(m), -1, abstime);
}

WEFT_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
				       clockid_t clock,
				       const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_cond_clockwait)(c, m, clock, abstime);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return cond_wait(wcond_of(c), wmutex_of(m), clock, abstime);
}

WEFT_EXPORT int pthread_condattr_init(pthread_condattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_init)(a);
	*cattr(a) = 0;
	return 0;
}

WEFT_EXPORT int pthread_condattr_destroy(pthread_condattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_destroy)(a);
	return 0;
}

WEFT_EXPORT int pthread_condattr_setclock(pthread_condattr_t *a,
					  clockid_t clock)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_setclock)(a, clock);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	*cattr(a) = (*cattr(a) & ~CF_MONOTONIC) |
		    (clock == CLOCK_MONOTONIC ? CF_MONOTONIC : 0);
	return 0;
}

WEFT_EXPORT int pthread_condattr_getclock(const pthread_condattr_t *a,
					  clockid_t *clock)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_getclock)(a, clock);
	*clock = (cattr_get(a) & CF_MONOTONIC) ? CLOCK_MONOTONIC
					       : CLOCK_REALTIME;
	return 0;
}

WEFT_EXPORT int pthread_condattr_setpshared(pthread_condattr_t *a, int pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_setpshared)(a, pshared);
	if (pshared != PTHREAD_PROCESS_PRIVATE &&
	    pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	*cattr(a) = (*cattr(a) & ~CF_PSHARED) | (pshared ? CF_PSHARED : 0);
	return 0;
}

WEFT_EXPORT int pthread_condattr_getpshared(const pthread_condattr_t *a,
					    int *pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_condattr_getpshared)(a, pshared);
	*pshared = (cattr_get(a) & CF_PSHARED) ? PTHREAD_PROCESS_SHARED
					       : PTHREAD_PROCESS_PRIVATE;
	return 0;
}
