#!/usr/bin/env python3
"""weft synchronization benchmark driver (python3, standard library only).

Runs the bench/sync_* programs (see bench/SYNC.md) A/B interleaved:

  glibc  the dynamic binary, LD_PRELOAD removed from the environment
  weft   the same binary with LD_PRELOAD=<libweft.so>
  musl   the same source built statically with musl-gcc (if built)
  floor  the program's raw-futex / raw-CAS mode: no thread library on the
         measured path, the kernel's (or the CPU's) floor

Every repetition runs every configuration once per column, back to back,
the order reversed on every other repetition.  Configurations run
unpinned and pinned (taskset to the CPUs each experiment needs).

Every program reports which shared object served each function it times
(lib_<function>=...).  A weft run served by anything but libweft.so is a
failure ("unserved"): its number would be glibc's.  --allow-unserved
keeps such runs (for checking the harness before weft serves a primitive)
and marks the cells.  A run that crashes, times out or prints no RESULT
line is recorded as such, never as a number.

Writes into --out: raw.csv and raw.json (every run, every key), summary.json
(medians, min, max, ratios), .dat + gnuplot .gp + .svg plots, and
sync-results.md, a markdown section to paste into bench/RESULTS.md.
"""

import argparse
import csv
import datetime
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as base  # noqa: E402  (machine facts and the library fingerprint)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rel(path):
    """Path as shown in reports: relative to the repository when inside it."""
    p = os.path.abspath(path)
    return os.path.relpath(p, REPO) if p == REPO or p.startswith(REPO + os.sep) else p


def int_list(text):
    """"2,4,8-10" -> [2, 4, 8, 9, 10]"""
    out = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if a:
            out.extend(range(int(a), int(b or a) + 1))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def machine_facts(opt):
    # run.py's table, so both reports describe the machine alike
    if hasattr(base, "machine_facts"):
        return base.machine_facts(opt)
    return [("nproc", str(os.cpu_count()))]


def lib_fact(path):
    if hasattr(base, "lib_fact"):
        return base.lib_fact(path)
    return f"`{rel(path)}`"

# glibc reference figures and targets from issue 4 (medians on the lead's
# quiet run), keyed by (experiment, variant).
ISSUE_REF = {
    ("uncontended", "mutex"): "11.9 ns, 66 instr, 46 cycles",
    ("ring", "N2"): "3.1 µs (musl 68 ns)",
    ("ring", "N4"): "1.8–2.7 µs", ("ring", "N8"): "1.8–2.7 µs",
    ("ring", "N16"): "1.8–2.7 µs", ("ring", "N32"): "1.8–2.7 µs",
    ("switch", "cond"): "715k/s (floor 1.52M)",
    ("pingpong", "cond"): "9.0 s (floor ≈1.6 s)",
    ("wakeup", "cond"): "188k/s (floor 253k)",
    ("broadcast", "plain-w10"): "66k/s",
    ("broadcast", "locked-w10"): "42k/s",
    ("broadcast", "plain-w100"): "6.6k/s",
}
TARGET = {  # minimum weft speed-up over glibc (>1 = faster), as the issue sets them
    ("switch", "cond"): 1.3, ("pingpong", "cond"): 2.0, ("wakeup", "cond"): 1.15,
    ("broadcast", "locked-w10"): 1.5, ("broadcast", "plain-w100"): 1.5,
    ("broadcast", "locked-w100"): 1.5,
    ("ring", "N4"): 1.5, ("ring", "N8"): 1.5, ("ring", "N16"): 1.5, ("ring", "N32"): 1.5,
}

# --------------------------------------------------------------- plan


class Exp:
    """One configuration: program + arguments, run under several columns."""

    def __init__(self, name, variant, prog, args, metric, higher, pin, cols,
                 floor_args=None, x=None):
        self.name = name          # experiment (uncontended, ring, ...)
        self.variant = variant    # e.g. N4, cond, locked-w10
        self.prog = prog
        self.args = args
        self.metric = metric      # key of the RESULT line
        self.higher = higher      # True: bigger is better
        self.pin = pin            # "unpinned" or a taskset CPU list
        self.cols = list(cols)    # glibc/weft/musl (+ floor if floor_args)
        self.floor_args = floor_args
        self.x = x                # numeric x for plots (N, K)
        if floor_args is not None:
            self.cols.append("floor")

    def key(self):
        return (self.name, self.variant, self.pin_label())

    def pin_label(self):
        return "unpinned" if self.pin == "unpinned" else "cpu" + self.pin.replace(",", "+")

    def argv(self, col, opt):
        cmd = []
        if self.pin != "unpinned":
            cmd += ["taskset", "-c", self.pin]
        prog = os.path.join(opt.bindir, self.prog)
        args = self.args
        if col == "weft" and not opt.fake_weft:
            cmd += ["env", "LD_PRELOAD=" + opt.weft_lib]
        elif col == "musl":
            prog += ".musl"
        elif col == "floor":
            args = self.floor_args
        return cmd + [prog] + args

    def shown(self, col, opt):
        out = []
        for a in self.argv(col, opt):
            if a.startswith("LD_PRELOAD="):
                a = "LD_PRELOAD=" + rel(a[len("LD_PRELOAD="):])
            elif os.path.isabs(a):
                a = rel(a)
            out.append(shlex.quote(a))
        return " ".join(out)


SIZES = {
    # name: (full, quick)
    "unc_n": ("20m", "2m"),
    "ring_i": ("20000", "2000"),
    "switch_n": ("200000", "5000"),
    "pp_tables": ("500", "50"),
    "pp_hits": ("10000", "500"),
    # pinned to one CPU, 1000 threads take turns: ~8x slower per hit, so
    # shorter rallies keep the suite's run time reasonable
    "pp_hits_pinned": ("2000", "100"),
    "wake_n": ("200000", "2000"),
    "bc_r10": ("20000", "300"),
    "bc_r100": ("2000", "30"),
    "lat_n": ("100000", "2000"),
    "cont_e": ("2000000", "50000"),
}


def build_plan(opt, cols):
    q = 1 if opt.quick else 0
    S = {k: v[q] for k, v in SIZES.items()}
    want = set(opt.only.split(",")) if opt.only else None
    pins = []
    if not opt.no_unpinned:
        pins.append("unpinned")
    if not opt.no_pinned:
        pins.append("pinned")
    plan = []

    def add(name, *a, **kw):
        if want is None or name in want:
            plan.append(Exp(name, *a, **kw))

    one = opt.cpu          # experiments that must take turns on one CPU
    two = opt.cpus2        # experiments that need two CPUs
    for p in pins:
        pin1 = "unpinned" if p == "unpinned" else one
        add("uncontended", "mutex", "sync_uncontended", ["-S", "-n", S["unc_n"]],
            "cpu_ns_per_pair", False, pin1, cols,
            floor_args=["-m", "cas", "-S", "-n", S["unc_n"]])
        for n in opt.ring_threads:
            add("ring", f"N{n}", "sync_ring", ["-t", str(n), "-i", S["ring_i"]],
                "us_per_step", False, pin1, cols, x=n)
        add("switch", "cond", "sync_switch", ["-m", "cond", "-n", S["switch_n"]],
            "switches_per_s", True, pin1, cols,
            floor_args=["-m", "futex", "-n", S["switch_n"]])
        add("switch", "sem", "sync_switch", ["-m", "sem", "-n", S["switch_n"]],
            "switches_per_s", True, pin1, cols)
        pp = ["-t", S["pp_tables"],
              "-H", S["pp_hits"] if p == "unpinned" else S["pp_hits_pinned"]]
        add("pingpong", "cond", "sync_pingpong", ["-m", "cond"] + pp, "games_sec", False,
            pin1, cols, floor_args=["-m", "futex"] + pp)
        add("wakeup", "cond", "sync_wakeup", ["-m", "cond", "-n", S["wake_n"]],
            "round_trips_per_s", True, pin1, cols,
            floor_args=["-m", "futex", "-n", S["wake_n"]])
        for w, r in ((10, S["bc_r10"]), (100, S["bc_r100"])):
            add("broadcast", f"plain-w{w}", "sync_broadcast", ["-w", str(w), "-r", r],
                "rounds_per_s", True, pin1, cols)
            add("broadcast", f"locked-w{w}", "sync_broadcast", ["-k", "-w", str(w), "-r", r],
                "rounds_per_s", True, pin1, cols)
        for k in opt.regions:
            add("contention", f"K{k}", "sync_contention",
                ["-t", "32", "-k", str(k), "-e", S["cont_e"]], "sec", False, pin1, cols, x=k)
    # the real-time latencies: two SCHED_FIFO threads need two CPUs; one
    # pin variant only (on a 2-CPU machine "unpinned" is the same set)
    if not opt.no_latency:
        lat = ["-n", S["lat_n"]] + (["-O"] if opt.no_fifo else [])
        add("latency", "handoff", "sync_latency", ["-m", "handoff"] + lat, "avg_cycles", False,
            two, cols)
        add("latency", "bcast", "sync_latency", ["-m", "bcast"] + lat, "avg_cycles", False,
            two, cols)
    return plan


# --------------------------------------------------------------- running

def parse_result(stdout):
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            kv = {}
            for tok in line.split()[1:]:
                if "=" in tok:
                    k, v = tok.split("=", 1)
                    kv[k] = v
            return kv
    return None


def served_problem(col, kv, opt):
    """None if every lib_* key names the library this column must use."""
    if col == "weft" and opt.fake_weft:
        col = "glibc"  # A/A test: the weft column is glibc again
    want = {"glibc": "libc.so.6", "weft": "libweft.so", "musl": "static-non-glibc"}.get(col)
    if want is None:  # floor: the measured path has no library
        return None
    bad = [f"{k[4:]}={v}" for k, v in kv.items()
           if k.startswith("lib_") and not v.startswith(want)]
    return ("served by " + ", ".join(bad)) if bad else None


def run_one(exp, col, opt):
    argv = exp.argv(col, opt)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    t0 = time.monotonic()
    try:
        # own session: on a timeout the whole process group is killed, so
        # no stray child keeps the output pipes (and the driver) waiting
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    except OSError as e:
        return {"status": "fail", "wall": 0.0, "why": f"cannot start: {e}"}
    try:
        stdout, stderr = p.communicate(timeout=opt.timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.communicate()
        return {"status": "timeout", "wall": time.monotonic() - t0,
                "why": f"killed after {opt.timeout:g} s"}
    r = subprocess.CompletedProcess(argv, p.returncode, stdout, stderr)
    wall = time.monotonic() - t0
    kv = parse_result(r.stdout)
    err = (r.stderr or "").strip().splitlines()
    last = err[-1][:160] if err else ""
    rc = r.returncode
    # taskset/env exec the program, so a signal shows as rc < 0 directly
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return {"status": "crash", "wall": wall, "why": f"{name} {last}".strip()}
    if rc != 0:
        return {"status": "fail", "wall": wall, "why": f"rc={rc} {last}".strip()}
    if kv is None or exp.metric not in kv:
        return {"status": "noresult", "wall": wall, "why": f"no RESULT/{exp.metric} {last}"}
    try:
        value = float(kv[exp.metric])
    except ValueError:
        return {"status": "noresult", "wall": wall, "why": f"{exp.metric}={kv[exp.metric]}"}
    out = {"status": "ok", "wall": wall, "value": value, "kv": kv}
    prob = served_problem(col, kv, opt)
    if prob:
        if opt.allow_unserved and col == "weft":
            out["unserved"] = prob
        else:
            out["status"] = "unserved"
            out["why"] = prob
    return out


def estimate_left(plan, rep, cur, cur_col, order, last_wall, avg, reps):
    """Seconds left: every remaining run is assumed to take as long as the
    same configuration and column did last time (the average run time for
    runs not seen yet), because the experiments differ by 100x."""
    left = 0.0
    ei = plan.index(cur)
    for r in range(rep, reps):
        for i, e in enumerate(plan):
            if r == rep and i < ei:
                continue
            for c in e.cols:
                if r == rep and i == ei and (c == cur_col or order.index(c) < order.index(cur_col)):
                    continue
                left += last_wall.get((e.key(), c), avg)
    return left


def run_all(plan, opt, raw_csv):
    runs = []
    total = sum(len(e.cols) for e in plan) * opt.reps
    done = 0
    t_start = time.monotonic()
    last_wall = {}  # (config, column) -> seconds its latest run took
    fields = ["rep", "experiment", "variant", "pin", "impl", "status", "metric", "value",
              "wall", "why", "unserved", "result", "cmd"]
    with open(raw_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        try:
            for rep in range(opt.reps):
                for e in plan:
                    order = e.cols if rep % 2 == 0 else list(reversed(e.cols))
                    for col in order:
                        r = run_one(e, col, opt)
                        done += 1
                        row = {"rep": rep, "experiment": e.name, "variant": e.variant,
                               "pin": e.pin_label(), "impl": col, "status": r["status"],
                               "metric": e.metric, "value": r.get("value", ""),
                               "wall": f"{r['wall']:.3f}", "why": r.get("why", ""),
                               "unserved": r.get("unserved", ""),
                               "result": " ".join(f"{k}={v}" for k, v in r.get("kv", {}).items()),
                               "cmd": e.shown(col, opt)}
                        w.writerow(row)
                        f.flush()
                        row["kv"] = r.get("kv", {})
                        row["_exp"] = e
                        runs.append(row)
                        el = time.monotonic() - t_start
                        last_wall[(e.key(), col)] = r["wall"]
                        eta = estimate_left(plan, rep, e, col, order, last_wall, el / done,
                                            opt.reps)
                        res = (f"{r['value']:,.4g} {e.metric}" if r["status"] == "ok"
                               else f"{r['status'].upper()} {r.get('why', '')}")
                        log(f"[{done}/{total} {el:5.0f}s, ~{eta:4.0f}s left] rep {rep + 1}/"
                            f"{opt.reps} {e.name} {e.variant} {e.pin_label()} {col}: {res}")
        except KeyboardInterrupt:
            log("interrupted: writing the report from the runs done so far")
            return runs, True
    return runs, False


# --------------------------------------------------------------- stats

class Cell:
    def __init__(self, rows, higher):
        ok = [r for r in rows if r["status"] == "ok"]
        self.values = [r["value"] for r in ok]
        self.n = len(rows)
        self.higher = higher
        self.med = statistics.median(self.values) if self.values else None
        self.lo = min(self.values) if self.values else None
        self.hi = max(self.values) if self.values else None
        self.unserved = sorted({r["unserved"] for r in ok if r.get("unserved")})
        self.failures = sorted({r["status"] for r in rows if r["status"] != "ok"})
        self.extra = {}
        for r in ok:
            for k, v in r["kv"].items():
                try:
                    self.extra.setdefault(k, []).append(float(v))
                except ValueError:
                    pass

    def extra_med(self, k):
        v = self.extra.get(k)
        return statistics.median(v) if v else None

    def show(self):
        if not self.values:
            return "**" + "/".join(self.failures or ["no runs"]).upper() + f"** (0/{self.n})"
        s = f"{fmt(self.med)} ({fmt(self.lo)}–{fmt(self.hi)})"
        if len(self.values) != self.n:
            s += f" **{len(self.values)}/{self.n} ok**"
        if self.unserved:
            s += " †"
        return s

    def as_dict(self):
        return {"median": self.med, "min": self.lo, "max": self.hi, "ok": len(self.values),
                "runs": self.n, "values": self.values, "failures": self.failures,
                "unserved": self.unserved,
                "extra_medians": {k: self.extra_med(k) for k in self.extra}}


def fmt(x):
    if x is None:
        return "n/a"
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:.3g}M"
    if a >= 1e4:
        return f"{x / 1e3:.4g}k"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 1:
        return f"{x:.3g}"
    return f"{x:.3g}"


def speedup(a, b):
    """How many times better column a is than column b (>1: a better)."""
    if a is None or b is None or a.med is None or b.med is None or a.med == 0 or b.med == 0:
        return None
    return a.med / b.med if a.higher else b.med / a.med


def summarize(plan, runs):
    by = {}
    for r in runs:
        by.setdefault((r["_exp"].key(), r["impl"]), []).append(r)
    cells = {}
    for e in plan:
        for c in e.cols:
            cells[(e.key(), c)] = Cell(by.get((e.key(), c), []), e.higher)
    return cells


# --------------------------------------------------------------- outputs

def write_dat(path, header, rows):
    with open(path, "w") as f:
        f.write("# " + " ".join(header) + "\n")
        for row in rows:
            f.write(" ".join("NaN" if v is None else
                             (f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row) + "\n")


def plots(opt, plan, cells, cols):
    """Write .dat/.gp files and draw SVGs; return the list of SVGs drawn."""
    gp_ok = shutil.which("gnuplot") is not None and not opt.no_plots
    scripts = []
    title_of = {"glibc": "glibc NPTL", "weft": "weft", "musl": "musl (static)",
                "floor": "floor"}
    term = "set terminal svg size 900,540 dynamic font 'sans,11'"
    # line plots against N (lock ring) and K (Figure 3)
    for name, xl, yl, title in (
            ("ring", "threads N (N+1 mutexes)", "µs per step (lower is better)",
             "Lock ring (seed 003)"),
            ("contention", "critical regions K (32 threads)", "seconds (lower is better)",
             "Lock contention, Figure 3 of seed 000")):
        for pin in sorted({e.pin_label() for e in plan if e.name == name}):
            exps = sorted([e for e in plan if e.name == name and e.pin_label() == pin],
                          key=lambda e: e.x)
            if not exps:
                continue
            rows = []
            for e in exps:
                row = [e.x]
                for c in cols:
                    cell = cells.get((e.key(), c))
                    row += [cell.med, cell.lo, cell.hi] if cell and cell.values else [None] * 3
                rows.append(row)
            fn = f"{name}_{pin}"
            write_dat(os.path.join(opt.out, fn + ".dat"),
                      ["x"] + [f"{c}_{s}" for c in cols for s in ("med", "min", "max")], rows)
            parts = []
            for i, c in enumerate(cols):
                if any(r[1 + 3 * i] is not None for r in rows):
                    m = 2 + 3 * i
                    parts.append(f"'{fn}.dat' using 1:{m}:{m + 1}:{m + 2} with yerrorlines "
                                 f"lw 2 title '{title_of[c]}'")
            if not parts:
                continue
            xt = ", ".join(str(e.x) for e in exps)
            x0, x1 = exps[0].x / 1.4, exps[-1].x * 1.4
            scripts.append((fn, f"""{term}
set output '{fn}.svg'
set title '{title}, {pin}: median, bars min..max' noenhanced
set xlabel '{xl}'
set ylabel '{yl}'
set logscale x 2
set xrange [{x0:g}:{x1:g}]
set xtics ({xt})
set grid
set yrange [0:*]
set key top left noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""))
    # latencies as seed 002 reports them: min / avg / max cycles (log scale)
    lat = [e for e in plan if e.name == "latency"]
    if lat:
        rows = []
        for e in lat:
            row = [e.variant]
            for c in cols:
                cell = cells.get((e.key(), c))
                vals = [cell.extra_med(k) if cell else None
                        for k in ("avg_cycles", "min_cycles", "max_cycles")]
                row += vals
            rows.append(row)
        fn = "latency"
        write_dat(os.path.join(opt.out, fn + ".dat"),
                  ["variant"] + [f"{c}_{s}" for c in cols for s in ("avg", "min", "max")], rows)
        parts = []
        for i, c in enumerate(cols):
            if any(r[1 + 3 * i] is not None for r in rows):
                m = 2 + 3 * i
                xt = ":xtic(1)" if not parts else ""
                parts.append(f"'{fn}.dat' using {m}:{m + 1}:{m + 2}{xt} title '{title_of[c]}'")
        if parts:
            scripts.append((fn, f"""{term}
set output '{fn}.svg'
set title 'SCHED_FIFO latencies (seed 002): avg cycles, bars min..max (each the median over runs)' noenhanced
set ylabel 'TSC cycles (log scale)'
set logscale y
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""))
    # speed-up bars: weft (and musl) over glibc, one bar group per configuration
    others = [c for c in ("weft", "musl") if c in cols]
    for pin in sorted({e.pin_label() for e in plan}):
        exps = [e for e in plan if e.pin_label() == pin]
        rows = []
        for e in exps:
            g = cells.get((e.key(), "glibc"))
            row = [f"{e.name}:{e.variant}"]
            for c in others:
                row.append(speedup(cells.get((e.key(), c)), g))
            rows.append(row)
        if not others or not any(v is not None for r in rows for v in r[1:]):
            continue
        fn = f"speedup_{pin}"
        write_dat(os.path.join(opt.out, fn + ".dat"), ["config"] + others, rows)
        parts = [f"'{fn}.dat' using {i + 2}{':xtic(1)' if i == 0 else ''} title '{title_of[c]}'"
                 for i, c in enumerate(others)]
        scripts.append((fn, f"""{term}
set output '{fn}.svg'
set title 'Speed-up over glibc, {pin} (>1: faster than glibc; median of runs)' noenhanced
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set xtics rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}, 1 with lines dt 2 lc rgb 'black' notitle
"""))
    drawn = []
    for fn, text in scripts:
        with open(os.path.join(opt.out, fn + ".gp"), "w") as f:
            f.write(text)
        if not gp_ok:
            continue
        try:
            r = subprocess.run(["gnuplot", fn + ".gp"], cwd=opt.out, capture_output=True,
                               text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            # e.g. fork failing on a machine out of processes: the data and
            # the report matter more than the picture
            log(f"gnuplot {fn}.gp could not run: {e}")
            continue
        if r.returncode != 0:
            log(f"gnuplot {fn}.gp failed: {r.stderr.strip()[:300]}")
        elif os.path.exists(os.path.join(opt.out, fn + ".svg")):
            drawn.append(fn + ".svg")
    return drawn, gp_ok


METRIC_TEXT = {
    "cpu_ns_per_pair": "ns of the thread's CPU time per lock+unlock pair (lower is "
                       "better; wall-clock ns, which also count preemption, in their own column)",
    "us_per_step": "µs per step (lower is better)",
    "switches_per_s": "hand-offs per second (higher is better)",
    "games_sec": "seconds for all games (lower is better)",
    "round_trips_per_s": "round trips per second (higher is better)",
    "rounds_per_s": "broadcast rounds per second (higher is better)",
    "avg_cycles": "TSC cycles, min / avg / max (lower is better)",
    "sec": "seconds (lower is better)",
}

TITLES = [
    ("uncontended", "1. Uncontended lock + unlock (seed 001 §3.5)"),
    ("ring", "2. Lock ring: N threads, N+1 mutexes (seed 003)"),
    ("switch", "3. Forced alternation of two threads (seed 001 §3.3)"),
    ("pingpong", "4. Ping-pong at many tables (seed 001 §3.4)"),
    ("wakeup", "5. Condition variable wake-up (seed 001 §3.6)"),
    ("broadcast", "6. Broadcast throughput (cond-perf style, seed 002 §5)"),
    ("latency", "7. SCHED_FIFO latencies (seed 002 §5)"),
    ("contention", "8. Lock contention vs critical regions (seed 000 §7, Figure 3)"),
]


def write_md(opt, plan, cells, cols, runs, drawn, facts, started, elapsed, interrupted,
             lib_before, lib_changed):
    L = []
    w = L.append
    out_rel = os.path.relpath(opt.out, os.path.dirname(os.path.abspath(opt.md)))
    w("## Synchronization benchmarks (issue 4)")
    w("")
    w("Generated by `bench/sync_run.py`; every number comes from "
      f"[`{out_rel}/raw.csv`]({out_rel}/raw.csv). Rerun rather than edit.")
    w("")
    if interrupted:
        w("**The run was interrupted; the tables cover only the runs that finished.**")
        w("")
    if lib_changed:
        w("**WARNING: libweft.so changed during the run; the weft column mixes builds.**")
        w("")
    if opt.fake_weft:
        w("**A/A TEST (`--fake-weft`): the 'weft' column ran glibc without any preload. "
          "Its speed-ups show this machine's noise, nothing about weft.**")
        w("")
    if opt.quick:
        w("**Quick run (`--quick`): small counts and few repetitions, for checking that "
          "everything runs, not for conclusions.**")
        w("")
    if any(c.unserved for c in cells.values()):
        w("**† = `--allow-unserved`: in these weft cells some timed functions were served by "
          "glibc, not weft (see the notes below the tables); they measure glibc's code.**")
        w("")
    w("| | |")
    w("|---|---|")
    for k, v in facts:
        w(f"| {k} | {v} |")
    if lib_before:
        w(f"| weft library | {lib_before} |")
    w(f"| started (UTC) | {started:%Y-%m-%d %H:%M:%S} |")
    w(f"| duration | {elapsed:.0f} s |")
    w(f"| repetitions | {opt.reps} (A/B order reversed on every other one) |")
    w("")
    w(f"Cells: median (min–max) over the repetitions. **speed-up = how many times "
      "better than glibc** (rate ratio, or time ratio glibc/x for times): > 1 means "
      f"faster than glibc. Pinned = `taskset -c {opt.cpu}` (one CPU); latencies run on "
      f"`taskset -c {opt.cpus2}`. The floor column is the program's raw futex / raw CAS "
      "mode: no thread library on the measured path.")
    w("")
    notes = []
    for name, title in TITLES:
        exps = [e for e in plan if e.name == name]
        if not exps:
            continue
        w(f"### {title}")
        w("")
        w(f"Metric: {METRIC_TEXT.get(exps[0].metric, exps[0].metric)}.")
        w("")
        hdr = ["variant", "CPUs"] + cols[:]
        if "floor" not in [c for e in exps for c in e.cols]:
            hdr = [h for h in hdr if h != "floor"]
        show_cols = [h for h in hdr[2:]]
        if "weft" in cols:
            hdr.append("weft speed-up")
        if "musl" in cols:
            hdr.append("musl speed-up")
        if name in ("uncontended",):
            hdr += ["wall ns glibc / weft", "instructions (single-step) glibc / weft / musl / floor",
                    "perf instr. / cycles glibc / weft", "TSC ticks (wall) glibc / weft"]
        if name == "pingpong":
            hdr += ["tables × hits per rally", "thread creation (s) glibc / weft"]
        if name == "latency":
            hdr.append("min / max cycles glibc / weft")
        hdr += ["target", "issue's glibc"]
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        for e in exps:
            g = cells.get((e.key(), "glibc"))
            row = [e.variant, e.pin_label()]
            for c in show_cols:
                cell = cells.get((e.key(), c))
                row.append(cell.show() if cell else "—")
                if cell and cell.unserved:
                    notes.append(f"{e.name} {e.variant} {e.pin_label()} {c}: "
                                 + "; ".join(cell.unserved))
            if "weft" in cols:
                s = speedup(cells.get((e.key(), "weft")), g)
                row.append("n/a" if s is None else f"{s:.2f}")
            if "musl" in cols:
                s = speedup(cells.get((e.key(), "musl")), g)
                row.append("n/a" if s is None else f"{s:.2f}")

            def em(c, k):
                cell = cells.get((e.key(), c))
                v = cell.extra_med(k) if cell else None
                return fmt(v)
            if name == "uncontended":
                row.append(f"{em('glibc', 'ns_per_pair')} / {em('weft', 'ns_per_pair')}")
                row.append(" / ".join(em(c, "step_instr") for c in ("glibc", "weft", "musl",
                                                                      "floor")))
                row.append(f"{em('glibc', 'instr_per_pair')} / {em('glibc', 'cycles_per_pair')}"
                           f" / {em('weft', 'instr_per_pair')} / {em('weft', 'cycles_per_pair')}")
                row.append(f"{em('glibc', 'tsc_per_pair')} / {em('weft', 'tsc_per_pair')}")
            if name == "pingpong":
                row.append(f"{em('glibc', 'tables')} × {em('glibc', 'hits_per_rally')}")
                row.append(f"{em('glibc', 'create_sec')} / {em('weft', 'create_sec')}")
            if name == "latency":
                row.append(f"{em('glibc', 'min_cycles')}–{em('glibc', 'max_cycles')} / "
                           f"{em('weft', 'min_cycles')}–{em('weft', 'max_cycles')}")
            row.append(target_text(e, cells, opt))
            row.append(ISSUE_REF.get((e.name, e.variant), ""))
            w("| " + " | ".join(row) + " |")
        w("")
        for svg in drawn:
            if svg.startswith(name + "_") or svg == name + ".svg":
                w(f"![{title}]({out_rel}/{svg})")
                w("")
    for svg in drawn:
        if svg.startswith("speedup_"):
            w(f"![speed-up over glibc]({out_rel}/{svg})")
            w("")
    if notes:
        w("Cells marked † (weft did not serve every timed function):")
        w("")
        for n in notes:
            w(f"* {n}")
        w("")
    bad = [r for r in runs if r["status"] != "ok"]
    w("#### Failed runs")
    w("")
    if not bad:
        w("None.")
    else:
        w("| rep | experiment | CPUs | impl | status | detail |")
        w("|---|---|---|---|---|---|")
        for r in bad[:60]:
            w(f"| {r['rep'] + 1} | {r['experiment']} {r['variant']} | {r['pin']} | "
              f"{r['impl']} | {r['status']} | {r['why']} |")
        if len(bad) > 60:
            w(f"| … | {len(bad) - 60} more in raw.csv | | | | |")
    w("")
    w("Reproduce: `make && make -C bench sync-build && python3 bench/sync_run.py "
      + " ".join(shlex.quote(a) for a in opt.argv_shown) + "`. Single runs as issued:")
    w("")
    w("```sh")
    seen = set()
    for e in plan:
        for c in e.cols:
            cmd = e.shown(c, opt)
            if cmd not in seen:
                seen.add(cmd)
                w(cmd)
    w("```")
    w("")
    with open(opt.md, "w") as f:
        f.write("\n".join(L))
    log(f"wrote {opt.md}")


def target_text(e, cells, opt):
    """The issue's target for this row and whether the medians meet it."""
    g = cells.get((e.key(), "glibc"))
    wf = cells.get((e.key(), "weft"))
    if wf is not None and (wf.unserved or opt.fake_weft):
        return "n/a: not weft's code"
    if e.name == "uncontended":
        def both(k):
            return (g.extra_med(k) if g else None), (wf.extra_med(k) if wf else None)
        # hardware counters when the machine has them, else the exact
        # single-step count and TSC ticks
        gi, wi = both("instr_per_pair")
        if gi is None or wi is None:
            gi, wi = both("step_instr")
        gc, wc = both("cycles_per_pair")
        if gc is None or wc is None:
            # no cycle counter: CPU time stands in for cycles (the TSC
            # ticks are wall time and count preemption by other jobs)
            gc, wc = both("cpu_ns_per_pair")
        if None in (gi, wi, gc, wc):
            return "≤ glibc instr. & cycles"
        ok = wi <= gi and wc <= gc
        return f"≤ glibc instr. & cycles: {'met' if ok else 'NOT met'}"
    if e.name == "ring" and e.variant == "N2":
        m = cells.get((e.key(), "musl"))
        if wf is None or m is None or wf.med is None or m.med is None:
            return "≤ musl"
        return f"≤ musl: {'met' if wf.med <= m.med else 'NOT met'}"
    t = TARGET.get((e.name, e.variant))
    if t is None:
        return ""
    s = speedup(wf, g)
    if s is None:
        return f"≥ {t}x"
    return f"≥ {t}x: {'met' if s >= t else 'NOT met'}"


def write_json(opt, plan, cells, runs, facts, started, elapsed):
    raw = [{k: v for k, v in r.items() if k != "_exp"} for r in runs]
    with open(os.path.join(opt.out, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    summ = {"started": started.isoformat(), "duration_s": elapsed, "reps": opt.reps,
            "quick": opt.quick, "machine": dict(facts), "configs": []}
    for e in plan:
        d = {"experiment": e.name, "variant": e.variant, "pin": e.pin_label(),
             "metric": e.metric, "higher_is_better": e.higher, "columns": {}}
        for c in e.cols:
            cell = cells[(e.key(), c)]
            d["columns"][c] = cell.as_dict()
        g = cells.get((e.key(), "glibc"))
        d["speedup_weft"] = speedup(cells.get((e.key(), "weft")), g)
        d["speedup_musl"] = speedup(cells.get((e.key(), "musl")), g)
        summ["configs"].append(d)
    with open(os.path.join(opt.out, "summary.json"), "w") as f:
        json.dump(summ, f, indent=1)


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="weft vs glibc (vs musl) synchronization "
                                 "benchmarks, A/B interleaved")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 13; 3 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="small counts, 3 repetitions, N 2,8 and K 1,32: about a minute")
    ap.add_argument("--only", default="", help="comma list of experiments: " +
                    ",".join(n for n, _ in TITLES))
    ap.add_argument("--ring-threads", type=int_list, default=None,
                    help="lock ring N values (default 2,4,8,16,32)")
    ap.add_argument("--regions", type=int_list, default=None,
                    help="contention K values (default 1,2,4,8,16,32)")
    ap.add_argument("--cpu", default="0", help="CPU for pinned runs (default 0)")
    ap.add_argument("--cpus2", default="0,1", help="CPUs for the latency runs (default 0,1)")
    ap.add_argument("--no-pinned", action="store_true")
    ap.add_argument("--no-unpinned", action="store_true")
    ap.add_argument("--no-latency", action="store_true", help="skip the SCHED_FIFO runs")
    ap.add_argument("--no-fifo", action="store_true",
                    help="latency runs under SCHED_OTHER (no privileges needed; variant -other)")
    ap.add_argument("--weft-lib", default=os.path.join(REPO, "build", "libweft.so"))
    ap.add_argument("--no-weft", action="store_true", help="leave out the weft column")
    ap.add_argument("--no-musl", action="store_true", help="leave out the musl column")
    ap.add_argument("--allow-unserved", action="store_true",
                    help="keep weft runs in which glibc served a timed function (marked †)")
    ap.add_argument("--fake-weft", action="store_true",
                    help="A/A test of the method: the weft column runs glibc (no preload)")
    ap.add_argument("--bindir", default=os.path.join(REPO, "build", "bench"))
    ap.add_argument("--out", default=None,
                    help="output folder (default bench/results/sync, or sync-quick)")
    ap.add_argument("--md", default=None, help="markdown section (default <out>/sync-results.md)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="compiler named in the report")
    opt = ap.parse_args()
    # the command line for the report, minus the build-specific options
    # that bench/Makefile adds
    opt.argv_shown, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
        elif a in ("--bindir", "--cc"):
            skip = True
        elif not a.startswith(("--bindir=", "--cc=")):
            opt.argv_shown.append(a)
    if opt.reps is None:
        opt.reps = 3 if opt.quick else 13
    if opt.reps < 1:
        sys.exit("sync_run.py: --reps must be >= 1")
    if opt.ring_threads is None:
        opt.ring_threads = [2, 8] if opt.quick else [2, 4, 8, 16, 32]
    if opt.regions is None:
        opt.regions = [1, 32] if opt.quick else [1, 2, 4, 8, 16, 32]
    opt.out = os.path.abspath(opt.out or os.path.join(HERE, "results",
                                                      "sync-quick" if opt.quick else "sync"))
    opt.md = os.path.abspath(opt.md or os.path.join(opt.out, "sync-results.md"))
    opt.bindir = os.path.abspath(opt.bindir)
    opt.weft_lib = os.path.abspath(opt.weft_lib)
    if os.path.exists(opt.out) and not os.path.isdir(opt.out):
        sys.exit(f"sync_run.py: --out {opt.out} exists and is not a folder")
    os.makedirs(opt.out, exist_ok=True)
    for fn in os.listdir(opt.out):  # no stale outputs of an earlier run
        if fn.endswith((".svg", ".dat", ".gp")) or fn in ("raw.csv", "raw.json", "summary.json"):
            os.remove(os.path.join(opt.out, fn))

    cols = ["glibc"]
    if not opt.no_weft:
        if not opt.fake_weft and not os.path.exists(opt.weft_lib):
            sys.exit(f"sync_run.py: {opt.weft_lib} missing: run `make` first, or --no-weft")
        cols.append("weft")
    plan_probe = build_plan(opt, cols)
    if not opt.no_musl and all(os.access(os.path.join(opt.bindir, e.prog + ".musl"), os.X_OK)
                               for e in plan_probe):
        cols.append("musl")
    plan = build_plan(opt, cols)
    if not plan:
        sys.exit("sync_run.py: nothing to run (check --only)")
    for e in plan:
        p = os.path.join(opt.bindir, e.prog)
        if not os.access(p, os.X_OK):
            sys.exit(f"sync_run.py: {p} missing: `make -C bench sync-build` first")
    if not shutil.which("taskset"):
        sys.exit("sync_run.py: taskset (util-linux) is needed")

    facts = machine_facts(opt)
    lib_before = lib_fact(opt.weft_lib) if "weft" in cols and not opt.fake_weft else None
    started = datetime.datetime.now(datetime.timezone.utc)
    n_runs = sum(len(e.cols) for e in plan) * opt.reps
    log(f"sync_run.py: {len(plan)} configurations, columns {', '.join(cols)} (+floor), "
        f"{opt.reps} reps = {n_runs} runs; output in {rel(opt.out)}")
    t0 = time.monotonic()
    runs, interrupted = run_all(plan, opt, os.path.join(opt.out, "raw.csv"))
    elapsed = time.monotonic() - t0
    cells = summarize(plan, runs)
    all_cols = cols + (["floor"] if any(e.floor_args for e in plan) else [])
    drawn, _ = plots(opt, plan, cells, all_cols)
    lib_after = lib_fact(opt.weft_lib) if lib_before else None
    write_json(opt, plan, cells, runs, facts, started, elapsed)
    write_md(opt, plan, cells, all_cols, runs, drawn, facts, started, elapsed, interrupted,
             lib_before, lib_before != lib_after)
    bad = sum(1 for r in runs if r["status"] != "ok")
    log(f"sync_run.py: done in {elapsed:.0f} s; {bad} of {len(runs)} runs failed; "
        f"results in {rel(opt.out)} (markdown: {rel(opt.md)})")
    return 1 if interrupted else (2 if bad else 0)


if __name__ == "__main__":
    sys.exit(main())
