/* weft's own extensions (<weft.h>) and the confstr() hook that makes
   `getconf GNU_LIBPTHREAD_VERSION` name weft. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/tunables.h"
#include "export.h"
#include <weft.h>

WEFT_EXPORT int weft_active(void)
{
	return weft_serving();
}

WEFT_EXPORT int weft_self_origin(void)
{
	if (!weft_serving())
		return WEFT_THREAD_UNKNOWN;
	return weft_self()->origin;
}

WEFT_EXPORT int weft_self_is_weft(void)
{
	return weft_self_origin() != WEFT_THREAD_UNKNOWN;
}

WEFT_EXPORT const char *weft_version(void)
{
	return WEFT_VERSION_STR;
}

WEFT_EXPORT int weft_get_stats(struct weft_stats *s)
{
	const struct weft_counters *c = &weft_counters;

	weft_serving();
	memset(s, 0, sizeof *s);
	s->threads_created = c->created;
	s->threads_live = registry_live_count();
	s->stacks_mapped = c->stacks_mapped;
	s->stacks_reused = c->stacks_reused;
	s->stacks_unmapped = c->stacks_unmapped;
	s->malloc_handoffs = c->malloc_handoffs;
	s->threads_adopted = c->adopted;
	return 0;
}

/* What each kind of mutex costs and guarantees (docs/sync.md,
   docs/mutex-robust-pi.md, docs/mutex-pp.md). */
static void print_mutex_kinds(int fd)
{
	static const char *const kinds[] = {
		"normal, recursive, error-checking, adaptive (private): one CAS to "
		"lock and one to unlock; spins, then yields the CPU (WEFT_YIELD_WAIT), "
		"only while nobody sleeps; waiters "
		"woken highest real-time priority first; a SCHED_OTHER waiter "
		"starving for 1 ms is handed the mutex, never ahead of real-time "
		"waiters; condvar wake-ups wait for the release",
		"process-shared: glibc's 0/1/2 word, shared with plain glibc "
		"processes; no hand-off",
		"robust: glibc's tid word and robust list (registered at birth); "
		"EOWNERDEAD when the holder dies, thread or process; always "
		"process-shared, as glibc",
		"priority inheritance: one CAS each way uncontended; contended, the "
		"kernel's FUTEX_LOCK_PI boosts the holder to its top waiter",
		"priority protect: the ceiling in glibc's place; a "
		"sched_setscheduler only when the highest held ceiling changes; "
		"EINVAL above the ceiling; waiters sleep at their own priority "
		"(woken highest first) and raise it once, for the try that "
		"takes the mutex",
		"condvar waits with PI mutexes: requeue-PI (the kernel hands the "
		"waiter the mutex, never woken into a held one; the holder's "
		"release requeues waiters of no higher priority), private "
		"condvars; process-shared ones wake and retake; the waiter owns "
		"the mutex before it runs, which bounds an inversion and makes "
		"a signaller that relocks first block in FUTEX_LOCK_PI",
	};

	dprintf(fd, "mutex kinds:\n");
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		dprintf(fd, "  %s\n", kinds[i]);
}

WEFT_EXPORT void weft_print_info(int fd)
{
	int active = weft_serving();
	/* The probe thread runs at a program's first thread creation; info
	   runs it now, so that its host line says what that creation finds. */
	int threads = active && weft_threads_ready();

	dprintf(fd, "weft %s\n", WEFT_VERSION_STR);
	dprintf(fd, "glibc: %s\n", host_glibc_version());
	dprintf(fd, "host: %s\n", weft_host_status());
	dprintf(fd, "mode: %s\n",
		!active	   ? "forwarding to glibc"
		: threads ? "serving"
			  : "serving, but thread creation goes to glibc");
	if (active) {
		dprintf(fd, "glibc thread list: %s\n",
			host_threads_listed() ? "member (set*id, dlopen TLS reach weft threads)"
					      : "not a member (unknown setxid_futex offset)");
		if (host_layout.cancel_protocol == HOST_CANCEL_WINDOW)
			dprintf(fd, "libc cancellation points: libc's window "
				    "(__syscall_cancel_arch at libc+%#lx), "
				    "every enabled target is signalled\n",
				(unsigned long)(host_layout.libc_cp_begin -
						host_layout.libc_base));
		else
			dprintf(fd, "libc cancellation points: the ASYNC bit "
				    "around their system call\n");
	}
	dprintf(fd, "tunables:\n");
	dprintf(fd, "  WEFT_STACK_CACHE=%zu (resident bytes of dead threads' stacks kept; "
		    "default %lu)\n",
		weft_tunables.stack_cache_bytes, WEFT_STACK_CACHE_DEFAULT);
	dprintf(fd, "  WEFT_STACK_CACHE_COUNT=%zu (dead threads' blocks kept; "
		    "default %lu)\n",
		weft_tunables.stack_cache_count, WEFT_STACK_CACHE_COUNT_DEFAULT);
	dprintf(fd, "  WEFT_STACK_TRIM=%s (unused stack of a dead thread: "
		    "none, dontneed, free; default %s)\n",
		tunables_trim_name(weft_tunables.stack_trim),
		tunables_trim_name(WEFT_STACK_TRIM_DEFAULT));
	dprintf(fd, "  WEFT_GUARD=%s (guard pages: mprotect = a mapping of their "
		    "own, advise = in the page tables where the kernel can, auto = "
		    "mappings for the first %lu blocks, then advise; default %s)\n",
		tunables_guard_name(weft_tunables.guard), WEFT_GUARD_AUTO_MAPPINGS,
		tunables_guard_name(WEFT_GUARD_DEFAULT));
	dprintf(fd, "  WEFT_REPORT=%s (file for counters at exit)\n",
		weft_tunables.report_path ? weft_tunables.report_path : "");
	dprintf(fd, "  WEFT_STATS=%d (counters and lock contention to stderr at exit; "
		    "default 0)\n",
		weft_tunables.stats);
	dprintf(fd, "  WEFT_STATS_TOP=%zu (contended locks listed, 0 = all; "
		    "default %lu)\n",
		weft_tunables.stats_top, WEFT_STATS_TOP_DEFAULT);
	dprintf(fd, "  WEFT_YIELD_WAIT=%u (yields of a mutex, condvar or semaphore waiter before it sleeps, "
		    "0 = none; default %u)\n",
		weft_tunables.yield_waits, WEFT_YIELD_WAIT_DEFAULT);
	dprintf(fd, "default stack size: %zu\n", stack_default_size());
	print_mutex_kinds(fd);
}

WEFT_EXPORT size_t confstr(int name, char *buf, size_t len)
{
	static const char v[] = "weft " WEFT_VERSION_STR;

	if (name != _CS_GNU_LIBPTHREAD_VERSION || !weft_serving())
		return host_real.confstr(name, buf, len);
	if (buf && len) {
		size_t n = len < sizeof v ? len - 1 : sizeof v - 1;
		memcpy(buf, v, n);
		buf[n] = 0;
	}
	return sizeof v;
}
