/* Building a TCB (tcb.c): what weft does so that glibc accepts a thread
   started by weft's own clone as its own (docs/glibc-host.md, "Per
   thread"; the obligation codes H1-H4, P1-P9, S1-S6 are those of
   ../shared/design/glibc-host.md). */
#ifndef WEFT_HOST_TCB_H
#define WEFT_HOST_TCB_H

#include <stddef.h>
#include <stdint.h>
#include "layout.h"

/* Geometry of a thread's TLS area: the static TLS blocks plus glibc's
   struct pthread, which sits at the top (thread pointer = its start). */
static inline size_t host_tls_area_size(void)
{
	return host_layout.tls_size;
}
static inline size_t host_tls_align(void)
{
	return host_layout.tls_align;
}
static inline size_t host_tcb_size(void)
{
	return host_layout.tcb_size;
}

/* Before clone: prepare the TCB at `tcb` (inside the area) for a
   joinable thread whose whole stack block is [block, block +
   block_size).  Allocates the DTV and copies every module's TLS image.
   Returns 0 or -ENOMEM. */
int host_tcb_prepare(char *tcb, char *block, size_t block_size);

/* glibc's record of the thread's join state, for glibc's own functions
   that may be handed this TCB (2.43 answers ESRCH for a joinstate of 0):
   detached (set before clone; a later pthread_detach is weft's business
   and not recorded: the thread may be reclaimed meanwhile) and ended
   (the thread's last step: for glibc's threads the kernel clears this
   word at exit, for weft's it clears `tid`). */
void host_tcb_set_detached(char *tcb);
void host_tcb_set_ended(char *tcb);

/* In the new thread, before any user code. */
void host_thread_begin(char *tcb);
/* The rseq cpu_id word of the thread of `tcb` (kept by the kernel once
   the thread registered its area), or NULL when glibc has no rseq area. */
const volatile uint32_t *host_rseq_cpu(char *tcb);

/* Release the DTV and dynamic TLS (the thread's last libc-visible step,
   or done for it by whoever reuses its memory). */
void host_tls_release(char *tcb);
/* The start of the DTV's allocation (the TCB points one entry into it),
   for a cached block to keep where a leak checker sees it. */
void *host_tls_dtv_block(char *tcb);

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
static inline struct host_robust_head *host_robust_head(void)
{
	return (struct host_robust_head *)((char *)arch_thread_pointer() +
					   host_layout.robust_head);
}

/* The stack pointer saved in a jmp_buf filled by glibc's __sigsetjmp
   (stored mangled with the process's pointer guard). */
uintptr_t host_jmpbuf_sp(const void *jmpbuf);

/* Nonzero when the thread with this TCB has been asked to cancel and
   has cancellation enabled: a condvar signaller can pass over a waiter
   that is about to be cancelled (sync.md). */
int host_cancel_requested(char *tcb);

#endif
