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
# shellcheck source=tests/yield_stats.sh
. "$(dirname "$0")/yield_stats.sh"
yield_test_setup "${1:-}" t_sem_storm
yield_three_ways sem_yields sem_yield_takes
yield_test_done t_sem_yield
