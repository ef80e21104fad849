/* Tunables: read once from the environment at start-up.  Every tunable
   has a documented default (docs/tunables.md, weft(1)). */
#ifndef WEFT_CORE_TUNABLES_H
#define WEFT_CORE_TUNABLES_H

#include <stddef.h>

struct weft_tunables {
	/* WEFT_STACK_CACHE: bytes of dead threads' mappings kept for reuse.
	   Default 40 MiB (glibc's default too); 0 disables caching. */
	size_t stack_cache_bytes;
	/* WEFT_REPORT: file to which counters are appended at exit. */
	const char *report_path;
};

#define WEFT_STACK_CACHE_DEFAULT (40UL << 20)

extern struct weft_tunables weft_tunables;
void tunables_init(void);
/* Parses "123", "64K", "40M", "1G"; returns -1 when malformed. */
long long tunables_parse_size(const char *s);

#endif
