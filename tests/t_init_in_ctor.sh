#!/usr/bin/env bash
# weft's start-up may run inside a glibc lock: a library constructor
# calls bindtextdomain, which holds gettext's lock while it mallocs, and a
# malloc that calls a pthread function (jemalloc does) is then weft's first
# entry point.  Start-up must not wait for anything that needs that lock
# (it once did: its probe thread called strerror, which translates, while
# start-up waited for the probe; redis-server, which links jemalloc and
# libgpg-error, hung at start).  The program must finish, in time.
#   linked mode:  -lweft before the libraries;  preload mode: LD_PRELOAD.
# Usage: bash tests/t_init_in_ctor.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/mymalloc.c" <<'SRC'
/* A bump allocator that calls a pthread function on every malloc, as
   jemalloc does when it starts; it holds no lock across the call. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static char arena[64 << 20] __attribute__((aligned(64)));
static size_t used;
static void *bump(size_t n, size_t align)
{
	size_t at, old = __atomic_load_n(&used, __ATOMIC_RELAXED);
	do {
		at = (old + 16 + align - 1) & ~(align - 1);
		if (at + n > sizeof arena)
			return NULL;
	} while (!__atomic_compare_exchange_n(&used, &old, at + n, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	*(size_t *)(arena + at - 16) = n;
	return arena + at;
}
void *malloc(size_t n)
{
	if (pthread_mutex_trylock(&lk) == 0)
		pthread_mutex_unlock(&lk);
	return bump(n, 16);
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { return malloc(a * b); /* never reused: zero */ }
void *realloc(void *o, size_t n)
{
	void *p = malloc(n);
	size_t m = o ? *(size_t *)((char *)o - 16) : 0;
	if (p && o)
		memcpy(p, o, m < n ? m : n);
	return p;
}
void *memalign(size_t al, size_t n) { return bump(n, al < 16 ? 16 : al); }
void *aligned_alloc(size_t al, size_t n) { return memalign(al, n); }
int posix_memalign(void **r, size_t al, size_t n) { *r = memalign(al, n); return *r ? 0 : 12; }
SRC
cat >"$tmp/ctor.c" <<'SRC'
#include <libintl.h>
__attribute__((constructor)) static void ctor(void)
{
	bindtextdomain("weft-ctor-test", "/nonexistent");
}
SRC
cat >"$tmp/prog.c" <<'SRC'
#include <pthread.h>
#include <stdio.h>
#include <weft.h>
#pragma weak weft_active
static void *worker(void *a) { return a; }
int main(void)
{
	pthread_t t;
	void *r = NULL;
	if (pthread_create(&t, NULL, worker, &t) || pthread_join(t, &r) || r != &t)
		return 3;
	printf("active=%d\n", weft_active ? weft_active() : -1);
	return 0;
}
SRC
$cc -O2 -fPIC -shared -o "$tmp/libmymalloc.so" "$tmp/mymalloc.c" -pthread &&
	$cc -O2 -fPIC -shared -o "$tmp/libctor.so" "$tmp/ctor.c" ||
	{ echo "FAIL: cannot build the libraries" >&2; exit 1; }
if [ "$mode" = linked ]; then
	$cc -O2 -pthread -I"$root/include" -o "$tmp/prog" "$tmp/prog.c" -L"$root/build" -L"$tmp" \
		-Wl,--no-as-needed -lweft -lctor -lmymalloc -Wl,-rpath,"$tmp:$root/build" ||
		{ echo "FAIL: cannot build the program" >&2; exit 1; }
	run() { timeout -k 2 20 "$tmp/prog"; }
else
	$cc -O2 -pthread -I"$root/include" -o "$tmp/prog" "$tmp/prog.c" -L"$tmp" \
		-Wl,--no-as-needed -lctor -lmymalloc -Wl,-rpath,"$tmp" ||
		{ echo "FAIL: cannot build the program" >&2; exit 1; }
	run() { LD_PRELOAD="$lib" timeout -k 2 20 "$tmp/prog"; }
fi
out=$(run 2>&1)
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "FAIL: expected the program to finish, got a hang (killed after 20 s): start-up deadlocked" >&2
	exit 1
fi
[ $rc -eq 0 ] || { echo "FAIL: expected exit 0, got $rc: $out" >&2; exit 1; }
[ "$out" = "active=1" ] || { echo "FAIL: expected 'active=1', got '$out'" >&2; exit 1; }
echo "mode $mode: finished, $out"
