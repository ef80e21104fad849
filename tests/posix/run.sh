#!/usr/bin/env bash
# make check-posix: the Open POSIX Test Suite's conformance tests for
# every pthread_* and sem_* interface, run once under plain glibc and
# once under weft (LD_PRELOAD), with both summaries and the per-test
# differences.
#
# The suite comes from Debian's `posixtestsuite` source package.  When
# no deb-src entry is configured, one is derived from the machine's own
# Debian sources (the same archive, Types: deb-src), so no host name is
# written here.  Work directory: build/posix (WEFT_PTS_DIR to change).
#
#   tests/posix/run.sh [PATTERN]   PATTERN: a grep -E on the test path
#   WEFT_PTS_TIMEOUT  seconds per test (default 60)
#   WEFT_PTS_JOBS     tests run at once (default 1: several tests measure
#                     time and a loaded machine makes them flaky)
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
lib="$root/build/libweft.so"
work=${WEFT_PTS_DIR:-$root/build/posix}
limit=${WEFT_PTS_TIMEOUT:-60}
jobs=${WEFT_PTS_JOBS:-1}
pattern=${1:-.}
mkdir -p "$work"

die() { echo "check-posix: $*" >&2; exit 2; }

[ -f "$lib" ] || die "build/libweft.so missing: run make first"

# ------------------------------------------------------------ fetch
fetch() {
	local src
	src=$(ls -d "$work"/posixtestsuite-*/ 2>/dev/null | head -n1)
	if [ -n "$src" ]; then echo "${src%/}"; return; fi
	command -v apt-get >/dev/null || die "apt-get not found"
	if ! apt-get source --print-uris posixtestsuite >/dev/null 2>&1 ||
	   [ -z "$(apt-get source --print-uris posixtestsuite 2>/dev/null | grep -F .dsc)" ]; then
		derive_deb_src || die "cannot configure a deb-src entry"
		apt-get update -qq >&2 || die "apt-get update failed"
	fi
	command -v dpkg-source >/dev/null || apt-get install -y -qq dpkg-dev >&2 ||
		die "dpkg-dev (dpkg-source) is needed to unpack the source"
	(cd "$work" && apt-get source -qq posixtestsuite >&2) ||
		die "apt-get source posixtestsuite failed"
	src=$(ls -d "$work"/posixtestsuite-*/ 2>/dev/null | head -n1)
	[ -n "$src" ] || die "no posixtestsuite-* directory after apt-get source"
	echo "${src%/}"
}

# Writes a deb-src twin of the machine's Debian entries (deb822 or
# one-line format); needs root, as apt-get source itself does not.
derive_deb_src() {
	local out=/etc/apt/sources.list.d/weft-deb-src
	if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
		cat /etc/apt/sources.list.d/*.sources |
			awk 'BEGIN{RS=""; ORS="\n\n"} /Types:[^\n]*deb/ {sub(/Types:[^\n]*/, "Types: deb-src"); print}' \
			>"$out.sources" || return 1
		[ -s "$out.sources" ]
	else
		grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed 's/^deb /deb-src /' >"$out.list" || return 1
		[ -s "$out.list" ]
	fi
}

# ------------------------------------------------------------ build
# Every NUMBER-NUMBER.c with a main() under conformance/interfaces/
# pthread_* and sem_*; the .sh "tests" of the suite only echo a note.
build() { # srcdir
	local src=$1 c bin n=0 bad=0
	mkdir -p "$work/bin"
	: >"$work/tests.list"
	while IFS= read -r c; do
		rel=${c#"$src"/conformance/interfaces/}
		[[ $rel =~ $pattern ]] || continue
		bin="$work/bin/$(echo "${rel%.c}" | tr / :)"
		if [ ! -x "$bin" ] || [ "$c" -nt "$bin" ]; then
			if ! gcc -O2 -g -std=gnu99 -D_POSIX_C_SOURCE=200112L -D_GNU_SOURCE \
				-w -I"$src/include" -o "$bin" "$c" -lpthread -lrt \
				>"$bin.buildlog" 2>&1; then
				bad=$((bad + 1))
				echo "${rel%.c} BUILD-FAILED" >>"$work/build-failures"
				continue
			fi
		fi
		echo "${rel%.c}" >>"$work/tests.list"
		n=$((n + 1))
	done < <(find "$src/conformance/interfaces" \
		\( -path '*/interfaces/pthread_*/*' -o -path '*/interfaces/sem_*/*' \) \
		-name '[0-9]*-[0-9]*.c' ! -name '*buildonly*' | sort)
	echo "built $n tests ($bad failed to build)" >&2
}

# ------------------------------------------------------------ run
verdict() { # exit status -> PTS word
	case $1 in
	0) echo PASS ;; 1) echo FAIL ;; 2) echo UNRESOLVED ;;
	4) echo UNSUPPORTED ;; 5) echo UNTESTED ;; 124 | 137) echo TIMEOUT ;;
	*) if [ "$1" -gt 128 ]; then echo "SIGNAL$(($1 - 128))"; else echo "EXIT$1"; fi ;;
	esac
}

run_one() { # mode test
	local mode=$1 t=$2 bin rc dir
	bin="$work/bin/$(echo "$t" | tr / :)"
	dir="$work/run.$mode/$(echo "$t" | tr / :)"
	rm -rf "$dir"; mkdir -p "$dir"
	(
		cd "$dir" || exit 99
		if [ "$mode" = weft ]; then
			LD_PRELOAD="$lib" WEFT_REPORT="$dir/weft.report" \
				timeout -k 5 "$limit" "$bin" >out 2>&1
		else
			env -u LD_PRELOAD timeout -k 5 "$limit" "$bin" >out 2>&1
		fi
	)
	rc=$?
	# A child the test forked may outlive it (the test crashed first).
	pkill -KILL -xf "$bin" 2>/dev/null
	echo "$t $(verdict $rc)"
	# Proof that weft served the process: its exit report says active=1
	# (a process ended by _exit or a signal writes none).
	if [ "$mode" = weft ] && grep -qx 'active=1' "$dir/weft.report" 2>/dev/null; then
		echo "$t" >>"$work/served.weft"
	fi
}
export -f run_one verdict
export work lib limit

run_mode() { # mode -> results file
	local mode=$1
	echo "running under $mode ..." >&2
	local before
	before=$(ls /dev/shm 2>/dev/null | grep '^sem\.' | sort)
	xargs -a "$work/tests.list" -P "$jobs" -I{} bash -c 'run_one "$0" "$1"' "$mode" {} |
		sort >"$work/results.$mode"
	# Named semaphores the tests left behind would change the next run;
	# only those that appeared during this run are removed.
	comm -13 <(echo "$before") <(ls /dev/shm 2>/dev/null | grep '^sem\.' | sort) |
		while IFS= read -r f; do [ -n "$f" ] && rm -f "/dev/shm/$f"; done
}

summary() { # file
	awk '{c[$2]++} END {
		n = split("PASS FAIL UNRESOLVED UNSUPPORTED UNTESTED TIMEOUT", k, " ");
		line = "";
		for (i = 1; i <= n; i++) { line = line sprintf("%s=%d ", k[i], c[k[i]] + 0); delete c[k[i]] }
		for (x in c) line = line sprintf("%s=%d ", x, c[x]);
		print line }' "$1"
}

src=$(fetch) || exit 2
rm -f "$work/build-failures"
build "$src"
[ -s "$work/tests.list" ] || die "no tests matched '$pattern'"
run_mode glibc
rm -f "$work/served.weft"
run_mode weft

echo
echo "glibc: $(summary "$work/results.glibc")"
echo "weft:  $(summary "$work/results.weft")"
echo "weft served (exit report with active=1): $(sort -u "$work/served.weft" 2>/dev/null | wc -l) of $(wc -l <"$work/tests.list") tests"
echo
echo "differences (test: glibc -> weft):"
join "$work/results.glibc" "$work/results.weft" |
	awk '$2 != $3 { printf "  %-45s %s -> %s\n", $1, $2, $3; d++ }
	     END { if (!d) print "  none" }'
echo "logs: $work/run.{glibc,weft}/<test>/out"
# Failure: a test glibc passes does not pass under weft.
join "$work/results.glibc" "$work/results.weft" |
	awk '$2 == "PASS" && $3 != "PASS" { bad++ } END { exit bad ? 1 : 0 }'
