#!/usr/bin/env bash
# valgrind's memcheck finds no leak under weft that it does not find
# under glibc, for the same program: threads created and joined one at
# a time (200), all at once (50 cached stacks), detached (100), and left
# running when main returns (20).  The helper is tests/memcheck_threads.c;
# each case runs with --errors-for-leak-kinds=definite,possible and
# --error-exitcode, on plain glibc and under weft.  Under weft the
# "definitely lost" and "possibly lost" block counts must not exceed
# glibc's, and where glibc's run exits 0 weft's must too.
# Before: the DTVs of cached stacks (_dl_allocate_tls) were reachable
# only through the TCB's pointer into them, so memcheck called them
# "possibly lost" ("28,800 bytes in 100 blocks") where glibc, which frees
# its stack cache in __libc_freeres, reported nothing; such CI jobs
# failed under weft.  (Threads alive at exit: glibc's DTVs are "possibly
# lost" too, so weft's may be.)
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_memcheck.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

if ! command -v valgrind >/dev/null; then
	echo "SKIP: valgrind is not installed (Debian: apt-get install valgrind)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flags=(-std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -I"$root/include" -I"$root/tests"
	-pthread "$root/tests/memcheck_threads.c")
$cc "${flags[@]}" -o "$tmp/plain" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
if [ "$mode" = linked ]; then
	$cc "${flags[@]}" -o "$tmp/prog" -L"$root/build" -Wl,--no-as-needed -lweft \
		-Wl,-rpath,"$root/build" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	under_weft=(env)
else
	cp "$tmp/plain" "$tmp/prog"
	under_weft=(env LD_PRELOAD="$lib")
fi

vg=(valgrind --leak-check=full --show-leak-kinds=definite,possible
	--errors-for-leak-kinds=definite,possible --error-exitcode=42)

# blocks KIND LOG: the block count of a LEAK SUMMARY line ("definitely
# lost", "possibly lost"); 0 when memcheck printed none (nothing in use).
blocks() {
	local n
	n=$(sed -n "s/.*$1: [0-9,]* bytes in \([0-9,]*\) blocks.*/\1/p" "$2" | tr -d ,)
	echo "${n:-0}"
}

# case NAME N: the helper under glibc, then under weft.
case_() {
	local name=$1 n=$2 grc wrc gdef gpos wdef wpos wout
	timeout -k 5 240 "${vg[@]}" --log-file="$tmp/glibc.$name.log" \
		"$tmp/plain" "$name" "$n" >"$tmp/glibc.$name.out" 2>&1
	grc=$?
	timeout -k 5 240 "${under_weft[@]}" "${vg[@]}" --log-file="$tmp/weft.$name.log" \
		"$tmp/prog" "$name" "$n" >"$tmp/weft.$name.out" 2>&1
	wrc=$?
	wout=$(cat "$tmp/weft.$name.out")
	gdef=$(blocks "definitely lost" "$tmp/glibc.$name.log")
	gpos=$(blocks "possibly lost" "$tmp/glibc.$name.log")
	wdef=$(blocks "definitely lost" "$tmp/weft.$name.log")
	wpos=$(blocks "possibly lost" "$tmp/weft.$name.log")
	echo "$name $n: glibc exit $grc, definitely lost $gdef, possibly lost $gpos blocks;" \
		"weft exit $wrc, definitely lost $wdef, possibly lost $wpos blocks ($wout)"
	[ "$wout" = served=1 ] ||
		fail "$name: expected served=1 under weft (weft made every thread), got '$wout'"
	[ $grc -eq 0 ] || [ $grc -eq 42 ] ||
		fail "$name: the glibc run failed (exit $grc): $(tail -5 "$tmp/glibc.$name.log")"
	[ $wrc -eq 0 ] || [ $wrc -eq 42 ] ||
		fail "$name: the weft run failed (exit $wrc): $(tail -5 "$tmp/weft.$name.log")"
	[ $grc -ne 0 ] || [ $wrc -eq 0 ] ||
		fail "$name: expected exit 0 under weft as under glibc (no leak error), got $wrc"
	[ "$wdef" -le "$gdef" ] ||
		fail "$name: expected at most $gdef blocks definitely lost (glibc's), got $wdef"
	[ "$wpos" -le "$gpos" ] ||
		fail "$name: expected at most $gpos blocks possibly lost (glibc's), got $wpos"
	if [ $fails -ne 0 ]; then
		echo "--- weft's memcheck log ($name):"
		grep -v '^==[0-9]*== *$' "$tmp/weft.$name.log" | head -n 40
	fi
}

case_ join 200
case_ burst 50
case_ detach 100
case_ alive 20
[ $fails -eq 0 ] || exit 1
echo "ok: no leak under weft that glibc does not have"
