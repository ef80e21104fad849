/* The glibc host adapter: the one module that knows glibc's private
   layout.  weft's threads are made with a raw clone, but every ordinary
   glibc function must keep working inside them, so each new thread gets
   a TCB that glibc accepts as its own (see docs/glibc-host.md and
   ../shared/design/glibc-host.md for the obligations H1-H4, P1-P8,
   G1-G4, S1-S6 referred to below).

   Everything glibc-specific goes through this interface; the thread
   core sees only opaque TCB pointers and sizes. */
#ifndef WEFT_HOST_GLIBC_H
#define WEFT_HOST_GLIBC_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "../core/thread.h"
#include "tid.h"

/* glibc's own implementations, for forwarding (fallback mode, threads
   weft did not create) and for the engine weft delegates to. */
struct host_real {
	int (*pthread_create)(pthread_t *, const pthread_attr_t *,
			      void *(*)(void *), void *);
	int (*pthread_join)(pthread_t, void **);
	int (*pthread_tryjoin_np)(pthread_t, void **);
	int (*pthread_timedjoin_np)(pthread_t, void **, const struct timespec *);
	int (*pthread_clockjoin_np)(pthread_t, void **, clockid_t,
				    const struct timespec *);
	int (*pthread_detach)(pthread_t);
	pthread_t (*pthread_self)(void);
	void (*pthread_exit)(void *) __attribute__((noreturn));
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	int (*pthread_kill)(pthread_t, int);
	int (*pthread_sigqueue)(pthread_t, int, const union sigval);
	int (*pthread_setschedparam)(pthread_t, int, const struct sched_param *);
	int (*pthread_getschedparam)(pthread_t, int *, struct sched_param *);
	int (*pthread_setschedprio)(pthread_t, int);
	int (*pthread_setaffinity_np)(pthread_t, size_t, const cpu_set_t *);
	int (*pthread_getaffinity_np)(pthread_t, size_t, cpu_set_t *);
	int (*pthread_setname_np)(pthread_t, const char *);
	int (*pthread_getname_np)(pthread_t, char *, size_t);
	int (*pthread_getcpuclockid)(pthread_t, clockid_t *);
	size_t (*confstr)(int, char *, size_t);
	int (*pthread_key_create)(pthread_key_t *, void (*)(void *));
	int (*pthread_key_delete)(pthread_key_t);
	void *(*pthread_getspecific)(pthread_key_t);
	int (*pthread_setspecific)(pthread_key_t, const void *);
	int (*thrd_create)(unsigned long *, int (*)(void *), void *);
};
extern struct host_real host_real;

/* glibc's definition of `name` (the one weft's export hides): the given
   symbol version if it exists, else the default one.  For the entry
   points that are not in host_real; see GLIBC_FN in abi/export.h. */
void *host_next_sym(const char *name, const char *version);

/* Start-up.  Resolves glibc's symbols, checks the running glibc, makes
   one glibc thread to switch glibc to multi-threaded mode and to probe
   the layout.  Returns 1 when weft can serve threads, 0 when every call
   must be forwarded to glibc (the reason is in host_status()). */
int host_init(void);
const char *host_status(void);
const char *host_glibc_version(void);
const char *host_getenv(const char *name);

/* Geometry of a thread's TLS area: the static TLS blocks plus glibc's
   struct pthread, which sits at the top (thread pointer = its start). */
size_t host_tls_area_size(void);
size_t host_tls_align(void);
size_t host_tcb_size(void);

/* Before clone: prepare the TCB at `tcb` (inside the area) for a thread
   whose whole stack block is [block, block + block_size).  Allocates the
   DTV and copies every module's TLS image.  Returns 0 or -ENOMEM. */
int host_tcb_prepare(char *tcb, char *block, size_t block_size);
volatile int *host_tid_word(char *tcb);

/* host_self_tid(): the caller's tid from that word (tid.h). */
/* Writes the `words` of libc malloc state into the new thread's TLS. */
void host_malloc_state_install(char *tcb, const uintptr_t *words);

/* libc's executable segment [lo, hi), found at start-up (0 if not). */
extern uintptr_t host_libc_text_lo, host_libc_text_hi;

/* Registers the calling thread's robust list head (glibc's field) with
   the kernel (host_thread_begin does it for every weft thread). */
void host_robust_list_register(char *tcb);

/* The calling thread's robust list head, glibc's struct
   robust_list_head in its TCB (registered with the kernel for every
   thread, weft's or glibc's), so that a robust mutex locked through
   weft and one locked through glibc in the same thread share one list.
   `list` points at the first entry's `next` slot (a mutex's
   __list.__next), or at the head itself when empty, bit 0 marking a PI
   mutex.  glibc lays the head out as the `next` slot of a list node:
   the word before it (glibc's robust_prev) is that node's `prev`, so
   the first entry's `prev` link can be updated the same way whether the
   entry before it is a mutex or the head. */
struct host_robust_head {
	void *list;
	long futex_offset;
	void *list_op_pending;
};
struct host_robust_head *host_robust_head(void);

/* In the new thread, before any user code. */
void host_thread_begin(char *tcb);
/* The rseq cpu_id word of the thread of `tcb` (kept by the kernel once
   the thread registered its area), or NULL when glibc has no rseq area. */
const volatile uint32_t *host_rseq_cpu(char *tcb);
/* Runs fn(arg) above a bottom unwind buffer, so that pthread_exit and
   cancellation (weft's unwinder or glibc's) unwind back here.  Returns fn's value,
   or the thread's exit value when it was unwound. */
void *host_run_thread(void *(*fn)(void *), void *arg);
/* At the end of the thread, in glibc's order: C++ thread_local
   destructors first, then (after thread-specific data) the libc
   per-thread state glibc would free, as far as it is reachable. */
void host_call_tls_dtors(void);
void host_libc_freeres(char *tcb);
/* Last steps: release the DTV and dynamic TLS, then move the libc malloc
   state out of the thread's TLS into `words` (for the next thread).
   Returns 1 if state was taken.  No libc call may follow. */
void host_tls_release(char *tcb);
int host_malloc_state_take(char *tcb, uintptr_t *words);

/* Membership of glibc's thread list (see glibc.c): add before clone,
   unlist at the end of the thread, del when clone failed. */
int host_threads_listed(void);
void host_list_add(char *tcb);
void host_list_del(char *tcb);
void host_thread_unlist(char *tcb);

/* glibc's live-thread count (G4); returns the new value. */
int host_nthreads_add(int delta);
/* The count itself (__nptl_nthreads), for a cheap "am I alone?". */
extern unsigned int *host_nthreads_word;

/* In a fork child, for the surviving thread: leave glibc's thread list
   (glibc's fork put the thread there, P2). */
void host_fork_child(char *tcb);

/* Offset of libweft's own TLS variable `weft_tls_self` from TP. */
void host_set_tls_self(char *tcb, void *desc);

/* --- Cancellation state, shared with glibc (docs/cancel.md) -----------
   weft's cancellation engine keeps its state where glibc keeps its own,
   so that libc's internal cancellation points (which cannot be
   interposed) and glibc's unwinder act on it too: the `cancelhandling`
   word, the chain of registered unwind buffers (`cleanup_jmp_buf`), the
   chain of old-style cleanup buffers (`cleanup`) and `result`.  Their
   offsets are found at start-up (libthread_db descriptor, probe). */

/* Bits of `cancelhandling` (nptl/descr.h, 2.34 ... master). */
enum {
	HOST_CANCEL_DISABLED = 0x1, /* state: PTHREAD_CANCEL_DISABLE */
	HOST_CANCEL_ASYNC = 0x2,    /* type: signal me (async, or in a point) */
	HOST_CANCELING = 0x4,	    /* asked, signal under way */
	HOST_CANCELED = 0x8,	    /* asked (and seen, for a signalled one) */
	HOST_EXITING = 0x10,	    /* unwinding or ending: never again */
	HOST_TERMINATED = 0x20,
};

extern size_t host_cancel_off, host_cleanup_jmp_buf_off, host_cleanup_off,
	host_result_off;

static inline int *host_cancel_word(char *tcb)
{
	return (int *)(tcb + host_cancel_off);
}
/* Innermost __pthread_unwind_buf_t registered (glibc's cleanup ABI). */
static inline void **host_unwind_chain(char *tcb)
{
	return (void **)(tcb + host_cleanup_jmp_buf_off);
}
/* Innermost struct _pthread_cleanup_buffer (_pthread_cleanup_push). */
static inline void **host_cleanup_chain(char *tcb)
{
	return (void **)(tcb + host_cleanup_off);
}
/* The thread's exit value, as glibc's start code and join read it. */
static inline void **host_result(char *tcb)
{
	return (void **)(tcb + host_result_off);
}
/* The stack pointer saved in a jmp_buf filled by glibc's __sigsetjmp
   (stored mangled with the process's pointer guard). */
uintptr_t host_jmpbuf_sp(const void *jmpbuf);

/* Nonzero when the thread with this TCB has been asked to cancel and
   has cancellation enabled: a condvar signaller can pass over a waiter
   that is about to be cancelled (sync.md). */
int host_cancel_requested(char *tcb);

/* Registers fork handlers with glibc (prepare, parent, child). */
int host_register_atfork(void (*prepare)(void), void (*parent)(void),
			 void (*child)(void));

/* Registers a function to run when the calling (adopted) thread exits. */
int host_at_thread_exit(void (*fn)(void *), void *arg);

#endif
