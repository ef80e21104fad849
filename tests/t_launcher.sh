#!/usr/bin/env bash
# The launcher bin/weft: `weft info`, `weft run` (exit status passed
# through, the program served by weft), bad usage.
# Usage: bash tests/t_launcher.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
weft="$root/bin/weft"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -x "$weft" ] || { echo "FAIL: $weft missing or not executable" >&2; exit 1; }
want_version=$(sed -n 's/^#define WEFT_VERSION "\(.*\)"$/\1/p' "$root/include/weft.h")
want_glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
[ -n "$want_version" ] || fail "no WEFT_VERSION in include/weft.h"

# weft info
"$weft" info >"$tmp/info" 2>"$tmp/info.err"
rc=$?
[ $rc -eq 0 ] || fail "weft info: expected exit 0, got $rc ($(cat "$tmp/info.err"))"
grep -q "$want_version" "$tmp/info" || fail "weft info: version $want_version not shown"
grep -qi "glibc.*$want_glibc" "$tmp/info" || fail "weft info: glibc version $want_glibc not shown"
grep -qx 'host: ok' "$tmp/info" || fail "weft info: no line 'host: ok'"
grep -q 'WEFT_STACK_CACHE' "$tmp/info" || fail "weft info: tunable WEFT_STACK_CACHE not listed"
for k in 'robust:' 'priority inheritance:' 'priority protect:'; do
	grep -q "^  $k" "$tmp/info" || fail "weft info: mutex kind '$k' not described"
done
if [ $fails -ne 0 ]; then echo "--- weft info printed:"; cat "$tmp/info"; fi

# weft run: the program is served by weft
out=$("$weft" run -- getconf GNU_LIBPTHREAD_VERSION 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "weft run -- getconf: expected exit 0, got $rc"
case "$out" in
"weft "*) ;;
*) fail "weft run -- getconf GNU_LIBPTHREAD_VERSION: expected 'weft ...', got '$out'" ;;
esac
case "$out" in
*"$want_version"*) ;;
*) fail "weft run -- getconf GNU_LIBPTHREAD_VERSION: version $want_version missing in '$out'" ;;
esac
# ... and without weft, glibc answers
plain=$(env -u LD_PRELOAD getconf GNU_LIBPTHREAD_VERSION 2>&1)
case "$plain" in
NPTL*) ;;
*) fail "getconf GNU_LIBPTHREAD_VERSION without weft: expected 'NPTL ...', got '$plain'" ;;
esac

# exit status passed through
"$weft" run -- true
rc=$?
[ $rc -eq 0 ] || fail "weft run -- true: expected exit 0, got $rc"
"$weft" run -- sh -c 'exit 7'
rc=$?
[ $rc -eq 7 ] || fail "weft run -- sh -c 'exit 7': expected exit 7, got $rc"
"$weft" run sh -c 'exit 3'
rc=$?
[ $rc -eq 3 ] || fail "weft run sh -c 'exit 3' (no --): expected exit 3, got $rc"
# arguments and stdin pass through unchanged
out=$(printf 'in put' | "$weft" run -- sh -c 'printf "%s|%s|" "$1" "$2"; cat' sh 'a b' '')
[ "$out" = "a b||in put" ] || fail "weft run: arguments/stdin: expected 'a b||in put', got '$out'"

# bad usage: nonzero exit and a message on stderr
check_usage() { # description, command...
	local what=$1
	shift
	"$@" >"$tmp/u.out" 2>"$tmp/u.err"
	local rc=$?
	[ $rc -ne 0 ] || fail "$what: expected a nonzero exit, got 0"
	[ -s "$tmp/u.err" ] || fail "$what: expected a message on stderr, got none"
}
check_usage "weft (no arguments)" "$weft"
check_usage "weft bogus-command" "$weft" bogus-command
check_usage "weft run (no command)" "$weft" run
check_usage "weft run --" "$weft" run --
check_usage "weft run -- /nonexistent/program" "$weft" run -- /nonexistent/program

echo "mode $mode: $fails failure(s)"
[ $fails -eq 0 ]
