/* The glibc host adapter: the one layer that knows glibc's private
   layout (docs/glibc-host.md).  weft's threads are made with a raw
   clone, but every ordinary glibc function must keep working inside
   them, so each new thread gets a TCB that glibc accepts as its own.

   One header per job; this one includes them all:

     layout.h      what weft knows of the running glibc: struct host_layout,
                   filled once (find.c without a second thread, the release
                   table releases.c, the probe thread probe.c)
     env.h         the process: environment, release, load order, tools
     real.h        glibc's own functions, for forwarding
     elf_sym.h     whether a loaded object defines a name (no failing dlsym)
     objects.h     the loaded objects, walked without the loader's lock
                   while the process has one thread
     tcb.h         building a TCB, the thread's first and last steps
     threads.h     glibc's thread lists and the set*id handshake
     libc_state.h  libc's per-thread state at a thread's end
     tid.h         the caller's tid in two loads
     single.h      whether the process still has one thread (glibc's flag)
     unwinder.h    libgcc's unwinder, loaded when first needed
     attr_layout.h, sched_cache.h   glibc's attribute layout, the cached
                   scheduling fields */
#ifndef WEFT_HOST_GLIBC_H
#define WEFT_HOST_GLIBC_H

#include "elf_sym.h"
#include "env.h"
#include "layout.h"
#include "libc_state.h"
#include "real.h"
#include "single.h"
#include "tcb.h"
#include "threads.h"
#include "tid.h"
#include "unwinder.h"

#endif
