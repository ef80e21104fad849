/* pthread_rwlock_* and pthread_rwlockattr_*, with the double-underscore
   names glibc also exports.  The locks are in sync/rwlock.c. */
#include <errno.h>

#include "sync/rwlock.h"
#include "export.h"

WEFT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *rw,
				    const pthread_rwlockattr_t *attr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_init)(rw, attr);
	return rwlock_init(rw, attr);
}
WEFT_ALIAS(__pthread_rwlock_init, pthread_rwlock_init);

WEFT_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_destroy)(rw);
	return rwlock_destroy(rw);
}
WEFT_ALIAS(__pthread_rwlock_destroy, pthread_rwlock_destroy);

/* The lock and unlock fast paths test weft_is_active only
   (weft_active_now) and make one compare-and-swap (sync/rwlock.h);
   start-up, fallback mode, errors and every contended case go through
   an out-of-line function, so that the fast path needs no stack frame. */
__attribute__((noinline)) static int rdlock_slow(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_rdlock)(rw);
	return rwlock_rdlock(rw, CLOCK_REALTIME, NULL);
}

WEFT_FAST_ENTRY int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	if (__builtin_expect(weft_active_now() && rwlock_rdlock_fast(rwlock_of(rw)) == 0, 1))
		return 0;
	return rdlock_slow(rw);
}
WEFT_ALIAS(__pthread_rwlock_rdlock, pthread_rwlock_rdlock);

WEFT_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_tryrdlock)(rw);
	return rwlock_tryrdlock(rw);
}
WEFT_ALIAS(__pthread_rwlock_tryrdlock, pthread_rwlock_tryrdlock);

WEFT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
					   const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_timedrdlock)(rw, abstime);
	return rwlock_rdlock(rw, CLOCK_REALTIME, abstime);
}

WEFT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw,
					   clockid_t clock,
					   const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_clockrdlock)(rw, clock, abstime);
	return rwlock_rdlock(rw, clock, abstime);
}

__attribute__((noinline)) static int wrlock_slow(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_wrlock)(rw);
	return rwlock_wrlock(rw, CLOCK_REALTIME, NULL);
}

WEFT_FAST_ENTRY int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	if (__builtin_expect(weft_active_now() && rwlock_wrlock_fast(rwlock_of(rw)) == 0, 1))
		return 0;
	return wrlock_slow(rw);
}
WEFT_ALIAS(__pthread_rwlock_wrlock, pthread_rwlock_wrlock);

WEFT_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_trywrlock)(rw);
	return rwlock_trywrlock(rw);
}
WEFT_ALIAS(__pthread_rwlock_trywrlock, pthread_rwlock_trywrlock);

WEFT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
					   const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_timedwrlock)(rw, abstime);
	return rwlock_wrlock(rw, CLOCK_REALTIME, abstime);
}

WEFT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw,
					   clockid_t clock,
					   const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_clockwrlock)(rw, clock, abstime);
	return rwlock_wrlock(rw, clock, abstime);
}

__attribute__((noinline)) static int unlock_slow(pthread_rwlock_t *rw)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlock_unlock)(rw);
	return rwlock_unlock(rw);
}

WEFT_FAST_ENTRY int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	if (__builtin_expect(weft_active_now() && rwlock_unlock_fast(rwlock_of(rw)) == 0, 1))
		return 0;
	return unlock_slow(rw);
}
WEFT_ALIAS(__pthread_rwlock_unlock, pthread_rwlock_unlock);

/* --- attributes, in glibc's layout ------------------------------------ */

WEFT_EXPORT int pthread_rwlockattr_init(pthread_rwlockattr_t *attr)
{
	struct weft_rwlockattr *a = (struct weft_rwlockattr *)attr;

	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_init)(attr);
	a->kind = PTHREAD_RWLOCK_DEFAULT_NP;
	a->pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

WEFT_EXPORT int pthread_rwlockattr_destroy(pthread_rwlockattr_t *attr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_destroy)(attr);
	return 0;
}

WEFT_EXPORT int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *attr,
					      int *pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_getpshared)(attr, pshared);
	*pshared = ((const struct weft_rwlockattr *)attr)->pshared;
	return 0;
}

WEFT_EXPORT int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *attr,
					      int pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_setpshared)(attr, pshared);
	if (pshared != PTHREAD_PROCESS_PRIVATE &&
	    pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	((struct weft_rwlockattr *)attr)->pshared = pshared;
	return 0;
}

WEFT_EXPORT int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *attr,
					      int *kind)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_getkind_np)(attr, kind);
	*kind = ((const struct weft_rwlockattr *)attr)->kind;
	return 0;
}

/* PREFER_WRITER_NP is accepted and, as in glibc, behaves like
   PREFER_READER_NP (recursive readers could deadlock otherwise). */
WEFT_EXPORT int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *attr,
					      int kind)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_rwlockattr_setkind_np)(attr, kind);
	if (kind != PTHREAD_RWLOCK_PREFER_READER_NP &&
	    kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
	    kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return EINVAL;
	((struct weft_rwlockattr *)attr)->kind = kind;
	return 0;
}
