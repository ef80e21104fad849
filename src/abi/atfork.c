/* fork handlers: the library's one triple, and __register_atfork.

   Every pthread_atfork a program or library makes is libc_nonshared's
   stub calling __register_atfork(prepare, parent, child, __dso_handle)
   in libc.so.  libweft exports its own, which first has weft's triple
   registered (core/fork.c, once per process) and then passes the call
   on to glibc's unchanged, dso handle included (dlclose drops a
   library's handlers by it).  So weft's handlers are first in glibc's
   list whatever order the constructors ran in, and nothing is
   registered at load: docs/lifecycle.md, "fork".

   The triple calls each module's handlers in the order they ran when
   each registered its own at load: prepare, the sync layer's locks
   before core's (a named-semaphore call may hold the list lock while it
   waits for a core lock, never the reverse); parent and child, core's
   first (the child's registry and locks are sound before a module's
   handler runs), then the sync layer's. */
#include "sync/mutex_pp.h"
#include "sync/once.h"
#include "sync/sem.h"
#include "export.h"

static void all_prepare(void)
{
	sem_named_fork_prepare();
	core_fork_prepare();
}

static void all_parent(void)
{
	core_fork_parent();
	sem_named_fork_parent();
}

static void all_child(void)
{
	core_fork_child();
	once_fork_child();
	sem_named_fork_child();
	pp_fork_child();
}

const struct fork_handlers weft_fork_handlers = {
	all_prepare, all_parent, all_child,
};

/* glibc's declaration is private (its include/register-atfork.h). */
WEFT_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void),
				  void (*child)(void), void *dso_handle);

WEFT_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void),
				  void (*child)(void), void *dso_handle)
{
	fork_register();
	return host_register_atfork(prepare, parent, child, dso_handle);
}
