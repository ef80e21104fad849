#!/usr/bin/env bash
# Runs every test in both modes and prints one line per run, then the
# summary line "N passed, N failed" (", N skipped" when some were).
#   linked:  build/tests/linked/NAME  (libweft linked before libc)
#   preload: LD_PRELOAD=build/libweft.so build/tests/preload/NAME
# Shell tests (tests/t_*.sh) get the mode as their first argument.
# Exit status 77 means the test could not run its checks here (it prints
# why, e.g. SCHED_FIFO refused with WEFT_TEST_NO_RT=1): reported as SKIP,
# counted apart, never as a pass.
# A single test: tests/run.sh NAME ...   Time limit per run: WEFT_TEST_TIMEOUT (s).
#   WEFT_BUILD=DIR         run the tests of another build directory (made
#                          with make B=DIR tests); logs in DIR/tests/log.
#                          Without names it runs only the compiled tests:
#                          the shell tests build their own programs with
#                          their own flags and several use build/ itself.
#   WEFT_PRELOAD_FIRST=LIB objects put before libweft.so in LD_PRELOAD in
#                          preload mode (an ASan-built test needs libasan
#                          first; .ci/sanitize).
set -u
shopt -s nullglob
cd "$(dirname "$0")/.."
root=$(pwd)
build=${WEFT_BUILD:-build}
lib="$root/$build/libweft.so"
case $build in /*) lib="$build/libweft.so" ;; esac
preload="${WEFT_PRELOAD_FIRST:+$WEFT_PRELOAD_FIRST }$lib"
limit=${WEFT_TEST_TIMEOUT:-300}
pass=0
fail=0
skipped=0
failed=()

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in "$build"/tests/linked/t_*; do names+=("$(basename "$f")"); done
	if [ "$build" = build ]; then
		for f in tests/t_*.sh; do names+=("$(basename "$f" .sh)"); done
	fi
fi

run_one() { # name mode
	local name=$1 mode=$2 out rc start end
	local log="$build/tests/log/$name.$mode.log"
	mkdir -p "$build/tests/log"
	start=$(date +%s.%N)
	if [ -f "tests/$name.sh" ]; then
		WEFT_LIB="$lib" WEFT_ROOT="$root" timeout -k 5 "$limit" bash "tests/$name.sh" "$mode" >"$log" 2>&1
	elif [ "$mode" = linked ]; then
		timeout -k 5 "$limit" "$build/tests/linked/$name" >"$log" 2>&1
	else
		LD_PRELOAD="$preload" timeout -k 5 "$limit" "$build/tests/preload/$name" >"$log" 2>&1
	fi
	rc=$?
	end=$(date +%s.%N)
	local secs
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		printf 'PASS %-28s %-8s %6ss\n' "$name" "$mode" "$secs"
	elif [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		printf 'SKIP %-28s %-8s %6ss (%s)\n' "$name" "$mode" "$secs" \
			"$(grep -m1 '^SKIP' "$log" | sed 's/^SKIP:* *//')"
	else
		fail=$((fail + 1))
		failed+=("$name/$mode")
		if [ $rc -eq 124 ]; then why="timed out after ${limit}s"
		elif [ $rc -gt 128 ]; then why="killed by signal $((rc - 128))"
		else why="exit $rc"; fi
		printf 'FAIL %-28s %-8s %6ss (%s)\n' "$name" "$mode" "$secs" "$why"
		sed 's/^/    | /' "$log" | tail -n 30
	fi
}

for n in "${names[@]}"; do
	run_one "$n" linked
	run_one "$n" preload
done

echo
if [ $fail -ne 0 ]; then
	echo "failed: ${failed[*]}"
fi
skips=
[ $skipped -ne 0 ] && skips=", $skipped skipped"
echo "$pass passed, $fail failed$skips"
[ $fail -eq 0 ]
