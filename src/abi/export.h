/* The ABI surface: functions a glibc program calls by name.  libweft is
   built with hidden visibility; only what is marked WEFT_EXPORT is
   visible, and it wins over libc's definition because libweft comes
   first in the lookup order (LD_PRELOAD, or -lweft linked before libc).

   Each entry point forwards to glibc's own implementation when weft is
   not serving (unknown glibc), and for threads glibc created itself. */
#ifndef WEFT_ABI_EXPORT_H
#define WEFT_ABI_EXPORT_H

#include "core/thread.h"
#include "host/glibc.h"
#include "alias.h"

#define WEFT_EXPORT __attribute__((visibility("default")))

/* An entry point whose fast path programs call in tight loops (a lock
   and its release, a key's value, once): it starts a 64-byte line of
   its own, so that its few hot instructions fall into one or two
   lines, wherever the code linked before it ends.  Left to the linker,
   pthread_mutex_lock's path crossed a line boundary after a change
   elsewhere in the library, and a single-threaded lock + unlock pair
   took 7.6 ns instead of 6.2 ns (glibc: 6.0 ns; bench/RESULTS.md,
   2026-12-03-semyield). */
#define WEFT_FAST_ENTRY WEFT_EXPORT __attribute__((hot, aligned(64)))

/* glibc's own implementation of the exported function `name`, looked
   up once and cached: what an entry point calls when weft is not serving
   (fallback mode).  `name` must be declared (by a libc header) so that
   the pointer gets its exact type. */
#define GLIBC_FN(name)                                                         \
	({                                                                     \
		static __typeof__(&name) real_;                                \
		__typeof__(&name) p_ = __atomic_load_n(&real_, __ATOMIC_RELAXED); \
		if (!p_) {                                                     \
			p_ = (__typeof__(&name))host_next_sym(#name, NULL);    \
			__atomic_store_n(&real_, p_, __ATOMIC_RELAXED);        \
		}                                                              \
		p_;                                                            \
	})

/* Result of translating a pthread_t.  TCB and origin come from the
   registry, not from the descriptor: a thread joined meanwhile may have
   left its descriptor to a new thread, which is zeroing and filling it
   (core/registry.c).  Touching `t` itself needs a hold (thread_pin). */
struct target {
	struct weft_thread *t; /* weft-known thread, or NULL */
	pthread_t glibc;       /* the handle glibc understands (its TCB) */
	int origin;	       /* enum weft_origin when t, else 0 */
	int err;	       /* ESRCH for a stale weft handle */
};

static inline struct target target_of(pthread_t h)
{
	struct target r;
	struct registry_view v;

	r.t = registry_lookup(h, &v, &r.err);
	r.glibc = r.t ? (pthread_t)(uintptr_t)v.tcb : h;
	r.origin = r.t ? v.origin : 0;
	return r;
}

#endif
