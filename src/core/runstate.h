/* Whether a lock's holder may be running: hints for spinners.

   A waiter that finds a lock held spins only while that can pay: while
   the holder can release it soon, that is while the holder runs.  The
   kernel does not say whether another thread runs, but two things tell
   when it surely does not:

   - it sleeps in one of weft's waits (a mutex, a condvar): it marks
     itself blocked before the futex call and running after it returns,
     so a holder woken but not yet run still counts as blocked (the
     case that made spinning fail: the woken holder waits in the run
     queue of the very CPU the spinner keeps busy);
   - its CPU (rseq cpu_id, kept by the kernel in its TCB) is the
     spinner's own: then it waits for that CPU, which the spinner holds.

   Each thread has a slot in a table indexed by its thread id (a cache:
   a thread whose slot another live thread holds has no slot, and is
   "unknown"; unknown holders may run).  The holder's tid is what locks
   record (the mutex's owner field, the internal lock's word).

   A holder's TCB is read only inside a reader section, and weft unmaps
   a dead thread's block only when no reader section is open
   (runstate_may_unmap; stack.c), so the read never faults.  Threads on
   user stacks and threads glibc made have no CPU in their slot (their
   memory is not weft's to keep). */
#ifndef WEFT_CORE_RUNSTATE_H
#define WEFT_CORE_RUNSTATE_H

#include <stddef.h>
#include <stdint.h>

struct runstate_slot {
	int tid;			/* 0: free */
	int blocked;			/* in one of weft's waits */
	const volatile uint32_t *cpu;	/* its rseq cpu_id, or NULL */
};

/* Whether this thread may spin at all, from its affinity: the cache
   of core/spin_policy.h, kept here beside the slot pointer. */
struct spin_policy {
	unsigned short cpus;	/* CPUs it may run on (saturating);
				   valid while `left` > 0 ... */
	unsigned short left;	/* slow paths until the next look-up */
	unsigned gen;		/* ... and `gen` is spin_policy_gen */
};

/* The calling thread's slot and spin policy.  Every contended wait
   reads both, and a wait is often the thread's first touch of its own
   data since it last slept: one 16-byte object, so one cache line.
   (Apart, with other such lines, they made the lock ring with 32 to 128
   threads on one CPU 3-4 % slower than glibc: bench/RESULTS.md,
   2026-11-29-footprint.) */
struct runstate_self {
	struct runstate_slot *slot;
	struct spin_policy policy;
} __attribute__((aligned(16)));

extern __thread struct runstate_self weft_runstate_self
	__attribute__((tls_model("initial-exec")));

/* The calling thread takes a slot (tid: its thread id; cpu: its rseq
   cpu_id, or NULL when its TCB may be freed by others than weft).
   leave gives it back, before the thread's memory can go. */
void runstate_enter(int tid, const volatile uint32_t *cpu);
void runstate_leave(void);
/* Fork child: the parent's other threads are gone; the forking thread
   (`tid`, 0 when it had no slot) keeps one. */
void runstate_reset_in_child(int tid, const volatile uint32_t *cpu);

/* Around a wait that sleeps in the kernel. */
static inline void runstate_blocked(int blocked)
{
	struct runstate_slot *s = weft_runstate_self.slot;

	if (s)
		__atomic_store_n(&s->blocked, blocked, __ATOMIC_RELEASE);
}

/* 0 when the thread `tid` surely does not run now (see above); 1 when it
   may, or is unknown (tid 0 included). */
int runstate_may_run(int tid);

/* The slots, by thread id (a cache; a power of two). */
#define RUNSTATE_SLOTS 4096u
extern struct runstate_slot weft_runstate_slots[RUNSTATE_SLOTS];

static inline struct runstate_slot *runstate_slot_of(int tid)
{
	return &weft_runstate_slots[(unsigned)tid & (RUNSTATE_SLOTS - 1)];
}

/* The slot of the thread `tid` if it holds one (it is known); NULL for an
   unknown thread (tid 0 included). */
static inline struct runstate_slot *runstate_known(int tid)
{
	struct runstate_slot *s = runstate_slot_of(tid);

	return tid > 0 && __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == tid
		       ? s
		       : NULL;
}

int runstate_runs_elsewhere_slow(struct runstate_slot *s, int tid);

/* 1 when the thread `tid` is known, not asleep in a weft wait, and last
   ran on a CPU other than the caller's (both known): it may be running
   beside the caller.  0 otherwise, unknown included.  What lets a
   thread confined to one CPU spin (core/spin_policy.h).  The answer for
   an unknown or sleeping thread is inline: every contended lock of a
   thread confined to one CPU asks, and usually for a sleeper. */
static inline int runstate_runs_elsewhere(int tid)
{
	struct runstate_slot *s = runstate_known(tid);

	if (!s || __atomic_load_n(&s->blocked, __ATOMIC_ACQUIRE))
		return 0;
	return runstate_runs_elsewhere_slow(s, tid);
}

/* 1 when the thread `tid` is known and asleep in a weft wait: then it
   surely does not run (runstate_may_run says 0 too), answered inline. */
static inline int runstate_asleep(int tid)
{
	struct runstate_slot *s = runstate_known(tid);

	return s && __atomic_load_n(&s->blocked, __ATOMIC_ACQUIRE);
}

/* Whether no reader section is open: a dead thread's block may be
   unmapped now (else keep it and try later). */
int runstate_may_unmap(void);

#endif
