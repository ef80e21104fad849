/* WEFT_STATS=1: thread counters and per-lock contention, printed to
   stderr at exit (format: docs/tunables.md, "WEFT_STATS output").

   The cost model, which is what lets it stay on in production:
     - the uncontended lock and unlock paths are not touched at all;
     - a lock's slow path (its first attempt failed) tests one flag,
       weft_stats_on, which is read-mostly and predicted not taken;
     - with the flag on, the slow path adds one CLOCK_MONOTONIC pair
       (vDSO, no system call) and one update of a lock-free table keyed
       by the lock's address (stats.c).
   Everything here may run in a signal handler or a fork child: no
   malloc, no locks, memory from mmap. */
#ifndef WEFT_CORE_STATS_H
#define WEFT_CORE_STATS_H

/* What kind of wait a table entry counts; an rwlock's read and write
   waits are separate entries, because they have different fixes. */
enum lockstat_kind {
	LS_MUTEX = 1,	  /* pthread_mutex_*, mtx_*, and the mutex a
			     condition-variable waiter takes back */
	LS_RWLOCK_RD = 2, /* pthread_rwlock_rdlock & co. */
	LS_RWLOCK_WR = 3, /* pthread_rwlock_wrlock & co. */
	LS_SPIN = 4,	  /* pthread_spin_lock (busy wait, not a sleep) */
};

/* Set once at start-up from WEFT_STATS, never changed after. */
extern int weft_stats_on;

static inline int stats_enabled(void)
{
	return __builtin_expect(__atomic_load_n(&weft_stats_on, __ATOMIC_RELAXED),
				0);
}

/* CLOCK_MONOTONIC in nanoseconds: the first half of the pair. */
long stats_now(void);

/* A contended lock's wait begins: *t0 becomes its start (stats_now),
   the first time only, and only with WEFT_STATS on; a caller that finds
   it set records the wait (lockstat_record) however it ends. */
static inline void stats_wait_begins(long *t0)
{
	if (!*t0 && stats_enabled())
		*t0 = stats_now();
}

/* A wait on `lock` that began at `t0` (stats_now) has just ended.
   Takes the second clock reading, finds the code outside weft that
   asked for the lock (frame pointers, within libweft only), and adds
   the wait to the lock's entry. */
void lockstat_record(const volatile void *lock, enum lockstat_kind kind,
		     long t0);

/* A mutex waiter's yields instead of a sleep (core/yield_wait.h):
   counted with WEFT_STATS on; `took`: the waiter took the mutex. */
void stats_count_yield_wait(int took);

/* A mutex turn that ran out shortly before the lock came, and a wait
   that slept without a turn because of such misses (sync/mutex.c,
   yield_miss_settle). */
void stats_count_yield_near_miss(void);
void stats_count_yield_skip(void);

/* The same for a condition variable waiter (sync/cond.c node_yield);
   `picked`: a signal or broadcast picked it while it yielded. */
void stats_count_cond_yield(int picked);

/* And for a semaphore waiter (sync/sem.c sem_yield); `took`: it took a
   unit while it yielded. */
void stats_count_sem_yield(int took);

/* From start-up when WEFT_STATS is set: registers the report at exit. */
void stats_init(void);
/* In a fork child: its counters start from zero (as weft_counters). */
void stats_reset_in_child(void);

#endif
