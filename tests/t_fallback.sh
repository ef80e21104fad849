#!/usr/bin/env bash
# Fallback: with WEFT_PRETEND_GLIBC=9.99 weft treats the running glibc as
# unknown and forwards every call to glibc's own implementation.  A
# threaded program must still work (pthread_sigmask included, which
# must keep 32/33 out of the mask either way), a request to cancel a
# thread must be acted on by its pthread_testcancel (and a
# pthread_testcancel before anything started weft must return),
# weft_active() must return 0, and
# stderr must carry exactly one line starting with "weft:" that says so.
# Control run without the variable: weft active, no "weft:" line.
# The helper program is compiled here (the Makefile builds only t_*.c):
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_fallback.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/prog.c" <<'PROG'
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <weft.h>
#pragma weak weft_active
#pragma weak weft_self_origin

#define NT 8
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;
static int arrived, origins[NT];
static __thread int tls = 11;

static pthread_barrier_t bar2;

/* Cancelled while its cancellation is disabled; its pthread_testcancel
   must act on the request once it is enabled again. */
static void *cancellee(void *arg)
{
	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_barrier_wait(&bar2);
	pthread_barrier_wait(&bar2); /* the request has been made */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_testcancel();
	return NULL;
}

static void *worker(void *arg)
{
	long i = (long)arg;
	origins[i] = weft_self_origin ? weft_self_origin() : -1;
	pthread_barrier_wait(&bar);
	pthread_mutex_lock(&mu);
	arrived++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	tls += (int)i;
	return (void *)(long)(tls * 2);
}

int main(void)
{
	pthread_t t[NT];
	long sum = 0, want = 0;
	int origin_ok = 1;

	if (!weft_active) {
		printf("libweft not loaded\n");
		return 2;
	}
	pthread_testcancel(); /* nothing asked: returns, started or not */
	pthread_barrier_init(&bar, NULL, NT);
	for (long i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 3;
	pthread_mutex_lock(&mu);
	while (arrived < NT)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (long i = 0; i < NT; i++) {
		void *r;
		if (pthread_join(t[i], &r) != 0)
			return 4;
		sum += (long)r;
		want += (11 + i) * 2;
		if (origins[i] != origins[0])
			origin_ok = 0;
	}
	/* pthread_sigmask (exported by weft, forwarded in fallback): a
	   set with every byte 0xff blocks SIGUSR1 but never 32/33. */
	sigset_t all, old;
	int mask_ok;
	memset(&all, 0xff, sizeof all);
	mask_ok = pthread_sigmask(SIG_BLOCK, &all, NULL) == 0 &&
		  pthread_sigmask(SIG_BLOCK, NULL, &old) == 0 &&
		  sigismember(&old, SIGUSR1) == 1 && sigismember(&old, 32) == 0 &&
		  sigismember(&old, 33) == 0 &&
		  pthread_sigmask(12345, &all, NULL) == EINVAL;
	pthread_t c;
	void *cr = NULL;
	int cancel_ok;
	pthread_barrier_init(&bar2, NULL, 2);
	cancel_ok = pthread_create(&c, NULL, cancellee, NULL) == 0;
	if (cancel_ok) {
		pthread_barrier_wait(&bar2);
		cancel_ok = pthread_cancel(c) == 0;
		pthread_barrier_wait(&bar2);
		cancel_ok = pthread_join(c, &cr) == 0 && cancel_ok &&
			    cr == PTHREAD_CANCELED;
	}
	printf("active=%d main_origin=%d thread_origin=%d results=%s mask=%s "
	       "cancel=%s\n",
	       weft_active(), weft_self_origin(), origin_ok ? origins[0] : -9,
	       sum == want ? "ok" : "bad", mask_ok ? "ok" : "bad",
	       cancel_ok ? "ok" : "bad");
	return sum == want ? 0 : 1;
}
PROG

if [ "$mode" = linked ]; then
	$cc -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -I"$root/include" -pthread \
		-o "$tmp/prog" "$tmp/prog.c" -L"$root/build" -Wl,--no-as-needed \
		-lweft -Wl,-rpath,"$root/build" || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	run() { env "$@" "$tmp/prog"; }
else
	$cc -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -I"$root/include" -pthread \
		-o "$tmp/prog" "$tmp/prog.c" || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	run() { env LD_PRELOAD="$lib" "$@" "$tmp/prog"; }
fi

# Control: the real glibc, weft serving.
run WEFT_ROOT="$root" >"$tmp/out0" 2>"$tmp/err0"
rc=$?
[ $rc -eq 0 ] || fail "control run: expected exit 0, got $rc ($(cat "$tmp/out0" "$tmp/err0"))"
want0="active=1 main_origin=2 thread_origin=1 results=ok mask=ok cancel=ok"
[ "$(cat "$tmp/out0")" = "$want0" ] || fail "control run: expected '$want0', got '$(cat "$tmp/out0")'"
! grep -q '^weft:' "$tmp/err0" || fail "control run: unexpected weft: line on stderr: $(grep '^weft:' "$tmp/err0")"

# Fallback: unknown glibc.
for round in 1 2 3; do
	run WEFT_PRETEND_GLIBC=9.99 >"$tmp/out1" 2>"$tmp/err1"
	rc=$?
	[ $rc -eq 0 ] || fail "fallback run $round: expected exit 0, got $rc ($(cat "$tmp/out1" "$tmp/err1"))"
	want1="active=0 main_origin=0 thread_origin=0 results=ok mask=ok cancel=ok"
	[ "$(cat "$tmp/out1")" = "$want1" ] || fail "fallback run $round: expected '$want1', got '$(cat "$tmp/out1")'"
	n=$(grep -c '^weft:' "$tmp/err1")
	[ "$n" -eq 1 ] || fail "fallback run $round: expected exactly 1 line starting with 'weft:' on stderr, got $n: $(cat "$tmp/err1")"
	line=$(grep '^weft:' "$tmp/err1" | head -n 1)
	echo "$line" | grep -qi 'glibc' || fail "fallback: the weft: line does not mention glibc: '$line'"
	echo "$line" | grep -qi 'forward' || fail "fallback: the weft: line does not say it forwards: '$line'"
done
echo "fallback stderr: $line"

echo "mode $mode: $fails failure(s)"
[ $fails -eq 0 ]
