#!/usr/bin/env python3
"""Checks the build's header dependencies (issue 18).

    tools/check-deps.py [VAR=VALUE ...]    (.ci/run: no arguments)

The arguments go to every make command, e.g. B=build-clang CC=clang
CXX=clang++ (B, the build directory, defaults to build).  It builds the
library, launcher, tests and bench programs (make tests bench-progs) and
checks that `make -q` then says everything is up to date, and that every
target `make -n -B` would compile has left its dependency file
(B/dep/T.d, B/bench/dep/P.d).  Then, for every header under include/,
src/, tests/ and bench/, one at a time:

  * it sets the header's modification time to now (put back afterwards,
    also on failure or Ctrl-C; contents are never changed);
  * `make -q` (top level `tests`, and `make -C bench progs`) must report
    out of date exactly when some dependency file names the header;
  * the set of targets `make -n` would compile (the -MT of every compiler
    command) must equal the set of targets whose dependency file names
    the header: everything that includes it is rebuilt, nothing else.

Relinking libweft.so/.a after its objects is expected and not counted
(the link commands carry no -MT).  A header no target includes is listed
as unused; make must then rebuild nothing.  Exit status 1 on any
mismatch.  About 3 s on the 2-CPU VM once the build is up to date.
"""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
ARGS = sys.argv[1:]
B = ([a[2:] for a in ARGS if a.startswith("B=")] or ["build"])[-1]
MAKE = ["make", "--no-print-directory", "B=" + B] + ARGS
TOP = MAKE + ["tests"]
BENCH = MAKE + ["-C", "bench", "progs"]


def norm(path):
    """A path from a dependency file or a command line, relative to ROOT.
    Headers are named through the include views (B/inc/LAYER/...,
    symbolic links into src/, see the Makefile's layers): the file they
    name is what counts."""
    return os.path.relpath(os.path.realpath(os.path.join(ROOT, path)), ROOT)


def read_dep(path):
    """(target, prerequisites) of the first rule of a -MMD file."""
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    target, _, prereqs = first.partition(": ")
    return norm(target), {norm(p) for p in prereqs.split()}


def dep_files():
    for top in (os.path.join(B, "dep"), os.path.join(B, "bench", "dep")):
        for d, _, files in os.walk(top):
            for f in files:
                if f.endswith(".d"):
                    yield os.path.join(d, f)


def compiled(cmd, *flags):
    """Targets `make -n` would compile: the -MT of each compiler command."""
    out = subprocess.run(cmd + ["-n", *flags], capture_output=True, text=True, check=True).stdout
    return {norm(t) for t in re.findall(r"-MT (\S+)", out)}


def up_to_date(cmd):
    return subprocess.run(cmd + ["-q"], capture_output=True).returncode == 0


def main():
    t0 = time.monotonic()
    jobs = "-j" + str(min(os.cpu_count() or 1, 2))
    for cmd in (TOP, BENCH):
        r = subprocess.run(cmd + [jobs], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("check-deps: build failed: %s\n%s" % (" ".join(cmd), r.stdout + r.stderr))
    for cmd in (TOP, BENCH):
        if not up_to_date(cmd):
            sys.exit("check-deps: `%s -q` says out of date right after the build" % " ".join(cmd))

    users = {}  # header -> targets whose dependency file names it
    have_dep = set()
    for path in dep_files():
        target, prereqs = read_dep(path)
        have_dep.add(target)
        for p in prereqs:
            if p.endswith(".h"):
                users.setdefault(p, set()).add(target)
    # Every target the compiler makes (make -B: all of them) must have
    # left its dependency file, or a header edit would miss it.
    everything = compiled(TOP, "-B") | compiled(BENCH, "-B")
    if not everything or everything - have_dep:
        sys.exit("check-deps: targets without a dependency file: %s"
                 % (" ".join(sorted(everything - have_dep)) or "(no compiler command has -MT)"))

    headers = sorted(
        os.path.relpath(os.path.join(d, f), ROOT)
        for top in ("include", "src", "tests", "bench")
        for d, _, files in os.walk(top)
        for f in files
        if f.endswith(".h"))
    bad = 0
    unused = []
    for h in headers:
        st = os.stat(h)
        want = users.get(h, set())
        try:
            now = time.time_ns()
            os.utime(h, ns=(now, now))
            got = compiled(TOP) | compiled(BENCH)
            stale = not up_to_date(TOP) or not up_to_date(BENCH)
        finally:
            os.utime(h, ns=(st.st_atime_ns, st.st_mtime_ns))
        if not want:
            unused.append(h)
        problems = []
        if stale != bool(want):
            problems.append("make -q says %s" % ("out of date" if stale else "up to date"))
        if got - want:
            problems.append("rebuilds targets that do not include it: " + " ".join(sorted(got - want)))
        if want - got:
            problems.append("does not rebuild targets that include it: " + " ".join(sorted(want - got)))
        if problems:
            bad += 1
            print("FAIL %s: %s" % (h, "; ".join(problems)))
        else:
            print("ok   %-34s %3d target(s)" % (h, len(want)))
    for cmd in (TOP, BENCH):
        if not up_to_date(cmd):
            bad += 1
            print("FAIL: `%s -q` says out of date after the mtimes were restored" % " ".join(cmd))
    if unused:
        print("unused (no target includes them): " + " ".join(unused))
    print("%d header(s), %d failed, %.0f s" % (len(headers), bad, time.monotonic() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
