#!/usr/bin/env bash
# The synchronization benchmarks (bench/sync_*.c) under weft:
#  1. two benchmark programs built the way the mode says (linked: -lweft
#     before libc; preload: plain, run with LD_PRELOAD) run under weft, and
#     their RESULT line proves weft served pthread_create and names the
#     object that served pthread_mutex_lock;
#  2. a tiny real run of the lock ring through bench/weft_bench.py (the
#     driver's failure paths are t_bench_report.sh's).
# Usage: bash tests/t_syncbench.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
cflags=(-O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -pthread)

# ---------------------------------------------------------------- 1
build() { # NAME: bench/NAME.c -> $tmp/bin/NAME
	mkdir -p "$tmp/bin"
	if [ "$mode" = linked ]; then
		"$cc" "${cflags[@]}" -o "$tmp/bin/$1" "$root/bench/$1.c" \
			-L"$(dirname "$lib")" -Wl,--no-as-needed -lweft \
			-Wl,-rpath,"$(dirname "$lib")" -ldl
	else
		"$cc" "${cflags[@]}" -o "$tmp/bin/$1" "$root/bench/$1.c" -ldl
	fi || fail "cannot build $1"
}
run_weft() {
	if [ "$mode" = linked ]; then "$@"; else LD_PRELOAD="$lib" "$@"; fi
}
build sync_ring &
build sync_uncontended &
wait
[ -x "$tmp/bin/sync_ring" ] && [ -x "$tmp/bin/sync_uncontended" ] || fail "cannot build the programs"
out=$(run_weft timeout 60 "$tmp/bin/sync_ring" -t 4 -i 2000) || fail "sync_ring failed: $out"
echo "$out"
case "$out" in
*" lib_pthread_create=libweft.so"*) ;;
*) fail "sync_ring: pthread_create not served by weft: $out" ;;
esac
case "$out" in
*" lib_pthread_mutex_lock="*) ;;
*) fail "sync_ring: RESULT does not say who served pthread_mutex_lock: $out" ;;
esac
out=$(run_weft timeout 60 "$tmp/bin/sync_uncontended" -S -n 100000) || fail "sync_uncontended: $out"
echo "$out"
steps=$(echo "$out" | sed -n 's/.* step_instr=\([0-9]*\) .*/\1/p')
# one lock + unlock is tens of instructions; 0 or thousands means the
# single-step bracket is broken
if [ -z "$steps" ] || [ "$steps" -lt 10 ] || [ "$steps" -gt 1000 ]; then
	fail "sync_uncontended: implausible single-step count '$steps': $out"
fi
case "$out" in
*" lib_pthread_create=libweft.so"*) ;;
*) fail "sync_uncontended: pthread_create not served by weft: $out" ;;
esac

# ---------------------------------------------------------------- 2
# A tiny real driver run (lock ring, one repetition) through weft bench's
# driver; its failure paths are tested in t_bench_report.sh.
if [ "$mode" = preload ]; then
	mkdir -p "$tmp/real"
	cp "$tmp/bin/sync_ring" "$tmp/real/"
	python3 "$root/bench/weft_bench.py" --bindir "$tmp/real" --weft-lib "$lib" \
		--out "$tmp/real/out" --only ring --set ring_N=2 --set ring_i=500 --reps 1 \
		--no-musl --pin no --no-warmup --no-plots >"$tmp/real.log" 2>&1 ||
		fail "real driver run failed: $(tail -5 "$tmp/real.log")"
	n=$(awk -F, '$6 == "ok"' "$tmp/real/out/runs.csv" | wc -l)
	# glibc, weft and the raw-futex floor
	[ "$n" -eq 3 ] || fail "real driver run: expected 3 ok runs, got $n: $(cat "$tmp/real/out/runs.csv")"
	grep -q 'lib_pthread_mutex_lock=libweft.so' "$tmp/real/out/runs.csv" ||
		fail "real driver run: no weft run served by libweft.so"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "t_syncbench: all checks passed ($mode)"
