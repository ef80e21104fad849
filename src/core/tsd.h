/* The inline fast path of pthread_getspecific/setspecific (tsd.c has
   the rest): a key below WEFT_TSD_INLINE, read by a thread weft knows.
   Three loads (the thread's descriptor from its TCB, the key's sequence
   in the static first chunk, the value's sequence) and a compare. */
#ifndef WEFT_CORE_TSD_H
#define WEFT_CORE_TSD_H

#include "host/tcb.h"
#include "thread.h"

struct weft_tsd_key {
	uintptr_t seq; /* odd: in use */
	void (*destr)(void *);
};

extern struct weft_tsd_key weft_tsd_keys0[];

/* Returns the calling thread's descriptor when the fast path applies
   (its value of `key` is t->tsd_inline[key]), with the key's current
   sequence in *seq (0 when the key does not exist).  The descriptor
   comes from the TCB's self slot (host/tcb.h): non-NULL only while weft
   serves, so the callers need no weft_is_active test. */
static inline struct weft_thread *tsd_fast_self(pthread_key_t key,
						uintptr_t *seq)
{
#ifdef HOST_TCB_SELF_SLOT
	struct weft_thread *t = arch_tp_load_ptr_at(HOST_TCB_SELF_SLOT);
#else
	struct weft_thread *t =
		weft_active_now() ? weft_tls_self : NULL;
#endif

	if (__builtin_expect(key >= WEFT_TSD_INLINE || t == NULL, 0))
		return NULL;
	*seq = __atomic_load_n(&weft_tsd_keys0[key].seq, __ATOMIC_ACQUIRE);
	return t;
}

/* Fills the main thread's self slot (self.c); the slow paths of
   get/setspecific call it once weft serves. */
void self_slot_fill(void);

#endif
