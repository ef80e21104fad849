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

/* The inline paths serve the first keys (core/tsd.h): get reads the
   calling thread's TLS slot, set stores there in a thread weft knows.
   Start-up, fallback mode, other keys and adoption go out of line. */
__attribute__((noinline)) static void *getspecific_slow(pthread_key_t key)
{
	if (!weft_serving())
		return host_real.pthread_getspecific(key);
	return tsd_get(key);
}

/* A value stored under an older sequence reads as NULL.  Out of line,
   so that the hit path stays the fall-through. */
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

/* No "key exists" test needed: a slot's value is non-NULL only when it
   was stored under an odd (live) sequence, which an unused or deleted
   key's even one never equals.  The hit tests nothing else: a non-NULL
   slot was stored by the inline setspecific below, in a thread weft
   knows while weft is active, the same test the empty slot makes before
   it returns NULL at once (a key read before its first set is common:
   lazy per-thread state).  Fallback mode, start-up's own calls and
   threads weft does not know yet go out of line. */
WEFT_FAST_ENTRY void *pthread_getspecific(pthread_key_t key)
{
	if (__builtin_expect(key < WEFT_TSD_INLINE, 1)) {
		tp_tsd_value *slot = &tsd_inline_slots()[key];
		void *value = slot->value;

		if (value == NULL) {
			if (weft_active_now() && weft_tls_self != NULL)
				return NULL;
		} else {
			/* A hit falls through to its return with the value
			   as loaded, the compare behind a predicted branch:
			   a cmov made the result wait for both sequence
			   loads (docs/tsd.md). */
			if (__builtin_expect(slot->seq != tsd_key_seq(key), 0))
				return getspecific_stale();
			return value;
		}
	}
	return getspecific_slow(key);
}

/* A thread weft knows (its descriptor set): the destructor rounds at
   its exit will see the value.  Others are adopted out of line. */
WEFT_FAST_ENTRY int pthread_setspecific(pthread_key_t key, const void *value)
{
	struct weft_thread *t = weft_tls_self;

	if (weft_active_now() && key < WEFT_TSD_INLINE && t != NULL) {
		tp_tsd_value *slot = &tsd_inline_slots()[key];
		uintptr_t seq = tsd_key_seq(key);

		if (!(seq & 1))
			return EINVAL;
		slot->seq = seq;
		slot->value = (void *)value;
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
