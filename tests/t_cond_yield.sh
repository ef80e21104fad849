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
# Then tests/t_cond_queue.c (a condvar only ever signalled, 4 waiters
# queued on it each round, 300 rounds): it passes, and only a waiter that
# joined an empty list yielded, at most one a round (0 < cond_yields <=
# 301 on two or more CPUs); a waiter queued behind others would yield
# while the signals go to those ahead of it.
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_cond_yield.sh linked|preload   (env WEFT_LIB)
set -u
# shellcheck source=tests/yield_stats.sh
. "$(dirname "$0")/yield_stats.sh"
yield_test_setup "${1:-}" t_cond_storm
yield_three_ways cond_yields cond_yield_picks
prog="$(dirname "$lib")/tests/$mode/t_cond_queue"
if [ ! -x "$prog" ]; then
	fail "$prog not built"
else
	stats_run queue
	yields=$(stats_field cond_yields)
	if [ -z "$yields" ]; then
		fail "queue: expected cond_yields= in the WEFT_STATS summary, got '$head'"
	elif [ "$(nproc)" -ge 2 ] && { [ "$yields" -le 0 ] || [ "$yields" -gt 301 ]; }; then
		fail "queue: expected 0 < cond_yields <= 301 (one first waiter a round), got $yields"
	fi
fi
yield_test_done t_cond_yield
