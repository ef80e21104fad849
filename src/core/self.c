/* The calling thread's descriptor, and adoption of threads weft did not
   create: the main thread, and threads glibc makes for itself (timer,
   mq_notify, aio and getaddrinfo_a helpers run user callbacks). */
#include <stdlib.h>
#include <sys/mman.h>

#include "host/glibc.h"
#include "kernel/syscall.h"
#include "runstate.h"
#include "thread.h"

__thread struct weft_thread *weft_tls_self
	__attribute__((tls_model("initial-exec")));

static struct weft_thread main_thread;

void self_tls_set(char *tcb, struct weft_thread *t)
{
	ptrdiff_t off = (char *)&weft_tls_self - (char *)arch_thread_pointer();

	*(struct weft_thread **)(tcb + off) = t;
}

/* Descriptors of adopted threads come from the kernel, not from malloc: a
   thread weft did not create can make its first weft call from inside
   its allocator (jemalloc's background threads, made with the
   pthread_create that follows jemalloc's own in the lookup order, call
   pthread_self while jemalloc sets up their state through
   pthread_setspecific), and a malloc here re-entered the allocator, which
   failed ("<jemalloc>: Error setting tsd.") or deadlocked. */
#define ADOPTED_SIZE ((sizeof(struct weft_thread) + 4095) & ~(size_t)4095)

static struct weft_thread *adopted_alloc(void)
{
	void *p = sys_mmap(NULL, ADOPTED_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return sys_mmap_failed(p) ? NULL : p; /* zero-filled */
}

void adopted_free(struct weft_thread *t)
{
	sys_munmap(t, ADOPTED_SIZE);
}

/* The last step of an adopted thread: its handle goes stale, its
   descriptor goes. */
static void adopted_reclaim(void *p)
{
	struct weft_thread *t = p;

	weft_tls_self = NULL;
	thread_reclaim(t);
}

/* A glibc key whose destructor is adopted_reclaim: glibc runs its keys'
   destructors after every thread-exit hook (__call_tls_dtors), so an
   adopted thread keeps its descriptor through all of them.  Without it,
   an allocator that frees in a later hook (jemalloc frees glibc's own
   list entry after each hook) re-creates its thread state with
   pthread_setspecific, which adopted the thread again and registered
   another hook, for ever: a glibc-made thread under jemalloc never
   ended.  0 not made, 1 being made, 2 made, 3 failed. */
static int late_key_state;
static pthread_key_t late_key;

static int late_key_ready(void)
{
	int s = 0;

	if (__atomic_compare_exchange_n(&late_key_state, &s, 1, 0,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		s = host_real.pthread_key_create(&late_key, adopted_reclaim) == 0
			    ? 2
			    : 3;
		__atomic_store_n(&late_key_state, s, __ATOMIC_RELEASE);
	}
	return s == 2;
}

/* Runs when an adopted glibc thread ends (its first exit hook). */
static void adopted_exit(void *p)
{
	struct weft_thread *t = p;

	/* Joins and detaches of adopted threads are glibc's business (they
	   are forwarded with the TCB), so nobody else holds `t`.  A key
	   destructor's pthread_exit must not unwind past this hook: the
	   handle would stay valid and the descriptor leak. */
	thread_exit_duty(t, tsd_run_destructors);
	runstate_leave();
	if (__atomic_load_n(&late_key_state, __ATOMIC_ACQUIRE) == 2 &&
	    host_real.pthread_setspecific(late_key, t) == 0)
		return; /* adopted_reclaim, after the other hooks */
	adopted_reclaim(t);
}

static struct weft_thread *adopt_self(void)
{
	char *tcb = arch_thread_pointer();
	struct weft_thread *t;

	__atomic_store_n(&weft_threads_seen, 1, __ATOMIC_RELAXED);
	if (sys_gettid() == sys_getpid()) {
		t = &main_thread;
		t->origin = WEFT_ORIGIN_MAIN;
	} else {
		/* A second thread, made by glibc (a helper, or a creation
		   forwarded to it) or a raw clone: the child of a fork must
		   drop its descriptor (fork.c). */
		fork_register();
		t = adopted_alloc();
		if (!t)
			abort();
		t->origin = WEFT_ORIGIN_ADOPTED;
	}
	t->tcb = tcb;
	t->tidp = host_tid_word(tcb);
	t->join_state = WEFT_JOINABLE;
	/* glibc's own handle, unless the registry gives one below. */
	t->handle = (uint64_t)(uintptr_t)tcb;
	/* Set before anything below can call malloc (registering this
	   thread's exit hook does), so that a weft call made from inside
	   the allocator finds this descriptor instead of adopting again. */
	weft_tls_self = t;
	/* The main thread's TCB lives as long as the process; glibc may
	   free its own threads' at their exit. */
	runstate_enter(sys_gettid(), t->origin == WEFT_ORIGIN_MAIN
					     ? host_rseq_cpu(tcb)
					     : NULL);
	(void)registry_add(t);
	if (t->origin == WEFT_ORIGIN_ADOPTED) {
		(void)late_key_ready();
		host_at_thread_exit(adopted_exit, t);
	}
	WEFT_COUNT(adopted);
	return t;
}

struct weft_thread *weft_self(void)
{
	struct weft_thread *t = weft_tls_self;

	return __builtin_expect(t != NULL, 1) ? t : adopt_self();
}
