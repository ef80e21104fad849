#include <limits.h>
#include <string.h>
#include "tunables.h"
#include "host/glibc.h"

struct weft_tunables weft_tunables = {
	.stack_cache_bytes = WEFT_STACK_CACHE_DEFAULT,
	.stack_cache_count = WEFT_STACK_CACHE_COUNT_DEFAULT,
	.stack_trim = WEFT_STACK_TRIM_DEFAULT,
	.guard = WEFT_GUARD_DEFAULT,
	.stats_top = WEFT_STATS_TOP_DEFAULT,
	.yield_waits = WEFT_YIELD_WAIT_DEFAULT,
};

static const char *const trim_names[] = {"none", "dontneed", "free"};

const char *tunables_trim_name(int trim)
{
	return trim >= 0 && trim < 3 ? trim_names[trim] : "?";
}

static const char *const guard_names[] = {"auto", "advise", "mprotect"};

const char *tunables_guard_name(int guard)
{
	return guard >= 0 && guard < 3 ? guard_names[guard] : "?";
}

/* Digits by hand, not strtoll: weft may start inside AddressSanitizer's
   initialisation (its AsanTSDInit creates a key), where ASan's strtoll
   interceptor aborts ("CHECK failed: ... !asan_init_is_running").  A
   value too large for a long long is invalid (-1), as is a suffix that
   would overflow it. */
long long tunables_parse_size(const char *s)
{
	const char *end;
	long long v = 0;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	for (end = s; *end >= '0' && *end <= '9'; end++) {
		if (v > (LLONG_MAX - (*end - '0')) / 10)
			return -1;
		v = v * 10 + (*end - '0');
	}
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (v > (LLONG_MAX >> shift))
		return -1;
	v <<= shift;
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	return *end ? -1 : v;
}

/* An unknown value keeps the default: a typo must not turn a
   program's memory behaviour upside down. */
static void parse_trim(const char *s)
{
	for (int i = 0; s && i < 3; i++)
		if (strcmp(s, trim_names[i]) == 0)
			weft_tunables.stack_trim = i;
}

static void parse_guard(const char *s)
{
	for (int i = 0; s && i < 3; i++)
		if (strcmp(s, guard_names[i]) == 0)
			weft_tunables.guard = i;
}

/* Off when unset, empty or "0"; any other value turns it on, so that
   WEFT_STATS=1, =yes and =on all do what they say. */
static void parse_stats(const char *s)
{
	weft_tunables.stats = s && *s && strcmp(s, "0") != 0;
}

void tunables_init(void)
{
	long long v = tunables_parse_size(host_getenv("WEFT_STACK_CACHE"));

	if (v >= 0)
		weft_tunables.stack_cache_bytes = (size_t)v;
	v = tunables_parse_size(host_getenv("WEFT_STACK_CACHE_COUNT"));
	if (v >= 0)
		weft_tunables.stack_cache_count = (size_t)v;
	parse_trim(host_getenv("WEFT_STACK_TRIM"));
	parse_guard(host_getenv("WEFT_GUARD"));
	weft_tunables.report_path = host_getenv("WEFT_REPORT");
	parse_stats(host_getenv("WEFT_STATS"));
	v = tunables_parse_size(host_getenv("WEFT_STATS_TOP"));
	if (v >= 0)
		weft_tunables.stats_top = (size_t)v;
	v = tunables_parse_size(host_getenv("WEFT_YIELD_WAIT"));
	if (v >= 0)
		weft_tunables.yield_waits = v > WEFT_YIELD_WAIT_MAX
						    ? WEFT_YIELD_WAIT_MAX
						    : (unsigned)v;
}
