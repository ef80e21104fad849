/* glibc's own implementations of the functions weft exports: what an
   entry point calls when weft forwards (it does not serve, or the thread
   is one glibc made), and glibc's fork and thread-exit hooks. */
#ifndef WEFT_HOST_REAL_H
#define WEFT_HOST_REAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

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
	pid_t (*pthread_gettid_np)(pthread_t); /* glibc 2.42 on; else NULL */
	size_t (*confstr)(int, char *, size_t);
	int (*pthread_key_create)(pthread_key_t *, void (*)(void *));
	int (*pthread_key_delete)(pthread_key_t);
	void *(*pthread_getspecific)(pthread_key_t);
	int (*pthread_setspecific)(pthread_key_t, const void *);
	int (*thrd_create)(unsigned long *, int (*)(void *), void *);
	/* glibc's hook behind thread_local. */
	int (*cxa_thread_atexit_impl)(void (*)(void *), void *, void *);
};
extern struct host_real host_real;

/* Looks them up (at start-up: adopting a thread may happen inside its
   allocator, where no lookup may run); 0 when glibc's thread functions
   are missing. */
int host_real_resolve(void);

/* glibc's definition of `name` (the one weft's export hides): the given
   symbol version if it exists, else the default one.  For the entry
   points that are not in host_real; see GLIBC_FN in abi/export.h. */
void *host_next_sym(const char *name, const char *version);

/* dlsym(RTLD_DEFAULT, name), read from the symbol tables where they
   answer (elf_sym.h): no malloc, not even for a name nothing defines. */
void *host_default_sym(const char *name);

/* glibc's __register_atfork (found past libweft's own export): registers
   fork handlers for the object `dso_handle`; 0 or ENOMEM.  The _weft
   form registers libweft's own (its __dso_handle). */
int host_register_atfork(void (*prepare)(void), void (*parent)(void),
			 void (*child)(void), void *dso_handle);
int host_register_atfork_weft(void (*prepare)(void), void (*parent)(void),
			      void (*child)(void));

/* Registers a function to run when the calling (adopted) thread exits. */
int host_at_thread_exit(void (*fn)(void *), void *arg);

#endif
