#!/usr/bin/env bash
# A condition variable waiter yields before it sleeps (WEFT_YIELD_WAIT;
# docs/sync.md, "A waiter yields before it sleeps").  Runs the broadcast
# storm (tests/t_cond_storm.c: broadcasts under the mutex, after its
# release and while another thread holds it, to untimed waiters that
# must all come back every round, waiters whose deadlines expire all the
# time and waiters cancelled in their wait; 17 threads on 2 CPUs; every
# wake counted) three ways, with WEFT_STATS=1 so that weft counts the
# yielding condvar waiters:
#   - the default: the storm passes, waiters yielded (cond_yields > 0)
#     and some were picked while they yielded
#     (0 < cond_yield_picks <= cond_yields): the path ran and lost no
#     wake-up;
#   - all threads on one CPU (taskset -c 0): the storm passes and
#     nobody yielded (a waiter confined to one CPU sleeps at once: its
#     waker runs on that CPU, and a wake-up there is only a switch);
#   - WEFT_YIELD_WAIT=0: the storm passes and nobody yielded.
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_cond_yield.sh linked|preload   (env WEFT_LIB)
set -u
mode=${1:?mode}
lib=${WEFT_LIB:?}
build=$(dirname "$lib")
prog="$build/tests/$mode/t_cond_storm"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$prog" ] || { echo "FAIL: $prog not built" >&2; exit 1; }

# shellcheck source=tests/yield_stats.sh
. "$(dirname "$0")/yield_stats.sh"

run() { # label, then env assignments and an optional command prefix
	stats_run "$@"
	yields=$(stats_field cond_yields)
	picks=$(stats_field cond_yield_picks)
	if [ -z "$yields" ] || [ -z "$picks" ]; then
		fail "$1: expected cond_yields= and cond_yield_picks= in the WEFT_STATS summary, got '$head'"
		yields=-1 picks=-1
	fi
}

check_yielded() { # label
	if [ "$yields" -le 0 ] || [ "$picks" -le 0 ] || [ "$picks" -gt "$yields" ]; then
		fail "$1: expected 0 < cond_yield_picks <= cond_yields, got cond_yields=$yields cond_yield_picks=$picks"
	fi
}

check_none() { # label
	[ "$yields" = 0 ] || fail "$1: expected cond_yields=0, got '$yields'"
}

run default
if [ "$(nproc)" -ge 2 ]; then
	check_yielded default
else
	check_none "default on one CPU"
fi
if command -v taskset >/dev/null; then
	run onecpu taskset -c 0
	check_none "taskset -c 0"
else
	echo "no taskset: the one-CPU run left out"
fi
run off WEFT_YIELD_WAIT=0
check_none "WEFT_YIELD_WAIT=0"

[ $fails -eq 0 ] && echo "PASS: t_cond_yield ($mode)"
[ $fails -eq 0 ]
