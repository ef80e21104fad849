#!/usr/bin/env bash
# libweft is bound lazily (Makefile, docs/glibc-host.md "Binding of
# libweft's own calls"): a first call through one of its PLT entries runs
# the loader's lookup, which a dlclose elsewhere waits for only on threads
# that are on glibc's thread list.  A finishing thread leaves that list in
# thread_finish (host_thread_unlist), so from there to its exit no call may
# go through the PLT.  This reads the library's disassembly: the
# instructions of thread_finish that control can reach from its call of
# host_thread_unlist (fall-through and its own jumps), and every function
# reachable from there by direct calls and jumps, must name no `@plt`
# target.  (Calls through host pointers are resolved before; they cannot
# be seen here and need no PLT.)
#
# One library serves both modes, so both modes check the same file: the
# linked mode the library the tests link (WEFT_LIB's directory), the
# preload mode WEFT_LIB.
# Usage: bash tests/t_plt_exit.sh linked|preload   (env WEFT_LIB)
set -u
mode=${1:?mode}
lib=${WEFT_LIB:?}
[ "$mode" = linked ] && lib=$(dirname "$lib")/libweft.so.0

command -v objdump >/dev/null || { echo "t_plt_exit: SKIP: no objdump"; exit 77; }
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn "$lib" >"$dis" || { echo "t_plt_exit: FAIL: objdump $lib"; exit 1; }

python3 - "$dis" "$lib" <<'PY'
import re, sys

dis, lib = sys.argv[1], sys.argv[2]
# function -> list of (address, mnemonic, target function, target offset)
insns = {}
cur = None
for line in open(dis):
    m = re.match(r'^([0-9a-f]+) <(.+)>:', line)
    if m:
        cur = m.group(2)
        insns[cur] = []
        continue
    m = re.match(r'^\s+([0-9a-f]+):\s+(\S+)(.*)', line)
    if not (m and cur):
        continue
    addr, op, rest = int(m.group(1), 16), m.group(2), m.group(3)
    t = re.search(r'[0-9a-f]+ <([^>+]+)(\+0x([0-9a-f]+))?>', rest)
    insns[cur].append((addr, op, t.group(1) if t else None,
                       int(t.group(3), 16) if t and t.group(3) else 0))

def branch(op):
    return op.startswith("call") or op.startswith("j")

def callees(f):
    return {t for _, op, t, _ in insns.get(f, ()) if t and t != f and branch(op)}

for f in ("thread_finish", "host_thread_unlist"):
    if f not in insns:
        print(f"t_plt_exit: FAIL: expected a function {f} in {lib}, found none")
        sys.exit(1)

# Inside thread_finish: the instructions control can reach from the one
# after the call of host_thread_unlist, and what those call or jump to.
body = insns["thread_finish"]
base = body[0][0]
index = {a: i for i, (a, _, _, _) in enumerate(body)}
starts = [i + 1 for i, (_, op, t, _) in enumerate(body)
          if op.startswith("call") and t == "host_thread_unlist"]
if not starts:
    print("t_plt_exit: FAIL: expected thread_finish to call host_thread_unlist, "
          "it does not (inlined? the window cannot be found)")
    sys.exit(1)
todo, reached, after = list(starts), set(), []
while todo:
    i = todo.pop()
    if i in reached or i >= len(body):
        continue
    reached.add(i)
    _, op, t, off = body[i]
    if t == "thread_finish" and op.startswith("j"):
        todo.append(index.get(base + off, len(body)))
        if op == "jmp":
            continue
    elif t and branch(op):
        after.append(t)
        if op == "jmp":
            continue
    if op.startswith("ret") or op in ("ud2", "hlt"):
        continue
    todo.append(i + 1)

seen, bad, stack = set(), [], [(t, ["thread_finish"]) for t in after]
while stack:
    f, path = stack.pop()
    if f.endswith("@plt"):
        bad.append(" -> ".join(path + [f]))
        continue
    if f in seen or f == "thread_finish":
        continue
    seen.add(f)
    stack.extend((t, path + [f]) for t in callees(f))

if bad:
    print("t_plt_exit: FAIL: expected no PLT call after host_thread_unlist, got:")
    for b in sorted(set(bad)):
        print("  " + b)
    sys.exit(1)
print(f"t_plt_exit: PASS: {len(reached)} instructions of thread_finish after "
      f"host_thread_unlist, {len(seen)} functions reachable, no PLT call")
PY
