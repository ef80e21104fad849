/* weft's mutexes, in glibc's 40-byte pthread_mutex_t (see docs/sync.md).

   Layout (glibc's struct __pthread_mutex_s on x86-64):

     0  lock     futex word: 0 free, 1 held, 2 held and maybe sleepers
     4  count    recursion depth, 1 when locked once (recursive type)
     8  owner    tid of the holder, for every type; 0 when free
    12  nusers   private mutexes: number of sleeping waiters (decides
                 whether a newcomer spins); process-shared: glibc's, untouched
    16  kind     glibc's encoding: type in bits 0-1, robust 16, PI 32,
                 PP 64, process-shared 128, ceiling in bits 19-31
    20  handoff  (glibc's __spins/__elision) private mutexes only: -tid of
                 the one starving waiter asking for a direct hand-off
    24  list     unused (glibc's robust list links)

   The lock word keeps glibc's 0/1/2 protocol, so a process-shared
   normal mutex interoperates with a plain glibc process.  A private
   mutex counts its sleepers exactly in nusers, so an unlock that reads
   2 makes no futex call when nobody sleeps. */
#ifndef WEFT_SYNC_MUTEX_H
#define WEFT_SYNC_MUTEX_H

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include "../kernel/futex.h"
#include "../host/glibc.h"

/* glibc's __kind bits. */
#define MK_TYPE_MASK 3
#define MK_ROBUST 16
#define MK_PI 32
#define MK_PP 64
#define MK_PSHARED 128
#define MK_UNSUPPORTED (MK_ROBUST | MK_PI | MK_PP)
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
	void *list[2];
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
   return -1 when the slow path must decide. */
static inline int mutex_trylock_fast(struct wmutex *w)
{
	int zero = 0;

	if (__builtin_expect((w->kind & MK_SLOW_BITS) != 0, 0))
		return -1;
	if (!__atomic_compare_exchange_n(&w->lock, &zero, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -1;
	w->owner = host_self_tid();
	return 0;
}

static inline int mutex_unlock_fast(struct wmutex *w)
{
	if (__builtin_expect((w->kind & MK_SLOW_BITS) != 0, 0))
		return -1;
	w->owner = 0;
	if (__builtin_expect(
		    __atomic_exchange_n(&w->lock, 0, __ATOMIC_RELEASE) != 1, 0))
		return -2; /* was contended: wake */
	return 0;
}

/* Slow paths (mutex.c).  `abstime` NULL: no deadline. */
int mutex_lock_slow(struct wmutex *w, clockid_t clock,
		    const struct timespec *abstime);
int mutex_trylock_slow(struct wmutex *w);
int mutex_unlock_slow(struct wmutex *w);
/* After the fast path released a contended lock (it read 2). */
void mutex_wake_after_release(struct wmutex *w);

int mutex_init(struct wmutex *w, const pthread_mutexattr_t *attr);
int mutex_destroy(struct wmutex *w);

/* For the condition variable.  check: EPERM when the caller does not
   hold an owner-checked mutex, ENOTSUP for the kinds weft cannot make.
   release: drops the mutex completely (a recursive one whatever its
   depth) and returns the depth; reacquire takes it back, in
   "contended" mode when others may sleep on the word (process-shared
   condvars), and restores the depth. */
int mutex_check_owner(struct wmutex *w);
unsigned mutex_release_for_wait(struct wmutex *w);
void mutex_reacquire_after_wait(struct wmutex *w, unsigned depth,
				int contended);
/* Marks the held mutex as contended (lock word 2), so that its release
   takes the slow path, which runs the condvar wake-ups deferred to it. */
void mutex_mark_contended(struct wmutex *w);

/* --- attributes (the word of pthread_mutexattr_t) ------------------- */
int mutexattr_settype(unsigned *a, int type);
int mutexattr_setprotocol(unsigned *a, int proto);
int mutexattr_setprioceiling(unsigned *a, int ceil);
int mutexattr_getprioceiling(unsigned a);
int mutexattr_setpshared(unsigned *a, int pshared);
int mutexattr_setrobust(unsigned *a, int robust);

#endif
