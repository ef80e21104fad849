#!/usr/bin/env bash
# WEFT_STATS: the report weft prints to stderr at exit.  The helper
# (tests/stats_contend.c, built here with -rdynamic so that dladdr can
# name its functions) makes sure waits on a mutex, an rwlock (read), a
# spin lock, a robust process-shared mutex and a PI mutex, and prints
# the addresses; the report must show:
#   - the summary: active=1, threads_created = the helper's count,
#     peak_alive >= 2, this pid;
#   - each lock by address, with its kind, contentions >= 1, a wait > 0
#     and the function that waited (contend_worker, reader_worker,
#     spin_worker, kinds_worker), lines sorted by total wait, most first;
#   - WEFT_STATS_TOP=1: exactly one lock line, the most waited-for;
#   - 2000 more mutexes waited for once each, WEFT_STATS_TOP=0: all
#     2005 locks listed, each once (the table grows past its first
#     blocks without losing or duplicating an entry);
#   - the program closing stderr in its own atexit handler (coreutils
#     and xz do) does not lose the report;
#   - main ending with pthread_exit while a weft thread still runs (its
#     end is the process's, and weft calls exit): the report still comes;
#   - without WEFT_STATS (unset, or 0): no weft-stats line at all.
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_stats.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flags=(-std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE -I"$root/include" -I"$root/tests"
	-pthread -rdynamic -o "$tmp/prog" "$root/tests/stats_contend.c")
if [ "$mode" = linked ]; then
	$cc "${flags[@]}" -L"$root/build" -Wl,--no-as-needed -lweft \
		-Wl,-rpath,"$root/build" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	run() { env "$@" "$tmp/prog" ${args:-}; }
else
	$cc "${flags[@]}" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	run() { env LD_PRELOAD="$lib" "$@" "$tmp/prog" ${args:-}; }
fi

# field NAME LINE: the value of NAME=value in LINE
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

# ---- WEFT_STATS=1: everything listed
run WEFT_STATS=1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "WEFT_STATS=1 run: expected exit 0, got $rc: $(cat "$tmp/out" "$tmp/err")"
out=$(cat "$tmp/out")
echo "helper: $out"
sed 's/^/stderr: /' "$tmp/err"
pid=$(field pid "$out"); created=$(field created "$out")
summary=$(grep '^weft-stats: pid=' "$tmp/err")
if [ "$(grep -c '^weft-stats: pid=' "$tmp/err")" -ne 1 ]; then
	fail "expected exactly one summary line 'weft-stats: pid=...', got: $(cat "$tmp/err")"
else
	[ "$(field pid "$summary")" = "$pid" ] || fail "summary pid: expected $pid, got '$(field pid "$summary")'"
	[ "$(field active "$summary")" = 1 ] || fail "summary active: expected 1, got '$(field active "$summary")'"
	[ "$(field threads_created "$summary")" = "$created" ] ||
		fail "summary threads_created: expected $created, got '$(field threads_created "$summary")'"
	peak=$(field peak_alive "$summary")
	[ -n "$peak" ] && [ "$peak" -ge 2 ] || fail "summary peak_alive: expected >= 2, got '$peak'"
	for k in stack_cache_hits stack_cache_misses threads_adopted; do
		[[ "$(field $k "$summary")" =~ ^[0-9]+$ ]] || fail "summary lacks $k=NUMBER: $summary"
	done
fi

# check_lock WHAT ADDRESS KIND FUNCTION
check_lock() {
	local what=$1 addr=$2 kind=$3 fn=$4 line n
	n=$(grep -c "^weft-stats: lock=$addr kind=$kind " "$tmp/err")
	if [ "$n" -ne 1 ]; then
		fail "$what: expected one line 'weft-stats: lock=$addr kind=$kind ...', got $n"
		return
	fi
	line=$(grep "^weft-stats: lock=$addr kind=$kind " "$tmp/err")
	n=$(field contentions "$line")
	[ -n "$n" ] && [ "$n" -ge 1 ] || fail "$what: expected contentions >= 1, got '$n'"
	n=$(field wait_ns "$line")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "$what: expected wait_ns > 0, got '$n'"
	n=$(field max_wait_ns "$line")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "$what: expected max_wait_ns > 0, got '$n'"
	[[ "$(field site "$line")" == "$fn"+0x* ]] ||
		fail "$what: expected site=$fn+0x..., got '$(field site "$line")'"
}
check_lock mutex "$(field mutex "$out")" mutex contend_worker
check_lock rwlock "$(field rwlock "$out")" rwlock-read reader_worker
check_lock spin "$(field spin "$out")" spin spin_worker
check_lock robust-shared "$(field robust "$out")" mutex kinds_worker
check_lock pi "$(field pi "$out")" mutex kinds_worker

# Sorted by total wait, most first; the header counts them.
waits=$(grep '^weft-stats: lock=' "$tmp/err" | sed -n 's/.* wait_ns=\([0-9]*\).*/\1/p')
[ "$waits" = "$(sort -rn <<<"$waits")" ] || fail "lock lines not sorted by wait_ns: $(echo $waits)"
head=$(grep '^weft-stats: contended_locks=' "$tmp/err")
n=$(grep -c '^weft-stats: lock=' "$tmp/err")
[ "$(field contended_locks "$head")" = 5 ] || fail "contended_locks: expected 5, got '$(field contended_locks "$head")'"
[ "$(field shown "$head")" = "$n" ] || fail "shown: expected $n (lines printed), got '$(field shown "$head")'"

# ---- WEFT_STATS_TOP=1: only the most waited-for lock
run WEFT_STATS=1 WEFT_STATS_TOP=1 >"$tmp/out1" 2>"$tmp/err1"
rc=$?
[ $rc -eq 0 ] || fail "WEFT_STATS_TOP=1 run: expected exit 0, got $rc: $(cat "$tmp/err1")"
n=$(grep -c '^weft-stats: lock=' "$tmp/err1")
[ "$n" -eq 1 ] || fail "WEFT_STATS_TOP=1: expected 1 lock line, got $n: $(cat "$tmp/err1")"
head=$(grep '^weft-stats: contended_locks=' "$tmp/err1")
[ "$(field contended_locks "$head")" = 5 ] && [ "$(field shown "$head")" = 1 ] ||
	fail "WEFT_STATS_TOP=1: expected contended_locks=5 shown=1, got '$head'"

# ---- many locks, all listed
nmany=2000
args=$nmany run WEFT_STATS=1 WEFT_STATS_TOP=0 >"$tmp/out3" 2>"$tmp/err3"
rc=$?
[ $rc -eq 0 ] || fail "$nmany-mutex run: expected exit 0, got $rc: $(head -c 2000 "$tmp/err3")"
head=$(grep '^weft-stats: contended_locks=' "$tmp/err3")
want=$((nmany + 5))
[ "$(field contended_locks "$head")" = $want ] && [ "$(field shown "$head")" = $want ] ||
	fail "$nmany-mutex run: expected contended_locks=$want shown=$want, got '$head'"
n=$(sed -n 's/^weft-stats: \(lock=[^ ]* kind=[^ ]*\) .*/\1/p' "$tmp/err3" | sort -u | wc -l)
[ "$n" -eq $want ] || fail "$nmany-mutex run: expected $want distinct lock lines, got $n"
n=$(grep -c 'kind=mutex contentions=1 .*site=many_worker+0x' "$tmp/err3")
[ "$n" -ge $nmany ] || fail "$nmany-mutex run: expected >= $nmany lines 'kind=mutex contentions=1 ... site=many_worker', got $n"
echo "$nmany-mutex run: $head"

# ---- the program closes stderr at exit before weft reports
run WEFT_STATS=1 CONTEND_CLOSE_STDERR=1 >"$tmp/out4" 2>"$tmp/err4"
rc=$?
[ $rc -eq 0 ] || fail "closed-stderr run: expected exit 0, got $rc: $(cat "$tmp/err4")"
n=$(grep -c '^weft-stats: pid=.* threads_created=6 ' "$tmp/err4")
[ "$n" -eq 1 ] || fail "closed-stderr run: expected the summary line with threads_created=6, got: $(cat "$tmp/err4")"

# ---- main calls pthread_exit: the last thread ending exits the process
run WEFT_STATS=1 CONTEND_MAIN_EXIT=1 >"$tmp/out5" 2>"$tmp/err5"
rc=$?
[ $rc -eq 0 ] || fail "main-pthread_exit run: expected exit 0, got $rc: $(cat "$tmp/err5")"
n=$(grep -c '^weft-stats: pid=.* threads_created=7 ' "$tmp/err5")
[ "$n" -eq 1 ] || fail "main-pthread_exit run: expected the summary line with threads_created=7, got: $(cat "$tmp/err5")"
grep -q '^weft-stats: lock=.* kind=mutex .*site=contend_worker+' "$tmp/err5" ||
	fail "main-pthread_exit run: expected the mutex line, got: $(cat "$tmp/err5")"

# ---- off: no report at all
for setting in "" WEFT_STATS=0; do
	run $setting >"$tmp/out2" 2>"$tmp/err2"
	rc=$?
	[ $rc -eq 0 ] || fail "run with '${setting:-WEFT_STATS unset}': expected exit 0, got $rc: $(cat "$tmp/err2")"
	! grep -q 'weft-stats' "$tmp/err2" ||
		fail "with '${setting:-WEFT_STATS unset}': expected no weft-stats output, got: $(cat "$tmp/err2")"
done

echo "mode $mode: $fails failure(s)"
[ $fails -eq 0 ]
