#!/usr/bin/env bash
# A mutex waiter yields before it sleeps (WEFT_YIELD_WAIT; docs/sync.md,
# "A waiter yields before it sleeps").  Runs the lock ring under load
# (tests/t_mutex_ring.c: more walkers than CPUs, four mutex types, timed
# locks, a hog that forces the fairness hand-off; it checks mutual
# exclusion, the checksum and every entry count) three ways, with
# WEFT_STATS=1 so that weft counts the yielding waiters:
#   - the default: the ring passes, and waiters yielded (yield_waits > 0)
#     and some took their mutex so (0 < yield_takes <= yield_waits): the
#     path ran and was correct;
#   - all walkers on one CPU (taskset -c 0): the same (one yielder at a
#     time still yields), in a run that saw contention (up to five runs:
#     the ring has no start gate, and a run may have none);
#   - WEFT_YIELD_WAIT=0: the ring passes and nobody yielded;
# then the near-miss rule, with tests/t_mutex_nearmiss.c (see below).
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_mutex_yield.sh linked|preload   (env WEFT_LIB)
set -u
# shellcheck source=tests/yield_stats.sh
. "$(dirname "$0")/yield_stats.sh"
yield_test_setup "${1:-}" t_mutex_ring

run() { # label, then env assignments and an optional command prefix
	stats_run "$@"
	contended=$(stats_field waits)
	waits=$(stats_field yield_waits)
	takes=$(stats_field yield_takes)
	if [ -z "$waits" ] || [ -z "$takes" ]; then
		fail "$1: expected yield_waits= and yield_takes= in the WEFT_STATS summary, got '$head'"
		waits=-1 takes=-1
	fi
}

run default
if [ "$waits" -le 0 ] || [ "$takes" -le 0 ] || [ "$takes" -gt "$waits" ]; then
	fail "default: expected 0 < yield_takes <= yield_waits, got yield_waits=$waits yield_takes=$takes"
fi

if command -v taskset >/dev/null; then
	# The ring has no start gate: on one CPU the first walkers may go
	# round it alone before the others start, and a run may see no
	# contention at all (then nobody had a reason to yield): run again.
	for try in 1 2 3 4 5; do
		run onecpu taskset -c 0
		[ "${contended:-0}" -gt 0 ] && break
	done
	[ "${contended:-0}" -gt 0 ] || fail "taskset -c 0: five runs without a single contended lock"
	if [ "$waits" -le 0 ] || [ "$takes" -le 0 ] || [ "$takes" -gt "$waits" ]; then
		fail "taskset -c 0: expected 0 < yield_takes <= yield_waits, got yield_waits=$waits yield_takes=$takes"
	fi
else
	echo "no taskset: the one-CPU run left out"
fi

run off WEFT_YIELD_WAIT=0
[ "$waits" = 0 ] || fail "WEFT_YIELD_WAIT=0: expected yield_waits=0, got '$waits'"

# The near-miss rule (tests/t_mutex_nearmiss.c, one waiter and one CPU):
# released as soon as the waiter's turn ran out and it slept, the lock
# comes within YIELD_WAIT_NS of the turn's end, so the waiter backs off
# (yield_near_misses > 0, then yield_skips > 0, at most 15 skips a near
# miss: 2^4 - 1); released 200 us later, never a near miss nor a skip.
prog="$(dirname "$lib")/tests/$mode/t_mutex_nearmiss"
[ -x "$prog" ] || fail "$prog not built"
for hold in near far; do
	run "nearmiss-$hold" NEARMISS_HOLD=$hold
	near=$(stats_field yield_near_misses)
	skips=$(stats_field yield_skips)
	if [ -z "$near" ] || [ -z "$skips" ]; then
		fail "nearmiss-$hold: expected yield_near_misses= and yield_skips= in the WEFT_STATS summary, got '$head'"
		continue
	fi
	[ "$waits" -gt 0 ] || fail "nearmiss-$hold: expected yield_waits > 0 (the waiter's turns), got $waits"
	if [ $hold = near ]; then
		if [ "$near" -le 0 ] || [ "$skips" -le 0 ] || [ "$skips" -gt $((15 * near)) ]; then
			fail "nearmiss-near: expected yield_near_misses > 0 and 0 < yield_skips <= 15 x yield_near_misses, got yield_near_misses=$near yield_skips=$skips"
		fi
	elif [ "$near" != 0 ] || [ "$skips" != 0 ]; then
		fail "nearmiss-far: expected yield_near_misses=0 and yield_skips=0, got yield_near_misses=$near yield_skips=$skips"
	fi
done

yield_test_done t_mutex_yield
