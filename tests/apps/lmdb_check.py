# check-apps: LMDB (python3-lmdb over liblmdb 0.9.24), whose lock file
# holds two robust, process-shared mutexes: the reader-table mutex and
# the writer mutex that every write transaction holds from begin to
# commit.  Run as
#     lmdb_check.py drive DIR SERVED_LOG [WEFT_CMD...]
# it runs, one after another, each step in child processes of its own:
#   1. threads: 4 threads of one process write 200 transactions each
#      (the writer mutex is contended inside one process);
#   2. mixed: two processes write 150 transactions each at the same time
#      and every transaction also increments one shared counter (a lost
#      update would show as a short count);
#   3. three kill-and-recover rounds: a process begins a write
#      transaction, stores a key and is killed with SIGKILL while it holds
#      the writer mutex; the lock file must then show the kernel marked
#      the mutex's owner dead (FUTEX_OWNER_DIED in its word), and the next
#      writer must get past it (LMDB takes EOWNERDEAD, cleans up and calls
#      pthread_mutex_consistent), commit, and not see the dead writer's key.
#      A third process keeps the environment open meanwhile: the last
#      process to close it lets the next opener re-initialise the lock
#      file, which would skip the recovery under test.
# The children that run on weft in the weft run, and the libraries of
# each step, are chosen here (procs.py runs them and checks who served
# each): step 2 and the kill rounds mix glibc and weft processes on one
# environment.  Deterministic results go to stdout, what differs between
# the runs to SERVED_LOG, diagnostics to stderr.
import hashlib, os, signal, struct, sys, threading

import lmdb

from procs import LIMIT, Driver, child_main, line

MAP_SIZE = 64 << 20
WMUTEX_OFFSET = 64       # lock.mdb: the writer mutex (after a 64-byte cache line)
OWNER_DIED = 0x40000000  # the kernel's FUTEX_OWNER_DIED bit


def open_env(d):
    return lmdb.open(d, map_size=MAP_SIZE, max_readers=64)


def value(*parts):
    return hashlib.sha256(repr(parts).encode()).hexdigest().encode()


# ------------------------------------------------------------ children
def child_threads(d, nthreads, ntxn):
    env = open_env(d)
    errors = []

    def writer(t):
        try:
            for i in range(ntxn):
                with env.begin(write=True) as txn:
                    for k in range(5):
                        txn.put(b't%d:%04d:%d' % (t, i, k), value(t, i, k))
        except Exception as e:  # reported, and fails the step
            errors.append('thread %d: %r' % (t, e))

    ts = [threading.Thread(target=writer, args=(t,)) for t in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    env.close()
    if errors:
        sys.exit('; '.join(errors))


def child_writer(d, wid, ntxn):
    env = open_env(d)
    print('ready', flush=True)
    sys.stdin.readline()  # "go": both writers start together
    for i in range(ntxn):
        with env.begin(write=True) as txn:
            n = int(txn.get(b'counter', b'0'))
            txn.put(b'counter', b'%d' % (n + 1))
            txn.put(b'w%s:%04d' % (wid.encode(), i), value(wid, i))
    env.close()


def child_hold(d):
    env = open_env(d)
    print('open', flush=True)
    sys.stdin.read()  # until the driver closes the pipe
    env.close()


def child_doomed(d, tag):
    env = open_env(d)
    txn = env.begin(write=True)
    txn.put(b'doomed:' + tag.encode(), b'never committed')
    print('holding %d' % threading.get_native_id(), flush=True)
    sys.stdin.read()  # killed here, inside the write transaction


def child_recover(d, tag):
    env = open_env(d)
    with env.begin(write=True) as txn:
        txn.put(b'recovered:' + tag.encode(), value('recovered', tag))
    env.close()


def child_dump(d):
    env = open_env(d)
    h, n = hashlib.sha256(), 0
    groups = {}
    with env.begin() as txn:
        for k, v in txn.cursor():
            h.update(k + b'=' + v + b'\n')
            n += 1
            g = k.split(b':')[0].decode()
            groups[g] = groups.get(g, 0) + 1
    env.close()
    print('entries=%d digest=%s' % (n, h.hexdigest()[:32]))
    print('keys: ' + ' '.join('%s=%d' % kv for kv in sorted(groups.items())))


CHILDREN = {'threads': child_threads, 'writer': child_writer, 'hold': child_hold,
            'doomed': child_doomed, 'recover': child_recover, 'dump': child_dump}


# ------------------------------------------------------------ driver
def dump(drv, d):
    out = drv.finish(drv.start('dump', 'glibc', 'dump', d))
    return (out or 'dump failed\n').rstrip('\n').replace('\n', '; ')


def wmutex_word(d):
    with open(os.path.join(d, 'lock.mdb'), 'rb') as f:
        f.seek(WMUTEX_OFFSET)
        return struct.unpack('<I', f.read(4))[0]


def step_threads(drv, d):
    drv.finish(drv.start('threads', 'weft', 'threads', d, 4, 200))
    print('threads: 4 threads x 200 write transactions:', dump(drv, d))


def step_mixed(drv, d):
    a = drv.start('mixed-A', 'glibc', 'writer', d, 'A', 150)
    b = drv.start('mixed-B', 'weft', 'writer', d, 'B', 150)
    for p in (a, b):
        if line(p) != 'ready':
            drv.fail('%s did not open the environment' % p.name)
    for p in (a, b):  # both go at once
        drv.send(p, 'go\n')
    drv.finish(a)
    drv.finish(b)
    env = open_env(d)
    with env.begin() as txn:
        counter = int(txn.get(b'counter', b'0'))
    env.close()
    print('mixed: 2 processes x 150 transactions: counter=%d (expected 300);' % counter,
          dump(drv, d))
    if counter != 300:
        drv.fail('mixed: counter %d, expected 300: lost updates' % counter)


def step_kill(drv, d, n, keeper_lib, doomed_lib, recover_lib):
    tag = 'round%d' % n
    keeper_lib, doomed_lib, recover_lib = map(drv.lib, (keeper_lib, doomed_lib, recover_lib))
    pairing = 'killed %s writer, %s recovers (%s keeps it open)' % (
        doomed_lib, recover_lib, keeper_lib)
    drv.note('kill round %d: %s' % (n, pairing))
    keeper = drv.start('keeper-%d' % n, keeper_lib, 'hold', d)
    if line(keeper) != 'open':
        drv.fail('keeper-%d did not open the environment' % n)
    doomed = drv.start('doomed-%d' % n, doomed_lib, 'doomed', d, tag)
    holding = line(doomed).split()
    owner = int(holding[1]) if len(holding) == 2 and holding[0] == 'holding' else -1
    word_held = wmutex_word(d)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=LIMIT)
    word_dead = wmutex_word(d)
    held_ok = owner > 0 and (word_held & 0x3fffffff) == owner
    died_ok = bool(word_dead & OWNER_DIED)
    rec_ok = drv.finish(drv.start('recover-%d' % n, recover_lib, 'recover', d, tag)) is not None
    drv.finish(keeper)
    env = open_env(d)
    with env.begin() as txn:
        doomed_seen = txn.get(b'doomed:' + tag.encode()) is not None
        recovered = txn.get(b'recovered:' + tag.encode()) is not None
    env.close()
    print('kill round %d: writer mutex held by the writer: %s; owner-died after SIGKILL: %s; '
          'next writer committed: %s; killed writer\'s key gone: %s'
          % (n, yes(held_ok), yes(died_ok), yes(rec_ok and recovered), yes(not doomed_seen)))
    drv.note('kill round %d: wmutex word while held 0x%08x (owner tid %d), after SIGKILL '
             '0x%08x' % (n, word_held, owner, word_dead))
    if not (held_ok and died_ok and rec_ok and recovered and not doomed_seen):
        drv.fail('kill round %d (%s) did not recover as expected' % (n, pairing))


def yes(b):
    return 'yes' if b else 'NO'


def drive(d, served_log, weft_cmd):
    drv = Driver(__file__, served_log, weft_cmd)
    for sub in ('threads', 'mixed', 'kill'):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    step_threads(drv, os.path.join(d, 'threads'))
    step_mixed(drv, os.path.join(d, 'mixed'))
    k = os.path.join(d, 'kill')
    # (keeper, killed writer, recovering writer)
    for n, libs in enumerate((('glibc', 'weft', 'weft'), ('weft', 'weft', 'glibc'),
                              ('weft', 'glibc', 'weft')), 1):
        step_kill(drv, k, n, *libs)
    print('kill rounds, all keys:', dump(drv, k))
    return 1 if drv.failed else 0


if __name__ == '__main__':
    if sys.argv[1] == 'child':
        child_main(CHILDREN, sys.argv[2:])
    else:
        sys.exit(drive(sys.argv[2], sys.argv[3], sys.argv[4:]))
