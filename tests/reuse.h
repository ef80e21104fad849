/* The completion pattern, for every release operation (issue: "no touch
   after release").  A releaser thread lets the main thread go (unlock,
   signal, post, barrier wait, once completion, ...); the main thread then
   destroys the object at once and reuses its memory.  A library that
   touches the object after the store that let the main thread go writes
   into reused memory (caught by the pattern check after the join),
   faults on unmapped memory (SIGSEGV kills the test), or reads bytes it
   did not write and spins or sleeps on them (caught by the watchdog).

   The memory is one private page per iteration, so a stray write never
   lands in the test's own data.  Modes:
     REUSE_PATTERN  filled with a counter pattern, checked after the join
     REUSE_UNMAP    unmapped right after destroy (any touch is SIGSEGV)
     REUSE_FF       filled with 0xff bytes, checked after the join
     REUSE_AB       filled with 0xab bytes, checked after the join */
#ifndef WEFT_TEST_REUSE_H
#define WEFT_TEST_REUSE_H

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "harness.h"

enum reuse_mode { REUSE_PATTERN, REUSE_UNMAP, REUSE_FF, REUSE_AB, REUSE_MODES };

static const char *const reuse_mode_name[REUSE_MODES] = {
	"pattern", "munmap", "0xff", "0xab"};

#define REUSE_BYTES 4096

/* A fresh private page for one iteration's objects. */
static inline void *reuse_alloc(void)
{
	void *p = mmap(NULL, REUSE_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED, "mmap: expected a page, got %s",
		strerror(errno));
	return p;
}

static inline uint32_t reuse_word(size_t i, unsigned iter)
{
	return (uint32_t)(0x9e3779b9u * (i + 1) ^ iter);
}

/* Called by the released thread right after destroying the objects:
   the program "reuses" the memory. */
static inline void reuse_memory(void *mem, enum reuse_mode mode,
				unsigned iter)
{
	uint32_t *w = mem;

	switch (mode) {
	case REUSE_PATTERN:
		for (size_t i = 0; i < REUSE_BYTES / 4; i++)
			__atomic_store_n(&w[i], reuse_word(i, iter),
					 __ATOMIC_RELAXED);
		break;
	case REUSE_UNMAP:
		munmap(mem, REUSE_BYTES);
		break;
	case REUSE_FF:
		memset(mem, 0xff, REUSE_BYTES);
		break;
	case REUSE_AB:
		memset(mem, 0xab, REUSE_BYTES);
		break;
	default:
		break;
	}
}

/* After joining the releaser: the reused memory must hold exactly what
   the program wrote.  Returns the number of changed 4-byte words (and
   reports the first), then frees the page. */
static inline int reuse_check(void *mem, enum reuse_mode mode, unsigned iter,
			      const char *what)
{
	uint32_t *w = mem;
	int bad = 0;

	if (mode == REUSE_UNMAP)
		return 0;
	for (size_t i = 0; i < REUSE_BYTES / 4; i++) {
		uint32_t want = mode == REUSE_PATTERN ? reuse_word(i, iter)
				: mode == REUSE_FF    ? 0xffffffffu
						      : 0xababababu;
		uint32_t got = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
		if (got != want && bad++ == 0)
			FAIL("%s (%s), iteration %u: reused memory changed "
			     "after release: word %zu (byte offset %zu) "
			     "expected 0x%08x, got 0x%08x",
			     what, reuse_mode_name[mode], iter, i, i * 4, want,
			     got);
	}
	munmap(mem, REUSE_BYTES);
	return bad;
}

/* A watchdog for a whole test: a library that spins or sleeps on reused
   bytes would otherwise hang the run until the harness's time limit. */
static inline void reuse_watchdog(unsigned seconds)
{
	signal(SIGALRM, SIG_DFL);
	alarm(seconds);
}

/* Iterations per (case, mode): WEFT_REUSE_ITERS, default `dflt`. */
static inline unsigned reuse_iters(unsigned dflt)
{
	const char *s = getenv("WEFT_REUSE_ITERS");

	return s && *s ? (unsigned)strtoul(s, NULL, 10) : dflt;
}

/* Whether to run `mode`: WEFT_REUSE_MODE=NAME runs only that one. */
static inline int reuse_mode_wanted(int mode)
{
	const char *s = getenv("WEFT_REUSE_MODE");

	return !s || !*s || strcmp(s, reuse_mode_name[mode]) == 0;
}

#endif
