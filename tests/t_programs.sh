#!/usr/bin/env bash
# Real multithreaded Debian programs under weft: pigz -p 2 and xz -T2
# compress and decompress ~20 MB; the round trip must be exact, and the
# report weft writes at exit (WEFT_REPORT) must show that weft was active
# and created the programs' threads.
#   linked mode:  LD_PRELOAD=$WEFT_LIB PROGRAM ...  (the programs are not
#                 ours to link, so this mode preloads the library directly)
#   preload mode: $WEFT_ROOT/bin/weft run -- PROGRAM ...
# Usage: bash tests/t_programs.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in pigz xz gzip cmp; do
	if ! command -v "$p" >/dev/null; then
		echo "FAIL: '$p' is not installed; this test needs it (apt-get install $p)" >&2
		exit 1
	fi
done

# under weft: run_weft REPORTFILE COMMAND...
run_weft() {
	local rep=$1
	shift
	rm -f "$rep"
	if [ "$mode" = linked ]; then
		WEFT_REPORT="$rep" LD_PRELOAD="$lib" "$@"
	else
		WEFT_REPORT="$rep" "$root/bin/weft" run -- "$@"
	fi
}

# check_report WHAT REPORTFILE MIN_THREADS
check_report() {
	local what=$1 rep=$2 min=$3
	if [ ! -s "$rep" ]; then
		fail "$what: weft wrote no report to WEFT_REPORT"
		return
	fi
	grep -qx 'active=1' "$rep" || fail "$what: report lacks active=1: $(tr '\n' ' ' <"$rep")"
	! grep -qx 'active=0' "$rep" || fail "$what: report has active=0"
	local n
	n=$(sed -n 's/^threads_created=\([0-9]*\)$/\1/p' "$rep" | sort -n | tail -n 1)
	if [ -z "$n" ]; then
		fail "$what: report lacks threads_created: $(tr '\n' ' ' <"$rep")"
	elif [ "$n" -lt "$min" ]; then
		fail "$what: expected threads_created >= $min, got $n"
	fi
	echo "$what: $(tr '\n' ' ' <"$rep")"
}

# ~20 MB input: 5.4 MB of base64 random text and 14.6 MB of numbers.
{
	head -c 4000000 /dev/urandom | base64 -w 100
	seq 1 1900000
} >"$tmp/in"
size=$(stat -c %s "$tmp/in")
echo "input: $size bytes"

# pigz -p 2
run_weft "$tmp/r1" pigz -p 2 -c "$tmp/in" >"$tmp/in.gz"
rc=$?
[ $rc -eq 0 ] || fail "pigz -p 2 (compress) under weft: exit $rc"
check_report "pigz -p 2 compress" "$tmp/r1" 1
env -u LD_PRELOAD gzip -t "$tmp/in.gz" || fail "pigz output is not a valid gzip file"
run_weft "$tmp/r2" pigz -p 2 -d -c "$tmp/in.gz" >"$tmp/out.pigz"
rc=$?
[ $rc -eq 0 ] || fail "pigz -p 2 -d (decompress) under weft: exit $rc"
check_report "pigz -p 2 decompress" "$tmp/r2" 0
cmp "$tmp/in" "$tmp/out.pigz" || fail "pigz round trip differs"

# xz -T2, 2 MiB blocks so that both threads get work.  File to file, not
# to stdout: xz 5.6 and later sandbox themselves with Landlock when they
# write to stdout, and weft's report file (opened at exit) is then out of
# reach (EACCES): the program is served all the same, but the report,
# this test's proof of it, would be missing.
mkdir "$tmp/xz"
cp "$tmp/in" "$tmp/xz/in"
run_weft "$tmp/r3" xz -T2 -3 --block-size=2MiB "$tmp/xz/in"
rc=$?
[ $rc -eq 0 ] || fail "xz -T2 (compress) under weft: exit $rc"
check_report "xz -T2 compress" "$tmp/r3" 1
env -u LD_PRELOAD xz -t "$tmp/xz/in.xz" || fail "xz output is not a valid xz file"
run_weft "$tmp/r4" xz -T2 -d "$tmp/xz/in.xz"
rc=$?
[ $rc -eq 0 ] || fail "xz -T2 -d (decompress) under weft: exit $rc"
check_report "xz -T2 decompress" "$tmp/r4" 0
cmp "$tmp/in" "$tmp/xz/in" || fail "xz round trip differs"

echo "mode $mode: $fails failure(s)"
[ $fails -eq 0 ]
