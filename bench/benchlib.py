"""Plumbing of the weft benchmark driver (python3, standard library only).

Everything here is independent of which experiments exist: running one
program with a time limit and classifying the outcome, statistics over
repetitions, the progress line, gnuplot, machine facts.  The experiments
and the report are in weft_bench.py.

Outcome of one run (the `status` field of every raw record):

  ok        exit 0, a RESULT line, the headline metric a finite number
  crashed   killed by a signal (detail: "signal 11 (SIGSEGV)")
  timeout   still running after the per-run limit; its process group is killed
  failed    exit status other than 0 and 77 (detail: the last stderr line)
  noresult  exit 0 but no RESULT line, or the metric missing or not a number
  skipped   exit 77: the program cannot measure this here (e.g. SCHED_FIFO
            not permitted); detail: its last stderr line
  unserved  a number, but the functions it times were served by the wrong
            library (e.g. glibc in the weft column): not weft's number

Only `ok` runs give numbers; every other status is shown as such.
"""

import datetime
import hashlib
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time

SKIP_STATUS = 77  # bench/common.h BENCH_SKIP


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def int_list(text):
    """"1,2,5-7" -> [1, 2, 5, 6, 7]"""
    out = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if a:
            out.extend(range(int(a), int(b or a) + 1))
    if not out:
        raise ValueError("empty list")
    return out


# ------------------------------------------------------------ one run

def parse_result(stdout):
    """key=value pairs of the first line that starts with "RESULT ", or None."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            kv = {}
            for tok in line.split()[1:]:
                k, eq, v = tok.partition("=")
                if eq:
                    kv[k] = v
            return kv
    return None


def signal_text(num):
    try:
        return f"signal {num} ({signal.Signals(num).name})"
    except ValueError:
        return f"signal {num}"


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.communicate()


def run_program(argv, timeout, metric, env_extra=None):
    """Run argv (LD_PRELOAD cleared, env_extra added) and classify it.

    Returns a dict: status, wall (s), why (text for non-ok), value (float,
    ok only), kv (the RESULT pairs when there were any)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra or {})
    t0 = time.monotonic()
    try:
        # a session of its own: on a timeout the whole group is killed, so
        # no grandchild keeps the pipes (and the driver) waiting
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True, errors="replace",
                             start_new_session=True)
    except OSError as e:
        return {"status": "failed", "wall": 0.0, "why": f"cannot start: {e}"}
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        return {"status": "timeout", "wall": time.monotonic() - t0,
                "why": f"killed after {timeout:g} s"}
    except KeyboardInterrupt:
        # the program is in a session of its own, so Ctrl-C did not reach
        # it: end it before the driver writes its report
        kill_group(p)
        raise
    wall = time.monotonic() - t0
    lines = [ln for ln in (err or "").strip().splitlines() if ln.strip()]
    last = lines[-1][:160] if lines else ""
    kv = parse_result(out or "")
    rc = p.returncode
    res = {"wall": wall, "kv": kv or {}}
    # taskset and env exec the program, so its death by a signal shows here
    if rc < 0:
        res.update(status="crashed", signal=-rc, why=(signal_text(-rc) + " " + last).strip())
    elif rc == SKIP_STATUS:
        res.update(status="skipped", why=last or "the program skipped itself")
    elif rc != 0:
        res.update(status="failed", exit=rc, why=f"exit {rc} {last}".strip())
    elif kv is None:
        res.update(status="noresult", why=("no RESULT line " + last).strip())
    elif metric not in kv:
        res.update(status="noresult", why=f"RESULT has no {metric}=")
    else:
        try:
            value = float(kv[metric])
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or value < 0:
            res.update(status="noresult", why=f"{metric}={kv[metric][:40]} is not a number")
        else:
            res.update(status="ok", value=value)
    return res


def served_problem(kv, want):
    """None when every library key of a RESULT line names `want`; else text.

    The programs print pthread_lib=OBJECT (the life-cycle programs) or
    lib_FUNCTION=OBJECT for each function they time."""
    if want is None:
        return None
    bad = []
    for k, v in kv.items():
        if k == "pthread_lib" or k.startswith("lib_"):
            if not v.startswith(want):
                bad.append(f"{k.replace('lib_', '', 1) if k != 'pthread_lib' else 'pthread_create'}={v}")
    if bad:
        return "served by " + ", ".join(bad) + f" (expected {want})"
    return None


# ------------------------------------------------------------ RT throttling

# The kernel stops SCHED_FIFO/RR threads for the rest of each period once
# they have used sched_rt_runtime_us of it (950000 of 1000000 us by
# default): a latency run with busy FIFO threads would see 50 ms stalls
# that say nothing about the library.  -1 turns this off.  The tests point
# WEFT_BENCH_RT_RUNTIME at a file of their own.
RT_RUNTIME = os.environ.get("WEFT_BENCH_RT_RUNTIME", "/proc/sys/kernel/sched_rt_runtime_us")

# The guard: a process of its own that outlives the driver.  It waits for
# the end of its stdin (the driver's end of a pipe closes however the
# driver ends, SIGKILL included) and then puts the old value back if
# throttling is still off, unless the driver said "restored" first (then
# a -1 found there is someone else's).
_GUARD = r"""
import sys
path, old = sys.argv[1], sys.argv[2]
if sys.stdin.read().strip() == "restored":
    sys.exit(0)
try:
    with open(path) as f:
        off = f.read().strip() == "-1"
    if off:
        with open(path, "w") as f:
            f.write(old + "\n")
except OSError:
    pass
"""


class RtThrottle:
    """Turns RT throttling off (-1) around a run and back on after it.

    off() before a run, restore() after it (in a finally); restore() is
    harmless when nothing was changed.  `note` says what happened, for the
    report: whether throttling was off during the runs, and why not."""

    def __init__(self, path=RT_RUNTIME):
        self.path = path
        self.saved = None      # the value to put back while it is -1 by our hand
        self.original = None   # the value found before the first run
        self.note = None
        self.guard = None

    def read(self):
        with open(self.path) as f:
            return f.read().strip()

    def write(self, value):
        with open(self.path, "w") as f:
            f.write(value + "\n")

    def off(self):
        """Throttling off for the next run; False if it stays on."""
        try:
            old = self.read()
        except OSError as e:
            self.note = f"left as it was: cannot read {self.path}: {e.strerror}"
            return False
        if self.original is None:
            self.original = old
        if old == "-1":
            if self.note is None:
                self.note = f"already off (-1) in {self.path} before the run, left so"
            return True
        self.start_guard(old)
        try:
            self.write("-1")
        except OSError as e:
            self.note = f"left on ({old}): cannot write {self.path}: {e.strerror}"
            return False
        self.saved = old
        if self.note is None:
            self.note = (f"off (-1) during each latency run, {old} again after it "
                         f"({self.path})")
        return True

    def restore(self):
        if self.saved is None:
            return
        try:
            self.write(self.saved)
            self.saved = None
        except OSError as e:
            log(f"weft bench: cannot restore {self.path} to {self.saved}: {e.strerror}; "
                f"do it by hand: echo {self.saved} > {self.path}")

    def start_guard(self, old):
        if self.guard is not None and self.guard.poll() is None:
            return
        try:
            self.guard = subprocess.Popen(
                [sys.executable, "-c", _GUARD, self.path, old], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            log(f"weft bench: no guard for {self.path} ({e}); it is restored on normal exit only")

    def close(self):
        """Restore, then let the guard go (it finds nothing to do)."""
        self.restore()
        if self.guard is not None and self.guard.stdin:
            try:
                if self.saved is None:
                    self.guard.stdin.write(b"restored\n")
                self.guard.stdin.close()
            except OSError:
                pass
            try:
                self.guard.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.guard = None


# ------------------------------------------------------------ statistics

class Cell:
    """The runs of one configuration in one column."""

    def __init__(self, runs, higher):
        self.runs = runs
        self.higher = higher
        ok = [r for r in runs if r["status"] == "ok"]
        self.values = [r["value"] for r in ok]
        self.med = statistics.median(self.values) if self.values else None
        self.lo = min(self.values) if self.values else None
        self.hi = max(self.values) if self.values else None
        self.failures = {}
        for r in runs:
            if r["status"] != "ok":
                self.failures.setdefault(r["status"], r.get("why", ""))

    def spread_pct(self):
        """(max - min) / median in percent: the noise of this cell."""
        if len(self.values) < 2 or not self.med:
            return None
        return 100.0 * (self.hi - self.lo) / self.med

    def extra_all(self, key):
        """The finite values of RESULT key `key` in the ok runs."""
        vals = []
        for r in self.runs:
            if r["status"] == "ok":
                try:
                    vals.append(float(r["kv"][key]))
                except (KeyError, ValueError):
                    pass
        return [v for v in vals if math.isfinite(v)]

    def extra_med(self, key):
        vals = self.extra_all(key)
        return statistics.median(vals) if vals else None

    def failure_text(self):
        """What the table shows instead of a number."""
        parts = []
        for st, why in self.failures.items():
            if st == "crashed":
                # "crashed (signal 11)" and, if known, the name
                sig = next((r.get("signal") for r in self.runs if r["status"] == "crashed"), None)
                parts.append(f"crashed (signal {sig})" if sig else "crashed")
            elif st == "skipped":
                parts.append("skipped: " + short_reason(why))
            elif st == "noresult":
                parts.append("no result")
            elif st == "unserved":
                parts.append("not served by the library")
            elif st == "failed":
                rc = next((r.get("exit") for r in self.runs if r["status"] == "failed"), None)
                parts.append(f"failed (exit {rc})" if rc is not None else "failed")
            else:
                parts.append(st)
        return ", ".join(parts)

    def as_dict(self):
        return {"median": self.med, "min": self.lo, "max": self.hi,
                "spread_pct": self.spread_pct(), "ok": len(self.values), "runs": len(self.runs),
                "values": self.values,
                "failures": dict(self.failures),
                "shown_as": None if self.values else self.failure_text()}


def short_reason(why):
    """'SKIP needs SCHED_FIFO: pthread_create: ...' -> 'needs SCHED_FIFO'"""
    w = why
    if w.startswith("SKIP "):
        w = w[5:]
    return w.split(":", 1)[0].strip() or "skipped"


def speedup(a, b, higher):
    """How many times better value a is than b (> 1: a better)."""
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return a / b if higher else b / a


def fmt(x):
    """A number with 3-4 significant digits and a k/M suffix."""
    if x is None:
        return "n/a"
    a = abs(x)
    if a >= 1e7:
        return f"{x / 1e6:.3g}M"
    if a >= 1e4:
        return f"{x / 1e3:.4g}k"
    if a >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def fmt_secs(s):
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


# ------------------------------------------------------------ progress

class Progress:
    """One line on stderr: what runs now, how far, how long is left.

    The estimate assumes a run takes as long as the same configuration and
    column took last time (the mean run time for ones not seen yet): the
    experiments differ by 100x, so one global rate would mislead."""

    def __init__(self, total_runs, guess):
        self.total = total_runs
        self.done = 0
        self.t0 = time.monotonic()
        self.last = {}
        self.guess = guess  # function(key) -> seconds, for keys not run yet
        self.tty = sys.stderr.isatty()
        self.width = 0

    def show(self, text, remaining_keys):
        el = time.monotonic() - self.t0
        mean = el / self.done if self.done else None
        left = 0.0
        for k in remaining_keys:
            left += self.last.get(k) or mean or self.guess(k)
        line = (f"[{self.done}/{self.total} {fmt_secs(el)}, ~{fmt_secs(left)} left] {text}")
        if self.tty:
            pad = max(0, self.width - len(line))
            sys.stderr.write("\r" + line + " " * pad)
            sys.stderr.flush()
            self.width = len(line)
        else:
            log(line)

    def record(self, key, wall):
        self.done += 1
        self.last[key] = wall

    def finish(self):
        if self.tty and self.width:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.width = 0


# ------------------------------------------------------------ gnuplot

def gnuplot_available():
    return shutil.which("gnuplot") is not None


def write_dat(path, header, rows):
    with open(path, "w") as f:
        f.write("# " + " ".join(header) + "\n")
        for row in rows:
            f.write(" ".join("NaN" if v is None else
                             (f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row) + "\n")


def draw(outdir, name, script):
    """Write NAME.gp and run gnuplot on it in outdir; True if NAME.svg exists."""
    with open(os.path.join(outdir, name + ".gp"), "w") as f:
        f.write(script)
    try:
        r = subprocess.run(["gnuplot", name + ".gp"], cwd=outdir, capture_output=True,
                           text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        log(f"gnuplot {name}.gp could not run: {e}")
        return False
    if r.returncode != 0:
        log(f"gnuplot {name}.gp failed: {r.stderr.strip()[:300]}")
        return False
    return os.path.exists(os.path.join(outdir, name + ".svg"))


SVG_TERMINAL = "set terminal svg size 900,540 dynamic font 'sans,11'"


# ------------------------------------------------------------ machine facts

def cmd_output(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts(repo, cc):
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
    facts.append(("CPUs (online / usable)", f"{os.cpu_count()} / {len(os.sched_getaffinity(0))}"))
    facts.append(("kernel", f"{platform.system()} {platform.release()} {platform.machine()} "
                            f"({platform.version()})"))
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
    ccv = cmd_output([cc, "--version"])
    facts.append(("compiler", ccv.splitlines()[0] if ccv else cc))
    if shutil.which("musl-gcc"):
        ver = cmd_output(["dpkg-query", "-W", "-f", "${Version}", "musl-dev"])
        facts.append(("musl", ("musl-dev " + ver) if ver else "musl-gcc present"))
    try:
        la = os.getloadavg()
        facts.append(("load average at start", f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"))
    except OSError:
        pass
    git = cmd_output(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    dirty = cmd_output(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"])
    if git and " " not in git:
        facts.append(("weft tree", git + (" (uncommitted changes)" if dirty else "")))
    return facts


def cpu_times():
    """(steal, total) jiffies of all CPUs from /proc/stat, or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is in user)
    return (v[7] if len(v) > 7 else 0), sum(v[:8])


def steal_text(before, after):
    """The share of CPU time a hypervisor gave to others between two
    cpu_times() readings: on a VM, time no program here could use."""
    if not before or not after or after[1] <= before[1]:
        return None
    return f"{100.0 * (after[0] - before[0]) / (after[1] - before[1]):.1f} % of the CPU time"


def lib_fingerprint(path):
    """Size, time stamp and checksum: a library rebuilt during the run shows."""
    try:
        st = os.stat(path)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            h.update(f.read())
        when = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
        return f"{path} ({st.st_size} bytes, built {when:%Y-%m-%d %H:%M} UTC, sha256 {h.hexdigest()[:12]})"
    except OSError:
        return f"{path} (missing)"
