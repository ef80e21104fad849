# Sourced by the yield tests (t_mutex_yield.sh, t_cond_yield.sh): runs a
# test program of $mode with WEFT_STATS=1 and reads the counters of the
# WEFT_STATS summary line.  Needs mode, lib, prog, tmp and fail() set by
# the caller.
#
# stats_run LABEL [VAR=VALUE ...] [PREFIX COMMAND ...]
#   runs "$prog" (linked: as it is; preload: with LD_PRELOAD="$lib"),
#   fails the test unless it exits 0, and leaves the summary line in
#   $head.
# stats_field NAME
#   prints the value of NAME= in $head (nothing when it is missing).
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
