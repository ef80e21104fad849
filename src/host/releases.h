/* The release table (releases.c): what weft knows of each glibc release
   it serves and cannot discover at run time, one row per release, keyed
   by the release string and sizeof(struct pthread).

   A row also holds the offsets that the start-up probe thread can see
   (res, result, the cleanup chains ...): the probe then checks them
   instead of finding them, so a glibc that differs from its row in any
   of them is refused (fail closed), and a later start-up that makes no
   probe thread can still take them from the row (issue 16). */
#ifndef WEFT_HOST_RELEASES_H
#define WEFT_HOST_RELEASES_H

#include <stddef.h>
#include "layout.h"

struct host_release {
	const char *release; /* gnu_get_libc_version() */
	size_t tcb_size;     /* _thread_db_sizeof_pthread */

	/* Checked by the probe thread (probe.c). */
	size_t res, robust_head, stackblock, result, cleanup, cleanup_jmp_buf;
	struct {
		size_t off;
		unsigned char width;
		int value;
	} user_stack;
	struct {
		size_t off;
		enum host_join_kind kind;
		unsigned int joinable, detached, exited;
	} join;
	/* malloc's per-thread words (tcache, arena): their offsets in
	   libc's static TLS block.  Their fresh values come from libc's TLS
	   image; the probe checks that these, and only these, change at a
	   thread's first malloc. */
	ptrdiff_t malloc_word[2];

	/* Not visible to a probe: tied to the row. */
	size_t setxid_futex;
	size_t getrandom_buf; /* 0: this release has none */
	enum host_cancel_protocol cancel_protocol;
	/* In _rtld_global after _dl_stack_used (whose offset the
	   descriptors give): _dl_in_flight_stack, _dl_stack_cache_lock. */
	size_t rtld_in_flight, rtld_list_lock;
};

/* The row for `release`; NULL if weft has none.  *other_size is set to
   1 when rows for the release exist but none with this descriptor size
   (another build of the release). */
const struct host_release *host_release_find(const char *release,
					     size_t tcb_size, int *other_size);

#endif
