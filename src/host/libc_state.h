/* libc's per-thread state at a weft thread's end (libc_state.c): what
   glibc's own thread exit frees or hands on, done for weft's threads. */
#ifndef WEFT_HOST_LIBC_STATE_H
#define WEFT_HOST_LIBC_STATE_H

#include <stdint.h>
#include "layout.h"

/* At the end of the thread, in glibc's order: C++ thread_local
   destructors first, then (after thread-specific data) the libc
   per-thread state glibc would free, as far as it is reachable. */
void host_call_tls_dtors(void);
void host_libc_freeres(char *tcb);

/* The unreachable part (S4): malloc's thread cache and arena binding,
   and from 2.41 the getrandom state, cannot be freed from outside libc.
   Instead of leaking them, a thread that ends leaves them to the next
   thread weft creates on its memory (core/stack.c): take moves them out
   of the dead thread's TLS into `words` (HOST_MALLOC_WORDS of them) and
   returns 1 if there was any; install puts them into a new TCB.  No
   libc call may follow take in the thread. */
int host_malloc_state_take(char *tcb, uintptr_t *words);
void host_malloc_state_install(char *tcb, const uintptr_t *words);

#endif
