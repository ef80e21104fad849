/* Thread memory: one mapping per thread holding guard, stack, weft's
   descriptor, static TLS and glibc's TCB (layout in thread.h), and a
   bounded cache of the mappings of dead threads.

   A cached mapping is reused only once the kernel has cleared its tid
   word (CLONE_CHILD_CLEARTID), i.e. the thread that ran on it has fully
   left the kernel, so a detached thread can put its own mapping in the
   cache just before it exits and nobody ever waits for it.

   The cache also carries libc's malloc thread cache of the dead thread
   to the next thread that gets the mapping (see host/libc_state.c).  When a
   mapping leaves the cache, that state moves to a pool from which fresh
   mappings take it, so no thread cache is ever lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "host/glibc.h"
#include "lock.h"
#include "runstate.h"
#include "thread.h"
#include "tunables.h"

#define PAGE 4096UL
#define MIN_STACK_LEFT 4096UL /* stack left after TLS and descriptor */

static weft_lock_t cache_lock = WEFT_LOCK_INIT;
/* Most recently released at the head (warm, reused first), oldest at
   the tail (trimmed first), so both ends are found without a walk in the
   usual case: the lock is held for a few instructions. */
static struct weft_thread *cache_head, *cache_tail;
static size_t cache_bytes; /* resident estimate of the cached blocks */
static size_t cache_count;
/* Bumped in a fork child: a block cached before the fork may carry the
   tid of a thread that was still exiting in the parent, which no kernel
   will ever clear here. */
static unsigned cache_gen;

/* Malloc states whose mapping was unmapped, waiting for a new thread:
   a stack of chunks.  Only the head chunk may be partly filled, so a put
   or a take touches the head only; a new chunk is mapped with no lock
   held, so the lock never covers a system call. */
#define POOL_PER_CHUNK 1000
struct pool_chunk {
	struct pool_chunk *next;
	size_t len;
	uintptr_t st[POOL_PER_CHUNK][WEFT_MALLOC_WORDS];
};
static struct pool_chunk *pool_head;
static struct pool_chunk *pool_spare; /* one empty chunk kept for reuse */

static size_t default_size;

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

size_t stack_default_size(void)
{
	struct rlimit rl;

	if (default_size)
		return default_size;
	/* As glibc: the soft stack limit, unless unlimited or tiny. */
	if (sys_getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur >= (rlim_t)PTHREAD_STACK_MIN)
		default_size = round_up(rl.rlim_cur, PAGE);
	else
		default_size = 2UL << 20;
	return default_size;
}

void stack_set_default_size(size_t s)
{
	default_size = s;
}

/* Must hold cache_lock.  Returns a chunk with room, or NULL when a new
   one must be mapped first. */
static struct pool_chunk *pool_room(void)
{
	struct pool_chunk *c = pool_head;

	if (c && c->len < POOL_PER_CHUNK)
		return c;
	if ((c = pool_spare)) {
		pool_spare = NULL;
		c->len = 0;
		c->next = pool_head;
		pool_head = c;
	}
	return c;
}

/* Keeps a malloc state until a fresh block takes it.  Uses mmap, not
   malloc: this can run in an exiting thread that has already given away
   its malloc state. */
static void pool_put(const uintptr_t *words)
{
	struct pool_chunk *c, *fresh = NULL;

	weft_lock(&cache_lock);
	while (!(c = pool_room())) {
		weft_unlock(&cache_lock);
		fresh = sys_mmap(NULL, sizeof *fresh, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sys_mmap_failed(fresh))
			return; /* the state leaks, as it would in glibc */
		weft_lock(&cache_lock);
		if (!pool_spare) {
			pool_spare = fresh;
			fresh = NULL;
		} /* else another put was quicker: ours goes back */
	}
	memcpy(c->st[c->len++], words, sizeof c->st[0]);
	weft_unlock(&cache_lock);
	if (fresh)
		sys_munmap(fresh, sizeof *fresh);
}

static void take_pooled_state(struct weft_thread *t)
{
	struct pool_chunk *c, *gone = NULL;

	if (t->has_malloc_state)
		return;
	weft_lock(&cache_lock);
	if ((c = pool_head) && c->len) {
		memcpy(t->malloc_state, c->st[--c->len], sizeof c->st[0]);
		t->has_malloc_state = 1;
		if (c->len == 0) {
			pool_head = c->next;
			if (pool_spare)
				gone = c;
			else
				pool_spare = c;
		}
	}
	weft_unlock(&cache_lock);
	if (gone)
		sys_munmap(gone, sizeof *gone);
}

/* Places descriptor, TLS and TCB at the top of [lo, lo + size). */
static struct weft_thread *lay_out(char *lo, size_t size, size_t guard,
				   char **tcb_out)
{
	char *top = lo + size;
	size_t tcbsz = host_tcb_size(), align = host_tls_align();
	char *tcb = (char *)(((uintptr_t)top - tcbsz) & ~(uintptr_t)(align - 1));
	char *tls_lo = tcb - (host_tls_area_size() - tcbsz);
	struct weft_thread *t =
		(void *)(((uintptr_t)tls_lo - sizeof *t) & ~(uintptr_t)63);

	if ((char *)t < lo + guard + MIN_STACK_LEFT)
		return NULL;
	*tcb_out = tcb;
	return t;
}

static void init_descriptor(struct weft_thread *t, char *tcb, char *lo,
			    size_t guard)
{
	uintptr_t ms[WEFT_MALLOC_WORDS];
	int has = t->has_malloc_state;
	char *map_base = t->map_base;
	size_t map_size = t->map_size;
	int guard_mapped = t->guard_mapped;

	memcpy(ms, t->malloc_state, sizeof ms);
	memset(t, 0, sizeof *t);
	memcpy(t->malloc_state, ms, sizeof ms);
	t->has_malloc_state = has;
	t->map_base = map_base;
	t->map_size = map_size;
	t->guard_mapped = guard_mapped;
	t->tcb = tcb;
	t->tidp = host_tid_word(tcb);
	t->guard_size = guard;
	t->stack_lo = lo + guard;
	t->stack_size = (size_t)((char *)t - t->stack_lo);
	/* Until the thread trims its stack at exit, any page may be in;
	   one page table page comes with a block, whatever its size. */
	t->resident = map_size ? map_size - guard + PAGE : 0;
}

/* The DTV and dynamic TLS of the block's last thread, once it is gone.
   Until then a cached block keeps them, and tls_anchor (in the block,
   written by stack_release) points at the start of the DTV: valgrind's
   memcheck scans the block at exit, and a DTV it reached only through
   the TCB's pointer into it would be reported "possibly lost". */
static void release_tls(struct weft_thread *t)
{
	if (!t->tls_released) {
		t->tls_released = 1;
		host_tls_release(t->tcb);
	}
}

static void cache_push(struct weft_thread *t)
{
	t->cache_prev = NULL;
	t->cache_gen = cache_gen;
	t->cache_next = cache_head;
	if (cache_head)
		cache_head->cache_prev = t;
	else
		cache_tail = t;
	cache_head = t;
	cache_bytes += t->resident;
	cache_count++;
}

static void cache_unlink(struct weft_thread *c)
{
	if (c->cache_prev)
		c->cache_prev->cache_next = c->cache_next;
	else
		cache_head = c->cache_next;
	if (c->cache_next)
		c->cache_next->cache_prev = c->cache_prev;
	else
		cache_tail = c->cache_prev;
	cache_bytes -= c->resident;
	cache_count--;
}

static int block_dead(const struct weft_thread *c)
{
	return __atomic_load_n(c->tidp, __ATOMIC_ACQUIRE) == 0 ||
	       c->cache_gen != cache_gen;
}

/* How far down the cache a creator looks for a block of its size: the
   lock stays short even when the cache holds a thousand blocks of other
   sizes, or of threads still exiting.  A block deeper than that is cold
   anyway; the bound trims it in time. */
#define TAKE_SCAN 32

static struct weft_thread *cache_take(size_t map_size, size_t guard)
{
	struct weft_thread *c;
	int n = 0;

	weft_lock(&cache_lock);
	for (c = cache_head; c && n < TAKE_SCAN; c = c->cache_next, n++)
		if (c->map_size == map_size && c->guard_size == guard &&
		    block_dead(c)) {
			cache_unlink(c);
			break;
		}
	if (n == TAKE_SCAN)
		c = NULL;
	weft_unlock(&cache_lock);
	if (c)
		release_tls(c);
	return c;
}

#ifndef MADV_FREE
#define MADV_FREE 8
#endif

/* Below the exiting thread's stack pointer, this much stays resident:
   the next thread on the block will touch those pages first. */
#define TRIM_KEEP (16UL << 10)
/* A shorter unused part is not worth a system call: small stacks are
   never trimmed, and cost what they are. */
#define TRIM_MIN (64UL << 10)

/* Pages probed just below the part that stays resident. */
#define PROBE_PAGES 16

/* Whether the thread used its stack below `end`.  A stack grows down a
   page at a time, so a thread that went deeper touched the pages right
   below `end`; if none of them is resident, there is nothing to give
   back and the madvise (a page-table walk and a TLB shoot-down on every
   CPU running the process) is skipped; mincore costs neither.  A frame
   that jumped over these pages without touching them (a huge alloca)
   leaves its pages to the cache's bound, which unmaps the block in
   time.  On error it answers "touched", which makes the caller trim. */
static int touched_below(uintptr_t end)
{
	unsigned char vec[PROBE_PAGES];
	uintptr_t from = end - PROBE_PAGES * PAGE;

	if (sys_mincore((void *)from, PROBE_PAGES * PAGE, vec) != 0)
		return 1;
	for (int i = 0; i < PROBE_PAGES; i++)
		if (vec[i] & 1)
			return 1;
	return 0;
}

/* Returning the unused part of a dead thread's stack (docs/lifecycle.md,
   "Returning stack memory").  The thread does it itself, just before it
   exits, so the pages it gives back are exactly those below its stack
   pointer and no other thread pays for the system call.  What stays is
   recorded as the block's resident bound, which the cache's byte bound
   counts. */
__attribute__((noinline)) void stack_trim_unused(struct weft_thread *t)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)t->stack_lo;
	uintptr_t end = (sp - TRIM_KEEP) & ~(PAGE - 1);
	int trim = weft_tunables.stack_trim;

	if (!t->map_base || trim == WEFT_TRIM_NONE || end < lo + TRIM_MIN ||
	    sp > (uintptr_t)t)
		return;
	if (!touched_below(end))
		goto trimmed; /* nothing down there to give back */
	if (sys_madvise((void *)lo, end - lo,
			trim == WEFT_TRIM_FREE ? MADV_FREE : MADV_DONTNEED) != 0)
		return;
trimmed:
	t->resident = (size_t)((uintptr_t)t->map_base + t->map_size - end) + PAGE;
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

/* Guard pages come in two kinds (docs/lifecycle.md, "Guards that
   debuggers can read"):

   - a PROT_NONE mapping of their own (mprotect), as glibc 2.36 makes
     them: a block takes two entries of the process's mapping table
     (vm.max_map_count, 65530 by default);
   - marks in the page tables (MADV_GUARD_INSTALL, Linux 6.13+): no
     entry of their own, and neighbouring blocks merge into one mapping.

   gdb 13 and 16 (Debian 12 and 13) cannot write a core file (gcore)
   through the marks: they copy a mapping from its low end in 1 MiB
   pieces read through /proc/PID/mem, a piece holding a guard page
   fails, and the rest of the mapping is left out, with the stacks, TCBs
   and descriptors above it: gdb then lists neither the threads nor
   their frames.  (gdb 18 reads around the marks.)

   WEFT_GUARD=auto (the default) gives fresh blocks the mapping while
   fewer than WEFT_GUARD_AUTO_MAPPINGS blocks have one, and the marks
   beyond: a program with up to a thousand threads or so looks to a
   debugger as under glibc 2.36, and one with tens of thousands stays
   far from the mapping limit.  The count is read without a lock, so
   creators racing past it may overshoot it by a few.

   The advice writes a page-table entry for every guard page: 2 KiB of
   page tables and about 5 us per MiB of guard (2 GiB and seconds for a
   1 TiB guard), where a PROT_NONE mapping costs the same at any size.
   Up to GUARD_ADVICE_MAX the advice is as fast as mprotect and its page
   tables stay under half a KiB; larger guards always get the mapping
   (measurements in docs/lifecycle.md, "Large guards").  Older kernels
   refuse the advice; then every guard is a mapping. */
#define GUARD_ADVICE_MAX (256UL << 10)

static int guard_by_advice = 1;	    /* 0 once the kernel refused it */
static unsigned long guards_mapped; /* blocks whose guard is a mapping */

static int guard_wants_advice(size_t guard)
{
	if (guard > GUARD_ADVICE_MAX ||
	    !__atomic_load_n(&guard_by_advice, __ATOMIC_RELAXED))
		return 0;
	switch (weft_tunables.guard) {
	case WEFT_GUARD_ADVISE:
		return 1;
	case WEFT_GUARD_MPROTECT:
		return 0;
	default:
		return __atomic_load_n(&guards_mapped, __ATOMIC_RELAXED) >=
		       WEFT_GUARD_AUTO_MAPPINGS;
	}
}

/* Makes the guard at `base`: returns 1 when it is a mapping of its own
   (counted until the block is unmapped), 0 for marks, -1 on failure. */
static int install_guard(char *base, size_t guard)
{
	if (guard_wants_advice(guard)) {
		if (sys_madvise(base, guard, MADV_GUARD_INSTALL) == 0)
			return 0;
		__atomic_store_n(&guard_by_advice, 0, __ATOMIC_RELAXED);
	}
	if (sys_mprotect(base, guard, PROT_NONE) != 0)
		return -1;
	__atomic_add_fetch(&guards_mapped, 1, __ATOMIC_RELAXED);
	return 1;
}

static void unmap_block(struct weft_thread *t)
{
	int counted = t->guard_mapped;

	sys_munmap(t->map_base, t->map_size);
	if (counted)
		__atomic_sub_fetch(&guards_mapped, 1, __ATOMIC_RELAXED);
	WEFT_COUNT(stacks_unmapped);
}

/* Transparent huge pages must not turn a thread's few pages of stack
   into 2 MiB.  Linux 6.7+ marks every MAP_STACK mapping "no huge pages"
   itself; older kernels need madvise(MADV_NOHUGEPAGE) on each fresh
   block.  Where it is redundant the advice is skipped: it would take
   the process's mmap lock for writing on every fresh block. */
static int need_nohuge_advice(void)
{
	static int need = -1;
	struct utsname u;
	int n = __atomic_load_n(&need, __ATOMIC_RELAXED), major, minor;

	if (n >= 0)
		return n;
	n = 1;
	if (sys_call1(SYS_uname, &u) == 0) {
		const char *p = u.release;

		for (major = 0; *p >= '0' && *p <= '9'; p++)
			major = major * 10 + (*p - '0');
		for (minor = 0, p += *p == '.'; *p >= '0' && *p <= '9'; p++)
			minor = minor * 10 + (*p - '0');
		n = major < 6 || (major == 6 && minor < 7);
	}
	__atomic_store_n(&need, n, __ATOMIC_RELAXED);
	return n;
}

/* A fresh block with its guard; returns its base or NULL, and in
   *guard_mapped whether the guard is a mapping of its own. */
static char *map_new(size_t map_size, size_t guard, int *guard_mapped)
{
	char *base = sys_mmap(NULL, map_size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK |
				      MAP_NORESERVE,
			      -1, 0);
	int kind = 0;

	if (sys_mmap_failed(base))
		return NULL;
	if (guard && (kind = install_guard(base, guard)) < 0) {
		sys_munmap(base, map_size);
		return NULL;
	}
	*guard_mapped = kind;
	if (need_nohuge_advice())
		sys_madvise(base, map_size, MADV_NOHUGEPAGE);
	WEFT_COUNT(stacks_mapped);
	return base;
}

/* The size of a weft-mapped block (stack rounded up to pages, plus the
   guard) and of its guard.  Sizes that wrap around are EINVAL, as glibc
   answers (allocate_stack): a guard whose rounding to pages overflows,
   or a stack and guard whose sum does, with the stack aligned down to
   the static TLS alignment first as glibc does.  A sum that glibc would
   still pass to mmap, which refuses it, is EAGAIN; so is one that only
   the rounding to pages makes overflow.  A stack too small for TLS and
   descriptor is enlarged. */
static int block_size(const struct weft_stack_request *req, size_t *size,
		      size_t *guard)
{
	size_t stack = req->stacksize ? req->stacksize : stack_default_size();
	size_t least = host_tls_area_size() + sizeof(struct weft_thread) +
		       2 * MIN_STACK_LEFT;
	size_t g = round_up(req->guardsize, PAGE);

	if (g < req->guardsize ||
	    __builtin_add_overflow(stack & ~(host_tls_align() - 1), g, size))
		return EINVAL;
	if (stack < least)
		stack = least;
	if (__builtin_add_overflow(stack, PAGE - 1, &stack) ||
	    __builtin_add_overflow(stack & ~(PAGE - 1), g, size))
		return EAGAIN;
	*guard = g;
	return 0;
}

struct weft_thread *stack_acquire(const struct weft_stack_request *req,
				  int *err)
{
	struct weft_thread *t;
	char *lo, *tcb = NULL;
	size_t guard, size;
	int guard_mapped;

	if (req->user_top) {
		/* The user's memory: same layout, no guard, never ours.  Its
		   ends may be at any address: lay_out aligns downwards from
		   the top.  A size reaching below address 0 (the attribute's
		   top wrapped around) is refused: glibc would write its
		   descriptor near the top of the address space and crash. */
		if ((uintptr_t)req->user_top < req->user_size) {
			*err = EINVAL;
			return NULL;
		}
		lo = req->user_top - req->user_size;
		size = req->user_size;
		guard = 0;
		t = lay_out(lo, size, 0, &tcb);
		if (!t) {
			*err = EINVAL;
			return NULL;
		}
		t->has_malloc_state = 0;
		t->map_base = NULL;
		t->map_size = 0;
		t->guard_mapped = 0;
	} else {
		if ((*err = block_size(req, &size, &guard)) != 0)
			return NULL;
		t = cache_take(size, guard);
		if (t) {
			WEFT_COUNT(stacks_reused);
			lo = t->map_base;
			lay_out(lo, size, guard, &tcb);
		} else {
			if (!(lo = map_new(size, guard, &guard_mapped))) {
				*err = EAGAIN;
				return NULL;
			}
			/* fresh memory is zero: no malloc state */
			t = lay_out(lo, size, guard, &tcb);
			t->map_base = lo;
			t->map_size = size;
			t->guard_mapped = guard_mapped;
		}
	}
	init_descriptor(t, tcb, lo, guard);
	take_pooled_state(t);
	if (host_tcb_prepare(tcb, lo, size) != 0) {
		t->tls_released = 1; /* nothing was allocated */
		stack_release(t);
		*err = EAGAIN;
		return NULL;
	}
	if (t->has_malloc_state) {
		host_malloc_state_install(tcb, t->malloc_state);
		t->has_malloc_state = 0;
		WEFT_COUNT(malloc_handoffs);
	}
	return t;
}

/* Must hold cache_lock.  Detaches the oldest dead mappings until the
   cache fits both bounds again (resident bytes and count); returns them
   as a list (through cache_next) to unmap after the lock is dropped. */
static struct weft_thread *cache_trim(void)
{
	struct weft_thread *victims = NULL, *v;
	size_t limit = weft_tunables.stack_cache_bytes;
	size_t count = weft_tunables.stack_cache_count;

	/* A spinner may be reading a cached thread's TCB (runstate.h): the
	   next release trims instead. */
	if (!runstate_may_unmap())
		return NULL;
	while (cache_bytes > limit || cache_count > count) {
		for (v = cache_tail; v && !block_dead(v); v = v->cache_prev)
			;
		if (!v)
			break; /* the rest are still exiting */
		cache_unlink(v);
		v->cache_next = victims;
		victims = v;
	}
	return victims;
}

void stack_release(struct weft_thread *t)
{
	struct weft_thread *victims;

	if (!t->map_base) {
		/* A user stack may be freed by its owner once the thread is
		   reclaimed: keep only the malloc state. */
		release_tls(t);
		if (t->has_malloc_state)
			pool_put(t->malloc_state);
		return;
	}
	if (!t->tls_released)
		t->tls_anchor = host_tls_dtv_block(t->tcb);
	weft_lock(&cache_lock);
	cache_push(t);
	victims = cache_trim();
	weft_unlock(&cache_lock);
	while (victims) {
		struct weft_thread *v = victims;

		victims = v->cache_next;
		release_tls(v);
		if (v->has_malloc_state)
			pool_put(v->malloc_state);
		unmap_block(v);
	}
}

void stack_cache_lock_for_fork(void)
{
	weft_lock(&cache_lock);
}

void stack_cache_unlock_after_fork(void)
{
	weft_unlock(&cache_lock);
}

/* In a fork child every cached mapping is free to reuse: the threads that
   were still exiting in the parent do not exist here.  Bumping the
   generation says so without touching the blocks: the child shares the
   parent's pages, and on this project's VM the first touch of each page
   in a new process is a fault, so a walk over a thousand cached blocks
   cost 30 ms per fork (46 ms for fork+exit+wait with 1,000 cached
   blocks, glibc 1.2 ms; bench/RESULTS.md). */
void stack_cache_reset_in_child(void)
{
	weft_lock_reset(&cache_lock);
	if (cache_head) /* the cached blocks are the parent's: dead here */
		cache_gen++;
}
