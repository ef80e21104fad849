/* Test harness shared by every test program.

   A test is one program, built twice by the Makefile: linked against
   libweft (`-lweft` before libc) and plain (run with LD_PRELOAD).  It
   exits 0 on success; on failure it prints what it expected and what it
   got, and exits 1.  Every test first proves that weft serves it:
   WEFT_REQUIRE() fails unless libweft is loaded and active, and
   CHECK_WEFT_THREAD() (called inside a created thread) fails unless the
   thread was made by weft's pthread_create. */
#ifndef WEFT_TEST_HARNESS_H
#define WEFT_TEST_HARNESS_H

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>

/* Weak so that the plain build links without libweft; LD_PRELOAD then
   supplies them at run time. */
#pragma weak weft_active
#pragma weak weft_self_is_weft
#pragma weak weft_self_origin
#pragma weak weft_get_stats

static int harness_failures;

/* A part of the test could not run here: TEST_DONE then exits
   HARNESS_SKIP (77; tests/run.sh reports SKIP), never 0, unless a check
   failed.  The reason is printed when it is noted and at the end. */
#define HARNESS_SKIP 77
static const char *harness_skipped __attribute__((unused));

/* A hang (a lost wake-up) reported as a failure: after `seconds` of
   SIGALRM the test prints what it expected and exits 1.  The message is
   made at arming time, so the handler only writes it.  A test may name
   the part running (harness_watchdog_part) and up to HARNESS_WATCHES
   progress counters (harness_watchdog_count): the handler then prints
   the part and the counters twice, a second apart, so that the report
   tells a hang (counters standing still) from a crawl (counters moving:
   a machine too loaded for the time allowed). */
#define HARNESS_WATCHES 4
struct harness_watch {
	const char *name;
	const volatile long *count;
};

static inline char *harness_watchdog_msg(void)
{
	static char msg[200];
	return msg;
}

static inline struct harness_watch *harness_watches(void)
{
	static struct harness_watch w[HARNESS_WATCHES];
	return w;
}

static inline const char *volatile *harness_watch_part(void)
{
	static const char *volatile part;
	return &part;
}

/* `part` must stay valid until the next call (a string literal, or a
   buffer the test does not write while it is named). */
static inline void harness_watchdog_part(const char *part)
{
	*harness_watch_part() = part;
}

static inline void harness_watchdog_count(const char *name,
					  const volatile long *count)
{
	struct harness_watch *w = harness_watches();

	for (int i = 0; i < HARNESS_WATCHES; i++)
		if (!w[i].name || w[i].count == count) {
			w[i].count = count;
			w[i].name = name;
			return;
		}
}

/* Async-signal-safe output for the handler (write(2) only). */
static inline void harness_put(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		_exit(2);
}

static inline void harness_put_long(long v)
{
	char buf[24], *p = buf + sizeof buf;
	unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;

	*--p = 0;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	harness_put(p);
}

static inline void harness_put_counts(const char *when)
{
	struct harness_watch *w = harness_watches();

	harness_put(when);
	for (int i = 0; i < HARNESS_WATCHES && w[i].name; i++) {
		harness_put(" ");
		harness_put(w[i].name);
		harness_put("=");
		harness_put_long(*w[i].count);
	}
	harness_put("\n");
}

static inline void harness_watchdog_fire(int sig)
{
	const char *part = *harness_watch_part();
	struct timespec second = { 1, 0 };

	(void)sig;
	harness_put(harness_watchdog_msg());
	if (part) {
		harness_put("  running: ");
		harness_put(part);
		harness_put("\n");
	}
	if (harness_watches()[0].name) {
		harness_put_counts("  counters at the alarm:");
		while (nanosleep(&second, &second) < 0 && errno == EINTR)
			;
		harness_put_counts("  counters 1 s later:   ");
	}
	_exit(1);
}

static inline void harness_watchdog(const char *test, int seconds)
{
	snprintf(harness_watchdog_msg(), 200,
		 "%s: FAIL: expected every run done within %d s, got a hang "
		 "(a lost wake-up?)\n", test, seconds);
	signal(SIGALRM, harness_watchdog_fire);
	alarm((unsigned)seconds);
}

static inline void harness_skip_part(const char *why)
{
	harness_skipped = why;
	printf("SKIP: %s\n", why);
}

/* Whether a test's real-time part (SCHED_FIFO threads) is to run:
   WEFT_TEST_NO_RT=1 leaves it out, with or without the right (runs made
   beside other real-time work, or without root): the part is noted as
   skipped, and the test exits 77 at TEST_DONE. */
static inline int harness_rt_wanted(void)
{
	const char *v = getenv("WEFT_TEST_NO_RT");

	if (v && !strcmp(v, "1")) {
		harness_skip_part("real-time part left out (WEFT_TEST_NO_RT=1)");
		return 0;
	}
	return 1;
}

/* The real-time part was wanted and the right to use SCHED_FIFO was
   refused (`err`): a failure, the tests being meant to run as root. */
#define RT_REFUSED(err)                                                        \
	FAIL("SCHED_FIFO: expected allowed (root or CAP_SYS_NICE), got %s; "   \
	     "set WEFT_TEST_NO_RT=1 to leave the real-time part out",          \
	     strerror(err))

/* HARNESS_ASAN: built with AddressSanitizer (gcc defines
   __SANITIZE_ADDRESS__, clang has __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_ASAN 1
#endif
#endif

#ifdef HARNESS_ASAN
#include <unistd.h>
/* LeakSanitizer runs at every exit, also of a fork child, where the
   parent's other threads do not exist: their stacks are not scanned, and
   what only they pointed to is reported as leaked ("Running thread N was
   not suspended. False leaks are possible.").  Leaks are checked in the
   process the test started as (and in programs it execs), not in its
   fork children. */
static pid_t harness_pid;
__attribute__((constructor)) static void harness_note_pid(void)
{
	harness_pid = getpid();
}
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return harness_pid && getpid() != harness_pid;
}
#endif

/* Formats a CHECK message into a per-thread buffer. */
static inline const char *harness_fmt(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline const char *harness_fmt(const char *fmt, ...)
{
	static __thread char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return buf;
}

/* Safe to use from several threads at once: the message is written
   under the stdio lock and the failure count is updated atomically. */
#define FAIL(...)                                                              \
	do {                                                                   \
		flockfile(stderr);                                             \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);          \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		funlockfile(stderr);                                           \
		__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED);    \
	} while (0)

/* Compare two integers; on mismatch report both. */
#define CHECK_EQ(got, want)                                                    \
	do {                                                                   \
		long long g_ = (long long)(got), w_ = (long long)(want);       \
		if (g_ != w_)                                                  \
			FAIL("%s: expected %lld (%s), got %lld", #got, w_,    \
			     #want, g_);                                       \
	} while (0)

/* An error-number result: names both values. */
#define CHECK_ERR(got, want)                                                   \
	do {                                                                   \
		int g_ = (got), w_ = (want);                                   \
		if (g_ != w_)                                                  \
			FAIL("%s: expected %d (%s), got %d (%s)", #got, w_,   \
			     strerror(w_), g_, strerror(g_));                  \
	} while (0)

/* CHECK(cond, fmt, ...): on failure names the condition, then the
   message (fmt with its arguments). */
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL("%s: %s", #cond, harness_fmt(__VA_ARGS__));      \
	} while (0)

/* Fatal variants: stop the test at once. */
#define REQUIRE(cond, ...)                                                     \
	do {                                                                   \
		if (!(cond)) {                                                 \
			FAIL(__VA_ARGS__);                                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

static inline void weft_require_active(const char *file, int line)
{
	if (!weft_active || !weft_active()) {
		fprintf(stderr,
			"%s:%d: FAIL: expected libweft loaded and active, got %s\n",
			file, line,
			weft_active ? "weft inactive (glibc fallback)"
				    : "no libweft in the process");
		exit(1);
	}
}
#define WEFT_REQUIRE() weft_require_active(__FILE__, __LINE__)

/* Under AddressSanitizer (gcc: libasan.so first in the lookup order) the
   program binds an intercepted function (pthread_create, pthread_join,
   pthread_mutex_lock, sem_*, ...) to libasan's interceptor, which calls
   the next definition after libasan, as dlsym(RTLD_NEXT) from libasan
   finds it: the first object after libasan in the link map that defines
   `name` itself.  Returns that definition, or NULL. */
static inline void *harness_after_interceptor(const char *name,
					      const char *runtime)
{
	struct link_map *lm = NULL;
	void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	int past = 0;

	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm) != 0)
		return NULL;
	for (; lm; lm = lm->l_next) {
		void *h, *p;
		Dl_info di;

		if (!past) {
			past = strcmp(lm->l_name, runtime) == 0;
			continue;
		}
		h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		p = h ? dlsym(h, name) : NULL;
		/* dlsym(h) also searches h's dependencies: keep the
		   definition only if it lies in h itself. */
		if (p && dladdr(p, &di) && di.dli_fname &&
		    strcmp(di.dli_fname, lm->l_name) == 0)
			return p;
	}
	return NULL;
}

/* The definition that serves the program's calls to `name`: the one
   the dynamic linker binds, or the one libasan's interceptor calls. */
static inline void *harness_served_def(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	Dl_info di;

	if (p && dladdr(p, &di) && di.dli_fname &&
	    strstr(di.dli_fname, "/libasan.so"))
		p = harness_after_interceptor(name, di.dli_fname);
	return p;
}

/* The program's calls to `name` must reach libweft, not libc: the
   symbol the dynamic linker binds for the program lives in libweft (or,
   under ASan, the interceptor it binds forwards to libweft's). */
static inline void weft_require_served(const char *name, const char *file,
				       int line)
{
	void *p = harness_served_def(name);
	Dl_info di;

	if (!p || !dladdr(p, &di) || !di.dli_fname ||
	    !strstr(di.dli_fname, "libweft")) {
		fprintf(stderr,
			"%s:%d: FAIL: expected %s served by libweft, got %s\n",
			file, line, name,
			!p ? "no such symbol"
			   : (dladdr(p, &di) && di.dli_fname ? di.dli_fname
							     : "unknown object"));
		exit(1);
	}
}
#define REQUIRE_SERVED(name) weft_require_served(#name, __FILE__, __LINE__)

/* Inside a thread the test created: it must be a weft-made thread. */
#define CHECK_WEFT_THREAD()                                                    \
	do {                                                                   \
		int o_ = weft_self_origin ? weft_self_origin() : -1;           \
		if (o_ != WEFT_THREAD_CREATED)                                 \
			FAIL("thread origin: expected %d (created by weft), " \
			     "got %d",                                         \
			     WEFT_THREAD_CREATED, o_);                         \
	} while (0)

#define TEST_DONE()                                                            \
	do {                                                                   \
		if (harness_failures) {                                        \
			fprintf(stderr, "%d check(s) failed\n",                \
				harness_failures);                             \
			return 1;                                              \
		}                                                              \
		if (harness_skipped) {                                         \
			printf("SKIP (exit 77): %s\n", harness_skipped);       \
			return HARNESS_SKIP;                                   \
		}                                                              \
		return 0;                                                      \
	} while (0)

/* Clocks for timeouts and time bounds in tests. */
static inline long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static inline double now_s(void)
{
	return mono_ns() / 1e9;
}

/* An absolute deadline `ns` from now on `clock`. */
static inline struct timespec deadline_in(clockid_t clock, long ns)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_nsec += ns % 1000000000L;
	ts.tv_sec += ns / 1000000000L + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

/* Polls (at most `ns`) until the task whose stat file is `path` sleeps
   in the kernel (state S): 1 when seen asleep, 0 at the deadline. */
static inline int stat_asleep(const char *path, long ns)
{
	char buf[512];
	long end = mono_ns() + ns;

	while (mono_ns() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		char *p;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')'); /* the state follows "(comm) " */
		if (p && p[1] == ' ' && p[2] == 'S')
			return 1;
		sched_yield();
	}
	return 0;
}

/* Polls (at most `ns`) until the thread `tid` of this process sleeps in
   the kernel (state S in /proc/self/task/TID/stat): how a test knows a
   thread is blocked in a call, without sleeping as synchronisation.
   Returns 1 when seen asleep, 0 at the deadline. */
static inline int task_asleep(pid_t tid, long ns)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	return stat_asleep(path, ns);
}

/* The same for another process (its main thread). */
static inline int process_asleep(pid_t pid, long ns)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	return stat_asleep(path, ns);
}

/* The voluntary context switches of thread `tid` of this process so far
   (-1 if unreadable): a thread that blocked or woke since shows more. */
static inline long task_vol_switches(pid_t tid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			v = strtol(line + 24, NULL, 10);
	fclose(f);
	return v;
}

/* A "Key: N kB" line of /proc/self/status, in KiB (-1 if absent). */
static inline long proc_status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The tasks (threads) of this process that /proc/self/task lists. */
static inline int tasks_listed(void)
{
	return (int)proc_status_kib("Threads");
}

/* A joined or refused thread's task can stay listed for a moment: the
   kernel clears the tid that pthread_join waits for before it removes
   the task from the thread group.  That removal is an event no call
   waits for, so this polls, bounded by `seconds`, until at most `want`
   tasks are listed; returns the last count seen (the caller checks it). */
static inline int tasks_settle(int want, double seconds)
{
	double end = now_s() + seconds;
	int seen;

	while ((seen = tasks_listed()) > want && now_s() < end)
		sched_yield();
	return seen;
}

/* Resident set size in KiB. */
static inline long rss_kib(void)
{
	return proc_status_kib("VmRSS");
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif
/* Whether the kernel can make guard pages by advice (weft then makes
   some or all of its guards that way: docs/lifecycle.md). */
static inline int guard_advice_supported(void)
{
	char *p = (char *)mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = p != MAP_FAILED && madvise(p, 4096, MADV_GUARD_INSTALL) == 0;

	if (p != MAP_FAILED)
		munmap(p, 8192);
	return ok;
}

/* Number of mappings (lines of /proc/self/maps). */
static inline int maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

#endif
