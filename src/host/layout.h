/* What weft knows of the running glibc's private layout
   (docs/glibc-host.md, "The layout"): one record, struct host_layout,
   filled once at start-up before weft serves anything and read-only
   from then on.  It is the only place the rest of weft learns glibc's
   private layout from; the host's own jobs (building a TCB, glibc's
   thread lists, the per-thread libc state) read it too.

   It is filled at start-up and checked in two steps, so that a program
   that never makes a thread meets no thread of weft's:

     host_layout_find        everything that needs no second thread:
                             libthread_db's descriptors, the loader's
                             symbols and module list, __rseq_offset,
                             libc's cancellation window, and the row of
                             the release table (releases.c) for the facts
                             that cannot be discovered.  Leaves no trace.
     host_layout_check_here  at start-up too: the row's facts the calling
                             thread shows of itself (tid, robust_head,
                             the cleanup chains; on the main thread the
                             user-stack marker and stackblock).  No trace.
     host_layout_probe       at the first thread creation weft serves:
                             one glibc thread (the probe) checks the facts
                             a new thread shows (res, stackblock, the
                             user-stack marker, the join state, malloc's
                             words, result), and switches glibc into
                             multi-threaded mode as glibc's own first
                             pthread_create does.

   Each returns NULL when it succeeded, else the reason (one line, for
   weft's message and `weft info`): any mismatch fails closed. */
#ifndef WEFT_HOST_LAYOUT_H
#define WEFT_HOST_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "kernel/syscall.h"

/* How many words of per-thread libc state weft hands from a dead thread
   to the next (malloc's tcache and arena, and from 2.41 the getrandom
   state): at most this many. */
#define HOST_MALLOC_WORDS 4

/* How libc's own cancellation points (stdio's reads, wait3, system ...,
   which nothing can interpose) notice a cancellation. */
enum host_cancel_protocol {
	/* 2.36: they set the ASYNC bit of cancelhandling around their
	   system call, so SIGCANCEL acts there as for the async type. */
	HOST_CANCEL_ASYNC_BIT = 1,
	/* 2.41 on: they run the system call in libc's hidden window
	   __syscall_cancel_arch; pthread_cancel signals every target whose
	   cancellation is enabled, and the handler acts when the thread was
	   stopped inside that window (before the syscall, or at it to be
	   restarted). */
	HOST_CANCEL_WINDOW = 2,
};

/* How glibc records whether a thread is joinable. */
enum host_join_kind {
	HOST_JOIN_POINTER = 1, /* joinid: NULL joinable, the TCB itself detached */
	HOST_JOIN_STATE = 2,   /* joinstate: an enum, 0 once the thread ended */
};

/* A word of per-thread libc state at `off` from the thread pointer: the
   value a fresh thread has there, and the low bits that are a flag of
   the moment, not part of the value (cleared when handed on). */
struct host_state_word {
	ptrdiff_t off;
	uintptr_t fresh;
	uintptr_t flag_bits;
};

struct host_layout {
	/* Read on every lock, cancellation point and thread start.  Offsets
	   inside glibc's struct pthread (= the thread pointer on x86-64). */
	size_t tid;		/* 0 until found: host_self_tid_any */
	size_t cancelhandling;
	unsigned int *nthreads; /* __nptl_nthreads */
	size_t cleanup_jmp_buf, cleanup, result;
	enum host_cancel_protocol cancel_protocol;
	/* libc's load address, its executable segment, and its
	   cancellation window [cp_begin, cp_end) (HOST_CANCEL_WINDOW). */
	uintptr_t libc_base, libc_text_lo, libc_text_hi;
	uintptr_t libc_cp_begin, libc_cp_end;

	const char *release; /* the release weft uses (WEFT_PRETEND_GLIBC) */
	size_t tcb_size;     /* sizeof(struct pthread) */
	size_t list, report_events, robust_head, res;
	size_t stackblock, stackblock_size;
	struct {
		size_t off;
		unsigned char width; /* 1: a bool (<= 2.41), 4: an enum */
		int value;
	} user_stack;		/* "the thread runs on a user stack" */
	struct {
		size_t off;
		enum host_join_kind kind;
		unsigned int joinable, detached, exited; /* HOST_JOIN_STATE */
	} join;
	size_t setxid_futex;	/* 0: unknown, weft threads stay off the lists */
	size_t getrandom_buf;	/* 0: none (before 2.41) */
	size_t sched_policy, sched_priority; /* 0: unknown */

	/* TLS, as distances from the thread pointer. */
	size_t tls_size, tls_align; /* static TLS plus struct pthread */
	ptrdiff_t resp_tls;	    /* __resp */
	ptrdiff_t ctype_tls[3];	    /* __ctype_b, _toupper, _tolower */
	ptrdiff_t libc_tls;	    /* libc's static TLS block */
	size_t libc_tls_size;
	ptrdiff_t rseq_off;	    /* __rseq_offset */
	unsigned int rseq_size;	    /* __rseq_size (0: not registered) */
	/* Per-thread libc state handed on (libc_state.c). */
	struct host_state_word state[HOST_MALLOC_WORDS];
	int state_words;

	/* glibc's list of threads on user stacks, in _rtld_global (NULL:
	   weft threads are not members), its lock and in-flight word. */
	void **stack_user;
	uintptr_t *in_flight;
	volatile int *list_lock;

	/* glibc's private functions weft calls. */
	void *(*dl_allocate_tls)(void *);
	void (*dl_deallocate_tls)(void *, _Bool);
	void (*ctype_init)(void);
	void (*call_tls_dtors)(void);
};

/* Written only by host_layout_find. */
extern struct host_layout host_layout;

const char *host_layout_find(void);
const char *host_layout_check_here(void);
const char *host_layout_probe(void);

/* --- Cancellation state, shared with glibc (docs/cancel.md) -----------
   weft's cancellation engine keeps its state where glibc keeps its own,
   so that libc's internal cancellation points (which cannot be
   interposed) and glibc's unwinder act on it too: the `cancelhandling`
   word, the chain of registered unwind buffers (`cleanup_jmp_buf`), the
   chain of old-style cleanup buffers (`cleanup`) and `result`. */

/* Bits of `cancelhandling` (nptl/descr.h, 2.34 ... 2.43). */
enum {
	HOST_CANCEL_DISABLED = 0x1, /* state: PTHREAD_CANCEL_DISABLE */
	HOST_CANCEL_ASYNC = 0x2,    /* type: signal me (async, or in a point) */
	HOST_CANCELING = 0x4,	    /* asked, signal under way (2.36) */
	HOST_CANCELED = 0x8,	    /* asked (and seen, for a signalled one) */
	HOST_EXITING = 0x10,	    /* unwinding or ending: never again */
	HOST_TERMINATED = 0x20,
	HOST_SETXID = 0x40,	    /* a set*id call waits for this thread */
};

static inline int *host_cancel_word(char *tcb)
{
	return (int *)(tcb + host_layout.cancelhandling);
}
/* Innermost __pthread_unwind_buf_t registered (glibc's cleanup ABI). */
static inline void **host_unwind_chain(char *tcb)
{
	return (void **)(tcb + host_layout.cleanup_jmp_buf);
}
/* Innermost struct _pthread_cleanup_buffer (_pthread_cleanup_push). */
static inline void **host_cleanup_chain(char *tcb)
{
	return (void **)(tcb + host_layout.cleanup);
}
/* The thread's exit value, as glibc's start code and join read it. */
static inline void **host_result(char *tcb)
{
	return (void **)(tcb + host_layout.result);
}
/* glibc's tid word: current in every thread; weft's threads have the
   kernel write it at clone and clear it at exit. */
static inline volatile int *host_tid_word(char *tcb)
{
	return (volatile int *)(tcb + host_layout.tid);
}

/* Whether `ip` lies in libc's cancellation window (HOST_CANCEL_WINDOW):
   libc's cancellation point there has not made its system call yet, or
   the kernel will restart it. */
static inline int host_in_libc_cp_window(uintptr_t ip)
{
	return ip >= host_layout.libc_cp_begin && ip < host_layout.libc_cp_end;
}

#endif
