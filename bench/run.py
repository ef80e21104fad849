#!/usr/bin/env python3
"""weft benchmark driver (python3, standard library only).

Runs every benchmark program once per repetition under each
implementation, interleaved (A/B/A/B...; the order inside a repetition is
flipped on every other repetition so slow drift of the machine hits both
sides alike), both unpinned and pinned to CPU 0 with `taskset -c 0`.

Implementations ("columns"):
  glibc   the binary as built, LD_PRELOAD removed from the environment
  weft    the same binary with LD_PRELOAD=<libweft.so>
  musl    lifecycle only, a static musl build (if bench/Makefile built one)
  kernel  rawclone: raw clone()+exit+futex join, no thread library at all

Writes into --out (default bench/results/): raw.csv with every run, .dat
files with medians, gnuplot scripts and PNG plots (when gnuplot is
installed), and the markdown report (default bench/RESULTS.md).

Run `run.py --help` for the options.
"""

import argparse
import csv
import datetime
import hashlib
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

DEFAULT_T = [1, 2, 5, 10, 20]
DEFAULT_C = [1, 5, 10]
FULL_T = list(range(1, 21))
FULL_C = list(range(1, 11))

PIN_CPU = "0"

# per-thread figures printed by bench/memory.c, in the order of the table
MEMORY_KEYS = ["rss_kib", "pte_kib", "maps", "kstack_kib", "pagetables_kib",
               "sunreclaim_kib", "slab_kib", "vsz_kib", "rss_after_join_kib",
               "maps_after_join"]
MEMORY_LABELS = {
    "rss_kib": "VmRSS (KiB)", "pte_kib": "VmPTE (KiB)", "maps": "mappings",
    "kstack_kib": "KernelStack (KiB)", "pagetables_kib": "PageTables (KiB)",
    "sunreclaim_kib": "SUnreclaim (KiB)", "slab_kib": "Slab (KiB)",
    "vsz_kib": "VmSize (KiB)", "rss_after_join_kib": "VmRSS kept after join (KiB, total)",
    "maps_after_join": "mappings kept after join (total)"}


# --------------------------------------------------------------- helpers

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def int_list(s):
    out = []
    for part in s.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def rel(path):
    """Path as shown in the report: relative to the repo root if inside."""
    p = os.path.abspath(path)
    if p == REPO or p.startswith(REPO + os.sep):
        return os.path.relpath(p, REPO)
    return p


def cmd_output(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def fmt_num(x, digits=0):
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}"


def median(xs):
    return statistics.median(xs) if xs else None


# --------------------------------------------------------------- the plan

class Impl:
    def __init__(self, name, binary, preload=None, label=None):
        self.name = name
        self.binary = binary
        self.preload = preload  # path or None
        self.label = label or name


def ck(it):
    """Configuration key: items that differ only in implementation (e.g. the
    musl item with its own count) share a row in the tables."""
    return (it.bench, it.variant, it.pin, it.T, it.C)


def unique_configs(items):
    seen, out = set(), []
    for it in items:
        if ck(it) not in seen:
            seen.add(ck(it))
            out.append(it)
    return out


class Item:
    """One benchmark configuration, run under several implementations."""

    def __init__(self, bench, variant, args, pin, impls, T=None, C=None, prog=None):
        self.bench = bench        # lifecycle | rawclone | creation | throughput | memory
        self.variant = variant    # joinable/detached/-/TxC/1 creator/16K...
        self.args = args
        self.pin = pin            # "unpinned" | "pinned"
        self.impls = impls        # list of Impl
        self.T = T
        self.C = C
        self.prog = prog or bench  # the program in --bindir

    def argv(self, impl):
        cmd = []
        if self.pin == "pinned":
            cmd += ["taskset", "-c", PIN_CPU]
        if impl.preload:
            cmd += ["env", "LD_PRELOAD=" + impl.preload]
        return cmd + [impl.binary] + self.args

    def shown_cmd(self, impl):
        parts = []
        for a in self.argv(impl):
            if a.startswith("LD_PRELOAD="):
                a = "LD_PRELOAD=" + rel(a[len("LD_PRELOAD="):])
            elif os.path.isabs(a):
                a = rel(a)
            parts.append(shlex.quote(a))
        return " ".join(parts)


def build_plan(opt, impls):
    pins = []
    if not opt.no_unpinned:
        pins.append("unpinned")
    if not opt.no_pinned:
        pins.append("pinned")
    if not pins:
        sys.exit("run.py: nothing to do (both --no-unpinned and --no-pinned)")

    b = opt.bindir
    items = []
    ab = [impls["glibc"]] + ([impls["weft"]] if "weft" in impls else [])
    want = set(opt.only.split(",")) if opt.only else {"lifecycle", "rawclone", "creation",
                                                      "throughput", "memory"}
    for pin in pins:
        if "lifecycle" in want:
            n = ["-n", str(opt.lifecycle_n)]
            items.append(Item("lifecycle", "joinable", n, pin, list(ab)))
            if "musl" in impls:
                # a separate item: musl is ~3x slower here, so it gets its own count
                items.append(Item("lifecycle", "joinable", ["-n", str(opt.musl_n)], pin,
                                  [impls["musl"]]))
            if not opt.no_detached:
                items.append(Item("lifecycle", "detached", n + ["-d"], pin, list(ab)))
                if "musl" in impls and opt.musl_detached:
                    items.append(Item("lifecycle", "detached", ["-n", str(opt.musl_n), "-d"],
                                      pin, [impls["musl"]]))
        if "rawclone" in want:
            raw = Impl("kernel", os.path.join(b, "rawclone"), label="raw clone")
            items.append(Item("rawclone", "-", ["-n", str(opt.lifecycle_n)], pin, [raw]))
        if "creation" in want:
            for T in opt.tops:
                for C in opt.children:
                    items.append(Item("creation", f"T{T}xC{C}",
                                      ["-T", str(T), "-C", str(C), "-n", str(opt.creation_n)],
                                      pin, list(ab), T=T, C=C))
        if "throughput" in want:
            # issue 3: create and join 100,000 threads, at most 1,000 alive,
            # from one creator and from 20
            for T, C, name in ((1, 1000, "1 creator"), (20, 50, "20 creators")):
                items.append(Item("throughput", name,
                                  ["-T", str(T), "-C", str(C), "-n", str(opt.throughput_n)],
                                  pin, list(ab), T=T, C=C, prog="creation"))
    if "memory" in want:
        # memory does not depend on pinning: unpinned only
        for stack, name in ((16384, "PTHREAD_STACK_MIN (16 KiB)"), (0, "default (8 MiB)")):
            items.append(Item("memory", name, ["-N", str(opt.memory_n), "-s", str(stack)],
                              "unpinned", list(ab)))
    return items


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


def run_one(item, impl, timeout):
    argv = item.argv(impl)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall": time.monotonic() - t0}
    wall = time.monotonic() - t0
    res = parse_result(r.stdout)
    if r.returncode != 0 or res is None or "ops_per_s" not in res:
        err = (r.stderr or "").strip().splitlines()
        why = f"rc={r.returncode}" + (f" {err[-1][:120]}" if err else "")
        return {"status": "fail", "wall": wall, "why": why}
    out = {"status": "ok", "wall": wall,
           "ops_per_s": float(res["ops_per_s"]), "sec": float(res["sec"]),
           "pthread_lib": res.get("pthread_lib", "?"),
           "metrics": " ".join(f"{k}={v}" for k, v in res.items()
                               if k in MEMORY_KEYS)}
    expect = {"glibc": "libc.so.6", "weft": "libweft.so"}.get(impl.name)
    if impl.preload is None and impl.name == "weft":
        expect = None  # --fake-weft: nothing to check
    if expect and not out["pthread_lib"].startswith(expect):
        out["status"] = "wronglib"
        out["why"] = f"pthread_create came from {out['pthread_lib']}, expected {expect}"
    return out


def run_all(items, opt, csv_path):
    runs = []  # dicts
    total = sum(len(it.impls) for it in items) * opt.reps
    done = 0
    t_start = time.monotonic()
    fields = ["rep", "bench", "variant", "T", "C", "pin", "impl", "status",
              "ops_per_s", "sec", "pthread_lib", "why", "metrics", "cmd"]
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        try:
            for rep in range(opt.reps):
                for it in items:
                    order = it.impls if rep % 2 == 0 else list(reversed(it.impls))
                    for impl in order:
                        r = run_one(it, impl, opt.timeout)
                        done += 1
                        row = {"rep": rep, "bench": it.bench, "variant": it.variant,
                               "T": it.T or "", "C": it.C or "", "pin": it.pin,
                               "impl": impl.name, "status": r["status"],
                               "ops_per_s": r.get("ops_per_s", ""), "sec": r.get("sec", ""),
                               "pthread_lib": r.get("pthread_lib", ""),
                               "why": r.get("why", ""), "metrics": r.get("metrics", ""),
                               "cmd": it.shown_cmd(impl)}
                        w.writerow(row)
                        f.flush()
                        row["_item"] = it
                        runs.append(row)
                        el = time.monotonic() - t_start
                        eta = el / done * (total - done)
                        res = (f"{r['ops_per_s']:,.0f} ops/s" if r["status"] == "ok"
                               else f"{r['status'].upper()} {r.get('why', '')}")
                        log(f"[{done}/{total} {el:5.0f}s eta {eta:4.0f}s] rep {rep + 1} "
                            f"{it.bench} {it.variant} {it.pin} {impl.name}: {res}")
        except KeyboardInterrupt:
            log("interrupted: writing the report from the runs done so far")
            return runs, True
    return runs, False


# --------------------------------------------------------------- stats

class Cell:
    def __init__(self, values, n_runs):
        self.values = values
        self.n_runs = n_runs
        self.med = median(values)
        self.lo = min(values) if values else None
        self.hi = max(values) if values else None

    def spread(self):
        """(max-min)/median in percent."""
        if not self.values or not self.med:
            return None
        return 100.0 * (self.hi - self.lo) / self.med

    def show(self):
        if not self.values:
            return f"FAILED (0/{self.n_runs})"
        s = fmt_num(self.med)
        sp = self.spread()
        if sp is not None and len(self.values) > 1:
            s += f" ±{sp / 2:.0f}%"
        if len(self.values) != self.n_runs:
            s += f" ({len(self.values)}/{self.n_runs} ok)"
        return s


def summarize(items, runs):
    by = {}
    for r in runs:
        by.setdefault((ck(r["_item"]), r["impl"]), []).append(r)
    cells = {}
    for key, rs in by.items():
        vals = [r["ops_per_s"] for r in rs if r["status"] == "ok"]
        cells[key] = Cell(vals, len(rs))
    return cells


def get_cell(cells, it, impl):
    return cells.get((ck(it), impl)) or Cell([], 0)


def ratio(a, b):
    if a is None or b is None or a.med is None or b.med is None or b.med == 0:
        return None
    return a.med / b.med


# --------------------------------------------------------------- outputs

def write_dat(path, header, rows):
    with open(path, "w") as f:
        f.write("# " + " ".join(header) + "\n")
        for row in rows:
            f.write(" ".join("NaN" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
                             for v in row) + "\n")


def gnuplot_terminal():
    out = cmd_output(["gnuplot", "-e", "set terminal"])
    return "pngcairo size 900,540 font ',10'" if "pngcairo" in out else "png size 900,540"


def make_outputs(opt, items, cells, impls):
    """Write .dat files and gnuplot scripts; return list of (title, png) made."""
    out = opt.out
    plots = []
    have_gp = shutil.which("gnuplot") is not None and not opt.no_plots
    term = gnuplot_terminal() if have_gp else None
    scripts = []

    # ---- lifecycle bars: one row per (benchmark, pin), columns per impl
    cols = ["glibc", "weft", "musl", "kernel"]
    rows = []
    for it in unique_configs(items):
        if it.bench not in ("lifecycle", "rawclone"):
            continue
        label = ("raw-clone" if it.bench == "rawclone" else it.variant) + "/" + it.pin
        row = [label]
        for c in cols:
            cell = cells.get((ck(it), c))
            if cell and cell.values:
                row += [cell.med, cell.lo, cell.hi]
            else:
                row += [None, None, None]
        rows.append(row)
    if rows:
        hdr = ["config"] + [f"{c}_{s}" for c in cols for s in ("med", "min", "max")]
        write_dat(os.path.join(out, "lifecycle.dat"), hdr, rows)
        present = [i for i, c in enumerate(cols)
                   if any(r[1 + 3 * i] is not None for r in rows)]
        if have_gp and present:
            titles = {"glibc": "glibc NPTL", "weft": impls["weft"].label if "weft" in impls else "weft",
                      "musl": "musl (static)", "kernel": "raw clone (kernel floor)"}
            plot_parts = []
            for n, i in enumerate(present):
                c = 2 + 3 * i
                xt = ":xtic(1)" if n == 0 else ""
                plot_parts.append(f"'lifecycle.dat' using {c}:{c + 1}:{c + 2}{xt} "
                                  f"title '{titles[cols[i]]}'")
            gp = f"""set terminal {term}
set output 'lifecycle.png'
set title 'Thread life cycle: create + reap a do-nothing thread (median, min..max)'
set ylabel 'cycles per second'
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set format y '%.0s%c'
set key top left
set xtics rotate by -20 noenhanced
set datafile missing 'NaN'
plot {", ".join(plot_parts)}
"""
            scripts.append(("lifecycle.gp", gp))
            plots.append(("Thread life cycle", "lifecycle.png"))

    # ---- creation grid
    cre = [it for it in items if it.bench == "creation"]
    for pin in ("unpinned", "pinned"):
        its = [it for it in cre if it.pin == pin]
        if not its:
            continue
        grid_rows = []
        for it in its:
            g = get_cell(cells, it, "glibc")
            wf = get_cell(cells, it, "weft")
            grid_rows.append([it.T, it.C, g.med if g else None, wf.med if wf else None,
                              ratio(wf, g)])
        write_dat(os.path.join(out, f"creation_{pin}.dat"),
                  ["T", "C", "glibc_med", "weft_med", "ratio_weft_over_glibc"], grid_rows)

        def best(rows, keyidx, col):
            acc = {}
            for r in rows:
                v = r[col]
                if v is None:
                    continue
                acc[r[keyidx]] = max(acc.get(r[keyidx], 0.0), v)
            return acc

        Ts = sorted({r[0] for r in grid_rows})
        Cs = sorted({r[1] for r in grid_rows})
        def secs(rate):
            return opt.creation_n / rate if rate else None

        # the paper's Figure 1 (vs T, minimum time over C) and Figure 2
        # (vs C, minimum time over T): columns 4 and 5 are those times
        bg, bw = best(grid_rows, 0, 2), best(grid_rows, 0, 3)
        write_dat(os.path.join(out, f"creation_vsT_{pin}.dat"),
                  ["T", "glibc_best_over_C", "weft_best_over_C",
                   "glibc_min_sec_over_C", "weft_min_sec_over_C"],
                  [[t, bg.get(t), bw.get(t), secs(bg.get(t)), secs(bw.get(t))] for t in Ts])
        cg, cw = best(grid_rows, 1, 2), best(grid_rows, 1, 3)
        write_dat(os.path.join(out, f"creation_vsC_{pin}.dat"),
                  ["C", "glibc_best_over_T", "weft_best_over_T",
                   "glibc_min_sec_over_T", "weft_min_sec_over_T"],
                  [[c, cg.get(c), cw.get(c), secs(cg.get(c)), secs(cw.get(c))] for c in Cs])
        if have_gp:
            wl = impls["weft"].label if "weft" in impls else "weft"
            for axis, fig, xlabel, sub, xs in (
                    ("T", "Figure 1", "top-level threads T", "minimum over C", Ts),
                    ("C", "Figure 2", "children per top-level thread C", "minimum over T", Cs)):
                name = f"creation_vs{axis}_{pin}"
                xt = ", ".join(str(x) for x in xs)
                gp = f"""set terminal {term}
set output '{name}.png'
set title '{fig} (NPTL paper, section 7), {pin}: time for {opt.creation_n} creations ({sub}, median of runs)' noenhanced
set xlabel '{xlabel}'
set ylabel 'seconds'
set grid
set xtics ({xt})
set yrange [0:*]
set key top right noenhanced
set datafile missing 'NaN'
plot '{name}.dat' using 1:4 with linespoints lw 2 pt 7 title 'glibc NPTL', \\
     '{name}.dat' using 1:5 with linespoints lw 2 pt 5 title '{wl}'
"""
                scripts.append((name + ".gp", gp))
                plots.append((f"{fig}: creation time vs {axis} ({pin})", name + ".png"))
            if "weft" in impls and len(Cs) <= 6:
                # ratio per cell: one line per C, against T
                name = f"creation_ratio_{pin}"
                per_c = []
                for c in Cs:
                    pts = [(r[0], r[4]) for r in grid_rows if r[1] == c]
                    write_dat(os.path.join(out, f"{name}_C{c}.dat"), ["T", "ratio"], pts)
                    per_c.append(f"'{name}_C{c}.dat' using 1:2 with linespoints lw 2 title 'C={c}'")
                xt = ", ".join(str(x) for x in Ts)
                gp = f"""set terminal {term}
set output '{name}.png'
set title 'Concurrent creation, {pin}: {wl} / glibc throughput (>1: weft faster)' noenhanced
set xlabel 'top-level threads T'
set ylabel 'ratio of medians'
set grid
set xtics ({xt})
set yrange [0:*]
set key bottom right
set datafile missing 'NaN'
plot 1 with lines dt 2 lc rgb 'black' notitle, {", ".join(per_c)}
"""
                scripts.append((name + ".gp", gp))
                plots.append((f"Creation ratio ({pin})", name + ".png"))

    made = []
    for fname, text in scripts:
        with open(os.path.join(out, fname), "w") as f:
            f.write(text)
        r = subprocess.run(["gnuplot", fname], cwd=out, capture_output=True, text=True)
        png = fname[:-3] + ".png"
        if r.returncode != 0:
            log(f"gnuplot {fname} failed: {r.stderr.strip()[:300]}")
        if r.returncode == 0 and os.path.exists(os.path.join(out, png)):
            made.append(png)
    plots = [(t, p) for t, p in plots if p in made]
    return plots, have_gp


def machine_facts(opt):
    facts = []
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    facts.append(("CPU", cpu))
    facts.append(("nproc (online / usable)", f"{os.cpu_count()} / {len(os.sched_getaffinity(0))}"))
    facts.append(("kernel", f"{platform.system()} {platform.release()} {platform.machine()}"))
    try:
        facts.append(("glibc", os.confstr("CS_GNU_LIBC_VERSION")))
    except (ValueError, OSError):
        facts.append(("glibc", "?"))
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    facts.append(("OS", line.split("=", 1)[1].strip().strip('"')))
    except OSError:
        pass
    ccv = cmd_output([opt.cc, "--version"])
    facts.append(("compiler (bench programs)", ccv.splitlines()[0] if ccv else opt.cc))
    if shutil.which("musl-gcc"):
        ver = cmd_output(["dpkg-query", "-W", "-f", "${Version}", "musl-dev"])
        facts.append(("musl", ("musl-dev " + ver) if ver else "musl-gcc present"))
    try:
        la = os.getloadavg()
        facts.append(("load average at start", f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"))
    except OSError:
        pass
    git = cmd_output(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = cmd_output(["git", "-C", REPO, "status", "--porcelain"])
    facts.append(("weft tree", (git if git and " " not in git else "no commit yet") +
                  (" (uncommitted changes)" if dirty else "")))
    return facts


def lib_fact(path):
    try:
        st = os.stat(path)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            h.update(f.read())
        when = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
        return f"`{rel(path)}` ({st.st_size} bytes, built {when:%Y-%m-%d %H:%M} UTC, sha256 {h.hexdigest()[:12]})"
    except OSError:
        return f"`{rel(path)}` (missing)"


def ok_runs(runs, it, impl):
    return [r for r in runs if r["_item"] is it and r["impl"] == impl and r["status"] == "ok"]


def spread_str(vals):
    m = median(vals)
    if len(vals) < 2 or not m:
        return ""
    return f" ±{100.0 * (max(vals) - min(vals)) / m / 2:.0f}%"


def write_throughput(w, items, runs, impls, opt):
    its = [it for it in items if it.bench == "throughput"]
    if not its:
        return
    w(f"## Creating and joining {opt.throughput_n:,} threads (seconds)")
    w("")
    w(f"`creation -T T -C C -n {opt.throughput_n}`: T creators, each keeping at most C "
      "children alive (1 x 1000 and 20 x 50: at most 1,000 alive in all), join the "
      "oldest before creating the next. The time is for all creations and joins. "
      "Issue 3's reference: glibc about 0.95 s (1 creator) and 0.63 s (20 creators) "
      "for 100,000; target: weft's time at most 0.8 x glibc's. "
      "**time ratio = weft / glibc: < 1 means weft is faster.**")
    w("")
    hdr = ["creators", "CPUs", "glibc (s)"] + (["weft (s)", "time ratio weft/glibc",
                                               "target <= 0.8"] if "weft" in impls else [])
    w("| " + " | ".join(hdr) + " |")
    w("|" + "---|" * len(hdr))
    for it in its:
        g = [r["sec"] for r in ok_runs(runs, it, "glibc")]
        row = [it.variant, it.pin,
               (f"{median(g):.3f}{spread_str(g)}" if g else "FAILED")]
        if "weft" in impls:
            wf = [r["sec"] for r in ok_runs(runs, it, "weft")]
            rt = median(wf) / median(g) if g and wf else None
            row += [f"{median(wf):.3f}{spread_str(wf)}" if wf else "FAILED",
                    fmt_ratio(rt), "n/a" if rt is None else ("met" if rt <= 0.8 else "missed")]
        w("| " + " | ".join(row) + " |")
    w("")


def write_memory(w, items, runs, impls, opt):
    its = [it for it in items if it.bench == "memory"]
    if not its:
        return
    w("## Memory of idle threads (per thread)")
    w("")
    w(f"`memory -N {opt.memory_n} -s S`: {opt.memory_n} threads that sleep on a futex; the "
      "difference between before and after creating them, divided by their number. "
      "User memory from `/proc/self/status` (VmRSS, VmPTE, VmSize) and `/proc/self/maps`; "
      "kernel memory from `/proc/meminfo` (KernelStack, PageTables, SUnreclaim, Slab), "
      "which is system-wide: other activity on the machine adds noise, hence medians. "
      "The last two rows are totals after all threads were joined: what the library "
      "keeps of dead threads (its stack cache). Target: weft no higher than glibc at "
      "the same stack size.")
    w("")
    for it in its:
        w(f"### stack size: {it.variant}")
        w("")
        hdr = ["per thread", "glibc"] + (["weft", "weft - glibc"] if "weft" in impls else [])
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        per = {}
        for impl in ("glibc", "weft"):
            vals = {}
            for r in ok_runs(runs, it, impl):
                for tok in r.get("metrics", "").split():
                    k, v = tok.split("=", 1)
                    vals.setdefault(k, []).append(float(v))
            per[impl] = vals
        for k in MEMORY_KEYS:
            g = per["glibc"].get(k)
            row = [MEMORY_LABELS[k], f"{median(g):,.2f}" if g else "n/a"]
            if "weft" in impls:
                wf = per["weft"].get(k)
                row += [f"{median(wf):,.2f}" if wf else "n/a",
                        f"{median(wf) - median(g):+,.2f}" if g and wf else "n/a"]
            w("| " + " | ".join(row) + " |")
        w("")


def write_report(opt, items, cells, runs, impls, plots, have_gp, facts, started, elapsed,
                 interrupted, lib_before, lib_changed):
    L = []
    w = L.append
    out_rel = os.path.relpath(opt.out, os.path.dirname(os.path.abspath(opt.report)))
    w("# weft benchmark results")
    w("")
    w("Generated by `bench/run.py`; every number below comes from the runs recorded in "
      f"[`{out_rel}/raw.csv`]({out_rel}/raw.csv). Do not edit by hand: rerun instead.")
    w("")
    if interrupted:
        w("**The run was interrupted; the tables cover only the runs that finished.**")
        w("")
    if lib_changed:
        w("**WARNING: the weft library was replaced while the suite ran (its size, "
          "time stamp or checksum differ between start and end), so the weft column mixes "
          "two builds. Rerun.**")
        w("")
    if opt.fake_weft:
        w("**TEST MODE (`--fake-weft`): the 'weft' column ran WITHOUT any preload, "
          "i.e. it is glibc again. These numbers say nothing about weft.**")
        w("")
    if opt.smoke:
        w("**Smoke run (`--smoke`): few repetitions and small counts; for checking "
          "that everything runs, not for conclusions.**")
        w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k, v in facts:
        w(f"| {k} | {v} |")
    if lib_before:
        w(f"| weft library | {lib_before} |")
    w(f"| started (UTC) | {started:%Y-%m-%d %H:%M:%S} |")
    w(f"| duration | {elapsed:.0f} s |")
    w("")
    w("## Method")
    w("")
    w(f"* {opt.reps} repetitions. In each repetition every configuration is run once "
      "under each implementation, back to back; the order of the implementations is "
      "reversed on every other repetition (A/B, B/A, ...).")
    w("* Same binaries for glibc and weft: weft is injected with `LD_PRELOAD`. Each "
      "program reports which object `pthread_create` resolved to; runs where that is "
      "not the expected library are counted as failures (`wronglib` in raw.csv).")
    w(f"* `pinned` = `taskset -c {PIN_CPU}` (everything on one CPU); `unpinned` = "
      "the scheduler may use every CPU.")
    w("* Cells show the median rate over the repetitions, ± half the (max-min) spread "
      "relative to the median. **ratio = weft median / glibc median: > 1 means weft "
      "is faster.**")
    w(f"* lifecycle and rawclone: {opt.lifecycle_n} measured cycles per run (after "
      "1000 warm-up cycles)" + (f"; the musl build {opt.musl_n} cycles" if "musl" in impls else "") +
      f". creation: {opt.creation_n} child creations per cell "
      f"and run; T in {opt.tops}, C in {opt.children}.")
    w("")
    w("### Reproduce")
    w("")
    w("```sh")
    w("make                       # builds build/libweft.so")
    w("make bench                 # = make -C bench: build the programs and run the default suite")
    w(f"python3 bench/run.py {' '.join(shlex.quote(a) for a in opt.argv_shown)}   # this exact run")
    w("```")
    w("")
    w("Single runs, as the driver issued them (from the repository root):")
    w("")
    w("```sh")
    shown = set()
    for it in items:
        k = (it.bench, it.variant if it.bench != "creation" else "cell", it.pin,
             tuple(i.name for i in it.impls))
        if k in shown:
            continue
        shown.add(k)
        for impl in it.impls:
            w(it.shown_cmd(impl))
    w("```")
    w("")

    # lifecycle table
    lc = [it for it in unique_configs(items) if it.bench in ("lifecycle", "rawclone")]
    if lc:
        has_musl = "musl" in impls
        has_weft = "weft" in impls
        w("## Thread life cycle (cycles per second)")
        w("")
        w("`lifecycle` creates a thread that returns immediately and reaps it, one at a "
          "time: *joinable* = `pthread_create` + `pthread_join`; *detached* = a detached "
          "thread that posts a semaphore the creator waits on. `rawclone` is the same cycle "
          "with bare `clone()` + `exit` + futex wait on the TID word: what the kernel "
          "alone costs.")
        w("")
        hdr = ["benchmark", "CPUs", "glibc"]
        if has_weft:
            hdr += ["weft", "ratio weft/glibc"]
        if has_musl:
            hdr += ["musl static", "ratio musl/glibc"]
        hdr += ["raw clone floor", "glibc / floor"]
        if has_weft:
            hdr += ["weft / floor"]
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        floors = {it.pin: cells.get((ck(it), "kernel")) for it in lc if it.bench == "rawclone"}
        for it in lc:
            if it.bench == "rawclone":
                continue
            g = get_cell(cells, it, "glibc")
            row = [f"lifecycle {it.variant}", it.pin, g.show()]
            if has_weft:
                wf = get_cell(cells, it, "weft")
                row += [wf.show(), fmt_ratio(ratio(wf, g))]
            if has_musl:
                m = cells.get((ck(it), "musl"))
                row += [m.show() if m else "—", fmt_ratio(ratio(m, g)) if m else "—"]
            fl = floors.get(it.pin)
            row += [fl.show() if fl else "—", fmt_ratio(ratio(g, fl)) if fl else "—"]
            if has_weft:
                row += [fmt_ratio(ratio(get_cell(cells, it, "weft"), fl)) if fl else "—"]
            w("| " + " | ".join(row) + " |")
        for it in lc:
            if it.bench == "rawclone" and not any(x.bench == "lifecycle" for x in lc):
                w(f"| rawclone | {it.pin} | " + get_cell(cells, it, "kernel").show() + " |")
        w("")
        w("(x / floor: the share of the raw-clone rate a library reaches; 1.00 = no "
          "overhead over the bare system calls.)")
        w("")
        for t, p in plots:
            if p == "lifecycle.png":
                w(f"![{t}]({out_rel}/{p})")
                w("")

    cre = [it for it in items if it.bench == "creation"]
    if cre:
        w("## Concurrent thread creation (creations per second)")
        w("")
        w("`creation -T T -C C`: T top-level threads share the creation budget; each "
          "keeps up to C children alive and, as in the paper, joins its oldest child "
          "before creating another once C exist. Children return at once. Wall time "
          "covers everything from the first top-level `pthread_create` to the last "
          "join. Figure 1 (time against T, the minimum over C) and Figure 2 (time "
          "against C, the minimum over T) are the paper's two summaries of the grid.")
        w("")
        for pin in ("unpinned", "pinned"):
            its = [it for it in cre if it.pin == pin]
            if not its:
                continue
            w(f"### {pin}")
            w("")
            hdr = ["T", "C", "glibc"] + (["weft", "ratio weft/glibc"] if "weft" in impls else [])
            w("| " + " | ".join(hdr) + " |")
            w("|" + "---|" * len(hdr))
            ratios = []
            for it in its:
                g = get_cell(cells, it, "glibc")
                row = [str(it.T), str(it.C), g.show()]
                if "weft" in impls:
                    wf = get_cell(cells, it, "weft")
                    rt = ratio(wf, g)
                    if rt is not None:
                        ratios.append(rt)
                    row += [wf.show(), fmt_ratio(rt)]
                w("| " + " | ".join(row) + " |")
            w("")
            if ratios:
                gm = 1.0
                for x in ratios:
                    gm *= x
                gm **= 1.0 / len(ratios)
                w(f"Geometric mean of the ratios over {len(ratios)} cells: "
                  f"**{gm:.2f}** (min {min(ratios):.2f}, max {max(ratios):.2f}).")
                w("")
            for t, p in plots:
                if p.endswith(f"_{pin}.png"):
                    w(f"![{t}]({out_rel}/{p})")
                    w("")
    write_throughput(w, items, runs, impls, opt)
    write_memory(w, items, runs, impls, opt)
    bad = [r for r in runs if r["status"] != "ok"]
    w("## Failed runs")
    w("")
    if not bad:
        w("None.")
    else:
        w("| rep | benchmark | CPUs | impl | status | detail |")
        w("|---|---|---|---|---|---|")
        for r in bad[:50]:
            w(f"| {r['rep'] + 1} | {r['bench']} {r['variant']} | {r['pin']} | {r['impl']} | "
              f"{r['status']} | {r['why']} |")
        if len(bad) > 50:
            w(f"| … | {len(bad) - 50} more in raw.csv | | | | |")
    w("")
    w("## Files")
    w("")
    w(f"* `{out_rel}/raw.csv`: every run (status, rate, the command line).")
    w(f"* `{out_rel}/*.dat`: medians as plotted; `{out_rel}/*.gp`: the gnuplot scripts.")
    if not have_gp:
        w("* gnuplot was not available (or `--no-plots`), so no PNGs were drawn; "
          "the .dat files are there.")
    w("")
    with open(opt.report, "w") as f:
        f.write("\n".join(L))
    log(f"wrote {opt.report}")


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="A/B benchmark driver: glibc NPTL vs weft (LD_PRELOAD)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per configuration (default 5)")
    ap.add_argument("--lifecycle-n", type=int, default=100000,
                    help="cycles per lifecycle/rawclone run (default 100000)")
    ap.add_argument("--creation-n", type=int, default=None,
                    help="child creations per creation cell and run (default 20000; "
                         "100000 with --full-grid)")
    ap.add_argument("--tops", "-T", type=int_list, default=None,
                    help="T values, e.g. 1,2,5-8 (default 1,2,5,10,20)")
    ap.add_argument("--children", "-C", type=int_list, default=None,
                    help="C values (default 1,5,10)")
    ap.add_argument("--full-grid", action="store_true",
                    help="T=1..20 x C=1..10 with 100000 creations per cell (hours)")
    ap.add_argument("--only", default="",
                    help="comma list of lifecycle,rawclone,creation,throughput,memory "
                         "(default all)")
    ap.add_argument("--throughput-n", type=int, default=None,
                    help="threads created and joined per throughput run (default 100000)")
    ap.add_argument("--memory-n", type=int, default=None,
                    help="idle threads per memory run (default 1000)")
    ap.add_argument("--no-detached", action="store_true", help="skip lifecycle -d")
    ap.add_argument("--musl-detached", action="store_true",
                    help="also run the musl build in the detached variant")
    ap.add_argument("--no-musl", action="store_true", help="leave out the musl column")
    ap.add_argument("--musl-n", type=int, default=None,
                    help="cycles per musl lifecycle run (default min(lifecycle-n, 20000): "
                         "musl is slow here and the rate does not depend on the count)")
    ap.add_argument("--no-pinned", action="store_true", help="skip the taskset -c 0 runs")
    ap.add_argument("--no-unpinned", action="store_true", help="skip the unpinned runs")
    ap.add_argument("--weft-lib", default=os.path.join(REPO, "build", "libweft.so"),
                    help="library to LD_PRELOAD for the weft column")
    ap.add_argument("--no-weft", action="store_true", help="glibc (and musl/raw) only")
    ap.add_argument("--fake-weft", action="store_true",
                    help="test the driver: 'weft' column runs without preload")
    ap.add_argument("--bindir", default=os.path.join(REPO, "build", "bench"))
    ap.add_argument("--out", default=None, help="output directory (default bench/results, "
                                                "bench/results/smoke with --smoke)")
    ap.add_argument("--report", default=None,
                    help="markdown report (default bench/RESULTS.md; <out>/RESULTS.md with --smoke)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run before it is killed")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="quick check: 2 reps, 5000 cycles, T 1,4 x C 1,5 (unless given)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"),
                    help="compiler named in the report (bench/Makefile passes $(CC))")
    opt = ap.parse_args()
    # the command line as shown in the report, minus the build-specific
    # --bindir/--cc that bench/Makefile adds
    cleaned, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if a in ("--bindir", "--cc"):
            skip = True
            continue
        if a.startswith("--bindir=") or a.startswith("--cc="):
            continue
        cleaned.append(a)
    opt.argv_shown = cleaned

    given = set(a.split("=")[0] for a in sys.argv[1:])
    if opt.smoke:
        if "--reps" not in given:
            opt.reps = 2
        if "--lifecycle-n" not in given:
            opt.lifecycle_n = 5000
        if opt.creation_n is None:
            opt.creation_n = 5000
        if opt.tops is None:
            opt.tops = [1, 4]
        if opt.children is None:
            opt.children = [1, 5]
        if opt.throughput_n is None:
            opt.throughput_n = 5000
        if opt.memory_n is None:
            opt.memory_n = 200
    if opt.full_grid:
        opt.tops = opt.tops or FULL_T
        opt.children = opt.children or FULL_C
        if opt.creation_n is None:
            opt.creation_n = 100000
    opt.tops = opt.tops or DEFAULT_T
    opt.children = opt.children or DEFAULT_C
    if opt.creation_n is None:
        opt.creation_n = 20000
    if opt.throughput_n is None:
        opt.throughput_n = 100000
    if opt.memory_n is None:
        opt.memory_n = 1000
    if opt.musl_n is None:
        opt.musl_n = min(opt.lifecycle_n, 20000)
    if opt.reps < 1:
        sys.exit("run.py: --reps must be >= 1")
    opt.out = os.path.abspath(opt.out or os.path.join(HERE, "results", "smoke" if opt.smoke else ""))
    opt.report = os.path.abspath(opt.report or (os.path.join(opt.out, "RESULTS.md") if opt.smoke
                                                else os.path.join(HERE, "RESULTS.md")))
    opt.bindir = os.path.abspath(opt.bindir)
    os.makedirs(opt.out, exist_ok=True)
    # stale outputs of an earlier run must not be mistaken for this one's
    for fn in os.listdir(opt.out):
        if fn.endswith((".png", ".dat", ".gp")) or fn == "raw.csv":
            os.remove(os.path.join(opt.out, fn))

    for prog in ("lifecycle", "creation", "rawclone", "memory"):
        p = os.path.join(opt.bindir, prog)
        if not os.access(p, os.X_OK):
            sys.exit(f"run.py: {p} missing: build first with `make -C bench build`")
    if not opt.no_pinned and not shutil.which("taskset"):
        sys.exit("run.py: taskset not found (util-linux); use --no-pinned")

    impls = {"glibc": Impl("glibc", None)}
    if opt.no_weft:
        pass
    elif opt.fake_weft:
        impls["weft"] = Impl("weft", None, label="weft (FAKE: no preload)")
    else:
        lib = os.path.abspath(opt.weft_lib)
        if not os.path.exists(lib):
            sys.exit(f"run.py: {lib} does not exist. Build it (`make` at the top level), "
                     "or use --no-weft (glibc only) or --fake-weft (test the driver).")
        impls["weft"] = Impl("weft", None, preload=lib, label="weft")
    musl_bin = os.path.join(opt.bindir, "lifecycle.musl")
    if not opt.no_musl and os.access(musl_bin, os.X_OK):
        impls["musl"] = Impl("musl", musl_bin, label="musl (static)")
    facts = machine_facts(opt)
    lib_before = lib_fact(impls["weft"].preload) if "weft" in impls and impls["weft"].preload else None
    started = datetime.datetime.now(datetime.timezone.utc)

    items = build_plan(opt, impls)
    for it in items:
        fixed = []
        for impl in it.impls:
            if impl.binary is None:
                impl = Impl(impl.name, os.path.join(opt.bindir, it.prog), impl.preload, impl.label)
            fixed.append(impl)
        it.impls = fixed

    n_runs = sum(len(it.impls) for it in items) * opt.reps
    log(f"run.py: {len(items)} configurations x {opt.reps} reps = {n_runs} runs; "
        f"output in {rel(opt.out)}, report {rel(opt.report)}")
    t0 = time.monotonic()
    runs, interrupted = run_all(items, opt, os.path.join(opt.out, "raw.csv"))
    elapsed = time.monotonic() - t0
    cells = summarize(items, runs)
    plots, have_gp = make_outputs(opt, items, cells, impls)
    lib_after = lib_fact(impls["weft"].preload) if lib_before else None
    lib_changed = lib_before != lib_after
    if lib_changed:
        log("run.py: WARNING: the weft library changed while the suite was running")
    write_report(opt, items, cells, runs, impls, plots, have_gp, facts, started, elapsed,
                 interrupted, lib_before, lib_changed)
    bad = sum(1 for r in runs if r["status"] != "ok")
    if bad:
        log(f"run.py: {bad} of {len(runs)} runs failed; see the report")
    return 1 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
