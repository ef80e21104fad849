/* The inline fast path of pthread_getspecific/setspecific (tsd.c has
   the rest): a key below WEFT_TSD_INLINE, read by a thread weft knows.
   Three loads (the thread's descriptor through TLS, the key's sequence
   in the static first chunk, the value's sequence) and a compare. */
#ifndef WEFT_CORE_TSD_H
#define WEFT_CORE_TSD_H

#include "thread.h"

struct weft_tsd_key {
	uintptr_t seq; /* odd: in use */
	void (*destr)(void *);
};

extern struct weft_tsd_key weft_tsd_keys0[];

/* Returns the calling thread's descriptor when the fast path applies
   (its value of `key` is t->tsd_inline[key]), with the key's current
   sequence in *seq (0 when the key does not exist). */
static inline struct weft_thread *tsd_fast_self(pthread_key_t key,
						uintptr_t *seq)
{
	struct weft_thread *t = weft_tls_self;

	if (__builtin_expect(key >= WEFT_TSD_INLINE || t == NULL, 0))
		return NULL;
	*seq = __atomic_load_n(&weft_tsd_keys0[key].seq, __ATOMIC_ACQUIRE);
	return t;
}

#endif
