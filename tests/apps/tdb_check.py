# check-apps: TDB (python3-tdb over libtdb 1.4) opened with mutex
# locking: TDB_MUTEX_LOCKING (4096; the binding exports no name for it)
# keeps a robust, process-shared, error-checking mutex per hash chain in
# the file, and tdb_open first runs tdb_runtime_check_for_robust_mutexes():
# it forks a child that locks such a mutex and exits holding it, then
# wants EBUSY, EOWNERDEAD, pthread_mutex_consistent and EDEADLK from the
# library; if any answer is wrong the open fails (ENOSYS).  Run as
#     tdb_check.py drive DIR SERVED_LOG [WEFT_CMD...]
# (procs.py: who runs where, and the proof of who served each child):
#   1. a process (weft in the weft run) opens DIR/mutex.tdb with mutexes,
#      stores 200 records and fetches them back, and checks the file's
#      header says mutexes are on (the TDB_FEATURE_FLAG_MUTEX feature and
#      a mutex area);
#   2. while it keeps the file open, a second process (glibc in the weft
#      run) opens it with mutexes too, stores 200 records of its own and
#      fetches the first one's; then the first fetches the second's.
import hashlib, os, struct, sys

import tdb

from procs import Driver, child_main, line

MUTEX_LOCKING = 4096   # TDB_MUTEX_LOCKING in tdb.h
CLEAR_IF_FIRST = 1     # tdb.CLEAR_IF_FIRST: required with mutexes
FEATURE_MAGIC = 0x0bad1a52
FEATURE_MUTEX = 1


def open_tdb(path):
    return tdb.open(path, 0, MUTEX_LOCKING | CLEAR_IF_FIRST, os.O_RDWR | os.O_CREAT, 0o600)


def value(tag, i):
    return hashlib.sha256(b'%s:%d' % (tag, i)).hexdigest().encode()


def store(t, tag, n):
    for i in range(n):
        t[b'%s:%04d' % (tag, i)] = value(tag, i)


def check(t, tag, n):
    """How many of tag's n records read back right."""
    return sum(t.get(b'%s:%04d' % (tag, i)) == value(tag, i) for i in range(n))


def header_mutexes(path):
    """(feature flags say mutex, size of the mutex area) from the header:
    magic text (32 bytes), then 32-bit version, hash_size, rwlocks (the
    feature magic), recovery_start, sequence_number, magic1_hash,
    magic2_hash, feature_flags, mutex_size.  Read by the driver: a
    process that closes any descriptor of the file loses its fcntl locks
    on it, the one CLEAR_IF_FIRST relies on too."""
    with open(path, 'rb') as f:
        h = f.read(72)
    rwlocks, = struct.unpack_from('<I', h, 40)
    flags, size = struct.unpack_from('<II', h, 60)
    return rwlocks == FEATURE_MAGIC and bool(flags & FEATURE_MUTEX), size


def child_first(path):
    t = open_tdb(path)
    store(t, b'first', 200)
    back = check(t, b'first', 200)
    print('opened; own records back: %d of 200' % back, flush=True)
    if back != 200:
        sys.exit(1)
    sys.stdin.readline()  # the second process has stored its records
    seen = check(t, b'second', 200)
    print('second\'s records seen by the first: %d of 200' % seen)
    t.close()
    sys.exit(seen != 200)


def child_second(path):
    t = open_tdb(path)
    store(t, b'second', 200)
    seen, own = check(t, b'first', 200), check(t, b'second', 200)
    print('first\'s records seen by the second: %d of 200; own: %d of 200' % (seen, own))
    t.close()
    sys.exit(seen != 200 or own != 200)


CHILDREN = {'first': child_first, 'second': child_second}


def drive(d, served_log, weft_cmd):
    drv = Driver(__file__, served_log, weft_cmd)
    path = os.path.join(d, 'mutex.tdb')
    first = drv.start('first', 'weft', 'first', path)
    opened = line(first)
    if not opened.startswith('opened'):
        drv.fail('first: ' + (opened or 'the open failed'))
        drv.finish(first)
        return 1
    on, size = header_mutexes(path)
    print('first: opened with mutexes: %s (mutex area %d bytes); %s'
          % ('yes' if on else 'NO', size, opened[len('opened; '):]))
    if not on or size <= 0:
        drv.fail('first: the file does not use mutexes')
    out = drv.finish(drv.start('second', 'glibc', 'second', path))
    print('second: ' + (out or 'failed').strip())
    drv.send(first, 'stored\n')
    out = drv.finish(first)
    print('first: ' + (out or 'failed').strip())
    return 1 if drv.failed else 0


if __name__ == '__main__':
    if sys.argv[1] == 'child':
        child_main(CHILDREN, sys.argv[2:])
    else:
        sys.exit(drive(sys.argv[2], sys.argv[3], sys.argv[4:]))
