/* weft — a POSIX thread library for Linux x86-64 that replaces glibc's
   NPTL in unmodified programs.  This header declares weft's own
   extensions; the POSIX interface comes from <pthread.h> as usual.

   A program that uses these functions while it may also run without
   weft (for example a test run once with LD_PRELOAD and once without)
   can declare them weak and check for NULL. */
#ifndef WEFT_H
#define WEFT_H

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION "0.1.0"

/* Nonzero when weft serves the pthread interface in this process: the
   running glibc was recognised at start-up.  Zero means weft forwards
   every call to glibc's own implementation. */
int weft_active(void);

/* Nonzero when weft is active and the calling thread is known to weft:
   created by weft's pthread_create, or adopted (the main thread, or a
   thread glibc made internally). */
int weft_self_is_weft(void);

/* How the calling thread came to be, as weft sees it. */
enum weft_thread_origin {
	WEFT_THREAD_UNKNOWN = 0, /* weft not active */
	WEFT_THREAD_CREATED = 1, /* weft's pthread_create */
	WEFT_THREAD_MAIN = 2,	 /* the initial thread */
	WEFT_THREAD_ADOPTED = 3, /* created by glibc internally */
};
int weft_self_origin(void);

const char *weft_version(void);

/* Counters since start-up (or since fork, in a child). */
struct weft_stats {
	unsigned long threads_created;	/* by weft's pthread_create */
	unsigned long threads_live;	/* weft-known threads alive now */
	unsigned long stacks_mapped;	/* fresh mappings */
	unsigned long stacks_reused;	/* taken from the stack cache */
	unsigned long stacks_unmapped;	/* returned to the kernel */
	unsigned long malloc_handoffs;	/* libc malloc state passed on */
	unsigned long threads_adopted;	/* main + glibc-made threads */
};
int weft_get_stats(struct weft_stats *out);

/* Writes a human-readable description of weft's state (version, glibc,
   host check, tunables) to fd. */
void weft_print_info(int fd);

#ifdef __cplusplus
}
#endif
#endif
