#!/usr/bin/env bash
# The synchronization benchmarks and their driver (bench/sync_*.c,
# bench/sync_run.py):
#  1. two benchmark programs built the way the mode says (linked: -lweft
#     before libc; preload: plain, run with LD_PRELOAD) run under weft, and
#     their RESULT line proves weft served pthread_create and names the
#     object that served pthread_mutex_lock;
#  2. the driver's failure paths: stand-in programs that crash, hang, exit
#     non-zero, print nothing, or claim glibc served the weft column must
#     each be recorded as that failure (never as a number), and a good run
#     must give a number, a plot and a parseable summary;
#  3. a tiny real driver run (lock ring, one repetition).
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
# A stand-in for sync_ring whose behaviour depends on -t N.
fake="$tmp/fake"
mkdir -p "$fake"
cat >"$fake/sync_ring" <<'EOF'
#!/usr/bin/env bash
n=$2
served=libc.so.6
case "${LD_PRELOAD:-}" in *libweft.so*) served=libweft.so ;; esac
case $n in
2) echo "RESULT bench=ring variant=N2 metric=us_per_step us_per_step=1.5 lib_pthread_mutex_lock=$served" ;;
3) kill -SEGV $$ ;;
4) [ "$served" = libweft.so ] && exec sleep 60 # hangs in the weft column only
   echo "RESULT bench=ring variant=N4 metric=us_per_step us_per_step=2 lib_pthread_mutex_lock=$served" ;;
5) echo "FATAL pthread_mutex_lock: Invalid argument" >&2; exit 1 ;;
6) echo "no result line here" ;;
7) echo "RESULT bench=ring variant=N7 metric=us_per_step us_per_step=1.5 lib_pthread_mutex_lock=libc.so.6" ;;
8) echo "RESULT bench=ring variant=N8 metric=us_per_step us_per_step=nan-ish lib_pthread_mutex_lock=$served" ;;
esac
EOF
chmod +x "$fake/sync_ring"
python3 "$root/bench/sync_run.py" --bindir "$fake" --weft-lib "$lib" --out "$tmp/out" \
	--only ring --ring-threads 2,3,4,5,6,7,8 --reps 1 --no-pinned --no-musl \
	--no-latency --timeout 4 >"$tmp/drv.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "driver: expected exit 2 (some runs failed), got $rc: $(tail -3 "$tmp/drv.log")"
csv="$tmp/out/raw.csv"
[ -s "$csv" ] || fail "driver wrote no raw.csv"
expect() { # VARIANT IMPL STATUS
	local got
	got=$(awk -F, -v v="$1" -v i="$2" '$3 == v && $5 == i { print $6 }' "$csv" | sort -u | tr '\n' ' ')
	[ "$got" = "$3 " ] || fail "driver: $1 $2: expected status '$3', got '$got'"
}
expect N2 glibc ok
expect N2 weft ok
expect N3 glibc crash
expect N3 weft crash
expect N4 glibc ok
expect N4 weft timeout
expect N5 weft fail
expect N6 glibc noresult
expect N7 glibc ok
expect N7 weft unserved
expect N8 weft noresult
grep -q 'SIGSEGV' "$csv" || fail "driver: the crash is not named SIGSEGV in raw.csv"
md="$tmp/out/sync-results.md"
grep -q '| N3 | unpinned | \*\*CRASH\*\* (0/1)' "$md" || fail "driver: markdown does not show N3 as CRASH"
grep -q '| N4 | unpinned | 2 (2–2) | \*\*TIMEOUT\*\* (0/1)' "$md" ||
	fail "driver: markdown does not show N4 weft as TIMEOUT: $(grep '| N4 ' "$md")"
grep -q '| N2 | unpinned | 1.5 (1.5–1.5) | 1.5 (1.5–1.5) |' "$md" ||
	fail "driver: markdown lacks the good N2 row: $(grep '| N2 ' "$md")"
python3 - "$tmp/out/summary.json" <<'EOF' || fail "driver: summary.json wrong"
import json, sys
s = json.load(open(sys.argv[1]))
by = {c["variant"]: c for c in s["configs"]}
assert by["N2"]["columns"]["weft"]["median"] == 1.5, by["N2"]
assert by["N2"]["speedup_weft"] == 1.0, by["N2"]
assert by["N3"]["columns"]["glibc"]["median"] is None, by["N3"]
assert by["N3"]["columns"]["glibc"]["failures"] == ["crash"], by["N3"]
EOF
if command -v gnuplot >/dev/null; then
	[ -s "$tmp/out/ring_unpinned.svg" ] || fail "driver: no ring plot drawn"
fi

# ---------------------------------------------------------------- 3
if [ "$mode" = preload ]; then
	mkdir -p "$tmp/real"
	cp "$tmp/bin/sync_ring" "$tmp/real/"
	# the plain build is the glibc column and, preloaded, the weft column;
	# --allow-unserved because weft may not serve the mutex yet
	python3 "$root/bench/sync_run.py" --bindir "$tmp/real" --weft-lib "$lib" \
		--out "$tmp/real/out" --only ring --ring-threads 2 --reps 1 --no-musl --no-pinned \
		--no-latency --quick --allow-unserved --no-plots >"$tmp/real.log" 2>&1 ||
		fail "real driver run failed: $(tail -5 "$tmp/real.log")"
	n=$(awk -F, '$6 == "ok"' "$tmp/real/out/raw.csv" | wc -l)
	[ "$n" -eq 2 ] || fail "real driver run: expected 2 ok runs, got $n: $(cat "$tmp/real/out/raw.csv")"
	grep -q 'lib_pthread_create=libweft.so' "$tmp/real/out/raw.csv" ||
		fail "real driver run: no weft run served by libweft.so"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "t_syncbench: all checks passed ($mode)"
