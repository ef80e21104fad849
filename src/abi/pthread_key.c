/* Thread-specific data: pthread_key_* and C11 tss_*. */
#include <errno.h>
#include <threads.h>

#include "core/tsd.h"
#include "export.h"

WEFT_EXPORT int pthread_key_create(pthread_key_t *key, void (*destr)(void *))
{
	if (!weft_serving()) {
		int r = host_real.pthread_key_create(key, destr);

		/* made from inside weft's start-up: weft takes it over when
		   start-up ends (core/tsd.c) */
		if (r == 0 && weft_starting())
			tsd_note_startup_key(*key, destr);
		return r;
	}
	return tsd_key_create(key, destr);
}

WEFT_EXPORT int pthread_key_delete(pthread_key_t key)
{
	if (!weft_serving())
		return host_real.pthread_key_delete(key);
	return tsd_key_delete(key);
}

/* get/setspecific test weft_is_active only (set once at start-up) and
   take the inline path for the first keys in threads weft knows; start-up,
   fallback mode, other keys and adoption go out of line. */
__attribute__((noinline)) static void *getspecific_slow(pthread_key_t key)
{
	if (!weft_serving())
		return host_real.pthread_getspecific(key);
	return tsd_get(key);
}

/* A value stored under an older sequence, or none, reads as NULL.  Out
   of line, so that the hit path stays the fall-through. */
__attribute__((noinline)) static void *getspecific_stale(void)
{
	return NULL;
}

/* The value travels as an integer: glibc declares the argument
   "access none", which makes gcc warn about passing it on. */
__attribute__((noinline)) static int setspecific_slow(pthread_key_t key,
						      uintptr_t value)
{
	if (!weft_serving())
		return host_real.pthread_setspecific(key, (const void *)value);
	return tsd_set(key, (const void *)value);
}

WEFT_FAST_ENTRY void *pthread_getspecific(pthread_key_t key)
{
	struct weft_thread *t;
	uintptr_t seq;

	/* No "key exists" test needed: a slot's value is non-NULL only when
	   it was stored under an odd (live) sequence, which an unused or
	   deleted key's even one never equals. */
	if (weft_active_now() && (t = tsd_fast_self(key, &seq)) != NULL) {
		void *value = t->tsd_inline[key].value;

		/* No value is NULL whatever its sequence: returned at once,
		   as glibc does, not through the stale path's jump (a key
		   read before its first set is common: lazy per-thread
		   state). */
		if (value == NULL)
			return NULL;
		/* A hit falls through to its return with the value as loaded,
		   the compare behind a predicted branch: a cmov here made the
		   result wait for both sequence loads (docs/tsd.md). */
		if (__builtin_expect(t->tsd_inline[key].seq != seq, 0))
			return getspecific_stale();
		return value;
	}
	return getspecific_slow(key);
}

WEFT_FAST_ENTRY int pthread_setspecific(pthread_key_t key, const void *value)
{
	struct weft_thread *t;
	uintptr_t seq;

	if (weft_active_now() && (t = tsd_fast_self(key, &seq)) != NULL) {
		if (!(seq & 1))
			return EINVAL;
		t->tsd_inline[key].seq = seq;
		t->tsd_inline[key].value = (void *)value;
		if (value)
			t->tsd_stored = 1; /* the destructor rounds look */
		return 0;
	}
	return setspecific_slow(key, (uintptr_t)value);
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
