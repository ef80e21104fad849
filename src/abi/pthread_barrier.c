/* pthread_barrier_* and pthread_barrierattr_*.  The barrier itself is in
   sync/barrier.c. */
#include <errno.h>

#include "sync/barrier.h"
#include "export.h"

/* pthread_barrierattr_t in glibc's layout. */
struct weft_barrierattr {
	int pshared;
};
_Static_assert(sizeof(struct weft_barrierattr) <= sizeof(pthread_barrierattr_t),
	       "barrierattr layout");

WEFT_EXPORT int pthread_barrier_init(pthread_barrier_t *b,
				     const pthread_barrierattr_t *attr,
				     unsigned count)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;

	if (!weft_serving())
		return GLIBC_FN(pthread_barrier_init)(b, attr, count);
	if (attr) {
		pshared = ((const struct weft_barrierattr *)attr)->pshared;
		if (pshared != PTHREAD_PROCESS_PRIVATE &&
		    pshared != PTHREAD_PROCESS_SHARED)
			return EINVAL;
	}
	return barrier_init(b, count, pshared);
}

WEFT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrier_wait)(b);
	return barrier_wait(b);
}

WEFT_EXPORT int pthread_barrier_destroy(pthread_barrier_t *b)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrier_destroy)(b);
	return barrier_destroy(b);
}

WEFT_EXPORT int pthread_barrierattr_init(pthread_barrierattr_t *attr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrierattr_init)(attr);
	((struct weft_barrierattr *)attr)->pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

WEFT_EXPORT int pthread_barrierattr_destroy(pthread_barrierattr_t *attr)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrierattr_destroy)(attr);
	return 0;
}

WEFT_EXPORT int pthread_barrierattr_getpshared(const pthread_barrierattr_t *attr,
					       int *pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrierattr_getpshared)(attr, pshared);
	*pshared = ((const struct weft_barrierattr *)attr)->pshared;
	return 0;
}

WEFT_EXPORT int pthread_barrierattr_setpshared(pthread_barrierattr_t *attr,
					       int pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_barrierattr_setpshared)(attr, pshared);
	if (pshared != PTHREAD_PROCESS_PRIVATE &&
	    pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	((struct weft_barrierattr *)attr)->pshared = pshared;
	return 0;
}
