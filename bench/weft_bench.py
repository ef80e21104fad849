#!/usr/bin/env python3
"""weft bench: weft against glibc (and musl) on the experiments of the papers.

Usage: weft bench [--quick] [--out DIR] [--only NAME,...] [--pin both|yes|no]
                  [--reps N] ...       (python3 bench/weft_bench.py --help)

Every configuration (experiment x variant x pinning) runs under every
column, A/B(/C) interleaved: each repetition runs all columns of a
configuration back to back, in the reverse order on every other
repetition, so drift of a shared machine hits all columns alike.

  glibc  the benchmark program as built, no preload
  weft   the same binary with LD_PRELOAD=libweft.so
  musl   the same source linked statically with musl-gcc (if installed)
  floor  the same cycle with raw system calls, no thread library (some
         experiments): the cost no library can beat
  floor2 a second raw design of the same cycle, where one floor does not
         say it all (broadcast: the herd is floor, wait morphing floor2;
         latency: the condvar rows' plain-wake reference)
         (st's process rows: floor is the same program with a preloaded
         library that does nothing, the cost of preloading any .so)

Writes into one folder (named at the end): runs.csv and results.json (every
run; medians, min-max, ratios), SVG plots (gnuplot) and report.md.  The
plumbing is in benchlib.py; the programs are bench/*.c (see README.md).
"""

import argparse
import csv
import datetime
import json
import math
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
import benchlib as B  # noqa: E402

PIN_ONE = "0"        # taskset CPU for pinned runs
PIN_TWO = "0,1"      # the SCHED_FIFO latencies need two CPUs
PIN_ORDER = ["unpinned", "cpu0", "cpu0+1"]

COLUMN_LIB = {"glibc": "libc.so.6", "weft": "libweft.so", "base": "libweft.so",
              "musl": "static-non-glibc", "floor": None, "floor2": None}
COLUMN_TITLE = {"glibc": "glibc NPTL", "weft": "weft", "base": "weft base (--base-lib)",
                "musl": "musl (static)", "floor": "floor (no library)",
                "floor2": "floor 2 (no library)"}
# The floor columns, each with the ratio "weft vs <floor>" in the tables.
FLOOR_COLS = ("floor", "floor2")
# Where an experiment's floor is not "no library": its own title.
FLOOR_TITLE = {("st", "floor"): "floor (empty preload)"}


def col_title(col, exp):
    return FLOOR_TITLE.get((exp, col), COLUMN_TITLE[col])
# Columns in report order.
ALL_COLS = tuple(COLUMN_TITLE)

# Run sizes: (full, quick).  --set NAME=VALUE overrides one.  Quick sizes
# only check that everything runs; they are not for conclusions.
SIZES = {
    "lifecycle_n": (100000, 300),       # create+join cycles per run
    "lifecycle_musl_n": (20000, 150),   # musl is ~3x slower here; rates do not depend on n
    "detached_n": (50000, 150),
    "creation_n": (20000, 400),         # child creations per grid cell
    "creation_T": ("1,2,5,10,20", "1,4"),
    "creation_C": ("1,5,10", "1,4"),
    "throughput_n": (100000, 0),        # 0: not in the quick run
    "memory_n": (1000, 100),            # idle threads
    "uncontended_n": (20000000, 200000),
    "ring_N": ("2,4,8,16,32", "2,8"),
    "ring_i": (20000, 150),
    "switch_n": (200000, 2000),
    "pingpong_tables": (500, 20),
    "pingpong_hits": (10000, 100),
    "pingpong_hits_pinned": (2000, 50),
    "wakeup_n": (200000, 1000),
    "broadcast_w": ("1,2,10,100,1000", "10"),
    "broadcast_r": (20000, 200),        # rounds with 10 waiters (scaled by 10/w)
    "contention_K": ("1,2,4,8,16,32", "1,32"),
    "contention_e": (2000000, 20000),
    "latency_n": (100000, 1000),       # hand-offs / broadcasts timed per latency run
    "noise_windows": (50, 10),          # 10 ms windows per CPU of the bare spin loop
    "inversion_n": (1000, 30),          # priority-inversion rounds per run
    "inversion_spin_us": (500, 200),    # the medium thread's spin bound
    "tsd_n": (2000000, 100000),         # calls per batch (a tenth for system calls)
    "st_n": (2000000, 100000),          # single thread: lock/malloc pairs per batch
    "st_forks": (300, 30),              # forks, spawns of /bin/true per run
    "st_starts": (1000, 50),            # process starts per run
}

# name, title, paper reference, headline metric description
EXPERIMENTS = [
    ("lifecycle", "Thread life cycle", "seed 001 §3.2",
     "create + reap one do-nothing thread at a time; cycles per second (higher is better)"),
    ("creation", "Concurrent creation matrix", "seed 000 §7, Figures 1 and 2",
     "T creators, each keeping up to C children alive; creations per second (higher is better)"),
    ("throughput", "100,000 threads created and joined", "issue 3",
     "seconds for all creations and joins (lower is better)"),
    ("memory", "Memory of idle threads", "issue 3",
     "VmRSS per idle thread in KiB (lower is better)"),
    ("uncontended", "Uncontended lock + unlock", "seed 001 §3.5",
     "ns of the thread's CPU time per lock + unlock pair (lower is better)"),
    ("ring", "Lock ring, N threads and N+1 mutexes", "seed 003",
     "µs per step (lower is better)"),
    ("switch", "Forced alternation of two threads (context switch)", "seed 001 §3.3",
     "hand-offs per second (higher is better)"),
    ("pingpong", "Ping-pong at many tables", "seed 001 §3.4",
     "seconds for all games (lower is better)"),
    ("wakeup", "Condition variable wake-up", "seed 001 §3.6",
     "round trips per second (higher is better)"),
    ("broadcast", "Broadcast throughput (cond-perf style)", "seed 002 §5",
     "broadcast rounds per second (higher is better)"),
    ("latency", "SCHED_FIFO latencies in cycles", "seed 002 §5",
     "TSC cycles at the 99.9th percentile (median over the runs); the whole "
     "distribution in the table below (lower is better)"),
    ("contention", "Lock contention against critical regions", "seed 000 §7, Figure 3",
     "seconds for 32 threads (TN-K1: N threads on one mutex) to run all entries (lower is better)"),
    ("tsd", "Thread-specific data and a cancellation point that does not cancel", "issue 5",
     "ns per call in a created thread, best of 5 batches (lower is better)"),
    ("st", "A program that never creates a thread", "issue 16",
     "mutex, malloc, rdlock, wrlock: ns a pair; signal, broadcast (no waiter), once (done), "
     "getspecific, setspecific: ns a call; best of 5 batches; fork, spawn (/bin/true), start (to main and "
     "exit): µs each, median of the run (lower is better)"),
]
EXP_NAMES = [e[0] for e in EXPERIMENTS]

# Programs with a static musl build (bench/Makefile): memory reads the
# kernel's futex header, which musl-gcc's include path lacks; rawclone has
# no thread library to compare.
MUSL_PROGS = {"lifecycle", "creation", "sync_uncontended", "sync_ring", "sync_switch",
              "sync_pingpong", "sync_wakeup", "sync_broadcast", "sync_latency",
              "sync_contention"}


class Config:
    """One configuration, run under several columns."""

    def __init__(self, exp, variant, prog, args, metric, higher, pin, x=None,
                 floor=None, col_args=None, params=None, work=1.0, col_work=None,
                 only_cols=None, floor2=None):
        self.exp = exp
        self.variant = variant
        self.prog = prog
        self.args = [str(a) for a in args]
        self.metric = metric
        self.higher = higher
        self.pin = pin                # "unpinned", "cpu0", "cpu0+1"
        self.x = x                    # numeric x for line plots
        self.floor = floor            # (prog, args[, env]) of the floor column
        self.floor2 = floor2          # (prog, args) of a second floor
        self.col_args = col_args or {}  # column -> args replacing self.args
        self.params = params or {}
        self.work = work              # amount of work (e.g. cycles), for estimates
        self.col_work = col_work or {}  # column -> work when its args differ
        self.only_cols = only_cols    # the columns it runs in, when not all
        self.cols = []

    def key(self):
        return (self.exp, self.variant, self.pin)

    def work_of(self, col):
        return self.col_work.get(col, self.work) or 1

    def taskset(self):
        return {"cpu0": PIN_ONE, "cpu0+1": PIN_TWO}.get(self.pin)

    def argv(self, col, opt):
        cmd = []
        cpus = self.taskset()
        if cpus:
            cmd += ["taskset", "-c", cpus]
        if col in FLOOR_COLS:
            f = self.floor if col == "floor" else self.floor2
            return cmd + [os.path.join(opt.bindir, f[0])] + [str(a) for a in f[1]]
        prog = os.path.join(opt.bindir, self.prog + (".musl" if col == "musl" else ""))
        return cmd + [prog] + [str(a) for a in self.col_args.get(col, self.args)]

    def env(self, col, opt):
        if col in FLOOR_COLS:
            f = self.floor if col == "floor" else self.floor2
            # LD_PRELOAD names a library built beside the programs
            return {k: os.path.join(opt.bindir, v) for k, v in
                    (f[2] if len(f) > 2 else {}).items()}
        if col == "weft" and not opt.fake_weft:
            return {"LD_PRELOAD": opt.weft_lib}
        if col == "base":
            return {"LD_PRELOAD": opt.base_lib}
        return {}

    def want_lib(self, col, opt):
        if col == "weft" and opt.fake_weft:
            return COLUMN_LIB["glibc"]
        return COLUMN_LIB[col]

    def shown(self, col, opt):
        env = self.env(col, opt)
        parts = [f"{k}={rel(v)}" for k, v in env.items()]
        parts += [rel(a) if os.path.isabs(a) else a for a in self.argv(col, opt)]
        return " ".join(shlex.quote(p) for p in parts)


def rel(path):
    p = os.path.abspath(path)
    return os.path.relpath(p, REPO) if p.startswith(REPO + os.sep) else p


# ------------------------------------------------------------ the plan

def sizes(opt):
    q = 1 if opt.quick else 0
    s = {k: v[q] for k, v in SIZES.items()}
    if opt.full_grid:
        s.update(creation_T="1-20", creation_C="1-10", creation_n=100000)
    for item in opt.set:
        k, eq, v = item.partition("=")
        if not eq or k not in SIZES:
            sys.exit(f"weft bench: --set {item}: unknown size (known: {', '.join(SIZES)})")
        s[k] = v
    for k, v in s.items():
        if isinstance(SIZES[k][0], str):
            try:
                s[k] = B.int_list(str(v))
            except ValueError:
                sys.exit(f"weft bench: --set {k}={v}: expected a list like 1,2,5-8")
        else:
            try:
                s[k] = int(v)
            except ValueError:
                sys.exit(f"weft bench: --set {k}={v}: expected an integer")
    return s


def build_plan(opt, S):
    pins = {"both": ["unpinned", "cpu0"], "no": ["unpinned"], "yes": ["cpu0"]}[opt.pin]
    plan = []

    def add(c):
        if c.exp in opt.only_set:
            plan.append(c)

    for pin in pins:
        n = S["lifecycle_n"]
        add(Config("lifecycle", "joinable", "lifecycle", ["-n", n], "ops_per_s", True, pin,
                   floor=("rawclone", ["-n", n]),
                   col_args={"musl": ["-n", S["lifecycle_musl_n"]]}, work=n,
                   col_work={"musl": S["lifecycle_musl_n"]}))
        add(Config("lifecycle", "detached", "lifecycle", ["-d", "-n", S["detached_n"]],
                   "ops_per_s", True, pin,
                   col_args={"musl": ["-d", "-n", min(S["detached_n"], S["lifecycle_musl_n"])]},
                   work=S["detached_n"],
                   col_work={"musl": min(S["detached_n"], S["lifecycle_musl_n"])}))
        for T in S["creation_T"]:
            for C in S["creation_C"]:
                add(Config("creation", f"T{T} C{C}", "creation",
                           ["-T", T, "-C", C, "-n", S["creation_n"]], "ops_per_s", True, pin,
                           params={"T": T, "C": C}, work=S["creation_n"]))
        if S["throughput_n"] > 0:
            for T, C in ((1, 1000), (20, 50)):
                add(Config("throughput", f"{T} creator{'s' if T > 1 else ''}, {T * C} alive",
                           "creation", ["-T", T, "-C", C, "-n", S["throughput_n"]], "sec", False,
                           pin, params={"T": T, "C": C}, work=S["throughput_n"],
                           # the kernel's floor: raw clone, no library, C alive
                           floor=("rawclone", ["-n", S["throughput_n"], "-C", C])
                           if T == 1 else None))
        if pin == "unpinned":  # memory does not depend on pinning
            for stack, name in ((16384, "16 KiB stacks"), (0, "default stacks")):
                add(Config("memory", name, "memory", ["-N", S["memory_n"], "-s", stack],
                           "rss_kib", False, pin, work=S["memory_n"]))
        un = S["uncontended_n"]
        add(Config("uncontended", "mutex", "sync_uncontended", ["-S", "-n", un],
                   "cpu_ns_per_pair", False, pin, floor=("sync_uncontended", ["-m", "cas", "-n", un]),
                   work=un))
        for N in S["ring_N"]:
            add(Config("ring", f"N{N}", "sync_ring", ["-t", N, "-i", S["ring_i"]], "us_per_step",
                       False, pin, x=N, work=N * S["ring_i"],
                       floor=("sync_ring", ["-m", "futex", "-t", N, "-i", S["ring_i"]])))
        sw = S["switch_n"]
        add(Config("switch", "cond", "sync_switch", ["-m", "cond", "-n", sw], "switches_per_s",
                   True, pin, floor=("sync_switch", ["-m", "futex", "-n", sw]), work=sw))
        add(Config("switch", "sem", "sync_switch", ["-m", "sem", "-n", sw], "switches_per_s",
                   True, pin, work=sw))
        pp = ["-t", S["pingpong_tables"], "-H",
              S["pingpong_hits"] if pin == "unpinned" else S["pingpong_hits_pinned"]]
        add(Config("pingpong", "cond", "sync_pingpong", ["-m", "cond"] + pp, "games_sec", False,
                   pin, floor=("sync_pingpong", ["-m", "futex"] + pp),
                   work=int(pp[1]) * int(pp[3])))
        wn = S["wakeup_n"]
        add(Config("wakeup", "cond", "sync_wakeup", ["-m", "cond", "-n", wn],
                   "round_trips_per_s", True, pin,
                   floor=("sync_wakeup", ["-m", "futex", "-n", wn]), work=wn))
        for w in S["broadcast_w"]:
            r = max(1, S["broadcast_r"] * 10 // w)
            for locked in (False, True):
                args = (["-k"] if locked else []) + ["-w", w, "-r", r]
                # the floors: raw futex words, the two designs a
                # broadcast can have: a herd (wake all at once) and wait
                # morphing (wake one, requeue the rest onto the mutex)
                add(Config("broadcast", f"{'locked' if locked else 'plain'}-w{w}", "sync_broadcast",
                           args, "rounds_per_s", True, pin, work=r * w,
                           floor=("sync_broadcast", ["-m", "herd"] + args),
                           floor2=("sync_broadcast", ["-m", "requeue"] + args)))
        for m in ("getspecific", "getspecific_chain", "setspecific", "testcancel",
                  "read", "write", "syscall_write"):
            add(Config("tsd", m, "tsd_cancel", ["-n", S["tsd_n"]], f"{m}_ns", False, pin,
                       work=S["tsd_n"]))
        for m, unit in (("mutex", "ns"), ("malloc", "ns"), ("rdlock", "ns"), ("wrlock", "ns"),
                        ("spin", "ns"), ("signal", "ns"), ("broadcast", "ns"), ("once", "ns"),
                        ("getspecific", "ns"), ("setspecific", "ns"), ("fork", "us"),
                        ("spawn", "us"), ("start", "us")):
            st_args = ["-m", m, "-n", S["st_n"], "-f", S["st_forks"], "-s", S["st_starts"]]
            # the process rows' floor: preloading a library that does
            # nothing (bench/empty_preload.c), which every preloaded .so
            # pays; the children (/bin/true, the -x start) load it too
            st_floor = (("single_thread", st_args, {"LD_PRELOAD": "libempty_preload.so"})
                        if unit == "us" else None)
            add(Config("st", m, "single_thread", st_args,
                       f"{m}_{unit}", False, pin, floor=st_floor,
                       work=S["st_starts"] if m == "start" else
                       S["st_forks"] if unit == "us" else S["st_n"]))
        for K in S["contention_K"]:
            add(Config("contention", f"K{K}", "sync_contention",
                       ["-t", 32, "-k", K, "-e", S["contention_e"]], "sec", False, pin, x=K,
                       work=S["contention_e"]))
        # Few threads on one mutex: each holder takes it back right after
        # its release, the case where a spinner can lose every race for
        # the word (bench/RESULTS.md, 2026-11-28-s29); not on the K plot.
        for T in (2, 4):
            add(Config("contention", f"T{T}-K1", "sync_contention",
                       ["-t", T, "-k", 1, "-e", S["contention_e"]], "sec", False, pin,
                       work=S["contention_e"]))
        # The same with write locks of a rwlock (its spin as the mutex's,
        # 2026-11-29-pairs); and two threads pinned one to a CPU each
        # (-s), where the affinity rule alone never spins: unpinned runs
        # only (pinned to cpu0 the spread is one CPU, the row above).
        for T in (2, 4):
            add(Config("contention", f"rw-T{T}-K1", "sync_contention",
                       ["-l", "rwlock", "-t", T, "-k", 1, "-e", S["contention_e"]], "sec",
                       False, pin, work=S["contention_e"]))
        if pin == "unpinned":
            for lock in ("mutex", "rwlock"):
                add(Config("contention", f"{'rw-' if lock == 'rwlock' else ''}T2-K1-spread",
                           "sync_contention", ["-l", lock, "-s", "-t", 2, "-k", 1, "-e",
                                               S["contention_e"]], "sec", False, pin,
                           work=S["contention_e"]))
    for c in latency_plan(opt, S):
        add(c)
    return plan


def latency_plan(opt, S):
    """Seed 002 §5 on SCHED_FIFO threads, one row per mode and mutex kind
    (bench/sync_latency.c places the threads on the first two CPUs it may
    use): on CPUs 0 and 1 when pinning is asked for (on a 2-CPU machine
    the same set as unpinned).  Floors (raw futex calls, no library;
    bench/README.md): the hand-offs and the inversions of a normal or PI
    mutex, the lock of that kind (-F); the
    condvar rows with a PI mutex, requeue-PI as weft uses it, deferred to
    the unlock when the signaller holds the mutex (-F, -D), and, as
    floor 2, a plain wake and the waiter's own lock, glibc's protocol
    (-P)."""
    pin = "unpinned" if opt.pin == "no" else "cpu0+1"
    n, rounds = S["latency_n"], S["inversion_n"]
    spin = ["-S", S["inversion_spin_us"]]
    handoff = [(f"handoff-{k}", ["-m", "handoff", "-k", k, "-n", n], n, ["-F"], None)
               for k in ("normal", "pi", "pp")]
    # the machine's own stalls, no library: one column only
    noise = Config("latency", "noise", "sync_latency", ["-m", "noise", "-n", S["noise_windows"]],
                   "p999_cycles", False, pin, work=S["noise_windows"], only_cols=("glibc",))
    requeue = {"held": ["-F", "-D"], "released": ["-F"]}
    bcast = [(f"bcast-{how}-{k}", ["-m", "bcast", "-k", k, "-n", n] + flag, n,
              requeue[how] if k == "pi" else None, ["-P"] if k == "pi" else None)
             for k in ("normal", "pi")
             for how, flag in (("held", []), ("released", ["-r"]))]
    inversion = [(f"inversion-{k}", ["-m", "inversion", "-k", k, "-n", rounds] + spin, rounds,
                  ["-F"], None) for k in ("normal", "pi")]
    inversion += [(f"inversion-{how}-cond-pi",
                   ["-m", "inversion", "-k", "cond-pi", "-n", rounds] + spin + flag, rounds,
                   requeue[how], ["-P"])
                  for how, flag in (("released", ["-r"]), ("held", []))]
    raw = lambda args, extra: ("sync_latency", args + extra) if extra else None
    return [noise] + [Config("latency", name, "sync_latency", args, "p999_cycles", False, pin,
                             work=work, floor=raw(args, f1), floor2=raw(args, f2))
                      for name, args, work, f1, f2 in handoff + bcast + inversion]


def shown_args(args):
    """The command line as the report shows it: the launcher's own
    --weft-lib (its library, named in the report anyway) left out, in
    both its forms (--weft-lib=LIB and --weft-lib LIB)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--weft-lib":
            skip = True
        elif not a.startswith("--weft-lib="):
            out.append(a)
    return out


def columns_for(c, opt):
    cols = ["glibc"]
    if not opt.no_weft:
        cols.append("weft")
    if opt.base_lib:
        cols.append("base")
    if opt.musl and c.prog in MUSL_PROGS and os.access(
            os.path.join(opt.bindir, c.prog + ".musl"), os.X_OK):
        cols.append("musl")
    if c.floor and not opt.no_floor:
        cols.append("floor")
    if c.floor2 and not opt.no_floor:
        cols.append("floor2")
    if c.only_cols:
        cols = [col for col in cols if col in c.only_cols]
    return cols


# ------------------------------------------------------------ running

def run_one(c, col, opt):
    """One run; the latency programs with RT throttling off for exactly
    their duration (restored however the run ends)."""
    rt = opt.rt_throttle if c.exp == "latency" else None
    if rt:
        rt.off()
    try:
        return B.run_program(c.argv(col, opt), opt.timeout, c.metric, c.env(col, opt))
    finally:
        if rt:
            rt.restore()


def run_all(plan, opt, csv_path):
    """Warm-ups, then opt.reps interleaved repetitions.  Returns (runs, interrupted)."""
    # warm-up: each program once per column (and per configuration in a
    # full run) before anything is measured: page cache, dynamic loader,
    # CPU frequency.  Their results are recorded (rep = "warm-up") but
    # never enter the statistics.
    warm, seen = [], set()
    for c in plan:
        for col in c.cols:
            k = (c.prog, col) if opt.quick else (c.key(), col)
            if k not in seen and opt.warmup:
                seen.add(k)
                warm.append((c, col))
    sched = [("warm-up", c, col) for c, col in warm]
    for rep in range(opt.reps):
        for c in plan:
            order = c.cols if rep % 2 == 0 else list(reversed(c.cols))
            sched += [(rep, c, col) for col in order]

    prog = B.Progress(len(sched), lambda k: 0.3)
    fields = ["rep", "experiment", "variant", "pin", "column", "status", "metric", "value",
              "wall_s", "why", "result", "cmd"]
    runs = []
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        try:
            for i, (rep, c, col) in enumerate(sched):
                what = (f"{'warm-up' if rep == 'warm-up' else f'rep {rep + 1}/{opt.reps}'} "
                        f"{c.exp} {c.variant} {c.pin} {col}")
                prog.show(what, [(s[1].key(), s[2]) for s in sched[i:]])
                r = run_one(c, col, opt)
                if r["status"] == "ok":
                    prob = B.served_problem(r["kv"], c.want_lib(col, opt))
                    if prob:
                        r["status"] = "unserved"
                        r["why"] = prob
                        r.pop("value")
                prog.record((c.key(), col), r["wall"])
                row = {"rep": rep, "experiment": c.exp, "variant": c.variant, "pin": c.pin,
                       "column": col, "status": r["status"], "metric": c.metric,
                       "value": r.get("value", ""), "wall_s": f"{r['wall']:.3f}",
                       "why": r.get("why", ""),
                       "result": " ".join(f"{k}={v}" for k, v in r.get("kv", {}).items()),
                       "cmd": c.shown(col, opt)}
                w.writerow(row)
                f.flush()
                if r["status"] != "ok":
                    prog.finish()
                    B.log(f"  {c.exp} {c.variant} {c.pin} {col}: {r['status']} {r.get('why', '')}")
                r.update(rep=rep, config=c, column=col)
                runs.append(r)
        except KeyboardInterrupt:
            prog.finish()
            B.log("interrupted: the report covers the runs that finished")
            return runs, True
    prog.finish()
    return runs, False


# ------------------------------------------------------------ statistics

class Summary:
    def __init__(self, plan, runs):
        self.cells = {}
        self.pairs = {}   # (key, col, ref) -> per-repetition ratios of col to ref
        by = {}
        for r in runs:
            if r["rep"] != "warm-up":
                by.setdefault((r["config"].key(), r["column"]), []).append(r)
        for c in plan:
            for col in c.cols:
                self.cells[(c.key(), col)] = B.Cell(by.get((c.key(), col), []), c.higher)
            for ref in ("glibc", "base") + FLOOR_COLS:
                g = {r["rep"]: r for r in by.get((c.key(), ref), []) if r["status"] == "ok"}
                for col in c.cols:
                    if col == ref:
                        continue
                    rs = [B.speedup(r["value"], g[r["rep"]]["value"], c.higher)
                          for r in by.get((c.key(), col), [])
                          if r["status"] == "ok" and r["rep"] in g]
                    self.pairs[(c.key(), col, ref)] = [x for x in rs if x is not None]

    def cell(self, c, col):
        return self.cells.get((c.key(), col))

    def speedup(self, c, col, ref="glibc"):
        a, g = self.cell(c, col), self.cell(c, ref)
        if a is None or g is None or not a.values or not g.values:
            return None
        return B.speedup(a.med, g.med, c.higher)

    def speedup_text(self, c, col, ref="glibc"):
        s = self.speedup(c, col, ref)
        if s is None:
            return "—"
        p = self.pairs.get((c.key(), col, ref)) or []
        rng = f" ({min(p):.2f}–{max(p):.2f})" if len(p) > 1 else ""
        return f"{s:.2f}×{rng}"


def cell_text(cell):
    if cell is None:
        return "—"
    if not cell.values:
        return f"**{cell.failure_text()}**"
    s = f"{B.fmt(cell.med)} ({B.fmt(cell.lo)}–{B.fmt(cell.hi)})"
    if len(cell.values) != len(cell.runs):
        s += f" **{len(cell.values)}/{len(cell.runs)} ok; {cell.failure_text()}**"
    return s


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ------------------------------------------------------------ plots

def plots(opt, plan, summ):
    """Draw the SVGs; return [(title, file)]."""
    if opt.no_plots or not B.gnuplot_available():
        return []
    out = opt.out
    drawn = []
    T = B.SVG_TERMINAL
    allcols = [c for c in ALL_COLS
               if any(c in x.cols for x in plan)]

    def med(c, col):
        cell = summ.cell(c, col)
        return cell.med if cell and cell.values else None

    def lo(c, col):
        cell = summ.cell(c, col)
        return cell.lo if cell and cell.values else None

    def hi(c, col):
        cell = summ.cell(c, col)
        return cell.hi if cell and cell.values else None

    pins = sorted({c.pin for c in plan}, key=PIN_ORDER.index)
    # speed-up over glibc for every configuration, bars = paired min..max
    for pin in pins:
        cs = [c for c in plan if c.pin == pin]
        others = [col for col in ("weft", "base", "musl") if any(col in c.cols for c in cs)]
        rows = []
        for c in cs:
            row = [f"{c.exp}:{c.variant}".replace(" ", "_")]
            for col in others:
                p = summ.pairs.get((c.key(), col, "glibc")) or []
                s = summ.speedup(c, col)
                row += [s, min(p) if p else s, max(p) if p else s]
            rows.append(row)
        if not others or not any(v is not None for r in rows for v in r[1:]):
            continue
        name = f"speedup_{pin}"
        B.write_dat(os.path.join(out, name + ".dat"),
                    ["config"] + [f"{c}_{s}" for c in others for s in ("med", "min", "max")], rows)
        # points with error bars on a log scale: a ratio of 0.5 and one of
        # 2 are equally far from 1, and one wild repetition cannot squash
        # the rest of the plot
        parts = [f"'{name}.dat' using ($0 + {(i - (len(others) - 1) / 2) * 0.2:g}):"
                 f"{2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i} "
                 f"with yerrorbars pt 7 ps 0.8 lw 1.5 title '{COLUMN_TITLE[col]}'"
                 for i, col in enumerate(others)]
        if B.draw(out, name, f"""{T}
set output '{name}.svg'
set title 'Speed-up over glibc ({pin}): ratio of medians, bars = min..max of the paired runs; > 1: faster' noenhanced
set logscale y 2
set grid ytics
set xrange [-0.5:{len(rows) - 0.5}]
set xtics ({", ".join(f'"{r[0]}" {i}' for i, r in enumerate(rows))}) rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}, 1 with lines dt 2 lc rgb 'black' notitle
"""):
            drawn.append((f"Speed-up over glibc ({pin})", name + ".svg"))

    # the creation matrix: creations/s against C, one line per T
    for pin in pins:
        cs = [c for c in plan if c.exp == "creation" and c.pin == pin]
        if not cs:
            continue
        Ts = sorted({c.params["T"] for c in cs})
        Cs = sorted({c.params["C"] for c in cs})
        cols = [col for col in ("glibc", "weft", "base", "musl") if any(col in c.cols for c in cs)]
        grid = {(c.params["T"], c.params["C"]): c for c in cs}
        rows = []
        for C in Cs:
            row = [C]
            for col in cols:
                for t in Ts:
                    c = grid.get((t, C))
                    row.append(med(c, col) if c else None)
            rows.append(row)
        name = f"creation_{pin}"
        B.write_dat(os.path.join(out, name + ".dat"),
                    ["C"] + [f"{col}_T{t}" for col in cols for t in Ts], rows)
        dts = {"glibc": 1, "weft": 2, "base": 4, "musl": 3}
        parts = []
        for i, col in enumerate(cols):
            for j, t in enumerate(Ts):
                parts.append(f"'{name}.dat' using 1:{2 + i * len(Ts) + j} with linespoints "
                             f"lw 2 dt {dts[col]} lc {j + 1} title '{col} T={t}'")
        if B.draw(out, name, f"""{T}
set output '{name}.svg'
set title 'Creation matrix (seed 000 §7), {pin}: creations per second, one line per creator count T' noenhanced
set xlabel 'children alive per creator, C'
set ylabel 'creations per second (median)'
set grid
set xtics ({", ".join(str(x) for x in Cs)})
set yrange [0:*]
set key outside right noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""):
            drawn.append((f"Creation matrix ({pin})", name + ".svg"))
        # the whole matrix at a glance: weft/glibc ratio per cell as a map
        if "weft" in cols and len(Ts) > 1 and len(Cs) > 1:
            nm = f"creation_ratio_{pin}"
            with open(os.path.join(out, nm + ".dat"), "w") as f:
                # by index: image plots need an evenly spaced grid, and
                # the T and C values need not be (1, 2, 5, 10, 20)
                f.write("# T_index C_index weft_vs_glibc T C\n")
                for i, t in enumerate(Ts):
                    for j, C in enumerate(Cs):
                        c = grid.get((t, C))
                        s = summ.speedup(c, "weft") if c else None
                        f.write(f"{i} {j} {'NaN' if s is None else f'{s:.4g}'} {t} {C}\n")
                    f.write("\n")
            if B.draw(out, nm, f"""{T}
set output '{nm}.svg'
set title 'Creation matrix, {pin}: weft vs glibc per cell (ratio of medians, > 1: weft faster)' noenhanced
set xlabel 'creators T'
set ylabel 'children per creator C'
set view map
set pm3d map corners2color c1
set palette defined (-1 '#e07070', 0 'white', 1 '#7090e0')
set cbrange [0.5:2]
set logscale cb 2
set xrange [-0.5:{len(Ts) - 0.5}]
set yrange [-0.5:{len(Cs) - 0.5}]
set xtics ({", ".join(f'"{t}" {i}' for i, t in enumerate(Ts))})
set ytics ({", ".join(f'"{C}" {j}' for j, C in enumerate(Cs))})
set datafile missing 'NaN'
splot '{nm}.dat' using 1:2:3 with image notitle, \\
      '{nm}.dat' using 1:2:3:(sprintf('%.2f', $3)) with labels notitle
"""):
                drawn.append((f"Creation matrix, weft vs glibc per cell ({pin})", nm + ".svg"))
        # Figures 1 and 2: the best time over the other axis
        n = cs[0].work
        for axis, fig, xs, other in (("T", "Figure 1", Ts, "C"), ("C", "Figure 2", Cs, "T")):
            rows = []
            for x in xs:
                row = [x]
                for col in cols:
                    rates = [med(c, col) for c in cs if c.params[axis] == x]
                    rates = [r for r in rates if r]
                    row.append(n / max(rates) if rates else None)
                rows.append(row)
            nm = f"creation_fig{1 if axis == 'T' else 2}_{pin}"
            B.write_dat(os.path.join(out, nm + ".dat"), [axis] + cols, rows)
            parts = [f"'{nm}.dat' using 1:{2 + i} with linespoints lw 2 pt 7 "
                     f"title '{COLUMN_TITLE[col]}'" for i, col in enumerate(cols)]
            if B.draw(out, nm, f"""{T}
set output '{nm}.svg'
set title '{fig} of seed 000, {pin}: seconds for {n} creations, minimum over {other}' noenhanced
set xlabel '{"creators T" if axis == "T" else "children per creator C"}'
set ylabel 'seconds'
set grid
set xtics ({", ".join(str(x) for x in xs)})
set yrange [0:*]
set key top right noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""):
                drawn.append((f"{fig}: creation time against {axis} ({pin})", nm + ".svg"))

    # lines against x: the lock ring (N) and Figure 3 (K)
    for exp, xl, yl, title in (
            ("ring", "threads N", "µs per step", "Lock ring (seed 003)"),
            ("contention", "critical regions K (32 threads)", "seconds",
             "Figure 3 of seed 000: lock contention")):
        for pin in pins:
            cs = sorted([c for c in plan if c.exp == exp and c.pin == pin and c.x is not None],
                        key=lambda c: c.x)
            if len(cs) < 1:
                continue
            cols = [col for col in allcols if any(col in c.cols for c in cs)]
            rows = [[c.x] + [v for col in cols for v in (med(c, col), lo(c, col), hi(c, col))]
                    for c in cs]
            name = f"{exp}_{pin}"
            B.write_dat(os.path.join(out, name + ".dat"),
                        ["x"] + [f"{col}_{s}" for col in cols for s in ("med", "min", "max")], rows)
            parts = [f"'{name}.dat' using 1:{2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i} with yerrorlines "
                     f"lw 2 title '{COLUMN_TITLE[col]}'" for i, col in enumerate(cols)]
            if B.draw(out, name, f"""{T}
set output '{name}.svg'
set title '{title}, {pin}: median, bars min..max' noenhanced
set xlabel '{xl}'
set ylabel '{yl} (lower is better)'
set logscale x 2
set xrange [{cs[0].x / 1.5:g}:{cs[-1].x * 1.5:g}]
set xtics ({", ".join(str(c.x) for c in cs)})
set grid
set yrange [0:*]
set key top left noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""):
                drawn.append((f"{title} ({pin})", name + ".svg"))

    # latencies: the 99.9th percentile per row and library, bars from the
    # median to the highest figure seen
    cs = [c for c in plan if c.exp == "latency"]
    if cs:
        cols = [col for col in allcols if any(col in c.cols for c in cs)]
        rows = []
        for c in cs:
            row = [c.variant]
            for col in cols:
                cell = summ.cell(c, col) if col in c.cols else None
                row += ([latency_combined(cell, k, how) for k, how in
                         (("p999_cycles", statistics.median), ("p50_cycles", statistics.median),
                          ("max_cycles", max))]
                        if cell and cell.values else [None] * 3)
            rows.append(row)
        if any(v is not None for r in rows for v in r[1:]):
            B.write_dat(os.path.join(out, "latency.dat"),
                        ["variant"] + [f"{col}_{s}" for col in cols for s in ("p999", "p50", "max")],
                        rows)
            parts = [f"'latency.dat' using {2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i}"
                     f"{':xtic(1)' if i == 0 else ''} title '{COLUMN_TITLE[col]}'"
                     for i, col in enumerate(cols)]
            if B.draw(out, "latency", f"""{T}
set output 'latency.svg'
set title 'SCHED_FIFO latencies (seed 002 §5): p99.9 in cycles, bars = median..max (median over runs; max of all)' noenhanced
set ylabel 'TSC cycles (log scale)'
set logscale y
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.7 border -1
set boxwidth 0.9
set grid ytics
set xtics rotate by -35 noenhanced font ',9'
set key top left noenhanced
set datafile missing 'NaN'
plot {", ".join(parts)}
"""):
                drawn.append(("SCHED_FIFO latencies", "latency.svg"))
    return drawn


# ------------------------------------------------------------ report

ESTIMATE_PROXY = {"throughput": "creation"}


def estimate_full(plan, runs, opt):
    """Seconds a full run (default sizes, --pin both, 5 repetitions and
    warm-ups) would take, from this run's timings: per experiment and
    column, the time the program itself measured per unit of work (its
    sec= key) and the fixed cost of a run (start, set-up, exit: wall time
    minus sec).  Small runs are dominated by the fixed cost, so scaling
    their wall time alone would overstate a full run many times.
    Returns ({experiment: seconds}, [experiments without data]) or None."""
    per_unit, fixed = {}, []
    for r in runs:
        c = r["config"]
        try:
            sec = float(r["kv"]["sec"])
        except (KeyError, ValueError):
            continue
        if r["status"] != "ok" or not math.isfinite(sec):
            continue
        # per variant too: the rows of one experiment may differ 1000x per
        # unit of work (a lock hand-off against a priority-inversion round)
        for k in ((c.exp, r["column"]), (c.exp, c.variant, r["column"])):
            per_unit.setdefault(k, []).append(sec / c.work_of(r["column"]))
        fixed.append(max(0.0, r["wall"] - sec))
    if not per_unit:
        return None
    fixed_cost = sorted(fixed)[len(fixed) // 2]
    full = argparse.Namespace(**vars(opt))
    full.quick, full.full_grid, full.set, full.pin = False, False, [], "both"
    full.only_set = set(EXP_NAMES)
    per_exp, missing = {}, set()
    for c in build_plan(full, sizes(full)):
        for col in columns_for(c, opt):
            # throughput is the creation program with other sizes
            exp = c.exp if any(k[0] == c.exp for k in per_unit) else ESTIMATE_PROXY.get(c.exp)
            per = (per_unit.get((exp, c.variant, col)) or per_unit.get((exp, col))
                   or per_unit.get((exp, "glibc")))
            if per is None:
                missing.add(c.exp)
                continue
            per = sorted(per)[len(per) // 2]
            # 5 repetitions + a warm-up
            per_exp[c.exp] = per_exp.get(c.exp, 0.0) + (per * c.work_of(col) + fixed_cost) * 6
    return per_exp, sorted(missing)


# The figures of a latency row: (key of the RESULT line, title, how the
# runs are combined).  min and max are the extremes of everything
# measured; the percentiles are typical figures, the median over the runs.
LATENCY_STATS = (("min_cycles", "min", min), ("p50_cycles", "median", statistics.median),
                 ("p99_cycles", "p99", statistics.median),
                 ("p999_cycles", "p99.9", statistics.median), ("max_cycles", "max", max))

LATENCY_LEGEND = """\
Rows (bench/README.md, "The latency experiment"): **noise**, no library: the longest gap
between two TSC reads of a priority-99 thread spinning alone on each CPU, one figure per
10 ms window (its column is the glibc binary, but no library call is timed): the machine's
own stalls, under every max below; **handoff-K**, lock + unlock by a
priority-99 thread against a priority-98 thread locking the same mutex in a loop on the
other CPU (K = normal, PI, PP with ceiling 99); **bcast-held-K** / **bcast-released-K**,
broadcast entry → wait exit of a priority-90 waiter, both threads on one CPU, the mutex
held during the broadcast or released before it; **inversion-K**, how long a priority-90
thread needs the mutex before it holds it with a priority-10 thread's critical section
done, while a priority-50 thread spins on the low one's CPU (for at most the spin bound):
K = normal, PI, and a condvar wait on a PI mutex (cond-pi) signalled after the mutex is
released or while it is held. Floors, the same threads on raw futex calls (no library):
**handoff-K** and **inversion-K** (normal, PI), the simplest lock of that kind (normal: a 0/1/2 futex word; PI: a CAS, else
FUTEX_LOCK_PI / FUTEX_UNLOCK_PI; PP: the normal word with the priority raised to the
ceiling by one sched_setparam before the try and lowered after the release, none at the
ceiling); the condvar rows with a PI mutex (bcast-*-pi, *-cond-pi): **floor**, requeue-PI
(FUTEX_WAIT_REQUEUE_PI / FUTEX_CMP_REQUEUE_PI; deferred to the unlock when the signaller
holds the mutex, as weft does): the woken waiter owns the mutex before it runs, what bounds
the inversion; **floor 2**, a plain FUTEX_WAKE and the waiter's own lock (CAS, else
FUTEX_LOCK_PI), glibc's protocol: the waiter owns nothing until it has run."""


def latency_combined(cell, key, how):
    vals = cell.extra_all(key) if cell else []
    return how(vals) if vals else None


def latency_distribution(w, cs, cols, summ):
    """The whole distribution of every latency row, per column, with
    glibc ÷ weft for each figure and issue 14's target: weft's p99.9 and
    max at most glibc's."""
    w(LATENCY_LEGEND)
    w("")
    w("TSC cycles (`tsc_per_ns` in runs.csv converts them to time). min and max: the lowest "
      "and highest of all the runs; median, p99 and p99.9: the median over the runs of each "
      "run's figure. **glibc ÷ weft** > 1: weft's figure is lower.")
    w("")
    w("| row | column | " + " | ".join(t for _, t, _ in LATENCY_STATS) + " | runs |")
    w("|---|---|" + "---|" * (len(LATENCY_STATS) + 1))
    for c in cs:
        first = True
        for col in [col for col in cols if col in c.cols]:
            cell = summ.cell(c, col)
            name = c.variant if first else ""
            first = False
            title = "spin loop (no library)" if c.variant == "noise" else COLUMN_TITLE[col]
            if not cell or not cell.values:
                text = cell.failure_text() if cell else "no runs"
                w(f"| {name} | {title} | **{text}** |" + " |" * len(LATENCY_STATS))
                continue
            figs = [B.fmt(latency_combined(cell, k, how)) for k, _, how in LATENCY_STATS]
            w(f"| {name} | {title} | " + " | ".join(figs) +
              f" | {len(cell.values)}/{len(cell.runs)} |")
            if col == "weft" and "glibc" in c.cols:
                w(latency_ratio_line(c, summ))
    w("")
    noise = summ.cell(cs[0], "glibc") if cs[0].variant == "noise" else None
    if noise and noise.values:
        w(f"The machine's own stalls (noise row): a thread spinning alone on its CPU lost up to "
          f"{B.fmt(latency_combined(noise, 'max_cycles', max))} cycles at once, and "
          f"{B.fmt(latency_combined(noise, 'p99_cycles', statistics.median))} in 1 % of its "
          f"10 ms windows; a max or p99.9 in that range says more about the machine than about "
          f"the library.")
        w("")


def latency_ratio_line(c, summ):
    g, x = summ.cell(c, "glibc"), summ.cell(c, "weft")
    ratios, verdict = [], []
    for k, t, how in LATENCY_STATS:
        a, b = latency_combined(g, k, how), latency_combined(x, k, how)
        ratios.append(("—" if not (a and b) else f"{a / b:.2f}" if a / b >= 0.1
                       else f"{a / b:.2g}"))
        if t in ("p99.9", "max") and a and b and b > a:
            verdict.append(t)
    if "—" in (ratios[3], ratios[4]):
        target = "target: no figures"
    else:
        target = "target met" if not verdict else "target NOT met: " + ", ".join(verdict)
    return "|  | glibc ÷ weft | " + " | ".join(ratios) + f" | {target} |"


def run_facts(plan, runs, opt, steal0):
    """Conditions of this run for the report: the CPU time a hypervisor
    took, and for the latency runs what RT throttling was."""
    facts = []
    steal = B.steal_text(steal0, B.cpu_times())
    if steal:
        facts.append(("CPU steal during the run (VM)", steal))
    if not any(c.exp == "latency" for c in plan):
        return facts
    if opt.rt_throttle:
        note = opt.rt_throttle.note or "not touched (no latency run started)"
    else:
        try:
            note = f"left as it was (--keep-rt-throttling): {B.RtThrottle().read()}"
        except OSError:
            note = "left as it was (--keep-rt-throttling)"
    facts.append(("RT throttling (sched_rt_runtime_us)", note))
    seen = sorted({r["kv"].get("rt_runtime_us", "?") for r in runs
                   if r["config"].exp == "latency" and r["status"] == "ok"})
    if seen:
        facts.append(("sched_rt_runtime_us seen by the latency programs", ", ".join(seen)))
    return facts


def write_report(opt, plan, runs, summ, drawn, facts, started, elapsed, interrupted, lib_info):
    L = []
    w = L.append
    w(f"# weft bench — {started:%Y-%m-%d %H:%M} UTC")
    w("")
    if interrupted:
        w("**Interrupted: the tables cover only the runs that finished.**\n")
    if lib_info[1]:
        w("**WARNING: libweft.so changed during the run; the weft column mixes two builds.**\n")
    if opt.fake_weft:
        w("**A/A TEST (`--fake-weft`): the weft column ran glibc without any preload; its "
          "ratios show this machine's noise, nothing about weft.**\n")
    if opt.quick:
        w("**Quick run (`--quick`): tiny sizes and 3 repetitions, to check that everything "
          "runs and to show the shape of the results. Not for conclusions.**\n")
    cols_present = [c for c in ALL_COLS
                    if any(c in x.cols for x in plan)]
    w("Each cell: median (min–max) over the repetitions. **weft vs glibc** = how many "
      "times better weft is than glibc, as the ratio of the medians (> 1: weft faster or "
      "smaller), and in parentheses the range of the ratios of the runs paired in the same "
      "repetition: the noise of the comparison. A cell that did not give a number says "
      "why (crashed, timeout, no result, skipped); failed runs are never counted.")
    w("")
    body_start = len(L)
    # the headline table, like the papers' comparisons to NPTL
    w("## Summary: weft against glibc")
    w("")
    hdr = ["experiment", "paper", "CPUs", "configurations with a ratio",
           "weft vs glibc (geometric mean)",
           "range over configurations"]
    if "musl" in cols_present:
        hdr.append("musl vs glibc")
    w("| " + " | ".join(hdr) + " |")
    w("|" + "---|" * len(hdr))
    for name, title, paper, _ in EXPERIMENTS:
        for pin in sorted({c.pin for c in plan if c.exp == name}, key=PIN_ORDER.index):
            cs = [c for c in plan if c.exp == name and c.pin == pin]
            sp = [summ.speedup(c, "weft") for c in cs]
            ok = [s for s in sp if s is not None]
            if ok:
                g = f"{geomean(ok):.2f}×"
                rng = f"{min(ok):.2f}–{max(ok):.2f}" if len(ok) > 1 else ""
            else:
                texts = {summ.cell(c, col).failure_text() for c in cs for col in ("glibc", "weft")
                         if summ.cell(c, col) and not summ.cell(c, col).values}
                if "weft" not in cols_present:
                    g, rng = "— (no weft column)", ""
                else:
                    g, rng = "**" + (", ".join(sorted(t for t in texts if t)) or "no data") + "**", ""
            row = [title, paper, pin, f"{len(ok)}/{len(cs)}", g, rng]
            if "musl" in cols_present:
                ms = [summ.speedup(c, "musl") for c in cs]
                ms = [s for s in ms if s is not None]
                row.append(f"{geomean(ms):.2f}×" if ms else "—")
            w("| " + " | ".join(row) + " |")
    w("")
    for t, f in drawn:
        if f.startswith("speedup_"):
            w(f"![{t}]({f})")
            w("")
    # one table per experiment
    for name, title, paper, metric in EXPERIMENTS:
        cs = [c for c in plan if c.exp == name]
        if not cs:
            continue
        cols = [col for col in cols_present if any(col in c.cols for c in cs)]
        w(f"## {title} ({paper})")
        w("")
        w(f"Metric: {metric}.")
        w("")
        if name == "st" and "floor" in cols:
            w("Floor of the process rows (fork, spawn, start): the same program with "
              "`LD_PRELOAD` of a library that does nothing (`bench/empty_preload.c`), "
              "which the children load too: what preloading any .so costs.")
            w("")
        hdr = ["variant", "CPUs"] + [col_title(c, name) for c in cols]
        ratio_cols = [c for c in cols if c in ("weft", "base", "musl")]
        hdr += [f"{c} vs glibc" for c in ratio_cols]
        if "base" in cols and "weft" in cols:
            hdr.append("weft vs base")
        floors = [f for f in FLOOR_COLS if f in cols and "weft" in cols]
        hdr += ["weft vs " + col_title(f, name).split(" (")[0] for f in floors]
        if name == "uncontended":
            hdr.append("instructions (single-step): glibc; weft")
        if name == "memory":
            hdr += ["mappings per thread: glibc; weft", "kernel stack KiB per thread: glibc; weft",
                    "RSS KiB kept after join (total): glibc; weft"]
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        for c in cs:
            row = [c.variant, c.pin] + [cell_text(summ.cell(c, col)) if col in c.cols else "—"
                                         for col in cols]
            row += [summ.speedup_text(c, col) if col in c.cols else "—" for col in ratio_cols]
            if "base" in cols and "weft" in cols:
                row.append(summ.speedup_text(c, "weft", ref="base"))
            row += [summ.speedup_text(c, "weft", ref=f) if f in c.cols else "—"
                    for f in floors]

            def em(col, k):
                cell = summ.cell(c, col)
                return B.fmt(cell.extra_med(k)) if cell and cell.values else "n/a"
            if name == "uncontended":
                row.append(f"{em('glibc', 'step_instr')}; {em('weft', 'step_instr')}")
            if name == "memory":
                row += [f"{em('glibc', k)}; {em('weft', k)}"
                        for k in ("maps", "kstack_kib", "rss_after_join_kib")]
            w("| " + " | ".join(row) + " |")
        w("")
        if name == "latency":
            latency_distribution(w, cs, cols, summ)
        for t, f in drawn:
            if f.startswith(name + "_") or f == name + ".svg":
                w(f"![{t}]({f})")
                w("")
    body_end = len(L)
    bad = [r for r in runs if r["status"] not in ("ok",)]
    w("## Runs that gave no number")
    w("")
    if not bad:
        w("None.")
    else:
        w("| rep | experiment | CPUs | column | status | detail |")
        w("|---|---|---|---|---|---|")
        for r in bad[:80]:
            c = r["config"]
            rep = r["rep"] if r["rep"] == "warm-up" else r["rep"] + 1
            w(f"| {rep} | {c.exp} {c.variant} | {c.pin} | {r['column']} | {r['status']} | "
              f"{r.get('why', '').replace('|', '/')} |")
        if len(bad) > 80:
            w(f"| … | {len(bad) - 80} more in runs.csv | | | | |")
    w("")
    w("## Machine and method")
    w("")
    w("| | |")
    w("|---|---|")
    for k, v in facts:
        w(f"| {k} | {v} |")
    if lib_info[0]:
        w(f"| weft library | `{lib_info[0]}` |")
    if opt.base_lib:
        w(f"| base library (`--base-lib`) | `{B.lib_fingerprint(opt.base_lib)}` |")
    w(f"| started (UTC) | {started:%Y-%m-%d %H:%M:%S} |")
    w(f"| duration | {B.fmt_secs(elapsed)} |")
    w(f"| repetitions | {opt.reps}, after {'one warm-up run per program and column' if opt.quick else 'one warm-up run per configuration and column'}"
      f"{'' if opt.warmup else ' (warm-up disabled)'} |")
    w(f"| columns | {', '.join(COLUMN_TITLE[c] for c in cols_present)} |")
    w(f"| pinning | {opt.pin}: `cpu0` = `taskset -c {PIN_ONE}`, `cpu0+1` = `taskset -c {PIN_TWO}` |")
    est = estimate_full(plan, runs, opt)
    if est and not opt.fake_weft:
        per_exp, missing = est
        w(f"| full run (estimate) | about {B.fmt_secs(sum(per_exp.values()))} for `weft bench` "
          f"with default sizes ({', '.join(f'{k} {B.fmt_secs(v)}' for k, v in per_exp.items())}),"
          f" from this run's timings"
          f"{' (not counting ' + ', '.join(missing) + ', not run here)' if missing else ''} |")
    w("")
    w("* Same binary for glibc and weft: weft comes in by `LD_PRELOAD`; the musl column is "
      "the same source linked statically with `musl-gcc`. Every program names the library "
      "that served the functions it times; a run served by the wrong one is `unserved`.")
    w("* Each repetition runs all columns of a configuration back to back, in the reverse "
      "order on every other repetition (A/B, B/A, ...).")
    w("* Command: `weft bench " + " ".join(shlex.quote(a) for a in opt.argv_shown) + "`.")
    w("")
    w("Single runs as issued (from the repository root):")
    w("")
    w("```sh")
    seen = set()
    for c in plan:
        for col in c.cols:
            s = c.shown(col, opt)
            if s not in seen:
                seen.add(s)
                w(s)
    w("```")
    w("")
    w("Files: `runs.csv` (every run, warm-ups included, with its status and RESULT line), "
      "`results.json` (the same plus medians, min, max, ratios per configuration), "
      "`*.svg` plots with their `*.dat` data and `*.gp` gnuplot scripts.")
    w("")
    with open(os.path.join(opt.out, "report.md"), "w") as f:
        f.write("\n".join(L))
    return L[body_start:body_end]


def write_json(opt, plan, runs, summ, facts, started, elapsed, interrupted):
    data = {
        "started": started.isoformat(), "duration_s": elapsed, "interrupted": interrupted,
        "quick": opt.quick, "reps": opt.reps, "pin": opt.pin, "fake_weft": opt.fake_weft,
        "machine": dict(facts), "command": ["weft", "bench"] + opt.argv_shown,
        "configs": [], "runs": [],
    }
    for c in plan:
        d = {"experiment": c.exp, "variant": c.variant, "pin": c.pin, "metric": c.metric,
             "higher_is_better": c.higher, "params": c.params, "columns": {}, "vs_glibc": {},
             "weft_vs_floor": {}}
        for col in c.cols:
            d["columns"][col] = summ.cell(c, col).as_dict()
            if col != "glibc":
                p = summ.pairs.get((c.key(), col, "glibc")) or []
                d["vs_glibc"][col] = {"ratio_of_medians": summ.speedup(c, col),
                                      "paired_min": min(p) if p else None,
                                      "paired_max": max(p) if p else None}
            if col in FLOOR_COLS and "weft" in c.cols:
                p = summ.pairs.get((c.key(), "weft", col)) or []
                d["weft_vs_floor"][col] = {"ratio_of_medians": summ.speedup(c, "weft", col),
                                           "paired_min": min(p) if p else None,
                                           "paired_max": max(p) if p else None}
        data["configs"].append(d)
    for r in runs:
        c = r["config"]
        data["runs"].append({"rep": r["rep"], "experiment": c.exp, "variant": c.variant,
                             "pin": c.pin, "column": r["column"], "status": r["status"],
                             "value": r.get("value"), "wall_s": round(r["wall"], 4),
                             "why": r.get("why", ""), "result": r.get("kv", {})})
    with open(os.path.join(opt.out, "results.json"), "w") as f:
        json.dump(data, f, indent=1)


# ------------------------------------------------------------ main

def build_programs(opt):
    """make -C bench progs, unless --bindir names ready programs."""
    r = subprocess.run(["make", "-s", "-C", HERE, "progs", f"OUT={opt.bindir}"],
                       stdout=sys.stderr, stderr=sys.stderr)
    if r.returncode != 0:
        sys.exit("weft bench: building the benchmark programs failed (make -C bench progs)")


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="weft bench",
        description="weft against glibc (and musl) on the experiments of the papers, "
                    "A/B interleaved; writes runs.csv, results.json, SVG plots and report.md")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes and 3 repetitions: well under a minute, checks that "
                         "everything runs (not for conclusions)")
    ap.add_argument("--out", help="output folder (default bench/results/run-<UTC time>)")
    ap.add_argument("--only", default="",
                    help="comma list of experiments: " + ",".join(EXP_NAMES))
    ap.add_argument("--pin", choices=("both", "yes", "no"), default="both",
                    help="run pinned to one CPU (taskset -c 0), unpinned, or both (default)")
    ap.add_argument("--reps", type=int, help="repetitions (default 5; 3 with --quick)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="no untimed warm-up runs")
    ap.add_argument("--full-grid", action="store_true",
                    help="the paper's whole creation matrix: T=1..20 x C=1..10, 100000 "
                         "creations per cell (many hours)")
    ap.add_argument("--set", action="append", default=[], metavar="SIZE=VALUE",
                    help="override a run size, e.g. --set lifecycle_n=500 (see --list)")
    ap.add_argument("--list", action="store_true", help="list experiments and sizes, then exit")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per run before it is killed and reported as a timeout "
                         "(default 300; 30 with --quick)")
    ap.add_argument("--weft-lib", default=os.path.join(REPO, "build", "libweft.so"),
                    help="the library preloaded in the weft column")
    ap.add_argument("--no-weft", action="store_true", help="leave out the weft column")
    ap.add_argument("--base-lib", help="a second libweft.so (e.g. the build before a change) "
                    "in a column of its own, paired with weft in every repetition")
    ap.add_argument("--no-musl", dest="musl", action="store_false",
                    help="leave out the musl column (default: used when musl-gcc exists)")
    ap.add_argument("--no-floor", action="store_true", help="leave out the floor columns")
    ap.add_argument("--fake-weft", action="store_true",
                    help="A/A test of the method: the weft column runs glibc (no preload)")
    ap.add_argument("--bindir", help="use the programs in this folder as they are (no build)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--keep-rt-throttling", action="store_true",
                    help="leave the kernel's RT throttling (sched_rt_runtime_us) as it is; by "
                         "default the latency runs turn it off (-1) and restore it after each run")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="compiler named in the report")
    opt = ap.parse_args(argv)
    opt.argv_shown = shown_args(argv if argv is not None else sys.argv[1:])

    if opt.list:
        for name, title, paper, metric in EXPERIMENTS:
            print(f"{name:12s} {title} ({paper}): {metric}")
        print("\nsizes (full / quick), change with --set NAME=VALUE:")
        for k, (f, q) in SIZES.items():
            print(f"  {k:22s} {f} / {q}")
        return 0
    opt.only_set = set(opt.only.split(",")) - {""} if opt.only else set(EXP_NAMES)
    unknown = opt.only_set - set(EXP_NAMES)
    if unknown:
        ap.error(f"--only: unknown experiment(s) {', '.join(sorted(unknown))}; "
                 f"known: {', '.join(EXP_NAMES)}")
    if opt.reps is None:
        opt.reps = 3 if opt.quick else 5
    if opt.reps < 1:
        ap.error("--reps must be at least 1")
    if opt.timeout is None:
        opt.timeout = 30.0 if opt.quick else 300.0
    if not opt.no_weft and not opt.fake_weft:
        opt.weft_lib = os.path.abspath(opt.weft_lib)
        if not os.path.exists(opt.weft_lib):
            sys.exit(f"weft bench: {opt.weft_lib} missing: run `make` first (or --no-weft)")
    if opt.base_lib:
        opt.base_lib = os.path.abspath(opt.base_lib)
        if not os.path.exists(opt.base_lib):
            sys.exit(f"weft bench: --base-lib {opt.base_lib} missing")
    if opt.pin != "no" and not shutil.which("taskset"):
        sys.exit("weft bench: taskset (util-linux) is needed for pinned runs; or --pin no")
    if opt.musl and not opt.bindir and not shutil.which("musl-gcc"):
        opt.musl = False
    started = datetime.datetime.now(datetime.timezone.utc)
    if opt.bindir:
        opt.bindir = os.path.abspath(opt.bindir)
    else:
        opt.bindir = os.path.join(REPO, "build", "bench")
        build_programs(opt)
    opt.out = os.path.abspath(opt.out or os.path.join(
        HERE, "results", f"run-{started:%Y%m%d-%H%M%S}{'-quick' if opt.quick else ''}"))
    if os.path.exists(opt.out) and not os.path.isdir(opt.out):
        sys.exit(f"weft bench: --out {opt.out} is not a folder")
    os.makedirs(opt.out, exist_ok=True)
    for fn in os.listdir(opt.out):  # an earlier run's files must not pass for this one's
        if fn.endswith((".svg", ".dat", ".gp")) or fn in ("runs.csv", "results.json", "report.md"):
            os.remove(os.path.join(opt.out, fn))

    S = sizes(opt)
    plan = build_plan(opt, S)
    opt.rt_throttle = None
    if any(c.exp == "latency" for c in plan) and not opt.keep_rt_throttling:
        opt.rt_throttle = B.RtThrottle()
    if not plan:
        sys.exit("weft bench: nothing to run (check --only and --set)")
    for c in plan:
        c.cols = columns_for(c, opt)
        for col in c.cols:
            p = c.argv(col, opt)[3 if c.taskset() else 0]
            if not os.access(p, os.X_OK):
                sys.exit(f"weft bench: {p} is missing (make -C bench progs)")
    facts = B.machine_facts(REPO, opt.cc)
    lib_before = B.lib_fingerprint(opt.weft_lib) if not opt.no_weft and not opt.fake_weft else None
    cols = sorted({col for c in plan for col in c.cols}, key=list(COLUMN_TITLE).index)
    B.log(f"weft bench: {len(plan)} configurations x {opt.reps} repetitions, columns "
          f"{', '.join(cols)}; output in {rel(opt.out)}")
    t0 = time.monotonic()
    steal0 = B.cpu_times()
    try:
        runs, interrupted = run_all(plan, opt, os.path.join(opt.out, "runs.csv"))
    finally:
        if opt.rt_throttle:
            opt.rt_throttle.close()
    elapsed = time.monotonic() - t0
    facts += run_facts(plan, runs, opt, steal0)
    summ = Summary(plan, runs)
    drawn = plots(opt, plan, summ)
    lib_after = B.lib_fingerprint(opt.weft_lib) if lib_before else None
    lib_info = (lib_before, lib_before != lib_after)
    write_json(opt, plan, runs, summ, facts, started, elapsed, interrupted)
    body = write_report(opt, plan, runs, summ, drawn, facts, started, elapsed, interrupted,
                        lib_info)
    print("\n".join(body))
    bad = [r for r in runs if r["status"] not in ("ok", "skipped") and r["rep"] != "warm-up"]
    skipped = sum(1 for r in runs if r["status"] == "skipped" and r["rep"] != "warm-up")
    print(f"{len(runs)} runs in {B.fmt_secs(elapsed)}; {len(bad)} gave no number"
          + (f", {skipped} skipped" if skipped else "") + ".")
    print(f"Results in {rel(opt.out)}/ (report.md, runs.csv, results.json, {len(drawn)} SVG plots)")
    if interrupted:
        return 1
    return 2 if bad else 0


def stop_on_signal(signum, frame):
    """SIGTERM and SIGHUP end the run as Ctrl-C does: the running program
    is killed, RT throttling restored, the report of the runs done written."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    # `weft bench ... | head` should end quietly when head has had enough
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGHUP, stop_on_signal)
    sys.exit(main())
