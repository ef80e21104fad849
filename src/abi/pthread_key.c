/* Thread-specific data: pthread_key_* and C11 tss_*. */
#include <threads.h>

#include "export.h"

WEFT_EXPORT int pthread_key_create(pthread_key_t *key, void (*destr)(void *))
{
	if (!weft_serving())
		return host_real.pthread_key_create(key, destr);
	return tsd_key_create(key, destr);
}

WEFT_EXPORT int pthread_key_delete(pthread_key_t key)
{
	if (!weft_serving())
		return host_real.pthread_key_delete(key);
	return tsd_key_delete(key);
}

WEFT_EXPORT void *pthread_getspecific(pthread_key_t key)
{
	if (!weft_serving())
		return host_real.pthread_getspecific(key);
	return tsd_get(key);
}

WEFT_EXPORT int pthread_setspecific(pthread_key_t key, const void *value)
{
	if (!weft_serving())
		return host_real.pthread_setspecific(key, value);
	return tsd_set(key, value);
}

/* glibc's twins of the key functions (libgcc's threading probe and
   older libraries use them). */
WEFT_ALIAS(__pthread_key_create, pthread_key_create);
WEFT_ALIAS(__pthread_getspecific, pthread_getspecific);
WEFT_ALIAS(__pthread_setspecific, pthread_setspecific);

WEFT_EXPORT int tss_create(tss_t *key, tss_dtor_t destr)
{
	return pthread_key_create(key, destr) == 0 ? thrd_success : thrd_error;
}

WEFT_EXPORT void tss_delete(tss_t key)
{
	pthread_key_delete(key);
}

WEFT_EXPORT void *tss_get(tss_t key)
{
	return pthread_getspecific(key);
}

WEFT_EXPORT int tss_set(tss_t key, void *value)
{
	return pthread_setspecific(key, value) == 0 ? thrd_success : thrd_error;
}
