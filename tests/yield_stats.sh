# Sourced by the yield tests (t_mutex_yield.sh, t_cond_yield.sh,
# t_sem_yield.sh): runs a test program of $mode with WEFT_STATS=1 and
# reads the counters of the WEFT_STATS summary line.
#
# yield_test_setup MODE PROGRAM
#   sets mode, lib (from WEFT_LIB), prog (the built PROGRAM of MODE),
#   tmp (a folder removed at exit), fails and fail(); stops the test
#   when PROGRAM is not built.
# stats_run LABEL [VAR=VALUE ...] [PREFIX COMMAND ...]
#   runs "$prog" (linked: as it is; preload: with LD_PRELOAD="$lib"),
#   fails the test unless it exits 0, and leaves the summary line in
#   $head.
# stats_field NAME
#   prints the value of NAME= in $head (nothing when it is missing).
# yield_three_ways YIELDS HITS
#   for the waiters that yield only when free to run on two or more
#   CPUs (condvar, semaphore): runs "$prog" by default, on one CPU
#   (taskset -c 0) and with WEFT_YIELD_WAIT=0, and checks the counters
#   YIELDS (yielding waits) and HITS (those that got what they waited
#   for meanwhile): 0 < HITS <= YIELDS by default (YIELDS = 0 if this
#   machine lets us use one CPU only), YIELDS = 0 in the other two.
# yield_test_done NAME
#   prints PASS when nothing failed; its status is the test's.

yield_test_setup() {
	mode=${1:?mode}
	lib=${WEFT_LIB:?}
	prog="$(dirname "$lib")/tests/$mode/$2"
	fails=0
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	[ -x "$prog" ] || { echo "FAIL: $prog not built" >&2; exit 1; }
}

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

stats_run() {
	local label=$1
	shift
	if [ "$mode" = linked ]; then
		env WEFT_STATS=1 "$@" "$prog" >"$tmp/$label.out" 2>"$tmp/$label.err"
	else
		env WEFT_STATS=1 LD_PRELOAD="$lib" "$@" "$prog" >"$tmp/$label.out" 2>"$tmp/$label.err"
	fi
	local rc=$?
	[ $rc -eq 0 ] || fail "$label: expected $(basename "$prog") to pass (exit 0), got exit $rc: $(cat "$tmp/$label.out" "$tmp/$label.err")"
	head=$(grep '^weft-stats: contended_locks=' "$tmp/$label.err")
	echo "$label: $head"
}

stats_field() {
	sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $head"
}

# One run of yield_three_ways: sets yields and hits.
yield_run() { # YIELDS HITS LABEL [VAR=VALUE ...] [PREFIX COMMAND ...]
	local yf=$1 hf=$2
	shift 2
	stats_run "$@"
	yields=$(stats_field "$yf")
	hits=$(stats_field "$hf")
	if [ -z "$yields" ] || [ -z "$hits" ]; then
		fail "$1: expected $yf= and $hf= in the WEFT_STATS summary, got '$head'"
		yields=-1 hits=-1
	fi
}

yield_none() { # YIELDS LABEL
	[ "$yields" = 0 ] || fail "$2: expected $1=0, got '$yields'"
}

yield_three_ways() {
	local yf=$1 hf=$2
	yield_run "$yf" "$hf" default
	if [ "$(nproc)" -lt 2 ]; then
		yield_none "$yf" "default on one CPU"
	elif [ "$yields" -le 0 ] || [ "$hits" -le 0 ] || [ "$hits" -gt "$yields" ]; then
		fail "default: expected 0 < $hf <= $yf, got $yf=$yields $hf=$hits"
	fi
	if command -v taskset >/dev/null; then
		yield_run "$yf" "$hf" onecpu taskset -c 0
		yield_none "$yf" "taskset -c 0"
	else
		echo "no taskset: the one-CPU run left out"
	fi
	yield_run "$yf" "$hf" off WEFT_YIELD_WAIT=0
	yield_none "$yf" "WEFT_YIELD_WAIT=0"
}

yield_test_done() {
	[ "$fails" -eq 0 ] && echo "PASS: $1 ($mode)"
	[ "$fails" -eq 0 ]
}
