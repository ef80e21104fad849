#!/usr/bin/env bash
# What every process that loads libweft pays at start and exit
# (docs/glibc-host.md, "Load cost"): the code the loader runs in libweft
# must lie in one 64 KB window of text (the kernel maps a fault's
# neighbours in such a window, so code elsewhere costs a page fault of its
# own), and there must be no DT_FINI (crtn's empty _fini sits after all of
# .text).  This reads the library's dynamic section: DT_FINI absent, and
# DT_INIT and every entry of DT_INIT_ARRAY and DT_FINI_ARRAY within 64 KB
# of each other.  It does not check the segment layout, which
# SEPARATE_CODE=1 changes on purpose.
#
# One library serves both modes, so both modes check the same file.
# Usage: bash tests/t_load_shape.sh linked|preload   (env WEFT_LIB)
set -u
mode=${1:?mode}
lib=${WEFT_LIB:?}
[ "$mode" = linked ] && lib=$(dirname "$lib")/libweft.so.0

python3 - "$lib" <<'PY'
import struct, sys

lib = sys.argv[1]
data = open(lib, 'rb').read()
if data[:4] != b'\x7fELF' or data[4] != 2:
    print(f"t_load_shape: FAIL: {lib} is not a 64-bit ELF file")
    sys.exit(1)
phoff, = struct.unpack_from('<Q', data, 0x20)
phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
loads, dyn = [], None
for i in range(phnum):
    p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from(
        '<IIQQQQQQ', data, phoff + i * phentsize)
    if p_type == 1:
        loads.append((p_vaddr, p_offset, p_filesz))
    elif p_type == 2:
        dyn = (p_offset, p_filesz)
if dyn is None:
    print(f"t_load_shape: FAIL: {lib} has no PT_DYNAMIC")
    sys.exit(1)
tags = {}
for off in range(dyn[0], dyn[0] + dyn[1], 16):
    tag, val = struct.unpack_from('<qQ', data, off)
    if tag == 0:
        break
    tags[tag] = val
DT_INIT, DT_FINI, DT_INIT_ARRAY, DT_FINI_ARRAY = 12, 13, 25, 26
DT_INIT_ARRAYSZ, DT_FINI_ARRAYSZ = 27, 28

def file_off(vaddr):
    for v, o, sz in loads:
        if v <= vaddr < v + sz:
            return o + vaddr - v
    return None

bad = 0
if DT_FINI in tags:
    print(f"t_load_shape: FAIL: expected no DT_FINI, got DT_FINI = {tags[DT_FINI]:#x}")
    bad = 1
DT_RELA, DT_RELASZ, R_X86_64_RELATIVE = 7, 8, 8
relative = {}
if DT_RELA in tags and file_off(tags[DT_RELA]) is not None:
    base = file_off(tags[DT_RELA])
    for off in range(base, base + tags.get(DT_RELASZ, 0), 24):
        r_offset, r_info, r_addend = struct.unpack_from('<QQq', data, off)
        if r_info & 0xffffffff == R_X86_64_RELATIVE:
            relative[r_offset] = r_addend
code = {}
if DT_INIT in tags:
    code['DT_INIT'] = tags[DT_INIT]
for arr, size, name in ((DT_INIT_ARRAY, DT_INIT_ARRAYSZ, 'DT_INIT_ARRAY'),
                        (DT_FINI_ARRAY, DT_FINI_ARRAYSZ, 'DT_FINI_ARRAY')):
    if arr not in tags:
        continue
    off = file_off(tags[arr])
    for i in range(tags.get(size, 0) // 8):
        # An entry is relocated by the load address: its link-time value
        # is the addend of its RELATIVE relocation (GNU ld also writes it
        # into the entry; lld writes 0 there).
        at = tags[arr] + 8 * i
        v = relative.get(at)
        if v is None and off is not None:
            v, = struct.unpack_from('<Q', data, off + 8 * i)
        if v:
            code[f'{name}[{i}]'] = v
if not code:
    print("t_load_shape: FAIL: found no start-up code (DT_INIT, DT_INIT_ARRAY)")
    sys.exit(1)
lo, hi = min(code.values()), max(code.values())
if hi - lo >= 0x10000:
    print("t_load_shape: FAIL: expected the code run at load and exit within 64 KB, got "
          + ", ".join(f"{k} {v:#x}" for k, v in sorted(code.items(), key=lambda kv: kv[1])))
    bad = 1
if bad:
    sys.exit(1)
print(f"t_load_shape: no DT_FINI; {len(code)} start/exit entries within {hi - lo:#x} bytes "
      f"({lo:#x}-{hi:#x}); {len(loads)} PT_LOAD segments")
PY
