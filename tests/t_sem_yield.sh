#!/usr/bin/env bash
# A semaphore waiter yields before it registers and sleeps
# (WEFT_YIELD_WAIT; docs/sync.md, "A semaphore waiter yields too").
# Runs the semaphore storm (tests/t_sem_storm.c: producers, consumers
# that wait without a deadline, with deadlines that expire all the time
# and in waits that get cancelled; 11 threads on 2 CPUs; every unit
# counted) three ways, with WEFT_STATS=1 so that weft counts the
# yielding semaphore waiters:
#   - the default: the storm passes, waiters yielded (sem_yields > 0) and
#     some took a unit while they yielded
#     (0 < sem_yield_takes <= sem_yields): the path ran and lost nothing;
#   - all threads on one CPU (taskset -c 0): the storm passes and nobody
#     yielded (a waiter confined to one CPU sleeps at once);
#   - WEFT_YIELD_WAIT=0: the storm passes and nobody yielded.
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_sem_yield.sh linked|preload   (env WEFT_LIB)
set -u
mode=${1:?mode}
lib=${WEFT_LIB:?}
build=$(dirname "$lib")
prog="$build/tests/$mode/t_sem_storm"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$prog" ] || { echo "FAIL: $prog not built" >&2; exit 1; }

# shellcheck source=tests/yield_stats.sh
. "$(dirname "$0")/yield_stats.sh"

run() { # label, then env assignments and an optional command prefix
	stats_run "$@"
	yields=$(stats_field sem_yields)
	takes=$(stats_field sem_yield_takes)
	if [ -z "$yields" ] || [ -z "$takes" ]; then
		fail "$1: expected sem_yields= and sem_yield_takes= in the WEFT_STATS summary, got '$head'"
		yields=-1 takes=-1
	fi
}

check_yielded() { # label
	if [ "$yields" -le 0 ] || [ "$takes" -le 0 ] || [ "$takes" -gt "$yields" ]; then
		fail "$1: expected 0 < sem_yield_takes <= sem_yields, got sem_yields=$yields sem_yield_takes=$takes"
	fi
}

check_none() { # label
	[ "$yields" = 0 ] || fail "$1: expected sem_yields=0, got '$yields'"
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

[ $fails -eq 0 ] && echo "PASS: t_sem_yield ($mode)"
[ $fails -eq 0 ]
