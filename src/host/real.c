/* glibc's own functions (real.h). */
#include <dlfcn.h>
#include <errno.h>

#include "elf_sym.h"
#include "real.h"

struct host_real host_real;

/* The next definition of `name` after libweft in the lookup order: libc's
   default version, or a tool's interceptor loaded between us and libc
   (ThreadSanitizer's, for example), which must see the calls weft
   forwards.  A versioned lookup would skip such an unversioned
   interceptor, so `version` is only the fallback. */
void *host_next_sym(const char *name, const char *version)
{
	int sure;
	void *p = host_sym_lookup(name, 1, &sure);

	/* Read from the objects' own symbol tables: dlsym takes the
	   loader's lock and may malloc, and this runs at start-up and at
	   a forwarder's first call, either of which may be in a signal
	   handler (docs/glibc-host.md, "Signal handlers before start-up"). */
	if (p || sure)
		return p;
	p = dlsym(RTLD_NEXT, name);
	return p ? p : version ? dlvsym(RTLD_NEXT, name, version) : NULL;
}

void *host_default_sym(const char *name)
{
	int sure;
	void *p = host_sym_lookup(name, 0, &sure);

	return p || sure ? p : dlsym(RTLD_DEFAULT, name);
}

int host_real_resolve(void)
{
	struct host_real *r = &host_real;

#define REAL(field, ver) r->field = host_next_sym(#field, ver)
	REAL(pthread_create, "GLIBC_2.34");
	REAL(pthread_join, "GLIBC_2.34");
	REAL(pthread_tryjoin_np, "GLIBC_2.34");
	REAL(pthread_timedjoin_np, "GLIBC_2.34");
	REAL(pthread_clockjoin_np, "GLIBC_2.34");
	REAL(pthread_detach, "GLIBC_2.34");
	REAL(pthread_self, "GLIBC_2.2.5");
	REAL(pthread_exit, "GLIBC_2.2.5");
	REAL(pthread_getattr_np, "GLIBC_2.32");
	REAL(pthread_kill, "GLIBC_2.34");
	REAL(pthread_sigqueue, "GLIBC_2.34");
	REAL(pthread_setschedparam, "GLIBC_2.2.5");
	REAL(pthread_getschedparam, "GLIBC_2.2.5");
	REAL(pthread_setschedprio, "GLIBC_2.3.4");
	REAL(pthread_setaffinity_np, "GLIBC_2.34");
	REAL(pthread_getaffinity_np, "GLIBC_2.32");
	REAL(pthread_setname_np, "GLIBC_2.34");
	REAL(pthread_getname_np, "GLIBC_2.34");
	REAL(pthread_getcpuclockid, "GLIBC_2.34");
	REAL(confstr, "GLIBC_2.2.5");
	REAL(pthread_key_create, "GLIBC_2.34");
	REAL(pthread_key_delete, "GLIBC_2.34");
	REAL(pthread_getspecific, "GLIBC_2.34");
	REAL(pthread_setspecific, "GLIBC_2.34");
	REAL(thrd_create, "GLIBC_2.34");
	/* Last: absent before 2.42.  Every lookup here is read from the
	   symbol tables (host_next_sym), so a name nothing defines costs no
	   failed dlsym, whose error message is malloc'ed (a first malloc at
	   start-up costs every program, elf_sym.h); an allocator that calls
	   pthread functions would then re-enter weft, which forwards them
	   during start-up through the pointers above (one still NULL here
	   crashed every program linked with jemalloc, and every preloaded
	   ASan program: ASan's first malloc calls pthread_key_create). */
	REAL(pthread_gettid_np, "GLIBC_2.42");
#undef REAL
	r->cxa_thread_atexit_impl = host_default_sym("__cxa_thread_atexit_impl");
	if (!r->cxa_thread_atexit_impl)
		r->cxa_thread_atexit_impl = host_vsym_addr(
			"__cxa_thread_atexit_impl", "GLIBC_2.18");
	return r->pthread_create && r->pthread_join && r->pthread_exit &&
	       r->pthread_self && r->cxa_thread_atexit_impl;
}

extern void *__dso_handle;

int host_at_thread_exit(void (*fn)(void *), void *arg)
{
	return host_real.cxa_thread_atexit_impl(fn, arg, &__dso_handle);
}

/* glibc's __register_atfork (GLIBC_2.3.2), the function behind every
   pthread_atfork: libc_nonshared's pthread_atfork, linked into each
   program and library, calls it with the caller's __dso_handle, which
   dlclose uses to drop a library's handlers.  libweft exports one of its
   own (abi/atfork.c), so glibc's is looked up past it, once. */
int host_register_atfork(void (*prepare)(void), void (*parent)(void),
			 void (*child)(void), void *dso_handle)
{
	typedef int fn_t(void (*)(void), void (*)(void), void (*)(void), void *);
	static fn_t *real;
	fn_t *p = __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (!p) {
		p = (fn_t *)host_next_sym("__register_atfork", "GLIBC_2.3.2");
		if (!p)
			return ENOMEM;
		__atomic_store_n(&real, p, __ATOMIC_RELAXED);
	}
	return p(prepare, parent, child, dso_handle);
}

int host_register_atfork_weft(void (*prepare)(void), void (*parent)(void),
			      void (*child)(void))
{
	return host_register_atfork(prepare, parent, child, &__dso_handle);
}
