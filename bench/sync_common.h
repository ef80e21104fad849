/* bench/sync_common.h - helpers for the synchronization benchmarks.
 *
 * The sync_* programs use only the POSIX API (plus raw futex(2) for the
 * "floor" variants that show what the kernel alone costs), so one source
 * is built three ways: dynamically against glibc (run plain, or with
 * LD_PRELOAD=libweft.so, or linked -lweft) and statically with musl-gcc.
 *
 * Output contract (bench/weft_bench.py relies on it): exactly one line on
 * stdout that starts with "RESULT " followed by key=value pairs, always
 * including bench=, metric= (the name of the headline key) and the
 * libraries that served the functions the benchmark exercises
 * (lib_<function>=<object>).  Errors go to stderr with a non-zero exit.
 */
#ifndef WEFT_SYNC_COMMON_H
#define WEFT_SYNC_COMMON_H

#include "common.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------ which lib */

/* The object that the dynamic linker binds `name` to for this program:
 * "libc.so.6" under plain glibc, "libweft.so" when weft serves it.  A
 * benchmark whose weft column was really served by glibc is meaningless,
 * so every program prints this for each function it times. */
#if defined(__GLIBC__)
#include <dlfcn.h>
static inline const char *sync_lib_of(const char *name)
{
	Dl_info info;
	void *addr = dlsym(RTLD_DEFAULT, name);

	if (addr == NULL || dladdr(addr, &info) == 0 || info.dli_fname == NULL)
		return "unknown";
	const char *slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}
#else
static inline const char *sync_lib_of(const char *name)
{
	(void)name;
	return "static-non-glibc"; /* musl-gcc -static: no dynamic symbols */
}
#endif

/* Print " lib_NAME=OBJECT" for each name in a NULL-terminated list. */
static inline void sync_print_libs(const char *const *names)
{
	for (; *names != NULL; names++)
		printf(" lib_%s=%s", *names, sync_lib_of(*names));
}

/* ------------------------------------------------------------ time */

static inline uint64_t sync_rdtsc(void)
{
	uint32_t lo, hi;
	/* lfence: do not let the read drift ahead of earlier instructions. */
	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* TSC ticks per nanosecond, measured against CLOCK_MONOTONIC over ~20 ms.
 * Needed to turn rdtsc differences into time; the TSC of this class of
 * machine is invariant (constant_tsc, nonstop_tsc), so ticks are
 * reference cycles, not core cycles. */
static inline double sync_tsc_per_ns(void)
{
	struct timespec req = { 0, 20 * 1000 * 1000 };
	double t0 = bench_now();
	uint64_t c0 = sync_rdtsc();
	while (nanosleep(&req, &req) != 0 && errno == EINTR)
		;
	uint64_t c1 = sync_rdtsc();
	double t1 = bench_now();
	return (double)(c1 - c0) / ((t1 - t0) * 1e9);
}

/* ------------------------------------------------------------ futex */

/* futex(2) operation codes, spelled out here because musl-gcc's include
 * path has no kernel headers (<linux/futex.h>); values are the kernel ABI. */
#define SYNC_FUTEX_WAIT_PRIVATE 128 /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define SYNC_FUTEX_WAKE_PRIVATE 129 /* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */

/* Raw private futex calls for the floor variants: no library involved. */
static inline long sync_futex_wait(atomic_int *addr, int expect)
{
	return syscall(SYS_futex, (int *)addr, SYNC_FUTEX_WAIT_PRIVATE, expect, NULL, NULL, 0);
}

static inline long sync_futex_wake(atomic_int *addr, int n)
{
	return syscall(SYS_futex, (int *)addr, SYNC_FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Block until *addr != value (spurious returns of FUTEX_WAIT are fine:
 * the loop re-reads the word). */
static inline void sync_futex_await_change(atomic_int *addr, int value)
{
	while (atomic_load_explicit(addr, memory_order_acquire) == value)
		sync_futex_wait(addr, value);
}

/* ------------------------------------------------------------ checks */

/* Call a pthread function and die on a non-zero result: a benchmark must
 * never carry on (and print a number) after an error. */
#define SYNC_OK(call)                                   \
	do {                                            \
		int sync_rc_ = (call);                  \
		if (sync_rc_ != 0)                      \
			bench_die(#call, sync_rc_);     \
	} while (0)

/* A start gate: all threads wait until the main thread opens it, so the
 * measured interval does not include the threads' staggered start.  Built
 * from a mutex and a condition variable only. */
struct sync_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int arrived;
	int open;
};

static inline void sync_gate_init(struct sync_gate *g)
{
	SYNC_OK(pthread_mutex_init(&g->lock, NULL));
	SYNC_OK(pthread_cond_init(&g->cond, NULL));
	g->arrived = 0;
	g->open = 0;
}

/* Called by a worker: report arrival, then wait for the gate to open. */
static inline void sync_gate_pass(struct sync_gate *g)
{
	SYNC_OK(pthread_mutex_lock(&g->lock));
	g->arrived++;
	SYNC_OK(pthread_cond_broadcast(&g->cond));
	while (!g->open)
		SYNC_OK(pthread_cond_wait(&g->cond, &g->lock));
	SYNC_OK(pthread_mutex_unlock(&g->lock));
}

/* Called by the main thread: wait until n workers have arrived. */
static inline void sync_gate_await(struct sync_gate *g, int n)
{
	SYNC_OK(pthread_mutex_lock(&g->lock));
	while (g->arrived < n)
		SYNC_OK(pthread_cond_wait(&g->cond, &g->lock));
	SYNC_OK(pthread_mutex_unlock(&g->lock));
}

/* Called by the main thread: let every waiting worker go. */
static inline void sync_gate_open(struct sync_gate *g)
{
	SYNC_OK(pthread_mutex_lock(&g->lock));
	g->open = 1;
	SYNC_OK(pthread_cond_broadcast(&g->cond));
	SYNC_OK(pthread_mutex_unlock(&g->lock));
}

/* Threads for benchmarks that start many of them: a small stack keeps
 * 1000 threads cheap in memory; 64 KiB is far above what they use. */
#define SYNC_SMALL_STACK (64 * 1024)

#endif
