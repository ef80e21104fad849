/* Whether the process still has one thread, as glibc itself decides it:
   __libc_single_threaded (<sys/single_threaded.h>, glibc 2.32 on), true
   from start-up until glibc's first pthread_create, which clears it
   before the new thread exists.  weft's first thread creation goes
   through glibc's once (the probe thread, probe.c), and so does a
   thread glibc makes for itself (timer, mq_notify, aio helpers), so the
   flag is false before any second thread that weft or glibc made runs.

   weft's fork handlers take no lock while it is true, as glibc's fork
   takes none (core/fork.c).  A thread made by a raw clone outside any
   library leaves the flag set, for glibc's paths and weft's alike.  The
   flag is the one glibc exports, read through weft's GOT: the
   executable's copy when the program was linked with a copy
   relocation, which glibc clears as well. */
#ifndef WEFT_HOST_SINGLE_H
#define WEFT_HOST_SINGLE_H

#include <sys/single_threaded.h>

static inline int host_single_threaded(void)
{
	return __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED) != 0;
}

/* Set, never cleared, by weft's clone() (src/abi/clone.c) before a clone
   that shares the address space and does not suspend its caller (not a
   vfork): a thread glibc's flag does not show.  glibc's clone is the
   way programs and libraries make such threads (a clone by syscall()
   cannot give the child a stack of its own to return on); a clone by
   inline assembly stays unseen, as it does for glibc's own paths. */
extern int host_foreign_thread;

/* Whether no other thread of the process can be running: glibc's flag
   says one thread and weft's clone() has made none.  What a plain-store
   fast path needs (sync/mutex.h, mutex_lock_fast).  Both turn false
   only in the one thread there is, before the second exists. */
static inline int host_one_thread(void)
{
	return host_single_threaded() &&
	       !__atomic_load_n(&host_foreign_thread, __ATOMIC_RELAXED);
}

#endif
