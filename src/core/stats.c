/* WEFT_STATS=1: the contention table and the report at exit.

   The table counts, per lock, the waits that took a lock's slow path.
   It is an open-addressing hash table keyed by the lock's address, made
   of a chain of blocks, each twice the size of the one before:

     ls_head -> [block: 512 slots] -> [1024 slots] -> [2048 slots] -> ...

   A key is looked for in each block in turn, by linear probing from its
   hash for at most LS_PROBES slots; a block whose probe run is full
   passes the key on to the next block, which is mapped (mmap) the first
   time it is needed.  So the table has no fixed size, never moves an
   entry, and never needs a lock:
     - a slot goes from empty to its key once, by compare-and-swap, and
       keeps that key for the life of the process;
     - two threads inserting the same key walk the same probe run and
       meet at the same empty slot, so the loser of the CAS finds the
       winner's key there: a key is never inserted twice;
     - counters are updated with atomic adds; the maximum with a CAS.
   A lock destroyed and another made at the same address share an entry
   (the report is "by address"). */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "kernel/syscall.h"
#include "stats.h"
#include "thread.h"
#include "tunables.h"

#define LS_FIRST_CAP 512
#define LS_PROBES 32

int weft_stats_on;

struct ls_slot {
	uintptr_t key;	  /* (address << 3) | kind; 0 = empty */
	uintptr_t site;	  /* return address into the first waiter's code */
	unsigned long count, wait_ns, max_ns;
};

struct ls_block {
	struct ls_block *next; /* atomic; NULL until needed */
	size_t cap;	       /* slots, a power of two */
	size_t bytes;	       /* size of the mapping */
	struct ls_slot slot[];
};

/* Where the report goes: the stderr the process started with.  Many
   programs close stderr in their own atexit handlers (coreutils'
   close_stdout, xz), which run before ours (registered first, run
   last), so a duplicate is kept, and found again by its identity. */
static int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;

static struct ls_block *ls_head;
static unsigned long ls_lost; /* waits not recorded: mmap failed */
/* waiters that yielded before a sleep, and those that took the mutex so */
static unsigned long yield_waits, yield_takes, cond_yields, cond_yield_picks;
static unsigned long sem_yields, sem_yield_takes;
/* mutex turns that ran out shortly before the lock came (near misses),
   and waits that slept without a turn, backed off after them */
static unsigned long yield_near_misses, yield_skips;

/* libweft's own code: the frame walk stops at the first return address
   outside it.  Empty when weft is linked statically into the program,
   where the range would include the program's code too. */
static uintptr_t text_lo, text_hi;

long stats_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* ------------------------------------------------------------- the table */

static size_t ls_hash(uintptr_t key, size_t cap)
{
	/* Fibonacci hashing: the multiply mixes the address bits upwards. */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

/* The block after `*link`, mapped now if nobody has yet. */
static struct ls_block *ls_grow(struct ls_block **link, size_t cap)
{
	size_t bytes = sizeof(struct ls_block) + cap * sizeof(struct ls_slot);
	struct ls_block *b, *none = NULL;

	bytes = (bytes + 4095) & ~(size_t)4095;
	b = sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_mmap_failed(b))
		return __atomic_load_n(link, __ATOMIC_ACQUIRE);
	b->cap = cap;
	b->bytes = bytes;
	if (__atomic_compare_exchange_n(link, &none, b, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return b;
	sys_munmap(b, bytes); /* another thread was quicker */
	return none;
}

/* The slot of `key` in block `b`, claimed if new; NULL when its probe
   run is full of other keys. */
static struct ls_slot *ls_probe(struct ls_block *b, uintptr_t key)
{
	size_t mask = b->cap - 1, h = ls_hash(key, b->cap);

	for (size_t i = 0; i < LS_PROBES && i < b->cap; i++) {
		struct ls_slot *s = &b->slot[(h + i) & mask];
		uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);

		if (k == 0 && __atomic_compare_exchange_n(&s->key, &k, key, 0,
							  __ATOMIC_ACQ_REL,
							  __ATOMIC_ACQUIRE))
			return s;
		if (k == key) /* found, or inserted by a racing thread */
			return s;
	}
	return NULL;
}

static struct ls_slot *ls_find(uintptr_t key)
{
	struct ls_block **link = &ls_head;
	size_t cap = LS_FIRST_CAP;

	for (;;) {
		struct ls_block *b = __atomic_load_n(link, __ATOMIC_ACQUIRE);
		struct ls_slot *s;

		if (!b && !(b = ls_grow(link, cap)))
			return NULL;
		if ((s = ls_probe(b, key)))
			return s;
		cap = b->cap * 2;
		link = &b->next;
	}
}

/* The return address into the code that called weft: follows the frame
   pointers of weft's own functions (libweft is built with
   -fno-omit-frame-pointer) and stops at the first return address
   outside libweft, before ever reading a frame of the program, which
   may not keep frame pointers.  0 when it cannot tell. */
__attribute__((noinline)) static uintptr_t caller_outside_weft(void)
{
	uintptr_t *fp = __builtin_frame_address(0);

	if (text_lo == text_hi)
		return 0;
	for (int depth = 0; depth < 32 && fp; depth++) {
		uintptr_t ra = fp[1], *up = (uintptr_t *)fp[0];

		if (ra < text_lo || ra >= text_hi)
			return ra;
		/* Callers' frames lie above ours on the stack. */
		if (up <= fp || ((uintptr_t)up & 7))
			return 0;
		fp = up;
	}
	return 0;
}

void lockstat_record(const volatile void *lock, enum lockstat_kind kind,
		     long t0)
{
	unsigned long d = (unsigned long)(stats_now() - t0);
	struct ls_slot *s = ls_find(((uintptr_t)lock << 3) | kind);
	unsigned long max;

	if (!s) {
		__atomic_fetch_add(&ls_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->wait_ns, d, __ATOMIC_RELAXED);
	max = __atomic_load_n(&s->max_ns, __ATOMIC_RELAXED);
	while (d > max && !__atomic_compare_exchange_n(&s->max_ns, &max, d, 1,
						       __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
	if (!__atomic_load_n(&s->site, __ATOMIC_RELAXED)) {
		uintptr_t none = 0, site = caller_outside_weft();
		__atomic_compare_exchange_n(&s->site, &none, site, 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

void stats_reset_in_child(void)
{
	/* The parent's blocks stay mapped (copy-on-write) but unreachable:
	   the child counts its own waits only, like weft_counters. */
	if (__atomic_load_n(&ls_head, __ATOMIC_RELAXED))
		__atomic_store_n(&ls_head, NULL, __ATOMIC_RELEASE);
	if (ls_lost)
		ls_lost = 0;
	if (yield_waits)
		yield_waits = yield_takes = 0;
	if (cond_yields)
		cond_yields = cond_yield_picks = 0;
	if (sem_yields)
		sem_yields = sem_yield_takes = 0;
	if (yield_near_misses)
		yield_near_misses = yield_skips = 0;
}

void stats_count_yield_wait(int took)
{
	__atomic_fetch_add(&yield_waits, 1, __ATOMIC_RELAXED);
	if (took)
		__atomic_fetch_add(&yield_takes, 1, __ATOMIC_RELAXED);
}

void stats_count_yield_near_miss(void)
{
	__atomic_fetch_add(&yield_near_misses, 1, __ATOMIC_RELAXED);
}

void stats_count_yield_skip(void)
{
	__atomic_fetch_add(&yield_skips, 1, __ATOMIC_RELAXED);
}

void stats_count_cond_yield(int picked)
{
	__atomic_fetch_add(&cond_yields, 1, __ATOMIC_RELAXED);
	if (picked)
		__atomic_fetch_add(&cond_yield_picks, 1, __ATOMIC_RELAXED);
}

void stats_count_sem_yield(int took)
{
	__atomic_fetch_add(&sem_yields, 1, __ATOMIC_RELAXED);
	if (took)
		__atomic_fetch_add(&sem_yield_takes, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ the report */

/* One output line, built without stdio (malloc, locks) and written with
   write(2) to report_fd(). */
struct line {
	char b[768];
	size_t n;
};

static void put_s(struct line *l, const char *s)
{
	while (*s && l->n < sizeof l->b - 1)
		l->b[l->n++] = *s++;
}

static void put_u(struct line *l, unsigned long v)
{
	char d[24];
	int i = 0;

	do
		d[i++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (i && l->n < sizeof l->b - 1)
		l->b[l->n++] = d[--i];
}

static void put_x(struct line *l, unsigned long v)
{
	char d[24];
	int i = 0;

	do
		d[i++] = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	put_s(l, "0x");
	while (i && l->n < sizeof l->b - 1)
		l->b[l->n++] = d[--i];
}

static void put_kv(struct line *l, const char *key, unsigned long v)
{
	put_s(l, " ");
	put_s(l, key);
	put_s(l, "=");
	put_u(l, v);
}

static int same_file(int fd)
{
	struct stat st;

	return fd >= 0 && sys_call2(SYS_fstat, fd, &st) == 0 &&
	       st.st_dev == out_dev && st.st_ino == out_ino;
}

/* The saved duplicate if it still is the start-up stderr (a program
   may have closed it and reused the number), else fd 2. */
static int report_fd(void)
{
	return same_file(out_fd) ? out_fd : 2;
}

static void emit(struct line *l)
{
	size_t off = 0;
	int fd = report_fd();

	l->b[l->n++] = '\n';
	while (off < l->n) {
		long r = sys_call3(SYS_write, fd, l->b + off, l->n - off);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	l->n = 0;
}

static const char *kind_name(unsigned k)
{
	switch (k) {
	case LS_MUTEX: return "mutex";
	case LS_RWLOCK_RD: return "rwlock-read";
	case LS_RWLOCK_WR: return "rwlock-write";
	case LS_SPIN: return "spin";
	default: return "?";
	}
}

/* site=SYMBOL+0xOFF in=OBJECT, or site=OBJECT+0xOFF (an offset for
   addr2line) when the object does not export the function's name. */
static void put_site(struct line *l, uintptr_t ra)
{
	Dl_info di;

	put_s(l, " site=");
	/* ra - 1: the call itself, not what follows it. */
	if (!ra || !dladdr((void *)(ra - 1), &di) || !di.dli_fname) {
		put_s(l, "?");
		return;
	}
	if (di.dli_sname && di.dli_saddr) {
		put_s(l, di.dli_sname);
		put_s(l, "+");
		put_x(l, ra - (uintptr_t)di.dli_saddr);
	} else {
		const char *base = di.dli_fname;
		for (const char *p = base; *p; p++)
			if (*p == '/')
				base = p + 1;
		put_s(l, *base ? base : "?");
		put_s(l, "+");
		put_x(l, ra - (uintptr_t)di.dli_fbase);
	}
	put_s(l, " in=");
	put_s(l, *di.dli_fname ? di.dli_fname : "(main program)");
}

static int ls_before(const struct ls_slot *a, const struct ls_slot *b)
{
	if (a->wait_ns != b->wait_ns)
		return a->wait_ns > b->wait_ns;
	return a->count > b->count;
}

/* Heap sort, most waited-for first: no malloc, no recursion. */
static void sift(struct ls_slot **v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1, m = i;
		if (c < n && ls_before(v[m], v[c]))
			m = c;
		if (c + 1 < n && ls_before(v[m], v[c + 1]))
			m = c + 1;
		if (m == i)
			return;
		struct ls_slot *t = v[i];
		v[i] = v[m];
		v[m] = t;
		i = m;
	}
}

static void ls_sort(struct ls_slot **v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t end = n; end-- > 1;) {
		struct ls_slot *t = v[0];
		v[0] = v[end];
		v[end] = t;
		sift(v, 0, end);
	}
	/* The heap puts the "largest" last: ls_before makes that the
	   least waited-for, so the array now runs from most to least. */
}

/* Calls fn on every used slot; returns how many there were. */
static size_t ls_each(void (*fn)(struct ls_slot *, void *), void *arg)
{
	size_t n = 0;

	for (struct ls_block *b = __atomic_load_n(&ls_head, __ATOMIC_ACQUIRE); b;
	     b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE))
		for (size_t i = 0; i < b->cap; i++)
			if (__atomic_load_n(&b->slot[i].key, __ATOMIC_ACQUIRE)) {
				if (fn)
					fn(&b->slot[i], arg);
				n++;
			}
	return n;
}

struct gather {
	struct ls_slot **v;
	size_t n, cap;
	unsigned long waits, wait_ns;
};

static void gather_one(struct ls_slot *s, void *arg)
{
	struct gather *g = arg;

	g->waits += s->count;
	g->wait_ns += s->wait_ns;
	if (g->n < g->cap)
		g->v[g->n++] = s;
}

static void report_locks(void)
{
	struct gather g = {0};
	size_t top = weft_tunables.stats_top, bytes;
	struct line l = {.n = 0};

	g.cap = ls_each(NULL, NULL);
	bytes = (g.cap * sizeof *g.v + 4095) & ~(size_t)4095;
	if (g.cap) {
		g.v = sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sys_mmap_failed(g.v)) {
			g.v = NULL;
			g.cap = 0;
		}
	}
	ls_each(gather_one, &g);
	ls_sort(g.v, g.n);
	if (!top || top > g.n)
		top = g.n;
	put_s(&l, "weft-stats:");
	put_kv(&l, "contended_locks", g.n);
	put_kv(&l, "waits", g.waits);
	put_kv(&l, "wait_ns", g.wait_ns);
	put_kv(&l, "shown", top);
	put_kv(&l, "yield_waits", yield_waits);
	put_kv(&l, "yield_takes", yield_takes);
	put_kv(&l, "yield_near_misses", yield_near_misses);
	put_kv(&l, "yield_skips", yield_skips);
	put_kv(&l, "cond_yields", cond_yields);
	put_kv(&l, "cond_yield_picks", cond_yield_picks);
	put_kv(&l, "sem_yields", sem_yields);
	put_kv(&l, "sem_yield_takes", sem_yield_takes);
	if (ls_lost)
		put_kv(&l, "unrecorded_waits", ls_lost);
	emit(&l);
	for (size_t i = 0; i < top; i++) {
		struct ls_slot *s = g.v[i];
		put_s(&l, "weft-stats: lock=");
		put_x(&l, s->key >> 3);
		put_s(&l, " kind=");
		put_s(&l, kind_name(s->key & 7));
		put_kv(&l, "contentions", s->count);
		put_kv(&l, "wait_ns", s->wait_ns);
		put_kv(&l, "max_wait_ns", s->max_ns);
		put_site(&l, s->site);
		emit(&l);
	}
	if (g.v)
		sys_munmap(g.v, bytes);
}

static void stats_report(void)
{
	struct line l = {.n = 0};

	put_s(&l, "weft-stats:");
	put_kv(&l, "pid", (unsigned long)sys_getpid());
	put_kv(&l, "active", (unsigned long)weft_is_active);
	put_kv(&l, "threads_created", weft_counters.created);
	put_kv(&l, "peak_alive", registry_peak_count());
	put_kv(&l, "threads_adopted", weft_counters.adopted);
	put_kv(&l, "stack_cache_hits", weft_counters.stacks_reused);
	put_kv(&l, "stack_cache_misses", weft_counters.stacks_mapped);
	emit(&l);
	report_locks();
}

/* libweft's code range, from linker-defined symbols of this object. */
static void find_own_text(void)
{
	extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
	extern const char __etext[] __attribute__((visibility("hidden")));
	uintptr_t lo = (uintptr_t)&__ehdr_start;

	/* Linked into the program itself: the range would cover the
	   program's frames too, whose frame pointers are not ours to trust. */
	if (getauxval(AT_PHDR) == lo + __ehdr_start.e_phoff)
		return;
	text_lo = lo;
	text_hi = (uintptr_t)__etext;
}

/* A private duplicate of stderr, above the numbers programs use. */
static void keep_stderr(void)
{
	struct stat st;
	long fd;

	if (sys_call2(SYS_fstat, 2, &st) != 0)
		return;
	fd = sys_call3(SYS_fcntl, 2, F_DUPFD_CLOEXEC, 100);
	if (fd < 0)
		return;
	out_dev = st.st_dev;
	out_ino = st.st_ino;
	out_fd = (int)fd;
}

void stats_init(void)
{
	keep_stderr();
	find_own_text();
	__atomic_store_n(&weft_stats_on, 1, __ATOMIC_RELEASE);
	atexit(stats_report);
}
