/* C11 <threads.h> synchronisation: mtx_*, cnd_* and call_once, built on
   the public pthread_* functions exactly as glibc maps the types
   (mtx_t is a pthread_mutex_t, cnd_t a pthread_cond_t, once_flag a
   pthread_once_t).  The calls below bind to whichever pthread_* the
   process uses, i.e. to weft's own when weft serves them. */
#include <errno.h>
#include <threads.h>

#include "c11_result.h"
#include "export.h"

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag");


/* Recursive if asked; any other type is a normal mutex (glibc accepts
   unknown types the same way). */
WEFT_EXPORT int mtx_init(mtx_t *m, int type)
{
	pthread_mutexattr_t a;
	int err;

	if (!weft_serving())
		return GLIBC_FN(mtx_init)(m, type);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type == (mtx_plain | mtx_recursive) ||
						      type == (mtx_timed | mtx_recursive)
					      ? PTHREAD_MUTEX_RECURSIVE
					      : PTHREAD_MUTEX_NORMAL);
	err = pthread_mutex_init((pthread_mutex_t *)m, &a);
	pthread_mutexattr_destroy(&a);
	return c11_result(err);
}

WEFT_EXPORT void mtx_destroy(mtx_t *m)
{
	if (!weft_serving()) {
		GLIBC_FN(mtx_destroy)(m);
		return;
	}
	pthread_mutex_destroy((pthread_mutex_t *)m);
}

WEFT_EXPORT int mtx_lock(mtx_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(mtx_lock)(m);
	return c11_result(pthread_mutex_lock((pthread_mutex_t *)m));
}

WEFT_EXPORT int mtx_trylock(mtx_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(mtx_trylock)(m);
	return c11_result(pthread_mutex_trylock((pthread_mutex_t *)m));
}

WEFT_EXPORT int mtx_timedlock(mtx_t *restrict m,
			      const struct timespec *restrict abstime)
{
	if (!weft_serving())
		return GLIBC_FN(mtx_timedlock)(m, abstime);
	return c11_result(pthread_mutex_timedlock((pthread_mutex_t *)m, abstime));
}

WEFT_EXPORT int mtx_unlock(mtx_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(mtx_unlock)(m);
	return c11_result(pthread_mutex_unlock((pthread_mutex_t *)m));
}

WEFT_EXPORT int cnd_init(cnd_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(cnd_init)(c);
	return c11_result(pthread_cond_init((pthread_cond_t *)c, NULL));
}

WEFT_EXPORT void cnd_destroy(cnd_t *c)
{
	if (!weft_serving()) {
		GLIBC_FN(cnd_destroy)(c);
		return;
	}
	pthread_cond_destroy((pthread_cond_t *)c);
}

WEFT_EXPORT int cnd_signal(cnd_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(cnd_signal)(c);
	return c11_result(pthread_cond_signal((pthread_cond_t *)c));
}

WEFT_EXPORT int cnd_broadcast(cnd_t *c)
{
	if (!weft_serving())
		return GLIBC_FN(cnd_broadcast)(c);
	return c11_result(pthread_cond_broadcast((pthread_cond_t *)c));
}

WEFT_EXPORT int cnd_wait(cnd_t *c, mtx_t *m)
{
	if (!weft_serving())
		return GLIBC_FN(cnd_wait)(c, m);
	return c11_result(
		pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

WEFT_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
			      const struct timespec *restrict abstime)
{
	if (!weft_serving())
		return GLIBC_FN(cnd_timedwait)(c, m, abstime);
	return c11_result(pthread_cond_timedwait(
		(pthread_cond_t *)c, (pthread_mutex_t *)m, abstime));
}

WEFT_EXPORT void call_once(once_flag *flag, void (*func)(void))
{
	if (!weft_serving()) {
		GLIBC_FN(call_once)(flag, func);
		return;
	}
	pthread_once((pthread_once_t *)flag, func);
}
