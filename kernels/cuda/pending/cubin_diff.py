#!/usr/bin/env python3
"""Whether two builds of a .cu file give the same machine code, kernel by kernel, without a GPU
or cuobjdump (the development machine's nvcc 13.0 has neither cuobjdump nor nvdisasm).

    nvcc -O3 -DNDEBUG -arch=sm_90 -cubin -std=c++17 -I. kernels/cuda/tc.cu -o a.cubin
    (the same in the other tree, -o b.cubin)
    python3 kernels/cuda/pending/cubin_diff.py a.cubin b.cubin

Reads each cubin's ELF section table and compares every .text.<kernel> section's bytes (the
SASS), names matched with the anonymous namespace's per-file hash taken out. Prints each
kernel whose code differs (with both sizes) and exits 1 if any does or a kernel is missing
from one side; 0 when every kernel's code is byte for byte the same. Symbol and string tables
are not compared (they hold the hash)."""
import re
import struct
import sys

ANON = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}")


def text_sections(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF (a cubin from nvcc -cubin)")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for name_off, kind, _, _, offset, size, *_ in headers:
        start = names_at + name_off
        name = data[start : data.index(b"\0", start)].decode()
        if name.startswith(".text.") and kind != 8:  # 8: SHT_NOBITS
            out[ANON.sub("ANON", name[len(".text.") :])] = data[offset : offset + size]
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = (text_sections(p) for p in sys.argv[1:])
    differing = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"only in {sys.argv[1] if name in a else sys.argv[2]}: {name}")
            differing += 1
        elif a[name] != b[name]:
            print(f"differs: {name} ({len(a[name])} / {len(b[name])} bytes)")
            differing += 1
    print(f"{len(set(a) | set(b))} kernels, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
