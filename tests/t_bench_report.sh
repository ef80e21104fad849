#!/usr/bin/env bash
# `weft bench` (bench/weft_bench.py), the driver rather than the library:
#
#  preload mode: a tiny real run through `bin/weft bench` (life cycle and a
#    2 x 2 creation matrix, pinned and unpinned, 2 repetitions): runs.csv
#    and results.json parse and hold a number for every glibc and weft
#    cell, the weft runs were served by libweft.so, every SVG is well-formed
#    XML with plotted data, report.md has the tables.
#  linked mode: the failure paths, with stand-in programs: a benchmark that
#    crashes, hangs, prints garbage, skips itself (exit 77: no SCHED_FIFO)
#    or is served by the wrong library is reported as exactly that in
#    runs.csv, results.json and report.md, never as a number, and the run
#    goes on; the latency rows run with RT throttling off (in a file that
#    stands for /proc/sys/kernel/sched_rt_runtime_us) and find it restored
#    after the run, after a SIGTERM and after a SIGKILL of the driver (its
#    guard); then the real sync_latency, without the right to use
#    SCHED_FIFO, must skip itself (when the test runs as root).
#
# The driver does not depend on how weft is brought in, so each mode checks
# one half and `make check` runs both.  About 10-20 s per mode.
# Usage: bash tests/t_bench_report.sh linked|preload   (env WEFT_ROOT, WEFT_LIB)
set -u
mode=${1:?mode}
root=${WEFT_ROOT:?}
lib=${WEFT_LIB:?}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}

# ---------------------------------------------------------------- checks
# check_svgs DIR NAME...: each NAME.svg parses as XML and draws data
check_svgs() {
	python3 - "$@" <<'EOF'
import os, sys, xml.etree.ElementTree as ET
d, names = sys.argv[1], sys.argv[2:]
bad = 0
for n in names:
    p = os.path.join(d, n + ".svg")
    if not os.path.exists(p):
        print(f"FAIL: {n}.svg was not drawn"); bad += 1; continue
    try:
        root = ET.parse(p).getroot()
    except ET.ParseError as e:
        print(f"FAIL: {n}.svg is not well-formed XML: {e}"); bad += 1; continue
    # gnuplot puts each plotted data set in <g id="gnuplot_plot_N..."> with
    # the lines, points or boxes as paths/rects/uses inside
    plots = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
             if g.get("id", "").startswith("gnuplot_plot_")]
    marks = sum(1 for g in plots for e in g.iter()
                if e.tag.split("}")[1] in ("path", "rect", "use", "polyline", "image"))
    if not plots or marks == 0:
        print(f"FAIL: {n}.svg has no plotted data ({len(plots)} plots, {marks} marks)"); bad += 1
    dat = os.path.join(d, n + ".dat")
    rows = [l.split() for l in open(dat) if l.strip() and not l.startswith("#")]
    nums = [x for r in rows for x in r[1:] if x not in ("NaN",)]
    try:
        nums = [float(x) for x in nums]
    except ValueError:
        pass
    if not nums:
        print(f"FAIL: {n}.dat has no numbers"); bad += 1
sys.exit(1 if bad else 0)
EOF
}

if [ "$mode" = preload ]; then
	# ------------------------------------------------------------ real run
	bin="$tmp/bin"
	mkdir -p "$bin"
	for p in lifecycle creation rawclone; do
		"$cc" -O2 -std=gnu11 -D_GNU_SOURCE -pthread -o "$bin/$p" "$root/bench/$p.c" -ldl &
	done
	if command -v musl-gcc >/dev/null; then
		musl-gcc -static -O2 -std=gnu11 -D_GNU_SOURCE -o "$bin/lifecycle.musl" \
			"$root/bench/lifecycle.c" &
	fi
	wait
	out="$tmp/real"
	WEFT_BENCH_DIR="$root/bench" "$root/bin/weft" bench --bindir "$bin" --out "$out" \
		--quick --only lifecycle,creation --pin both --reps 2 --set lifecycle_n=200 \
		--set detached_n=100 --set lifecycle_musl_n=100 --set creation_T=1,2 \
		--set creation_C=1,2 --set creation_n=200 >"$tmp/real.out" 2>"$tmp/real.err"
	rc=$?
	[ "$rc" -eq 0 ] || fail "tiny run: exit $rc: $(tail -5 "$tmp/real.err")"
	grep -q "^Results in $out/" "$tmp/real.out" || fail "tiny run: the folder is not named at the end: $(tail -2 "$tmp/real.out")"
	grep -q '^\[[0-9]*/[0-9]* .* left\] ' "$tmp/real.err" || fail "tiny run: no progress line on stderr"
	python3 - "$out" "$lib" <<'EOF' || fail "tiny run: raw results wrong"
import csv, json, os, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
# per pinning: joinable life cycle (glibc, weft, floor, musl if built),
# detached (glibc, weft, musl) and 4 creation cells (glibc, weft)
musl = os.path.exists(os.path.join(os.path.dirname(out), "bin", "lifecycle.musl"))
per_rep = 2 * (3 + 2 + 4 * 2 + (2 if musl else 0))
measured = [r for r in rows if r["rep"] != "warm-up"]
assert len(measured) == 2 * per_rep, (len(measured), per_rep)
assert any(r["rep"] == "warm-up" for r in rows), "no warm-up runs"
for r in measured:
    assert r["status"] == "ok", r
    assert float(r["value"]) > 0, r
    if r["column"] == "weft":
        assert "pthread_lib=libweft.so" in r["result"], r
        assert "LD_PRELOAD=" in r["cmd"] and "libweft.so" in r["cmd"], r
    if r["column"] == "glibc":
        assert "pthread_lib=libc.so.6" in r["result"], r
pins = {r["pin"] for r in measured}
assert pins == {"unpinned", "cpu0"}, pins
# interleaving: in each repetition the columns of a configuration run back
# to back, and the order is reversed in the next repetition
for rep, first in (("0", "glibc"), ("1", "weft")):
    rs = [r for r in measured if r["rep"] == rep and r["experiment"] == "creation"]
    assert rs[0]["column"] == first, (rep, rs[0])
j = json.load(open(os.path.join(out, "results.json")))
assert len(j["configs"]) == 12, len(j["configs"])
for c in j["configs"]:
    for col in ("glibc", "weft"):
        cell = c["columns"][col]
        assert cell["ok"] == 2 and cell["median"] > 0, (c["variant"], col, cell)
        assert cell["min"] <= cell["median"] <= cell["max"], cell
    v = c["vs_glibc"]["weft"]
    assert v["ratio_of_medians"] > 0 and v["paired_min"] <= v["paired_max"], v
assert len(j["runs"]) == len(rows)
EOF
	# the plots are gnuplot's: without it the driver leaves them out (and
	# says so), which on a machine meant to run make check is a missing
	# prerequisite, named as such rather than as seven absent files
	have_gnuplot=0
	command -v gnuplot >/dev/null && have_gnuplot=1
	if [ "$have_gnuplot" = 1 ]; then
		check_svgs "$out" speedup_unpinned speedup_cpu0 creation_unpinned creation_cpu0 \
			creation_fig1_unpinned creation_fig2_cpu0 creation_ratio_unpinned || fail "tiny run: plots"
	else
		fail "gnuplot is not installed, so the plots cannot be checked (apt-get install gnuplot-nox)"
	fi
	md="$out/report.md"
	grep -q '^| Thread life cycle | seed 001 §3.2 | unpinned | 2/2 | [0-9.]*× |' "$md" ||
		fail "report.md: no summary row for the life cycle: $(grep -m2 'Thread life cycle' "$md")"
	grep -q '^| joinable | cpu0 | [0-9.k]* ([0-9.k]*–[0-9.k]*) | [0-9.k]* (' "$md" ||
		fail "report.md: no joinable cpu0 row with numbers: $(grep -m1 '^| joinable | cpu0' "$md")"
	grep -q '^| variant | CPUs | glibc NPTL | weft | .*floor (no library) | weft vs glibc | .*weft vs floor |$' "$md" ||
		fail "report.md: the life-cycle table has no weft vs floor ratio: $(grep -m1 '^| variant' "$md")"
	if [ "$have_gnuplot" = 1 ]; then
		grep -q '!\[.*\](creation_unpinned.svg)' "$md" || fail "report.md does not show the creation plot"
	fi
	grep -q 'full run (estimate) | about ' "$md" || fail "report.md gives no estimate of a full run"
else
	# ------------------------------------------------------------ failures
	fake="$tmp/fake"
	mkdir -p "$fake"
	# lifecycle: joinable is fine under glibc and crashes under weft;
	# detached hangs under glibc and prints garbage under weft
	cat >"$fake/lifecycle" <<'EOF'
#!/usr/bin/env bash
lib=libc.so.6
case "${LD_PRELOAD:-}" in *libweft.so*) lib=libweft.so ;; esac
case " $* " in
*" -d "*)
	[ $lib = libc.so.6 ] && exec sleep 60
	echo "RESULT bench=lifecycle ops_per_s=lots pthread_lib=$lib" ;;
*)
	[ $lib = libweft.so ] && kill -SEGV $$
	echo "RESULT bench=lifecycle sec=0.01 ops_per_s=1000 pthread_lib=$lib" ;;
esac
EOF
	cat >"$fake/rawclone" <<'EOF'
#!/usr/bin/env bash
echo "RESULT bench=rawclone sec=0.01 ops_per_s=2000 pthread_lib=none"
EOF
	# sync_latency: handoff skips itself; every other row's weft column
	# was served by glibc.  Each run reports the RT throttling it found.
	cat >"$fake/sync_latency" <<'EOF'
#!/usr/bin/env bash
case " $* " in
*" handoff "*) echo "SKIP needs SCHED_FIFO: sched_setscheduler: Operation not permitted" >&2; exit 77 ;;
esac
echo "RESULT bench=latency metric=p999_cycles sec=0.01 min_cycles=40 p50_cycles=100 p99_cycles=300" \
	"p999_cycles=500 max_cycles=9000 rt_runtime_us=$(cat "$WEFT_BENCH_RT_RUNTIME")" \
	"lib_pthread_mutex_lock=libc.so.6"
EOF
	chmod +x "$fake"/*
	out="$tmp/fail"
	# RT throttling is switched in a file of the test's own, never the
	# machine's /proc/sys/kernel/sched_rt_runtime_us
	export WEFT_BENCH_RT_RUNTIME="$tmp/rt_runtime_us"
	echo 950000 >"$WEFT_BENCH_RT_RUNTIME"
	python3 "$root/bench/weft_bench.py" --bindir "$fake" --weft-lib "$lib" --out "$out" \
		--only lifecycle,latency --pin no --reps 1 --no-warmup --timeout 5 \
		>"$tmp/fail.out" 2>"$tmp/fail.err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "driver: expected exit 2 (runs gave no number), got $rc: $(tail -3 "$tmp/fail.err")"
	python3 - "$out" <<'EOF' || fail "driver: failures not recorded as such"
import csv, json, os, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
def st(exp, var, col):
    got = {(r["status"], r["value"]) for r in rows
           if (r["experiment"], r["variant"], r["column"]) == (exp, var, col)}
    return got
expect = {
    ("lifecycle", "joinable", "glibc"): {("ok", "1000.0")},
    ("lifecycle", "joinable", "floor"): {("ok", "2000.0")},
    ("lifecycle", "joinable", "weft"): {("crashed", "")},
    ("lifecycle", "detached", "glibc"): {("timeout", "")},
    ("lifecycle", "detached", "weft"): {("noresult", "")},
    ("latency", "handoff-normal", "glibc"): {("skipped", "")},
    ("latency", "handoff-pp", "weft"): {("skipped", "")},
    ("latency", "bcast-held-normal", "glibc"): {("ok", "500.0")},
    ("latency", "bcast-released-pi", "weft"): {("unserved", "")},
    ("latency", "inversion-released-cond-pi", "floor"): {("ok", "500.0")},
    ("latency", "inversion-pi", "floor"): {("ok", "500.0")},
    ("latency", "inversion-normal", "floor2"): set(),
    ("latency", "bcast-held-pi", "floor2"): {("ok", "500.0")},
    ("latency", "handoff-pp", "floor"): {("skipped", "")},
    ("latency", "bcast-held-normal", "floor2"): set(),
    ("latency", "noise", "glibc"): {("ok", "500.0")},
    ("latency", "noise", "weft"): set(),
}
bad = 0
for k, v in expect.items():
    if st(*k) != v:
        print("FAIL:", k, "expected", v, "got", st(*k)); bad += 1
crash = [r for r in rows if r["status"] == "crashed"]
if not crash or "signal 11" not in crash[0]["why"]:
    print("FAIL: the crash is not named signal 11:", crash[:1]); bad += 1
j = json.load(open(os.path.join(out, "results.json")))
shown = {(c["experiment"], c["variant"], col): (d["median"], d["shown_as"])
         for c in j["configs"] for col, d in c["columns"].items()}
want = {("lifecycle", "joinable", "weft"): (None, "crashed (signal 11)"),
        ("lifecycle", "detached", "glibc"): (None, "timeout"),
        ("lifecycle", "detached", "weft"): (None, "no result"),
        ("latency", "handoff-pi", "weft"): (None, "skipped: needs SCHED_FIFO"),
        ("latency", "inversion-pi", "weft"): (None, "not served by the library"),
        ("lifecycle", "joinable", "glibc"): (1000.0, None)}
for k, v in want.items():
    if shown.get(k) != v:
        print("FAIL: results.json", k, "expected", v, "got", shown.get(k)); bad += 1
ratios = {(c["experiment"], c["variant"]): c["vs_glibc"]["weft"]["ratio_of_medians"]
          for c in j["configs"] if "weft" in c["vs_glibc"]}
if any(v is not None for k, v in ratios.items()):
    print("FAIL: a ratio was computed from a failed cell:", ratios); bad += 1
# every latency program ran with throttling off; the file is back after
seen = {r["result"].split("rt_runtime_us=")[1].split()[0] for r in rows
        if r["experiment"] == "latency" and r["status"] in ("ok", "unserved")}
if seen != {"-1"}:
    print("FAIL: the latency runs saw RT throttling", seen, "expected -1 only"); bad += 1
if open(os.environ["WEFT_BENCH_RT_RUNTIME"]).read().strip() != "950000":
    print("FAIL: RT throttling not restored after the run"); bad += 1
facts = dict(j["machine"])
if "950000 again after it" not in facts.get("RT throttling (sched_rt_runtime_us)", ""):
    print("FAIL: the report does not say what RT throttling was:", facts); bad += 1
sys.exit(1 if bad else 0)
EOF
	md="$out/report.md"
	grep -q '^| joinable | unpinned | 1000 (1000–1000) | \*\*crashed (signal 11)\*\* | 2000 (2000–2000) | — | — |$' "$md" ||
		fail "report.md: joinable row: $(grep '^| joinable' "$md")"
	grep -q '^| detached | unpinned | \*\*timeout\*\* | \*\*no result\*\* | — | — | — |$' "$md" ||
		fail "report.md: detached row: $(grep '^| detached' "$md")"
	grep -q '^| handoff-normal | unpinned | \*\*skipped: needs SCHED_FIFO\*\* | \*\*skipped: needs SCHED_FIFO\*\* | \*\*skipped: needs SCHED_FIFO\*\* | — |' "$md" ||
		fail "report.md: handoff row: $(grep '^| handoff-normal' "$md")"
	grep -q '^| bcast-held-normal | unpinned | 500 (500–500) | \*\*not served by the library\*\* | — |' "$md" ||
		fail "report.md: bcast row: $(grep '^| bcast-held-normal' "$md")"
	# the distribution table: every figure of a row, a floor line
	grep -q '^| noise | spin loop (no library) | 40 | 100 | 300 | 500 | 9000 | 1/1 |$' "$md" ||
		fail "report.md: noise distribution: $(grep '^| noise' "$md")"
	grep -q '^|  | floor (no library) | 40 | 100 | 300 | 500 | 9000 | 1/1 |$' "$md" ||
		fail "report.md: no floor line in the distribution table"
	grep -q '^|  | floor 2 (no library) | 40 | 100 | 300 | 500 | 9000 | 1/1 |$' "$md" ||
		fail "report.md: no second floor line in the distribution table"
	grep -q '^| 1 | lifecycle joinable | unpinned | weft | crashed | signal 11 (SIGSEGV)' "$md" ||
		fail "report.md: the crash is not listed among the runs without a number"
	# life cycle: 5 runs, 3 without a number; latency: noise 1, handoff
	# 3 x 3 skipped (glibc, weft, floor), 8 other rows x 2 (weft
	# unserved), 10 floors (2 each for the 2 bcast-*-pi and 2 cond-pi rows,
	# 1 each for the normal and PI inversions)
	grep -q '^41 runs in .*; 11 gave no number, 9 skipped\.$' "$tmp/fail.out" ||
		fail "driver: summary line: $(tail -2 "$tmp/fail.out")"

	# RT throttling comes back however the driver ends in the middle of a
	# latency run: SIGTERM (it restores it, and reports what it had), and
	# SIGKILL (its guard process restores it once the driver is gone)
	slow="$tmp/slow"
	mkdir -p "$slow"
	cat >"$slow/sync_latency" <<'EOF'
#!/usr/bin/env bash
echo $$ >>"$WEFT_BENCH_SLOW_PIDS"
exec sleep 30
EOF
	chmod +x "$slow/sync_latency"
	export WEFT_BENCH_SLOW_PIDS="$tmp/slow.pids"
	rt_reads() { # rt_reads VALUE: wait up to 10 s for the file to hold VALUE
		for _ in $(seq 100); do
			[ "$(cat "$WEFT_BENCH_RT_RUNTIME")" = "$1" ] && return 0
			sleep 0.1
		done
		return 1
	}
	for sig in TERM KILL; do
		echo 950000 >"$WEFT_BENCH_RT_RUNTIME"
		python3 "$root/bench/weft_bench.py" --bindir "$slow" --weft-lib "$lib" \
			--out "$tmp/int-$sig" --only latency --pin no --reps 1 --no-warmup \
			--no-plots >/dev/null 2>&1 &
		drv=$!
		rt_reads -1 || fail "SIG$sig: RT throttling never turned off for the run"
		kill -"$sig" "$drv"
		wait "$drv" 2>/dev/null
		rc=$?
		rt_reads 950000 || fail "SIG$sig: RT throttling left at $(cat "$WEFT_BENCH_RT_RUNTIME")"
		if [ "$sig" = TERM ]; then
			[ "$rc" -eq 1 ] || fail "SIGTERM: exit $rc, expected 1 (interrupted)"
			grep -q '^\*\*Interrupted' "$tmp/int-TERM/report.md" ||
				fail "SIGTERM: no report of the interrupted run"
		fi
	done
	# a killed driver leaves its running program (a session of its own)
	while read -r p; do kill -- "-$p" 2>/dev/null; done <"$WEFT_BENCH_SLOW_PIDS"

	# the real program without the right to use SCHED_FIFO: skip, no number
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		"$cc" -O2 -std=gnu11 -D_GNU_SOURCE -pthread -o "$tmp/sync_latency" \
			"$root/bench/sync_latency.c" -ldl || fail "cannot build sync_latency"
		o=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/sync_latency" -n 100 2>&1)
		rc=$?
		[ "$rc" -eq 77 ] || fail "sync_latency without SCHED_FIFO: exit $rc, expected 77: $o"
		case "$o" in
		"SKIP needs SCHED_FIFO"*) ;;
		*) fail "sync_latency without SCHED_FIFO printed: $o" ;;
		esac
	else
		echo "note: not root (or no setpriv): sync_latency's own skip path not exercised"
	fi
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "t_bench_report: all checks passed ($mode)"
