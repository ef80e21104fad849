#!/usr/bin/env bash
# Issue 16, point 3: no start-up window.  jemalloc (Debian's libjemalloc2)
# with background_thread:true starts its background threads while the
# program starts, with the pthread_create that follows jemalloc's own in
# the lookup order, and they sleep on jemalloc's condvars; a thread that
# started while weft was starting once used a condvar through glibc's
# code and then weft's, and hung a few runs in ten.  Here: 200 runs over
# MALLOC_CONF variants and both load orders, each bounded in time; every
# run must finish, jemalloc must report its background threads enabled,
# weft must be active and the program's own threads weft's (or, with
# jemalloc first in LD_PRELOAD, glibc's threads adopted by weft when made
# while the probe ran, docs/glibc-host.md).  Each run
# also makes one thread with glibc's own pthread_create (as a library
# that calls libc directly would): weft adopts it at its first call, and
# it must end (it once never did: each free of glibc's exit-hook list
# under jemalloc re-adopted it and registered another hook).
#   linked mode:  -lweft before -ljemalloc;  preload mode: LD_PRELOAD=libweft
#   (program linked with -ljemalloc), and LD_PRELOAD="libjemalloc libweft".
# Usage: bash tests/t_jemalloc_bg.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
runs=${WEFT_JEMALLOC_RUNS:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

je=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null)
if [ -z "$je" ]; then
	echo "SKIP: libjemalloc2 is not installed (apt-get install libjemalloc2)"
	exit 77
fi

cat >"$tmp/prog.c" <<'SRC'
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <weft.h>
#pragma weak weft_active
#pragma weak weft_self_origin
int mallctl(const char *, void *, size_t *, void *, size_t);
#define NT 4
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, origins[NT];
static void *worker(void *a)
{
	long me = (long)a;
	void *p[64];
	origins[me] = weft_self_origin ? weft_self_origin() : -1;
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 64; i++)
			p[i] = malloc(16 + (size_t)(i * r * 97 % 70000));
		for (int i = 0; i < 64; i++)
			free(p[i]);
		pthread_mutex_lock(&mu);
		while (turn % NT != me)
			pthread_cond_wait(&cv, &mu);
		turn++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}
static void *glibc_made(void *a)
{
	void *p = malloc(100);
	int o = weft_self_origin ? weft_self_origin() : -1;
	free(p);
	*(int *)a = o;
	return a;
}
int main(void)
{
	pthread_t t[NT], g;
	int (*glibc_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*glibc_join)(pthread_t, void **);
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	int gorigin = 0;
	const char *allow = getenv("ALLOW_ADOPTED");
	bool bg = false;
	size_t sz = sizeof bg;
	if (mallctl("background_thread", &bg, &sz, NULL, 0) != 0) {
		printf("mallctl failed\n");
		return 2;
	}
	for (long i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 3;
	for (int i = 0; i < NT; i++)
		if (pthread_join(t[i], NULL))
			return 4;
	glibc_create = libc ? dlsym(libc, "pthread_create") : NULL;
	glibc_join = libc ? dlsym(libc, "pthread_join") : NULL;
	if (!glibc_create || !glibc_join || glibc_create(&g, NULL, glibc_made, &gorigin) ||
	    glibc_join(g, NULL) || gorigin != 3) {
		printf("glibc's thread: origin %d\n", gorigin);
		return 6;
	}
	for (int i = 0; i < NT; i++)
		if (origins[i] != 1 && !(origins[i] == 3 && allow && *allow)) {
			printf("thread %d origin %d\n", i, origins[i]);
			return 5;
		}
	printf("active=%d bg=%d turns=%d\n", weft_active ? weft_active() : -1, bg, turn);
	return 0;
}
SRC
if [ "$mode" = linked ]; then
	$cc -O2 -pthread -I"$root/include" -o "$tmp/prog" "$tmp/prog.c" -L"$root/build" \
		-Wl,--no-as-needed -lweft "$je" -ldl -Wl,-rpath,"$root/build" ||
		{ echo "FAIL: cannot build the program" >&2; exit 1; }
	orders=(none)
else
	$cc -O2 -pthread -I"$root/include" -o "$tmp/prog" "$tmp/prog.c" \
		-Wl,--no-as-needed "$je" -ldl ||
		{ echo "FAIL: cannot build the program" >&2; exit 1; }
	orders=(weft "jemalloc weft")
fi

confs=("background_thread:true"
	"background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"
	"background_thread:true,max_background_threads:1"
	"background_thread:true,narenas:8,percpu_arena:percpu")
fails=0
n=0
start=$(date +%s)
while [ $n -lt "$runs" ]; do
	for order in "${orders[@]}"; do
		for conf in "${confs[@]}"; do
			[ $n -lt "$runs" ] || break 2
			n=$((n + 1))
			# jemalloc first: its background threads are made
			# through weft, the first of them while weft starts
			# (so it is glibc's), the next ones maybe while the
			# probe runs, and a creation by main meanwhile goes to
			# glibc too (an adopted thread, origin 3)
			allow=
			case $order in
			none) pre= ;;
			weft) pre=$lib ;;
			*) pre="$je $lib"; allow=1 ;;
			esac
			out=$(ALLOW_ADOPTED=$allow MALLOC_CONF=$conf LD_PRELOAD=$pre timeout -k 2 20 "$tmp/prog" 2>&1)
			rc=$?
			want="active=1 bg=1 turns=80"
			if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
				echo "FAIL: run $n (MALLOC_CONF=$conf, preload '$pre'): expected the program to finish, got a hang (killed after 20 s)" >&2
				fails=$((fails + 1))
			elif [ $rc -ne 0 ] || [ "$out" != "$want" ]; then
				echo "FAIL: run $n (MALLOC_CONF=$conf, preload '$pre'): expected exit 0 and '$want', got exit $rc and '$out'" >&2
				fails=$((fails + 1))
			fi
			[ $fails -lt 5 ] || break 3
		done
	done
done
echo "mode $mode: $n runs in $(($(date +%s) - start)) s, $fails failed"
[ $fails -eq 0 ]
