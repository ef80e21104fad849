#!/usr/bin/env python3
"""The lock ring, libraries rotated round by round (python3, stdlib only).

weft bench runs each configuration as separate processes, one after the
other; on a shared VM whose speed drifts in phases of seconds, two runs
of a pair can land in different phases.  This driver keeps one
`sync_ring -r` process per column alive and triggers one round in each,
in an order that rotates every round, so that each round's columns ran
within a few seconds of each other.  The ratio is taken per round
(glibc's time / the column's: > 1, the column is faster) and the
report is the median and range of those ratios.

Columns: glibc (no preload), weft (LD_PRELOAD=--weft-lib), base
(LD_PRELOAD=--base-lib, or --weft-lib with --base-env's variables,
when either is given) and floor (`-m futex`, the raw
futex lock with no library in the path).

Example, N 4 and 8, 9 rounds, unpinned and on one CPU:
    bench/ring_rotate.py -N 4,8 --rounds 9 --pin both
"""

import argparse
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(prog, steps, env_extra, pin, floor):
    argv = [prog, "-r", "-i", str(steps)] + (["-m", "futex"] if floor else [])
    if pin:
        argv = ["taskset", "-c", "0"] + argv
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, text=True, bufsize=1)


def one_round(p, n):
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line.startswith("RESULT "):
        sys.exit(f"ring_rotate: no RESULT line (got {line!r})")
    kv = dict(tok.split("=", 1) for tok in line.split()[1:] if "=" in tok)
    return float(kv["us_per_step"]), kv.get("lib_pthread_mutex_lock", "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-N", default="2,4,8,16,32", help="thread counts (default 2,4,8,16,32)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds per N (default 7)")
    ap.add_argument("--steps", type=int, default=20000, help="steps per thread (default 20000)")
    ap.add_argument("--pin", choices=("no", "cpu0", "both"), default="no")
    ap.add_argument("--prog", default=os.path.join(REPO, "build", "bench", "sync_ring"))
    ap.add_argument("--weft-lib", default=os.path.join(REPO, "build", "libweft.so"))
    ap.add_argument("--base-lib", help="a second weft build, as column base")
    ap.add_argument("--env", action="append", default=[],
                    help="K=V for the weft column only (e.g. WEFT_YIELD_WAIT=0)")
    ap.add_argument("--base-env", action="append", default=[],
                    help="K=V for the base column only; with no --base-lib, base is --weft-lib")
    ap.add_argument("--col", action="append", default=[], metavar="NAME=LIB[,K=V...]",
                    help="one more weft column: its library and its environment")
    opt = ap.parse_args()
    ns = [int(x) for x in opt.N.split(",")]
    weft_env = {"LD_PRELOAD": os.path.abspath(opt.weft_lib)}
    weft_env.update(kv.split("=", 1) for kv in opt.env)
    cols = {"glibc": ({}, False), "weft": (weft_env, False), "floor": ({}, True)}
    if opt.base_lib or opt.base_env:
        base_env = {"LD_PRELOAD": os.path.abspath(opt.base_lib or opt.weft_lib)}
        base_env.update(kv.split("=", 1) for kv in opt.base_env)
        cols["base"] = (base_env, False)
    for spec in opt.col:
        name, _, rest = spec.partition("=")
        lib, *kvs = rest.split(",")
        env = {"LD_PRELOAD": os.path.abspath(lib or opt.weft_lib)}
        env.update(kv.split("=", 1) for kv in kvs)
        cols[name] = (env, False)
    pins = {"no": [False], "cpu0": [True], "both": [False, True]}[opt.pin]
    for pin in pins:
        procs = {c: start(opt.prog, opt.steps, e, pin, fl) for c, (e, fl) in cols.items()}
        names = list(cols)
        for n in ns:
            us = {c: [] for c in names}
            for r in range(opt.rounds):
                k = r % len(names)
                for c in names[k:] + names[:k]:
                    t, lib = one_round(procs[c], n)
                    want = "libc.so.6" if c in ("glibc", "floor") else "libweft.so"
                    if c != "floor" and want not in lib:
                        sys.exit(f"ring_rotate: column {c} was served by {lib}, not {want}")
                    us[c].append(t)
            where = "cpu0" if pin else "unpinned"
            line = [f"{where} N{n}:"]
            line += [f"{c} {statistics.median(us[c]):.3f}" for c in names]
            for c in names:
                if c == "glibc":
                    continue
                rs = sorted(g / x for g, x in zip(us["glibc"], us[c]))
                line.append(f"| {c}/glibc {statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})")
            print(" ".join(line), flush=True)
        for p in procs.values():
            p.stdin.close()
            p.wait()


if __name__ == "__main__":
    main()
