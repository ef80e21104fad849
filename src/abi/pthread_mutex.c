/* pthread_mutex_* and pthread_mutexattr_*: glibc's ABI, weft's mutexes
   (src/sync/mutex.c).  The uncontended lock and unlock of a default
   mutex are inline here: one CAS each, plain stores in a process with
   one thread (sync/mutex.h, mutex_lock_fast). */
#include <string.h>
#include "alias.h"
#include "export.h"
#include "sync/mutex.h"
#include "sync/mutex_kinds.h"

/* Names glibc still exports but no longer declares (or redirects). */
int pthread_mutexattr_getkind_np(const pthread_mutexattr_t *, int *);
int pthread_mutexattr_setkind_np(pthread_mutexattr_t *, int);

static int clock_ok(clockid_t c)
{
	return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC;
}

static unsigned *attr_word(pthread_mutexattr_t *a)
{
	return (unsigned *)a;
}

static unsigned attr_get(const pthread_mutexattr_t *a)
{
	return *(const unsigned *)a;
}

WEFT_EXPORT int pthread_mutex_init(pthread_mutex_t *m,
				   const pthread_mutexattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_init)(m, a);
	return mutex_init(wmutex_of(m), a);
}

WEFT_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_destroy)(m);
	return mutex_destroy(wmutex_of(m));
}

/* The fast paths test weft_is_active only (weft_active_now); start-up,
   fallback mode and every contended case go through an out-of-line
   function, so that the fast path needs no stack frame.  The contended
   lock and unlock (lock_slow, unlock_slow) have none either: start-up
   and fallback are out of line again, and the code of the whole
   contended path sits together (`hot`: .text.hot).  A thread that slept
   runs it with little of it left in the instruction cache, and its
   size showed: bench/RESULTS.md, 2026-11-29-footprint. */
__attribute__((noinline, cold)) static int lock_starting(pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_lock)(m);
	if (mutex_trylock_fast(wmutex_of(m)) == 0)
		return 0;
	return mutex_lock_slow(wmutex_of(m), CLOCK_REALTIME, NULL);
}

__attribute__((noinline, hot)) static int lock_slow(pthread_mutex_t *m)
{
	if (!weft_serving_done())
		return lock_starting(m);
	/* Another try, but only on a word that reads free: a failing
	   locked CAS costs as much as a successful one. */
	if (__atomic_load_n(&wmutex_of(m)->lock, __ATOMIC_RELAXED) == 0 &&
	    mutex_trylock_fast(wmutex_of(m)) == 0)
		return 0;
	return mutex_lock_slow(wmutex_of(m), CLOCK_REALTIME, NULL);
}

WEFT_FAST_ENTRY int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (__builtin_expect(weft_active_now() && mutex_lock_fast(wmutex_of(m)) == 0, 1))
		return 0;
	return lock_slow(m);
}

WEFT_FAST_ENTRY int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_trylock)(m);
	if (mutex_trylock_fast(wmutex_of(m)) == 0)
		return 0;
	return mutex_trylock_slow(wmutex_of(m));
}

WEFT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
					const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_clocklock)(m, clock, abstime);
	if (!clock_ok(clock))
		return EINVAL;
	if (mutex_trylock_fast(wmutex_of(m)) == 0)
		return 0;
	return mutex_lock_slow(wmutex_of(m), clock, abstime);
}

WEFT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m,
					const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_timedlock)(m, abstime);
	if (mutex_trylock_fast(wmutex_of(m)) == 0)
		return 0;
	return mutex_lock_slow(wmutex_of(m), CLOCK_REALTIME, abstime);
}

__attribute__((noinline, cold)) static int unlock_starting(pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_unlock)(m);
	return mutex_unlock_slow(wmutex_of(m));
}

__attribute__((noinline, hot)) static int unlock_slow(pthread_mutex_t *m)
{
	if (!weft_serving_done())
		return unlock_starting(m);
	return mutex_unlock_slow(wmutex_of(m));
}

WEFT_FAST_ENTRY int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (__builtin_expect(weft_active_now() && mutex_unlock_fast(wmutex_of(m)) == 0, 1))
		return 0;
	return unlock_slow(m);
}

WEFT_EXPORT int pthread_mutex_consistent(pthread_mutex_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_consistent)(m);
	if (!(wmutex_of(m)->kind & MK_ROBUST))
		return EINVAL;
	return tidmutex_consistent(wmutex_of(m));
}

WEFT_EXPORT int pthread_mutex_getprioceiling(const pthread_mutex_t *m,
					     int *ceiling)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_getprioceiling)(m, ceiling);
	if (!(((const struct wmutex *)m)->kind & MK_PP))
		return EINVAL;
	return ppmutex_getprioceiling((const struct wmutex *)m, ceiling);
}

WEFT_EXPORT int pthread_mutex_setprioceiling(pthread_mutex_t *m, int ceiling,
					     int *old)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutex_setprioceiling)(m, ceiling, old);
	if (!(wmutex_of(m)->kind & MK_PP))
		return EINVAL;
	return ppmutex_setprioceiling(wmutex_of(m), ceiling, old);
}

/* ------------------------------------------------------------ attributes */

WEFT_EXPORT int pthread_mutexattr_init(pthread_mutexattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_init)(a);
	memset(a, 0, sizeof *a);
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_destroy(pthread_mutexattr_t *a)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_destroy)(a);
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_settype(pthread_mutexattr_t *a, int type)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_settype)(a, type);
	return mutexattr_settype(attr_word(a), type);
}

WEFT_EXPORT int pthread_mutexattr_gettype(const pthread_mutexattr_t *a,
					  int *type)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_gettype)(a, type);
	*type = (int)(attr_get(a) & MA_TYPE_MASK);
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a,
					      int proto)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_setprotocol)(a, proto);
	return mutexattr_setprotocol(attr_word(a), proto);
}

WEFT_EXPORT int pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a,
					      int *proto)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_getprotocol)(a, proto);
	*proto = (int)((attr_get(a) & MA_PROTO_MASK) >> MA_PROTO_SHIFT);
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a,
						 int ceiling)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_setprioceiling)(a, ceiling);
	return mutexattr_setprioceiling(attr_word(a), ceiling);
}

WEFT_EXPORT int pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *a,
						 int *ceiling)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_getprioceiling)(a, ceiling);
	*ceiling = mutexattr_getprioceiling(attr_get(a));
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_setpshared(pthread_mutexattr_t *a,
					     int pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_setpshared)(a, pshared);
	return mutexattr_setpshared(attr_word(a), pshared);
}

WEFT_EXPORT int pthread_mutexattr_getpshared(const pthread_mutexattr_t *a,
					     int *pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_getpshared)(a, pshared);
	*pshared = (attr_get(a) & MA_PSHARED) ? PTHREAD_PROCESS_SHARED
					      : PTHREAD_PROCESS_PRIVATE;
	return 0;
}

WEFT_EXPORT int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_setrobust)(a, robust);
	return mutexattr_setrobust(attr_word(a), robust);
}

WEFT_EXPORT int pthread_mutexattr_getrobust(const pthread_mutexattr_t *a,
					    int *robust)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_mutexattr_getrobust)(a, robust);
	*robust = (attr_get(a) & MA_ROBUST) ? PTHREAD_MUTEX_ROBUST
					    : PTHREAD_MUTEX_STALLED;
	return 0;
}

/* The _np spellings are the same functions (setkind_np also accepts the
   adaptive type, as settype does here). */
WEFT_ALIAS(pthread_mutexattr_setkind_np, pthread_mutexattr_settype);
WEFT_ALIAS(pthread_mutexattr_getkind_np, pthread_mutexattr_gettype);
WEFT_ALIAS(pthread_mutex_consistent_np, pthread_mutex_consistent);
WEFT_ALIAS(pthread_mutexattr_setrobust_np, pthread_mutexattr_setrobust);
WEFT_ALIAS(pthread_mutexattr_getrobust_np, pthread_mutexattr_getrobust);

/* glibc's double-underscore exports. */
WEFT_ALIAS(__pthread_mutex_init, pthread_mutex_init);
WEFT_ALIAS(__pthread_mutex_destroy, pthread_mutex_destroy);
WEFT_ALIAS(__pthread_mutex_lock, pthread_mutex_lock);
WEFT_ALIAS(__pthread_mutex_trylock, pthread_mutex_trylock);
WEFT_ALIAS(__pthread_mutex_unlock, pthread_mutex_unlock);
WEFT_ALIAS(__pthread_mutexattr_init, pthread_mutexattr_init);
WEFT_ALIAS(__pthread_mutexattr_destroy, pthread_mutexattr_destroy);
WEFT_ALIAS(__pthread_mutexattr_settype, pthread_mutexattr_settype);
