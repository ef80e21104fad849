/* pthread_t handles that detect staleness.

   NPTL makes pthread_t the descriptor's address, and cached descriptors
   are reused, so a handle of a thread that was already joined silently
   names whichever thread got the memory next.  weft's pthread_t is
   instead a slot number plus that slot's generation:

       bit 63      bits 62..32        bits 31..0
       [  1  ][ generation (31 bits) ][ slot index ]

   A slot's generation advances each time the slot is freed (when the
   thread is joined, or when a detached thread ends), so an old handle no
   longer matches and calls on it return ESRCH.  Bit 63 is never set in a
   user-space address, so a weft handle can't be mistaken for one of
   glibc's (a TCB address).  Generations wrap after 2^31 reuses of one
   slot.

   Slots live in chunks of 1024 allocated on demand and never freed;
   4096 chunks cover the kernel's largest possible pid space (2^22), so
   weft sets no limit of its own on the number of threads.

   A lookup can race with the join (or detach) that frees the slot: the
   descriptor it found may then be reused by a new thread (its memory
   zeroed and filled again) or unmapped by the stack cache.  Two rules
   keep a caller from ever acting on such a descriptor:

   - what a caller needs before it acts (the TCB, the origin) is copied
     into the slot, which is never freed, and read from there; the
     generation is read again after the copies, so values of a later
     occupant are never returned for an old handle (registry_lookup);
   - a caller that must touch the descriptor (core/target.c) holds the
     slot first: a count in the slot, checked against the generation
     the way target.c checks ops_closed, and registry_remove waits
     until no hold is left before the descriptor can go:

       holder                               registry_remove
       holds += 1                           gen += 1
       if gen changed: holds -= 1, ESRCH    wait until holds == 0
       ... use the descriptor ...           free the slot; the caller
       holds -= 1, wake if gen changed      then reuses or unmaps

     Both sides are sequentially consistent, so either the holder sees
     the new generation or the remover sees the hold. */
#include <errno.h>
#include <limits.h>
#include <sys/mman.h>

#include "kernel/futex.h"
#include "lock.h"
#include "thread.h"

#define SLOTS_PER_CHUNK 1024u
#define MAX_CHUNKS 4096u
#define HANDLE_TAG (1ULL << 63)
#define GEN_MASK 0x7fffffffu
/* next_free of a removed slot whose holders are still being waited for
   (never an index + 1: those stay below 2^22 + 1). */
#define SLOT_DRAINING UINT32_MAX

struct slot {
	uint32_t gen;		 /* atomic; current generation */
	uint32_t next_free;	 /* free list link (index + 1, 0 = end) */
	struct weft_thread *thr; /* atomic; NULL when free */
	char *tcb;		 /* atomic; copies of the occupant's fields */
	int origin;		 /* atomic */
	int holds;		 /* atomic; registry_hold's count */
};

static struct slot *chunks[MAX_CHUNKS];
static uint32_t nslots;	   /* slots ever handed out */
static uint32_t free_head; /* index + 1 of the first free slot, 0 = none */
static unsigned long live;
static unsigned long peak; /* most slots in use at once (WEFT_STATS) */
static weft_lock_t reg_lock = WEFT_LOCK_INIT;

static struct slot *slot_at(uint32_t idx)
{
	struct slot *c = __atomic_load_n(&chunks[idx / SLOTS_PER_CHUNK],
					 __ATOMIC_ACQUIRE);

	return c ? &c[idx % SLOTS_PER_CHUNK] : NULL;
}

static uint64_t make_handle(uint32_t idx, uint32_t gen)
{
	return HANDLE_TAG | ((uint64_t)gen << 32) | idx;
}

/* A fresh chunk of slots, mapped with no lock held. */
static struct slot *new_chunk(void)
{
	struct slot *mem = sys_mmap(NULL, SLOTS_PER_CHUNK * sizeof(struct slot),
				    PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (sys_mmap_failed(mem))
		return NULL;
	for (uint32_t i = 0; i < SLOTS_PER_CHUNK; i++)
		mem[i].gen = 1;
	return mem;
}

/* Called with reg_lock held: the next slot, from the free list or the
   end of the table; NULL when the table's last chunk is full. */
static struct slot *take_slot(uint32_t *idx)
{
	if (free_head) {
		struct slot *s = slot_at(free_head - 1);

		*idx = free_head - 1;
		free_head = s->next_free;
		return s;
	}
	if (nslots / SLOTS_PER_CHUNK >= MAX_CHUNKS || !slot_at(nslots))
		return NULL;
	*idx = nslots++;
	return slot_at(*idx);
}

int registry_add(struct weft_thread *t)
{
	uint32_t idx;
	struct slot *s, *fresh = NULL;

	weft_lock(&reg_lock);
	/* Growing maps memory: that system call is made with the lock
	   dropped (once per 1024 threads), so creators never wait on it. */
	while (!(s = take_slot(&idx))) {
		uint32_t c = nslots / SLOTS_PER_CHUNK;

		weft_unlock(&reg_lock);
		if (c >= MAX_CHUNKS || (!fresh && !(fresh = new_chunk()))) {
			if (fresh)
				sys_munmap(fresh, SLOTS_PER_CHUNK * sizeof(struct slot));
			return -EAGAIN;
		}
		weft_lock(&reg_lock);
		if (!chunks[c]) {
			__atomic_store_n(&chunks[c], fresh, __ATOMIC_RELEASE);
			fresh = NULL;
		} /* else another creator was quicker: ours goes back */
	}
	if (++live > peak)
		peak = live;
	t->slot = idx;
	t->handle = make_handle(idx, s->gen);
	/* Release stores: a reader of an old handle that sees one of them
	   also sees the generation that made its handle stale. */
	__atomic_store_n(&s->tcb, t->tcb, __ATOMIC_RELEASE);
	__atomic_store_n(&s->origin, t->origin, __ATOMIC_RELEASE);
	__atomic_store_n(&s->thr, t, __ATOMIC_RELEASE);
	weft_unlock(&reg_lock);
	if (fresh)
		sys_munmap(fresh, SLOTS_PER_CHUNK * sizeof(struct slot));
	return 0;
}

/* Must hold reg_lock: the slot goes back to the free list. */
static void free_slot(struct slot *s, uint32_t idx)
{
	s->next_free = free_head;
	free_head = idx + 1;
}

void registry_remove(struct weft_thread *t)
{
	struct slot *s = slot_at(t->slot);
	uint32_t gen;
	int n;

	/* Invalidate every outstanding handle; the slot is free at once
	   unless a holder still uses the descriptor (see above). */
	weft_lock(&reg_lock);
	gen = (s->gen + 1) & GEN_MASK;
	__atomic_store_n(&s->gen, gen ? gen : 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->thr, NULL, __ATOMIC_RELEASE);
	live--;
	if (__atomic_load_n(&s->holds, __ATOMIC_SEQ_CST) == 0) {
		free_slot(s, t->slot);
		weft_unlock(&reg_lock);
		return;
	}
	/* Draining: the holders are waited for with no lock held (they
	   never take it); a fork child frees a slot left in this state. */
	s->next_free = SLOT_DRAINING;
	weft_unlock(&reg_lock);
	while ((n = __atomic_load_n(&s->holds, __ATOMIC_SEQ_CST)) > 0)
		futex_wait(&s->holds, n, WEFT_FUTEX_PRIVATE);
	weft_lock(&reg_lock);
	free_slot(s, t->slot);
	weft_unlock(&reg_lock);
}

/* The slot a weft handle names, and the generation it expects; NULL
   when the index is out of the table. */
static struct slot *slot_of_handle(pthread_t h, uint32_t *gen)
{
	uint64_t v = (uint64_t)h;
	uint32_t idx = (uint32_t)v;

	*gen = (uint32_t)(v >> 32) & GEN_MASK;
	if (idx / SLOTS_PER_CHUNK >= MAX_CHUNKS)
		return NULL;
	return slot_at(idx);
}

struct weft_thread *registry_lookup(pthread_t h, struct registry_view *view,
				    int *err)
{
	uint32_t gen;
	struct slot *s;
	struct weft_thread *t;

	*err = 0;
	if (!((uint64_t)h & HANDLE_TAG))
		return NULL;
	*err = ESRCH;
	if (!(s = slot_of_handle(h, &gen)))
		return NULL;
	t = __atomic_load_n(&s->thr, __ATOMIC_ACQUIRE);
	if (!t || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen)
		return NULL;
	view->tcb = __atomic_load_n(&s->tcb, __ATOMIC_RELAXED);
	view->origin = __atomic_load_n(&s->origin, __ATOMIC_RELAXED);
	/* The copies are this generation's only if it still is current. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen)
		return NULL;
	*err = 0;
	return t;
}

struct weft_thread *registry_hold(pthread_t h)
{
	uint32_t gen;
	struct slot *s = slot_of_handle(h, &gen);
	struct weft_thread *t;

	if (!s)
		return NULL;
	__atomic_fetch_add(&s->holds, 1, __ATOMIC_SEQ_CST);
	t = __atomic_load_n(&s->thr, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) != gen || !t) {
		registry_release(h);
		return NULL;
	}
	return t;
}

void registry_release(pthread_t h)
{
	uint32_t gen;
	struct slot *s = slot_of_handle(h, &gen);

	if (__atomic_sub_fetch(&s->holds, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) != gen)
		futex_wake(&s->holds, INT_MAX, WEFT_FUTEX_PRIVATE);
}

unsigned long registry_live_count(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

unsigned long registry_peak_count(void)
{
	return __atomic_load_n(&peak, __ATOMIC_RELAXED);
}

void registry_lock_for_fork(void)
{
	weft_lock(&reg_lock);
}

void registry_unlock_after_fork(void)
{
	weft_unlock(&reg_lock);
}

/* In a fork child: every thread but `self` is gone.  `drop` reclaims
   each one's memory; the slots are freed here. */
void registry_reset_in_child(struct weft_thread *self,
			     void (*drop)(struct weft_thread *))
{
	weft_lock_reset(&reg_lock);
	for (uint32_t i = 0; i < nslots; i++) {
		struct slot *s = slot_at(i);
		struct weft_thread *t = s->thr;

		/* Holders that were in the parent's other threads are gone
		   (written only when set: the page is the parent's too), and
		   so is a remover that was waiting for them. */
		if (s->holds)
			s->holds = 0;
		if (!t && s->next_free == SLOT_DRAINING)
			free_slot(s, i);
		if (!t || t == self)
			continue;
		registry_remove(t);
		drop(t);
	}
	if (peak != live)
		peak = live; /* counters restart in a child */
}
