/* The calling thread's descriptor, and adoption of threads weft did not
   create: the main thread, and threads glibc makes for itself (timer,
   mq_notify, aio and getaddrinfo_a helpers run user callbacks). */
#include <stdlib.h>

#include "../host/glibc.h"
#include "thread.h"

__thread struct weft_thread *weft_tls_self
	__attribute__((tls_model("initial-exec")));

static struct weft_thread main_thread;

/* Runs when an adopted glibc thread ends: its handle goes stale. */
static void adopted_exit(void *p)
{
	struct weft_thread *t = p;

	/* Joins and detaches of adopted threads are glibc's business (they
	   are forwarded with the TCB), so nobody else holds `t`. */
	tsd_run_destructors(t);
	weft_tls_self = NULL;
	thread_reclaim(t);
}

static struct weft_thread *adopt_self(void)
{
	char *tcb = arch_thread_pointer();
	struct weft_thread *t;

	if (sys_gettid() == sys_getpid()) {
		t = &main_thread;
		t->origin = WEFT_ORIGIN_MAIN;
	} else {
		t = calloc(1, sizeof *t);
		if (!t)
			abort();
		t->origin = WEFT_ORIGIN_ADOPTED;
	}
	t->tcb = tcb;
	t->tidp = host_tid_word(tcb);
	t->join_state = WEFT_JOINABLE;
	if (registry_add(t) != 0)
		t->handle = (uint64_t)(uintptr_t)tcb; /* glibc's own handle */
	weft_tls_self = t;
	if (t->origin == WEFT_ORIGIN_ADOPTED)
		host_at_thread_exit(adopted_exit, t);
	WEFT_COUNT(adopted);
	return t;
}

struct weft_thread *weft_self(void)
{
	struct weft_thread *t = weft_tls_self;

	return __builtin_expect(t != NULL, 1) ? t : adopt_self();
}
