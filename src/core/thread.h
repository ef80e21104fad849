/* The weft thread descriptor and the thread core's internal interface.

   Memory of a thread weft maps itself (one mapping, NPTL style):

     high  +---------------------------+ map_base + map_size
           | glibc's struct pthread    | <- tcb = thread pointer (%fs)
           +---------------------------+
           | static TLS blocks         |    (ld.so's layout, below TP)
           +---------------------------+
           | struct weft_thread        | <- descriptor
           +---------------------------+ <- initial stack pointer
           | stack, grows down         |
           +---------------------------+
           | guard page(s), no access  |
     low   +---------------------------+ map_base

   A thread on a user-supplied stack has the same layout inside the
   user's memory, without a guard; weft never caches or unmaps it. */
#ifndef WEFT_CORE_THREAD_H
#define WEFT_CORE_THREAD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "kernel/syscall.h"
#include "host/glibc.h"
#include "lock.h"

enum weft_origin {
	WEFT_ORIGIN_CREATED = 1, /* made by weft's pthread_create */
	WEFT_ORIGIN_MAIN = 2,	 /* the process's initial thread, adopted */
	WEFT_ORIGIN_ADOPTED = 3, /* made by glibc itself, adopted on use */
};

/* Who owns the end of a thread's life.  A thread that finds JOINABLE at
   exit leaves its reclamation to the joiner (or to a later detach); a
   thread that finds DETACHED reclaims itself.  A claim records whether
   the thread had finished, so that a joiner cancelled while it waits can
   give the claim back (JOINING -> JOINABLE, JOINING_EXITED -> EXITING)
   and leave the thread joinable, as POSIX requires. */
enum weft_join_state {
	WEFT_JOINABLE = 0,
	WEFT_DETACHED = 1,
	WEFT_EXITING = 2, /* finished running, waits for join or detach */
	WEFT_JOINING = 3, /* a joiner has claimed it; still running */
	WEFT_JOINING_EXITED = 4, /* claimed, and it has finished running */
};


/* libc malloc words handed from a dead thread to a new one (host/). */
#define WEFT_MALLOC_WORDS HOST_MALLOC_WORDS

/* Thread-specific data values kept inline in the descriptor (tsd.c). */
#define WEFT_TSD_INLINE 32
struct weft_tsd_value {
	uintptr_t seq; /* the key's sequence when the value was stored */
	void *value;
};

struct weft_thread {
	uint64_t handle;     /* the pthread_t value, see registry.c */
	char *tcb;	     /* glibc's struct pthread, = thread pointer */
	volatile int *tidp;  /* glibc's tid word; cleared by the kernel */
	void *(*start)(void *);
	void *arg;
	void *result;
	int join_state;	     /* enum weft_join_state, atomic */
	int origin;	     /* enum weft_origin */
	uint32_t slot;	     /* registry slot */
	ksigset_t sigmask;   /* mask to install at start, if set_sigmask */
	int set_sigmask;
	int gated;	     /* must wait for the creator's setup (create.c) */
	weft_lock_t start_gate; /* held by the creator during that setup */
	int setup_failed;    /* the thread must end without running */
	int ops_busy;	     /* calls acting on this thread by tid (target.c) */
	int ops_closed;	     /* set at exit: no new call may use the tid */
	int c11;	     /* start is a C11 thrd_start_t (returns int) */

	/* The mapping (weft-made stacks only; map_base NULL otherwise). */
	char *map_base;
	size_t map_size;
	size_t guard_size;
	int guard_mapped;    /* the guard is a PROT_NONE mapping (stack.c) */
	size_t resident;     /* bound on its resident bytes (stack cache) */
	char *stack_lo;	     /* lowest usable stack byte */
	size_t stack_size;   /* usable stack below the descriptor */
	size_t attr_stacksize; /* as requested, reported by getattr_np */
	int attr_flags;	     /* glibc attr flag bits the thread was made with */

	/* libc's per-thread malloc state left by the previous user of this
	   mapping, or by this thread at exit; see host/libc_state.c. */
	uintptr_t malloc_state[WEFT_MALLOC_WORDS];
	int has_malloc_state;
	int tls_released;    /* DTV given back (stack.c, finish.c) */
	/* While the block is cached with its DTV: the start of the DTV's
	   allocation, so that a leak checker finds it (the TCB holds only
	   a pointer into it; stack.c). */
	void *tls_anchor;

	struct weft_thread *cache_next, *cache_prev; /* stack cache list */
	unsigned cache_gen;  /* the fork generation it was cached in */

	/* Thread-specific data: keys 0..31 inline, others in blocks. */
	int tsd_stored;	     /* a non-NULL value was set (tsd.c) */
	int tsd_destroying;  /* the key destructors are running */
	struct weft_tsd_value **tsd_blocks; /* keys from WEFT_TSD_INLINE on */
	size_t tsd_nblocks;
};

/* The calling thread's descriptor (NULL before adoption).  Initial-exec
   TLS of libweft, which is always loaded at start-up. */
extern __thread struct weft_thread *weft_tls_self
	__attribute__((tls_model("initial-exec")));

/* Returns the calling thread's descriptor, adopting the thread first if
   weft has not seen it yet (main thread, glibc's helper threads). */
struct weft_thread *weft_self(void);
/* Sets weft_tls_self in the static TLS of the thread whose TCB (thread
   pointer) is `tcb`: initial-exec TLS lies at the same distance from
   every thread's pointer. */
void self_tls_set(char *tcb, struct weft_thread *t);

/* --- registry.c: pthread_t handles ------------------------------------ */
int registry_add(struct weft_thread *t);
void registry_remove(struct weft_thread *t);
/* What a lookup copies out of the registry (not out of the descriptor,
   which may already be another thread's by the time it is read). */
struct registry_view {
	char *tcb;  /* glibc's TCB */
	int origin; /* enum weft_origin */
};
/* Returns the thread a handle named when it was looked up, with *view
   filled; NULL with *err = ESRCH for a stale or unknown weft handle,
   NULL with *err = 0 for a value that is not a weft handle at all.
   The thread may be joined and its descriptor reused at any moment
   after: only registry_hold keeps the descriptor. */
struct weft_thread *registry_lookup(pthread_t h, struct registry_view *view,
				    int *err);
/* Returns the thread `h` names and keeps its descriptor from being
   reclaimed (registry_remove waits) until registry_release(h); NULL when
   the handle is stale.  Held only briefly, with every signal blocked: a
   handler that never returned would keep a joiner waiting for ever. */
struct weft_thread *registry_hold(pthread_t h);
void registry_release(pthread_t h);
void registry_lock_for_fork(void);
void registry_unlock_after_fork(void);
void registry_reset_in_child(struct weft_thread *self,
			     void (*drop)(struct weft_thread *));
unsigned long registry_live_count(void);
/* The most threads weft knew at once (created, main, adopted), counting
   a joinable thread until it is joined. */
unsigned long registry_peak_count(void);

/* --- target.c: calls that act on a thread by its kernel tid --------- */
struct weft_pin {
	ksigset_t old_mask;
	pthread_t held; /* the handle whose slot is held (registry_hold) */
	int pinned;
};
/* Returns the tid of the live thread `t` named by handle `h`, and keeps
   the thread from exiting (so the tid from being reused) until
   thread_unpin; -ESRCH when it has finished. */
int thread_pin(struct weft_thread *t, pthread_t h, struct weft_pin *pin);
void thread_unpin(struct weft_thread *t, struct weft_pin *pin);
/* At exit, before the thread can be reclaimed: refuses new calls and
   waits for those in flight. */
void thread_ops_close(struct weft_thread *t);
void thread_ops_reset_in_child(struct weft_thread *self);

/* --- stack.c: mappings and the stack cache ---------------------------- */
struct weft_stack_request {
	size_t stacksize; /* as in the attribute (0: default) */
	size_t guardsize;
	char *user_top;	  /* user stack top (setstack) or NULL */
	size_t user_size;
};
struct weft_thread *stack_acquire(const struct weft_stack_request *req,
				  int *err);
void stack_release(struct weft_thread *t);
/* Called by an exiting thread on its own block: gives the pages below
   its stack pointer back as WEFT_STACK_TRIM says. */
void stack_trim_unused(struct weft_thread *t);
void stack_cache_lock_for_fork(void);
void stack_cache_unlock_after_fork(void);
void stack_cache_reset_in_child(void);
size_t stack_default_size(void);
void stack_set_default_size(size_t);

/* --- lifecycle ---------------------------------------------------------- */
int thread_create(pthread_t *out, const pthread_attr_t *attr,
		  void *(*start)(void *), void *arg);
/* C11 thrd_create: `start` is really int (*)(void *). */
int thread_create_c11(pthread_t *out, int (*start)(void *), void *arg);
/* How thread_join may wait. */
enum weft_join_mode {
	WEFT_JOIN_WAIT = 0, /* wait; a cancellation point (pthread_join) */
	WEFT_JOIN_TRY = 1,  /* never wait: EBUSY while it runs */
	WEFT_JOIN_REAP = 2, /* wait, but not a cancellation point */
};
int thread_join(struct weft_thread *t, void **result, int clock,
		const struct timespec *abstime, enum weft_join_mode mode);
int thread_detach(struct weft_thread *t);
void thread_reclaim(struct weft_thread *t);
int thread_default_attr_get(pthread_attr_t *out);
int thread_default_attr_set(const pthread_attr_t *in);
void thread_default_lock_for_fork(void);
void thread_default_unlock_after_fork(void);
void thread_default_reset_in_child(void);
void thread_finish(struct weft_thread *t) __attribute__((noreturn));
/* Runs an exit duty (destructors) of the calling thread `t` so that a
   pthread_exit inside it ends only the destructor that called it, as in
   glibc: the duty then runs again and the exit value becomes the
   thread's result. */
void thread_exit_duty(struct weft_thread *t, void (*duty)(struct weft_thread *));
void adopted_free(struct weft_thread *t); /* self.c */
/* fork.c: core's fork handlers, and the registration of the library's
   one handler triple, weft_fork_handlers, with glibc (once). */
void core_fork_prepare(void);
void core_fork_parent(void);
void core_fork_child(void);
void fork_register(void);
/* The triple itself: defined by the top layer (abi/atfork.c), the one
   that sees every module's handlers; core only passes it to glibc. */
struct fork_handlers {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
extern const struct fork_handlers weft_fork_handlers;
/* This process's id, cached (reset in a fork child): lets process-private
   objects in shared memory notice a use from another process. */
int weft_self_pid(void);

/* --- init.c ------------------------------------------------------------- */
extern int weft_is_active;
int weft_init_slow(void);
extern int weft_init_done; /* 0 not started, 1 starting, 2 done */
/* "ok" when weft serves, else why it forwards (weft info's host line). */
const char *weft_host_status(void);
/* Nonzero while start-up runs (its own thread's calls go to glibc). */
static inline int weft_starting(void)
{
	return __atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) == 1;
}
/* Nonzero when weft serves calls; initialises on first use (and waits
   for a start-up another thread runs). */
static inline int weft_serving(void)
{
	if (__builtin_expect(__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) != 2, 0))
		return weft_init_slow();
	return weft_is_active;
}
/* weft_serving's answer once start-up is done, without starting it: 0
   also before (then weft_serving decides, out of line).  For the hot
   slow paths, which then need no stack frame for the start-up call. */
static inline int weft_serving_done(void)
{
	return __builtin_expect(__atomic_load_n(&weft_init_done,
						__ATOMIC_ACQUIRE) == 2 &&
				weft_is_active, 1);
}
/* Nonzero once start-up decided that weft forwards every call to glibc.
   For the entry points whose weft code is right whether or not weft
   serves (pthread_sigmask): they need no start-up, which may then not
   run in a signal handler. */
static inline int weft_forwarding(void)
{
	return __atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) == 2 &&
	       !weft_is_active;
}
/* weft_is_active alone (set once by start-up, after the host layout is
   known): the inline fast paths (a free mutex, a key, a condvar with no
   waiter) test only this; start-up, forwarding and every other case go
   out of line, through weft_serving. */
static inline int weft_active_now(void)
{
	return __builtin_expect(__atomic_load_n(&weft_is_active, __ATOMIC_RELAXED), 1);
}
/* Whether weft makes the thread a creation asks for (else glibc's own
   pthread_create does, init.c): the first call runs the probe thread. */
extern int weft_threads_state;
int weft_threads_check_slow(void);
static inline int weft_threads_ready(void)
{
	if (__builtin_expect(__atomic_load_n(&weft_threads_state, __ATOMIC_ACQUIRE) == 2, 1))
		return 1;
	return weft_threads_check_slow();
}
/* Set once weft makes or adopts a thread (the main thread included):
   until then a fork child has nothing of weft's to reset. */
extern int weft_threads_seen;
/* Why the probe refused weft's own threads, or NULL. */
const char *weft_threads_refused(void);

/* --- tsd.c: thread-specific data ------------------------------------ */
int tsd_key_create(pthread_key_t *key, void (*destr)(void *));
int tsd_key_delete(pthread_key_t key);
void tsd_note_startup_key(pthread_key_t key, void (*destr)(void *));
void tsd_adopt_startup_keys(void *(*glibc_get)(pthread_key_t));
void *tsd_get(pthread_key_t key);
int tsd_set(pthread_key_t key, const void *value);
void tsd_run_destructors(struct weft_thread *t);
/* The value blocks of `t` (ours, or a thread gone in a fork child). */
void tsd_free_blocks(struct weft_thread *t);
void tsd_reset_in_child(void);

/* --- stats -------------------------------------------------------------- */
struct weft_counters {
	unsigned long created, stacks_mapped, stacks_reused, stacks_unmapped,
		malloc_handoffs, adopted;
};
extern struct weft_counters weft_counters;
#define WEFT_COUNT(field) __atomic_fetch_add(&weft_counters.field, 1, __ATOMIC_RELAXED)

#endif
