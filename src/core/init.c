/* Start-up: once per process, from libweft's constructor or from the
   first weft entry point called before it (another library's
   constructor may create threads first). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "host/glibc.h"
#include "kernel/futex.h"
#include "cancel.h"
#include "stats.h"
#include "thread.h"
#include "tunables.h"

int weft_is_active;
int weft_init_done; /* 0 not started, 1 running, 2 done (futex word) */
struct weft_counters weft_counters;

/* Formatted on the stack and written with one write(): dprintf would
   malloc a stdio buffer, and a large malloc consolidates the arena's
   free chunks, which in a fork child means a copy-on-write fault on every
   page holding one (40 ms per exiting child in PTS
   pthread_cond_broadcast/1-2).  Raw system calls: libc's open, write and
   close are weft's own cancellation points (src/abi), a layer above. */
static void write_report(void)
{
	char buf[512];
	int n, fd = (int)sys_call4(SYS_openat, AT_FDCWD, weft_tunables.report_path,
				   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return;
	n = snprintf(buf, sizeof buf,
		     "pid=%d\nactive=%d\nthreads_created=%lu\nstacks_mapped=%lu\n"
		     "stacks_reused=%lu\nstacks_unmapped=%lu\nmalloc_handoffs=%lu\n"
		     "threads_adopted=%lu\n",
		     sys_getpid(), weft_is_active, weft_counters.created,
		     weft_counters.stacks_mapped, weft_counters.stacks_reused,
		     weft_counters.stacks_unmapped, weft_counters.malloc_handoffs,
		     weft_counters.adopted);
	if (n > 0 && (size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	if (n > 0 && sys_call3(SYS_write, fd, buf, (size_t)n) < 0) {
		/* best effort: nobody to tell */
	}
	sys_call1(SYS_close, fd);
}

/* WEFT_REPORT's and WEFT_STATS's exit handlers.  When weft starts from
   a .preinit_array function (environ still NULL: libc not initialised
   yet) they are registered by libweft's constructor instead: gcc's
   AddressSanitizer starts weft that way, from inside its own
   initialisation (AsanTSDInit's pthread_key_create), and its __cxa_atexit
   interceptor aborts when called then ("CHECK failed: ...
   !asan_init_is_running"), so every ASan program died at start-up with
   WEFT_STATS or WEFT_REPORT set.  Lock waits before the constructor are
   then not counted. */
static int exit_handlers_deferred;

static void exit_handlers(void)
{
	if (weft_tunables.report_path)
		atexit(write_report);
	/* Also printed when the last thread ends the process from
	   thread_finish: that is exit(0), which runs atexit handlers. */
	if (weft_tunables.stats)
		stats_init();
}

/* Serve or forward (docs/glibc-host.md, "Start-up"): weft serves only
   when nothing stands in the way, and says why not otherwise.  In this
   order: glibc's own functions must be there to forward to; libweft must
   come before libc (else the program's calls go to glibc anyway); no tool
   that watches the thread functions itself may be present; and glibc's
   layout must be one weft knows, found and checked on the calling thread
   without a second thread (the probe thread waits for the first thread
   creation: weft_threads_check_slow).  Returns NULL to serve, else the reason. */
static char why_not_buf[200];

static const char *why_not_serve(void)
{
	const char *tool, *why;

	if (!host_real_resolve())
		return "glibc's pthread functions not found";
	if (!host_loaded_before_libc())
		return "libweft was loaded after libc (by dlopen?), so the "
		       "program's thread calls go to glibc";
	if ((tool = host_thread_tool())) {
		snprintf(why_not_buf, sizeof why_not_buf,
			 "%s watches the thread functions itself", tool);
		return why_not_buf;
	}
	if ((why = host_layout_find()))
		return why;
	return host_layout_check_here();
}

static const char *host_status = "not initialised";

const char *weft_host_status(void)
{
	return host_status;
}

static int init_tid; /* the thread running start-up (state 1) */

static void init_once(void)
{
	extern char **environ;
	const char *why;

	tunables_init();
	/* weft's fork handlers are registered by the first thread creation
	   or adoption of a second thread, or the first pthread_atfork
	   (fork.c), not here: start-up may run in a signal handler that
	   interrupted glibc's fork-handler lock on its own thread.  Only
	   the statistics have work for a child before then: start-up then
	   runs from libweft's constructor (report_asked), not a handler. */
	if (stats_enabled())
		fork_register();
	why = why_not_serve();
	weft_is_active = why == NULL;
	cancel_test_init(weft_is_active);
	host_status = why ? why : "ok";
	if (!weft_is_active) {
		/* One clear line; the program keeps running on glibc. */
		dprintf(2, "weft: %s; forwarding all thread calls to glibc's "
			   "own implementation\n", why);
	} else {
		/* No thread, mapping or arena here (issue 16): the main
		   thread is adopted by its first call that needs its
		   descriptor, the probe thread waits for the first thread
		   creation. */
		cancel_init();
		tsd_adopt_startup_keys(host_real.pthread_getspecific);
	}
	if (environ)
		exit_handlers();
	else
		exit_handlers_deferred = 1;
}

/* Start-up runs once.  The thread running it forwards its own calls made
   meanwhile (from inside an allocator that start-up's dlsym called, say)
   to glibc; any other thread waits until start-up is done, so that no
   object is used by glibc's code and then by weft's (a jemalloc
   background thread once waited on a condvar through glibc's code while
   start-up ran, and hung when weft signalled it after).  Returns what
   weft_serving returns. */
int weft_init_slow(void)
{
	int s = 0;

	if (__atomic_compare_exchange_n(&weft_init_done, &s, 1, 0,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&init_tid, sys_gettid(), __ATOMIC_RELAXED);
		init_once();
		__atomic_store_n(&weft_init_done, 2, __ATOMIC_RELEASE);
		futex_wake(&weft_init_done, 0x7fffffff, WEFT_FUTEX_PRIVATE);
		return weft_is_active;
	}
	if (s == 1 && __atomic_load_n(&init_tid, __ATOMIC_RELAXED) == sys_gettid())
		return 0;
	while ((s = __atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE)) == 1)
		futex_wait(&weft_init_done, 1, WEFT_FUTEX_PRIVATE);
	return weft_is_active;
}

/* --- The first thread creation (docs/glibc-host.md, "Start-up") -------
   The probe thread runs here, once, before the first thread weft makes:
   it checks the facts a new thread shows and switches glibc into
   multi-threaded mode, which glibc itself does at its first
   pthread_create.  A creation meanwhile, nested in the probe's own (an
   allocator called from glibc's pthread_create starting a helper
   thread) or from another thread, goes to glibc rather than wait: the
   waiter might hold a lock (an allocator's) that the probe's creation
   needs.  If the probe refuted the release, thread creation goes to
   glibc for good.  Such threads are glibc's for their whole life,
   adopted like glibc's own helper threads, and weft keeps serving every
   call that rests only on the facts step two checked. */
int weft_threads_state; /* 0 not checked, 1 probing, 2 weft's, 3 glibc's */
int weft_threads_seen;
static const char *threads_refused;

int weft_threads_check_slow(void)
{
	const char *why;
	int s = 0;

	/* No signal handler can be here (thread creation is not
	   async-signal-safe): weft's fork handlers are registered now, if
	   no pthread_atfork came first, before any thread they guard. */
	fork_register();
	__atomic_store_n(&weft_threads_seen, 1, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&weft_threads_state, &s, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return s == 2; /* probing meanwhile, or refused */
	/* Every thread may be cancelled or exit from here on: the unwinder
	   is loaded now, not in a signal handler or a dying thread. */
	(void)host_unwinder_load();
	why = host_layout_probe();
	if (why) {
		threads_refused = why;
		host_status = why;
		dprintf(2, "weft: %s; thread creation goes to glibc's own "
			   "pthread_create from now on (weft serves the rest)\n",
			why);
	}
	__atomic_store_n(&weft_threads_state, why ? 3 : 2, __ATOMIC_RELEASE);
	return !why;
}

const char *weft_threads_refused(void)
{
	return __atomic_load_n(&weft_threads_state, __ATOMIC_ACQUIRE) == 3
		       ? threads_refused
		       : NULL;
}

/* Start-up is not run here (issue 16): a program that never calls a
   thread function pays for no lookup, check or handler, only for the
   loading of libweft (its fork handlers are registered by the first
   thread creation or pthread_atfork, core/fork.c).  It runs at
   the first call that needs it (weft_serving), from any thread, before
   that call is served or forwarded.  Except when an exit report is
   asked for (WEFT_REPORT, WEFT_STATS): the report says whether weft
   served, so start-up runs here as before.  If an earlier call already
   started it from a .preinit_array function, its exit handlers are
   registered here (exit_handlers_deferred). */
static int starts_with(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return !*prefix;
}

/* Whether WEFT_REPORT or WEFT_STATS is set.  libc has set environ by now
   (constructors run after libc's).  Read here rather than with getenv:
   a page of libc's code that a program which never calls getenv does
   not otherwise touch. */
static int report_asked(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++)
		if (starts_with(*e, "WEFT_REPORT=") || starts_with(*e, "WEFT_STATS="))
			return 1;
	return 0;
}

__attribute__((constructor(101))) static void weft_constructor(void)
{
	if (!__atomic_load_n(&weft_init_done, __ATOMIC_ACQUIRE) && !report_asked())
		return;
	weft_serving();
	if (exit_handlers_deferred) {
		exit_handlers_deferred = 0;
		exit_handlers();
	}
}
