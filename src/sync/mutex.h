/* weft's mutexes, in glibc's 40-byte pthread_mutex_t (see docs/sync.md).

   Layout (glibc's struct __pthread_mutex_s on x86-64):

     0  lock     futex word, see below
     4  count    recursion depth, 1 when locked once (recursive type)
     8  owner    tid of the holder, for every type; 0 when free
    12  nusers   private mutexes: number of waiters asleep on the lock
                 word in bits 0-21 (decides whether a newcomer spins and
                 whether the word keeps LW_SLEEPERS), the real-time ones
                 among them again in bits 22-31 (a hand-off must not pass
                 them over); process-shared: glibc's, untouched;
                 robust/PI: glibc's user count (mutex_tid.c)
    16  kind     glibc's encoding: type in bits 0-1, robust 16, PI 32,
                 PP 64, process-shared 128 (a PP mutex's ceiling is in
                 the lock word, bits 19-30: mutex_pp.c)
    20  handoff  (glibc's __spins/__elision) private mutexes only: -tid of
                 the one starving waiter asking for a direct hand-off
                 (INT_MIN while a release tells it that it declined);
                 private PP mutexes: the sleepers on the word (mutex_pp.c)
    24  list     private mutexes: the condvar wake-ups deferred to the
                 release (first node at 24, the pid that deferred them at
                 32) and the word condvar herd waiters sleep on (36,
                 herd_seq: cond.c, "Herd release"); glibc's robust list
                 links otherwise (used by robust mutexes,
                 docs/mutex-robust-pi.md)

   Process-shared lock word: glibc's 0 free, 1 held, 2 held and maybe
   sleepers, so a plain glibc process can share the mutex.  Private lock
   word: bits, 0 meaning free (so glibc's 0/1/2 still read right):
   LW_HELD, LW_SLEEPERS (someone may sleep on the word), LW_HANDOFF (a
   starving waiter waits for the mutex to be handed to it), LW_DEFERRED
   (condvar wake-ups wait in `list`).  The fast unlock is a CAS from
   exactly "held" to free; any other bit sends it to the slow path,
   which reads everything it needs before the store that frees the word
   (docs/sync.md, "No touch after release"). */
#ifndef WEFT_SYNC_MUTEX_H
#define WEFT_SYNC_MUTEX_H

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include "kernel/futex.h"
#include "host/glibc.h"
#include "host/single.h"

/* glibc's __kind bits. */
#define MK_TYPE_MASK 3
#define MK_ROBUST 16
#define MK_PI 32
#define MK_PP 64
#define MK_PSHARED 128
/* Kinds with a lock-word protocol of their own (mutex_kinds.h). */
#define MK_RT_KINDS (MK_ROBUST | MK_PI | MK_PP)

/* The private lock word's bits. */
#define LW_HELD 1
#define LW_SLEEPERS 2
#define LW_HANDOFF 4
#define LW_DEFERRED 8
/* Bits that take a mutex off the inline fast path: everything but the
   process-shared bit (and glibc's elision hints, bits 8-9, ignored). */
#define MK_SLOW_BITS 0x7f

/* glibc's pthread_mutexattr_t word (struct pthread_mutexattr). */
#define MA_TYPE_MASK 0x00000fff
#define MA_CEIL_SHIFT 12
#define MA_CEIL_MASK 0x00fff000
#define MA_PROTO_SHIFT 28
#define MA_PROTO_MASK 0x30000000
#define MA_ROBUST 0x40000000
#define MA_PSHARED 0x80000000u

struct wmutex {
	int lock;
	unsigned int count;
	int owner;
	unsigned int nusers;
	int kind;
	int handoff;
	union {
		void *list[2]; /* robust mutexes: glibc's robust list links */
		struct {       /* mutexes that can carry deferred wake-ups */
			struct cnode *defer_head; /* first deferred waiter */
			int defer_pid;	/* the process that deferred them */
			int herd_seq;	/* condvar herd waiters sleep on it */
		};
	};
};
_Static_assert(sizeof(struct wmutex) == sizeof(pthread_mutex_t),
	       "glibc's mutex is 40 bytes");

static inline struct wmutex *wmutex_of(pthread_mutex_t *m)
{
	return (struct wmutex *)m;
}

static inline int mutex_futex_flag(const struct wmutex *w)
{
	return (w->kind & MK_PSHARED) ? WEFT_FUTEX_SHARED : WEFT_FUTEX_PRIVATE;
}

/* The inline fast paths, used by the exported functions: one CAS to
   lock, one exchange to unlock, for the default (normal) type.  They
   return -1 when the slow path must decide.

   The lock stores `count` (always 0 for the normal type, in weft and in
   glibc) although nothing reads it: with only the owner store after the
   CAS, a critical section that increments a counter in a loop ran at
   about 0.6x glibc's speed on AMD Zen 3 (Figure 3's benchmark; glibc's
   lock makes two stores, owner and __nusers), and one more store brings
   it back.  The CPU's speculative store-to-load forwarding is what differs:
   with it disabled (the kernel's SSBD mitigation) both run equally slow.
   A plain store in the unlock instead did not help.  Uncontended, it
   costs 0.3-1.2 ns a lock/unlock pair, and weft stays 1.3-1.4x glibc
   (bench/RESULTS.md, "2026-11-27-contention"; docs/sync.md, "The fast
   path's spare store"). */
static inline int mutex_trylock_fast(struct wmutex *w)
{
	int zero = 0;

	if (__builtin_expect((w->kind & MK_SLOW_BITS) != 0, 0))
		return -1;
	if (!__atomic_compare_exchange_n(&w->lock, &zero, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -1;
	w->count = 0; /* no effect but speed: see above */
	w->owner = host_self_tid();
	return 0;
}

/* pthread_mutex_lock's fast path: mutex_trylock_fast, or plain stores
   in a process that has one thread.  Then no other thread can race for
   a private mutex, and glibc (2.35 on) takes and frees the default
   mutex without a locked instruction; on the PVM-hosted VM of
   bench/RESULTS.md ("2026-11-28-full") that is 4.0 ns a lock/unlock pair
   against 12.5 with weft's two CAS.  "One thread" is host_one_thread():
   glibc's flag, and no thread made by a raw clone() (which glibc does
   not count, and whose locks would race with plain stores).  A
   process-shared mutex keeps its atomics (another process may race for
   it).  Both flags can turn false only in this thread (in its own
   pthread_create or clone, before the new thread exists), so they
   cannot change between the test and the store.  The signal fences
   keep the compiler from moving the critical section's accesses across
   the plain store.  docs/sync.md, "One thread". */
static inline int mutex_lock_fast(struct wmutex *w)
{
	if (__builtin_expect((w->kind & (MK_SLOW_BITS | MK_PSHARED)) == 0, 1) &&
	    host_one_thread() &&
	    __atomic_load_n(&w->lock, __ATOMIC_RELAXED) == 0) {
		__atomic_store_n(&w->lock, LW_HELD, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_ACQ_REL);
		w->count = 0; /* as in mutex_trylock_fast */
		w->owner = host_self_tid();
		return 0;
	}
	return mutex_trylock_fast(w);
}

/* Frees the word only if it says "held" and nothing else: sleepers, a
   hand-off request or deferred wake-ups need the slow path, which must
   read them before the word is free (once it is, the mutex may already
   be destroyed and its memory reused). */
static inline int mutex_unlock_fast(struct wmutex *w)
{
	int held = LW_HELD;

	if (__builtin_expect((w->kind & MK_SLOW_BITS) != 0, 0))
		return -1;
	w->owner = 0;
	/* One thread (mutex_lock_fast): a plain store frees the word, if
	   it has no other bit; a fork child may inherit sleepers' bits. */
	if (!(w->kind & MK_PSHARED) && host_one_thread() &&
	    __atomic_load_n(&w->lock, __ATOMIC_RELAXED) == LW_HELD) {
		__atomic_signal_fence(__ATOMIC_ACQ_REL);
		__atomic_store_n(&w->lock, 0, __ATOMIC_RELAXED);
		return 0;
	}
	/* A word with any other bit goes to the slow path without the CAS
	   (a failing locked CAS costs as much as one that succeeds: one
	   more on every release that wakes a sleeper). */
	if (__builtin_expect(__atomic_load_n(&w->lock, __ATOMIC_RELAXED) !=
				     LW_HELD, 0) ||
	    __builtin_expect(!__atomic_compare_exchange_n(&w->lock, &held, 0, 0,
							  __ATOMIC_RELEASE,
							  __ATOMIC_RELAXED),
			     0))
		return -1;
	return 0;
}

/* Slow paths (mutex.c).  `abstime` NULL: no deadline. */
int mutex_lock_slow(struct wmutex *w, clockid_t clock,
		    const struct timespec *abstime);
int mutex_trylock_slow(struct wmutex *w);
int mutex_unlock_slow(struct wmutex *w);

int mutex_init(struct wmutex *w, const pthread_mutexattr_t *attr);
int mutex_destroy(struct wmutex *w);

/* For the condition variable.  check: EPERM when the caller does not
   hold an owner-checked mutex.  release: drops the mutex completely (a
   recursive one whatever its depth) and returns the depth; reacquire
   takes it back, in "contended" mode when others may sleep on the word
   (process-shared condvars), and restores the depth; it returns 0, or
   what the wait must return with the mutex held (a robust mutex's
   EOWNERDEAD). */
int mutex_check_owner(struct wmutex *w);
unsigned mutex_release_for_wait(struct wmutex *w);
int mutex_reacquire_after_wait(struct wmutex *w, unsigned depth,
			       int contended);

/* Condvar wake-ups deferred to the mutex's release (src/sync/cond.c):
   a chain of picked waiters whose first node sits in the mutex.  Only
   private mutexes without robust/PI/PP semantics carry one: a glibc peer
   or the kernel (robust owner death) would free the word without
   looking.  The caller of mutex_deferred / mutex_set_deferred holds the
   mutex; whoever releases it next, the holder or not, takes the chain
   and wakes its first waiter after the word is free. */
struct cnode;
static inline int mutex_can_defer(const struct wmutex *w)
{
	return !(w->kind & (MK_PSHARED | MK_RT_KINDS));
}
/* Whether a mutex that can carry deferred wake-ups is held right now
   (by anyone): a broadcaster that does not hold it wakes its waiters
   all at once only while it is free (cond.c, "Herd release"). */
static inline int mutex_held_now(const struct wmutex *w)
{
	return (__atomic_load_n(&w->lock, __ATOMIC_RELAXED) & LW_HELD) != 0;
}
struct cnode *mutex_deferred(struct wmutex *w);
void mutex_set_deferred(struct wmutex *w, struct cnode *head);

/* --- attributes (the word of pthread_mutexattr_t) ------------------- */
int mutexattr_settype(unsigned *a, int type);
int mutexattr_setprotocol(unsigned *a, int proto);
int mutexattr_setprioceiling(unsigned *a, int ceil);
int mutexattr_getprioceiling(unsigned a);
int mutexattr_setpshared(unsigned *a, int pshared);
int mutexattr_setrobust(unsigned *a, int robust);

#endif
