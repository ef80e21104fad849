#!/usr/bin/env python3
"""Runs bench/tsd_cancel under glibc and under weft, A/B interleaved, and
prints a table of medians and ratios (issue 5's benchmark: thread-specific
data and non-cancelling cancellation points).

    python3 bench/tsd_run.py [--bindir build/bench] [--lib build/libweft.so]
                             [--reps 7] [-n 2000000] [--out FILE.md]

Every repetition runs the program once under each implementation, back to
back, the order flipping on alternate repetitions, so a drift of the
machine hits both alike.  Cells are the median over repetitions, +- half
the range relative to the median.  ratio = weft / glibc time per call:
below 1 means weft is faster.  A run whose pthread_lib is not the expected
library (a preload that did not take) is an error.

The figures are only meaningful on a quiet machine; this script writes
nothing unless --out is given.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

METRICS = [
    ("getspecific_ns", "pthread_getspecific"),
    ("setspecific_ns", "pthread_setspecific"),
    ("testcancel_ns", "pthread_testcancel"),
    ("write_ns", "write(/dev/null, 1 byte)"),
    ("read_ns", "read(/dev/zero, 1 byte)"),
    ("syscall_write_ns", "syscall(SYS_write) (no cancellation point)"),
]


def run_once(binary, n, lib):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    out = subprocess.run([binary, "-n", str(n)], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (binary, out.returncode,
                                                   out.stderr.strip()))
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            kv = dict(f.split("=", 1) for f in line.split()[1:])
            want = "libweft" if lib else "libc"
            if want not in kv.get("pthread_lib", ""):
                raise RuntimeError("expected pthread_lib %s, got %s" %
                                   (want, kv.get("pthread_lib")))
            return kv
    raise RuntimeError("no RESULT line from %s" % binary)


def cell(values):
    med = statistics.median(values)
    spread = (max(values) - min(values)) / 2 / med * 100 if med else 0
    return med, "%.2f ±%.0f%%" % (med, spread)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libweft.so"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("-n", type=int, default=2000000)
    ap.add_argument("--out", help="also write the table to this file")
    a = ap.parse_args()

    binary = os.path.join(a.bindir, "tsd_cancel")
    lib = os.path.abspath(a.lib)
    for p in (binary, lib):
        if not os.path.exists(p):
            sys.exit("missing %s (make && make -C bench tsd-build)" % p)
    runs = {"glibc": [], "weft": []}
    for rep in range(a.reps):
        order = ["glibc", "weft"] if rep % 2 == 0 else ["weft", "glibc"]
        for impl in order:
            runs[impl].append(run_once(binary, a.n,
                                       lib if impl == "weft" else None))
        print("rep %d/%d done" % (rep + 1, a.reps), file=sys.stderr)

    lines = ["| call (ns per call, in a created thread) | glibc | weft | weft/glibc |",
             "|---|---:|---:|---:|"]
    for key, label in METRICS:
        g, gs = cell([float(r[key]) for r in runs["glibc"]])
        w, ws = cell([float(r[key]) for r in runs["weft"]])
        lines.append("| %s | %s | %s | %.2f |" % (label, gs, ws,
                                                  w / g if g else 0))
    lines.append("")
    lines.append("%d repetitions, n = %d (system calls: n/10), medians; "
                 "best of 5 batches per run." % (a.reps, a.n))
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
