#!/usr/bin/env bash
# A -fsanitize=thread program with weft: ThreadSanitizer intercepts the
# thread functions itself to see every thread and lock, so weft must
# stand aside (forwarding mode, one line saying why) and forward through
# TSan's interceptors, not around them.  Before: weft's probe failed on
# TSan's large static TLS and the forwarded calls skipped the interceptors
# (a versioned lookup), so the preloaded program died with SEGV in
# __tsan_func_entry.  Checks: the program finishes with its result, TSan
# still reports the real data race in it (so it saw the threads), no
# false race on the mutex-protected counter, and weft's line is there.
#   linked mode:  -lweft (after libtsan, which the compiler puts first);
#   preload mode: LD_PRELOAD.
# Usage: bash tests/t_tsan.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/race.c" <<'SRC'
#include <pthread.h>
#include <stdio.h>
static int racy;                  /* written by both threads, no lock */
static int counted;               /* always under the mutex */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		racy++;
		pthread_mutex_lock(&m);
		counted++;
		pthread_mutex_unlock(&m);
	}
	return arg;
}
int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("counted=%d\n", counted);
	return 0;
}
SRC
flags="-g -O1 -pthread -fsanitize=thread"
if [ "$mode" = linked ]; then
	$cc $flags -o "$tmp/race" "$tmp/race.c" -L"$root/build" -Wl,--no-as-needed -lweft \
		-Wl,-rpath,"$root/build" 2>"$tmp/cc.log" ||
		{ echo "FAIL: cannot build a -fsanitize=thread program: $(cat "$tmp/cc.log")" >&2; exit 1; }
	run() { timeout -k 2 60 "$tmp/race"; }
else
	$cc $flags -o "$tmp/race" "$tmp/race.c" 2>"$tmp/cc.log" ||
		{ echo "FAIL: cannot build a -fsanitize=thread program: $(cat "$tmp/cc.log")" >&2; exit 1; }
	run() { LD_PRELOAD="$lib" timeout -k 2 60 "$tmp/race"; }
fi
# TSan needs its own memory layout; it re-executes itself without ASLR
# when needed.  Exit status 66 is TSan's "reports were printed".
out=$(run 2>&1)
rc=$?
echo "$out" | head -40
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
[ $rc -eq 66 ] || fail "expected exit 66 (TSan reported the race), got $rc"
echo "$out" | grep -q '^counted=2000$' || fail "expected 'counted=2000' in the output"
# Every report is on 'racy' (one per access pair, a read and a write:
# one or two), none on the mutex-protected 'counted'.  The racy access
# is in the loop, so the other thread's conflicting access is always a
# recent one: TSan (v3, gcc 14 on) reports a race only when it can
# still restore the other access's stack from its trace, and one racy++
# before 2,000 lock operations was too old for it.
n=$(echo "$out" | grep -c 'WARNING: ThreadSanitizer: data race')
on_racy=$(echo "$out" | grep -c "Location is global 'racy'")
[ "$n" -ge 1 ] && [ "$n" -eq "$on_racy" ] ||
	fail "expected data race reports on 'racy' only, got $n report(s), $on_racy on 'racy'"
echo "$out" | grep -q 'SEGV' && fail "expected no SEGV, got one"
echo "$out" | grep -q 'weft: ThreadSanitizer watches the thread functions itself' ||
	fail "expected weft's line saying it stands aside for ThreadSanitizer"
[ $fails -eq 0 ] || exit 1
echo "ok: TSan saw the threads ($n race report(s) on racy), weft stood aside"
