/* bench/common.h - small helpers shared by the weft benchmark programs.
 *
 * Every program prints exactly one line starting with "RESULT " made of
 * space-separated key=value pairs, so bench/weft_bench.py can parse it without
 * knowing anything else about the program.  Everything else (usage,
 * errors) goes to stderr.
 */
#ifndef WEFT_BENCH_COMMON_H
#define WEFT_BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per call of fn(n), which makes n calls: the best of 5 batches
   after a warm-up of n/10 (the minimum filters out interruptions; the
   driver takes medians over runs). */
static inline double bench_best_of_5(void (*fn)(long), long n)
{
	double best = 1e30;

	fn(n / 10);
	for (int b = 0; b < 5; b++) {
		double t0 = bench_now(), dt;

		fn(n);
		dt = (bench_now() - t0) * 1e9 / (double)n;
		if (dt < best)
			best = dt;
	}
	return best;
}

/* Number of the process's mappings (lines of /proc/self/maps), or -1. */
static inline long bench_maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Parse a non-negative integer argument; accepts suffixes k/K (x1000)
 * and m/M (x1000000) so "-n 100k" works.  Exits on garbage. */
static inline long bench_arg_long(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno == 0 && (*end == 'k' || *end == 'K')) { v *= 1000; end++; }
	else if (errno == 0 && (*end == 'm' || *end == 'M')) { v *= 1000000; end++; }
	if (errno != 0 || end == s || *end != '\0' || v < 0) {
		fprintf(stderr, "bad value for %s: '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

/* Exit status of a program that cannot measure what it is meant to on
 * this machine (e.g. no permission for SCHED_FIFO): the driver reports
 * "skipped" and the reason (the program's last stderr line), never a
 * number.  77 is the usual "skipped" status of test harnesses. */
#define BENCH_SKIP 77

static inline void bench_die(const char *what, int err)
{
	fprintf(stderr, "FATAL %s: %s\n", what, strerror(err));
	exit(1);
}

/* Name of the shared object that provides pthread_create in this process:
 * "libc.so.6" under plain glibc, "libweft.so" when preloaded.  Printed in
 * the RESULT line so a run that silently did not pick up the preload is
 * visible in the raw data. */
#if defined(__GLIBC__)
#include <dlfcn.h>
#include <pthread.h>
static inline const char *bench_pthread_lib(void)
{
	Dl_info info;
	void *addr = (void *)(size_t)&pthread_create;
	if (dladdr(addr, &info) == 0 || info.dli_fname == NULL)
		return "unknown";
	const char *slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}
#else
static inline const char *bench_pthread_lib(void)
{
	return "static-non-glibc"; /* e.g. musl-gcc -static */
}
#endif

/* Thread attributes for a benchmark: default, or a stack of `stack`
   bytes when stack > 0.  Dies on error. */
static inline void bench_attr_init(pthread_attr_t *attr, long stack)
{
	int rc = pthread_attr_init(attr);

	if (rc != 0)
		bench_die("pthread_attr_init", rc);
	if (stack > 0 && (rc = pthread_attr_setstacksize(attr, (size_t)stack)) != 0)
		bench_die("pthread_attr_setstacksize", rc);
}

#endif
