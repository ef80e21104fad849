/* The inline fast path of pthread_getspecific/setspecific (tsd.c has
   the rest).  The values of keys below WEFT_TSD_INLINE live in
   initial-exec TLS, one array per thread at a fixed distance from its
   thread pointer, so that a read is glibc's chain of two loads (the
   array's TLS offset, the slot), not three through the descriptor.
   Every thread has the array, zero-filled by the TLS set-up (ld.so's
   for glibc's threads, its _dl_allocate_tls for weft's, also on a
   cached stack): a thread weft does not know yet simply has no values,
   as it has set none through weft. */
#ifndef WEFT_CORE_TSD_H
#define WEFT_CORE_TSD_H

#include "arch/syscall_arch.h"
#include "thread.h"

struct weft_tsd_key {
	uintptr_t seq; /* odd: in use */
	void (*destr)(void *);
};

extern struct weft_tsd_key weft_tsd_keys0[];
extern __thread struct weft_tsd_value weft_tsd_inline[WEFT_TSD_INLINE]
	__attribute__((tls_model("initial-exec")));

/* The calling thread's slots, addressed from the thread pointer
   (arch/.../syscall_arch.h, ARCH_TP_SEG): a slot's read is one load. */
typedef ARCH_TP_SEG struct weft_tsd_value tp_tsd_value;
static inline tp_tsd_value *tsd_inline_slots(void)
{
	return (tp_tsd_value *)ARCH_TLS_IE_OFFSET(weft_tsd_inline);
}

/* The key's current sequence (0 when the key does not exist), for a key
   below WEFT_TSD_INLINE. */
static inline uintptr_t tsd_key_seq(pthread_key_t key)
{
	return __atomic_load_n(&weft_tsd_keys0[key].seq, __ATOMIC_ACQUIRE);
}

#endif
