# check-apps: child processes of the python-driven checks (lmdb_check.py,
# tdb_check.py), each on a library the driver chooses: plain glibc, or
# weft through WEFT_CMD (`env WEFT_STATS=1 ... weft run --`).  With no
# WEFT_CMD (the glibc run of check-apps) every child runs on glibc, so
# both runs print the same results.
#
# A child's first line on stdout says which library serves it
# (weft_active() through ctypes); the driver checks it against the one
# it chose and writes "NAME expected=LIB actual=LIB" to SERVED_LOG, which
# run.sh checks too.  A child's stderr (its WEFT_STATS report) passes
# through.  Every child is bounded in time: one that hangs (on a dead
# owner's mutex, say) is killed and fails the check.
import ctypes, os, subprocess, sys

LIMIT = 60  # seconds for any one child


def served_by():
    try:
        return 'weft' if ctypes.CDLL(None).weft_active() == 1 else 'glibc'
    except AttributeError:
        return 'glibc'


def child_main(children, argv):
    """argv: ROLE ARG...; numbers are passed as ints."""
    print('lib=%s' % served_by(), flush=True)
    children[argv[0]](*[int(a) if a.isdigit() else a for a in argv[1:]])


def line(p):
    return p.stdout.readline().decode().strip()


class Driver:
    def __init__(self, script, served_log, weft_cmd):
        self.script = os.path.abspath(script)
        self.log = open(served_log, 'a')
        self.weft_cmd = weft_cmd
        self.failed = []

    def lib(self, lib):
        """The library a child asked to run on lib really runs on."""
        return lib if self.weft_cmd else 'glibc'

    def start(self, name, lib, role, *args):
        """Starts `SCRIPT child ROLE ARGS` on lib ('weft' or 'glibc') and
        reads its first line."""
        lib = self.lib(lib)
        cmd = [sys.executable, self.script, 'child', role] + [str(a) for a in args]
        env = dict(os.environ)
        if lib == 'weft':
            cmd = self.weft_cmd + cmd
        else:
            env.pop('LD_PRELOAD', None)
        # Unbuffered: readline() then takes no more than its line, and
        # communicate() gets the rest.
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, bufsize=0)
        p.name, p.lib = name, lib
        got = line(p)
        self.log.write('%s expected=%s actual=%s\n' % (name, lib, got[4:] or 'none'))
        self.log.flush()
        if got != 'lib=' + lib:
            self.fail('%s: expected lib=%s, the child said %r' % (name, lib, got))
        return p

    def send(self, p, text):
        try:
            p.stdin.write(text.encode())
            p.stdin.flush()
        except BrokenPipeError:
            pass  # it died: finish() tells

    def finish(self, p):
        """Closes the child's stdin and waits for it: its stdout, or None
        if it failed (the failure is recorded)."""
        try:
            out, _ = p.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail('%s (%s): still running after %d s, killed' % (p.name, p.lib, LIMIT))
            return None
        if p.returncode != 0:
            self.fail('%s (%s): exit status %d; it said: %s'
                      % (p.name, p.lib, p.returncode, out.decode().strip()))
            return None
        return out.decode()

    def note(self, text):
        self.log.write(text + '\n')
        self.log.flush()

    def fail(self, why):
        print('FAILED: ' + why, file=sys.stderr, flush=True)
        self.failed.append(why)
