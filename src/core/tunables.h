/* Tunables: read once from the environment at start-up.  Every tunable
   has a documented default (docs/tunables.md, weft(1)). */
#ifndef WEFT_CORE_TUNABLES_H
#define WEFT_CORE_TUNABLES_H

#include <stddef.h>

/* What an exiting thread does with the part of its stack it no longer
   uses (docs/lifecycle.md, "Returning stack memory"). */
enum weft_stack_trim {
	WEFT_TRIM_NONE = 0,	/* keep every page resident */
	WEFT_TRIM_DONTNEED = 1, /* madvise(MADV_DONTNEED): freed at once */
	WEFT_TRIM_FREE = 2,	/* madvise(MADV_FREE): freed under pressure */
};

/* How guard pages are made (stack.c, docs/lifecycle.md "Guards that
   debuggers can read"). */
enum weft_guard_mode {
	WEFT_GUARD_AUTO = 0,	 /* mappings for the first blocks, then advice */
	WEFT_GUARD_ADVISE = 1,	 /* MADV_GUARD_INSTALL where the kernel has it */
	WEFT_GUARD_MPROTECT = 2, /* always a PROT_NONE mapping, as glibc 2.36 */
};

struct weft_tunables {
	/* WEFT_STACK_CACHE: resident bytes of dead threads' blocks kept
	   for reuse (what their pages really cost, not their size).
	   Default 40 MiB (the number glibc uses for address space); 0
	   disables caching. */
	size_t stack_cache_bytes;
	/* WEFT_STACK_CACHE_COUNT: at most this many blocks cached. */
	size_t stack_cache_count;
	/* WEFT_STACK_TRIM: none, dontneed or free. */
	int stack_trim;
	/* WEFT_GUARD: auto, advise or mprotect (enum weft_guard_mode). */
	int guard;
	/* WEFT_REPORT: file to which counters are appended at exit. */
	const char *report_path;
	/* WEFT_STATS: nonzero prints counters and lock contention to
	   stderr at exit (stats.c). */
	int stats;
	/* WEFT_STATS_TOP: how many contended locks the report lists,
	   most waited-for first; 0 lists them all. */
	size_t stats_top;
	/* WEFT_YIELD_WAIT: how many times a mutex waiter whose holder
	   cannot release soon, or an untimed condvar or semaphore waiter,
	   yields its CPU before it sleeps (core/yield_wait.h); 0 turns
	   yielding off. */
	unsigned yield_waits;
};

#define WEFT_STACK_CACHE_DEFAULT (40UL << 20)
#define WEFT_STACK_CACHE_COUNT_DEFAULT 1024UL
#define WEFT_STACK_TRIM_DEFAULT WEFT_TRIM_DONTNEED
#define WEFT_GUARD_DEFAULT WEFT_GUARD_AUTO
/* WEFT_GUARD=auto: blocks with a guard mapping of their own, at most
   (about) this many at once; later blocks get the advice. */
#define WEFT_GUARD_AUTO_MAPPINGS 1024UL
#define WEFT_STATS_TOP_DEFAULT 10UL
#define WEFT_YIELD_WAIT_DEFAULT 16U
/* The largest WEFT_YIELD_WAIT taken; larger values are cut to it. */
#define WEFT_YIELD_WAIT_MAX 1024U

extern struct weft_tunables weft_tunables;
void tunables_init(void);
/* Parses "123", "64K", "40M", "1G"; returns -1 when malformed. */
long long tunables_parse_size(const char *s);
/* The name of a WEFT_STACK_TRIM value ("none", "dontneed", "free"). */
const char *tunables_trim_name(int trim);
/* The name of a WEFT_GUARD value ("auto", "advise", "mprotect"). */
const char *tunables_guard_name(int guard);

#endif
