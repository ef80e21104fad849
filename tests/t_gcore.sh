#!/usr/bin/env bash
# gdb's gcore on a weft process, then gdb on the core: it must list every
# thread through libthread_db ("Thread 0x... (LWP n)", as under glibc)
# and show each one's frames up to the function it is parked in.  The
# helper (tests/gcore_threads.c) parks N threads in gcore_parked() and
# the main thread in gcore_main_waits(), all blocked in read().
# Before: weft's guard pages were page-table marks (MADV_GUARD_INSTALL)
# in one mapping with the stacks; gdb 13 stops copying a mapping at the
# first piece it cannot read, so the core lacked every weft stack, TCB
# and descriptor: libthread_db failed ("Cannot find new threads") and the
# backtraces stopped at read() (docs/lifecycle.md, "Guards that debuggers
# can read").  Runs with the default (WEFT_GUARD unset) and with
# WEFT_GUARD=mprotect.
#   linked mode:  -lweft before libc;  preload mode: plain + LD_PRELOAD.
# Usage: bash tests/t_gcore.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
cc=${CC:-cc}
N=${WEFT_GCORE_THREADS:-12}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

for tool in gdb gcore; do
	if ! command -v $tool >/dev/null; then
		echo "SKIP: $tool is not installed (Debian: apt-get install gdb)"
		exit 77
	fi
done
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

flags=(-std=gnu11 -g -O2 -Wall -Wextra -D_GNU_SOURCE -I"$root/include" -I"$root/tests"
	-pthread -o "$tmp/prog" "$root/tests/gcore_threads.c")
if [ "$mode" = linked ]; then
	$cc "${flags[@]}" -L"$root/build" -Wl,--no-as-needed -lweft \
		-Wl,-rpath,"$root/build" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	start() { env "$@" "$tmp/prog" "$N" 256 >"$tmp/fifo" & pid=$!; }
else
	$cc "${flags[@]}" -ldl || { echo "FAIL: cannot compile the helper" >&2; exit 1; }
	start() { env LD_PRELOAD="$lib" "$@" "$tmp/prog" "$N" 256 >"$tmp/fifo" & pid=$!; }
fi
mkfifo "$tmp/fifo"

# one_run LABEL ENV...: start the helper, gcore it, kill it, read the core.
one_run() {
	local label=$1 line core out listed bt
	shift
	start "$@"
	exec 3<"$tmp/fifo"
	if ! read -r -t 60 -u 3 line; then
		fail "$label: the helper did not say ready within 60 s"
		exec 3<&-
		kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
		return
	fi
	exec 3<&-
	echo "$label: helper: $line"
	case " $line " in
	*" served=1 "*) ;;
	*) fail "$label: expected served=1 (weft active, all $N threads made by weft), got: $line" ;;
	esac
	gcore -o "$tmp/core" "$pid" >"$tmp/gcore.log" 2>&1
	core=$tmp/core.$pid
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
	grep -i 'warning' "$tmp/gcore.log" | sed "s/^/$label: gcore: /"
	if [ ! -s "$core" ]; then
		fail "$label: gcore wrote no core: $(tail -5 "$tmp/gcore.log")"
		return
	fi
	out=$(gdb -batch -nx -ex 'set pagination off' -ex 'info threads' \
		-ex 'thread apply all bt' "$tmp/prog" "$core" 2>&1)
	rm -f "$core"
	# Threads that libthread_db found: "  2    Thread 0x7f... (LWP 123) ...".
	listed=$(grep -cE '^[* ] +[0-9]+ +Thread 0x[0-9a-f]+ \(LWP [0-9]+\)' <<<"$out")
	[ "$listed" -eq $((N + 1)) ] ||
		fail "$label: expected $((N + 1)) threads listed by libthread_db (Thread 0x... (LWP n)), got $listed"
	# Each backtrace: from "Thread K (...):" to the next blank line.
	bt=$(awk '/^Thread [0-9]+ \(/ { if (s != "") print s; s = "" ; on = 1; next }
		  on && /^$/ { print s; s = ""; on = 0; next }
		  on { s = s " " $0 }
		  END { if (s != "") print s }' <<<"$out")
	local parked mains
	# "#4  0x... in gcore_parked (...)", or "#4  gcore_parked (...)" when
	# a function inlined into it is the frame below.
	frame() { echo "#[0-9]+ +(0x[0-9a-f]+ in )?$1 \\("; }
	parked=$(grep -cE "$(frame gcore_parked)" <<<"$bt")
	mains=$(grep -E "$(frame gcore_main_waits)" <<<"$bt" | grep -cE "$(frame main)")
	[ "$parked" -eq "$N" ] ||
		fail "$label: expected $N backtraces through gcore_parked, got $parked"
	[ "$mains" -eq 1 ] ||
		fail "$label: expected 1 backtrace through gcore_main_waits and main, got $mains"
	if [ $fails -ne 0 ]; then
		echo "$label: gdb said:"
		head -n 60 <<<"$out"
	else
		echo "$label: ok: $listed threads listed, $parked in gcore_parked, main in gcore_main_waits"
	fi
}

one_run default
one_run WEFT_GUARD=mprotect WEFT_GUARD=mprotect
[ $fails -eq 0 ] || exit 1
echo "ok: gdb read every thread of the cores"
