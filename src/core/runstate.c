/* Run-state hints for spinners (see runstate.h). */
#include <stddef.h>

#include "kernel/rseq.h"
#include "runstate.h"

/* Reader sections are counted per CPU, so that spinners on different
   CPUs do not share a counter; the unmapper sums them. */
#define SHARDS 64u

struct runstate_slot weft_runstate_slots[RUNSTATE_SLOTS];
static struct {
	int open;
	char pad[60];
} readers[SHARDS] __attribute__((aligned(64)));

__thread struct runstate_self weft_runstate_self
	__attribute__((tls_model("initial-exec")));

/* Set by the first runstate_enter: until then the table is all zeros,
   and a fork child need not touch it (64 KiB of .bss the parent never
   wrote: 17 page faults in every child of a program with no thread). */
static int slots_used;

void runstate_enter(int tid, const volatile uint32_t *cpu)
{
	struct runstate_slot *s = runstate_slot_of(tid);
	int free = 0;

	if (tid <= 0 || !__atomic_compare_exchange_n(&s->tid, &free, tid, 0,
						     __ATOMIC_SEQ_CST,
						     __ATOMIC_RELAXED))
		return; /* another live thread has it: we stay unknown */
	if (!__atomic_load_n(&slots_used, __ATOMIC_RELAXED))
		__atomic_store_n(&slots_used, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->blocked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cpu, cpu, __ATOMIC_SEQ_CST);
	weft_runstate_self.slot = s;
}

void runstate_leave(void)
{
	struct runstate_slot *s = weft_runstate_self.slot;

	if (!s)
		return;
	weft_runstate_self.slot = 0;
	/* The CPU pointer goes first: a reader that still finds our tid
	   then finds no pointer into memory that may go. */
	__atomic_store_n(&s->cpu, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->tid, 0, __ATOMIC_SEQ_CST);
}

/* Only what is not zero is written: a write to a page the child shares
   with its parent copies it. */
void runstate_reset_in_child(int tid, const volatile uint32_t *cpu)
{
	if (__atomic_load_n(&slots_used, __ATOMIC_RELAXED)) {
		for (unsigned i = 0; i < RUNSTATE_SLOTS; i++) {
			struct runstate_slot *s = &weft_runstate_slots[i];

			if (!s->tid && !s->cpu && !s->blocked)
				continue;
			s->cpu = 0;
			s->blocked = 0;
			s->tid = 0;
		}
		for (unsigned i = 0; i < SHARDS; i++)
			if (readers[i].open)
				readers[i].open = 0;
	}
	weft_runstate_self.slot = 0;
	runstate_enter(tid, cpu);
}

/* Where the thread of slot `s` (still `tid`) last ran, against CPU
   `mine`: 1 on `mine`, 0 on another CPU, -1 unknown (its slot changed
   hands or has no CPU).  Its TCB is read in a reader section: weft
   unmaps no block meanwhile, and the pointer is cleared before its
   thread's block can go. */
static int on_cpu(struct runstate_slot *s, int tid, uint32_t mine)
{
	unsigned shard = mine % SHARDS;
	const volatile uint32_t *cpu;
	int same = -1;

	__atomic_add_fetch(&readers[shard].open, 1, __ATOMIC_SEQ_CST);
	cpu = __atomic_load_n(&s->cpu, __ATOMIC_SEQ_CST);
	if (cpu && __atomic_load_n(&s->tid, __ATOMIC_SEQ_CST) == tid)
		same = *cpu == mine;
	__atomic_sub_fetch(&readers[shard].open, 1, __ATOMIC_SEQ_CST);
	return same;
}

/* Our own CPU from our rseq area, or -1 when it is not known. */
static long my_cpu(void)
{
	struct runstate_slot *me = weft_runstate_self.slot;
	uint32_t mine;

	if (!me || !me->cpu)
		return -1;
	mine = *me->cpu; /* our own TCB */
	if (mine == WEFT_RSEQ_CPU_UNINITIALIZED || mine == WEFT_RSEQ_CPU_FAILED)
		return -1;
	return mine;
}

/* The slot of a known `tid` that is not asleep in a weft wait; NULL when
   it is unknown (*asleep 0) or asleep (*asleep 1). */
static struct runstate_slot *awake_slot(int tid, int *asleep)
{
	struct runstate_slot *s = runstate_known(tid);

	*asleep = s && __atomic_load_n(&s->blocked, __ATOMIC_ACQUIRE);
	return *asleep ? NULL : s;
}

int runstate_may_run(int tid)
{
	int asleep;
	struct runstate_slot *s = awake_slot(tid, &asleep);
	long mine;

	if (!s)
		return !asleep; /* unknown: may run */
	if ((mine = my_cpu()) < 0)
		return 1;
	return on_cpu(s, tid, (uint32_t)mine) != 1;
}

/* The rest of runstate_runs_elsewhere, for the awake thread of slot
   `s`. */
int runstate_runs_elsewhere_slow(struct runstate_slot *s, int tid)
{
	long mine = my_cpu();

	if (mine < 0)
		return 0;
	return on_cpu(s, tid, (uint32_t)mine) == 0;
}

int runstate_may_unmap(void)
{
	for (unsigned i = 0; i < SHARDS; i++)
		if (__atomic_load_n(&readers[i].open, __ATOMIC_SEQ_CST))
			return 0;
	return 1;
}
