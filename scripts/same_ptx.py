"""Two PTX files compared kernel by kernel, names and labels set aside.

    python3 scripts/same_ptx.py A.ptx B.ptx [--float-ops]

For a refactor of the CUDA code that must leave the arithmetic as it was (issue
12, step 5): build the PTX before and after, e.g.

    nvcc -std=c++17 -arch=sm_90 -I. -ptx -o after.ptx kernels/cuda/chunk.cu
    (the same at the old commit, in a worktree, into before.ptx)

Each .entry (a kernel) is read with its mangled names, its parameters' names and
its branch labels renumbered in order of appearance, so that a renamed function
or a moved helper reads the same; the kernels are matched by their bodies.
Prints each kernel of A with no identical body in B, and a count; exit 1 if any.

--float-ops compares, kernel by kernel (matched by their names), only the order
of the f32 arithmetic instructions (fma, add, sub, mul, div, rcp, sqrt, ex2,
lg2, neg, abs, max, min, cvt): for a change that moves where operands come
from (kernel parameters, addresses, registers) but must not move the arithmetic.
"""
import re
import sys

MANGLED = re.compile(r"_Z[0-9A-Za-z_$]+")
LABEL = re.compile(r"\$L__[A-Za-z]+[0-9_]+")


def kernels(path: str) -> dict:
    text = open(path).read()
    out = {}
    # an entry runs from ".entry NAME(" to the closing brace at column 0
    for match in re.finditer(r"\.entry (\S+)\((.*?)\n\}\n", text, re.S):
        name, body = match.group(1), match.group(0)
        body = "\n".join(line for line in body.splitlines()
                         if not line.lstrip().startswith((".loc", "//")))
        for pattern, stem in ((MANGLED, "name"), (LABEL, "label")):
            seen = {}
            body = pattern.sub(lambda m: seen.setdefault(m.group(0), f"{stem}{len(seen)}"), body)
        out[name] = body
    return out


FLOAT_OP = re.compile(r"^\s*(?:@!?%p\d+\s+)?((?:fma|add|sub|mul|div|rcp|sqrt|ex2|lg2|neg|abs|max|min|cvt)"
                      r"\.[\w.]*f32[\w.]*)", re.M)


def float_ops(path: str) -> dict:
    text = open(path).read()
    return {kernel_key(m.group(1)): FLOAT_OP.findall(m.group(0))
            for m in re.finditer(r"\.entry (\S+)\((.*?)\n\}\n", text, re.S)}


def kernel_key(mangled: str) -> str:
    """A kernel's mangled name without what moves when code moves: the hash of an
    anonymous namespace (it hashes the source's path) and the substitutions that
    say in which namespace a template argument lives."""
    key = re.sub(r"_GLOBAL__N__\w+?_(?=\d)", "", mangled)
    return re.sub(r"N?S\d*_", "", key)


def main_float_ops(a_path: str, b_path: str) -> int:
    a, b = float_ops(a_path), float_ops(b_path)
    different = [name for name in a if a[name] != b.get(name)]
    for name in different:
        print(f"{name}: its f32 arithmetic differs ({len(a[name])} vs {len(b.get(name, []))} ops)")
    print(f"{len(a)} kernels: {len(a) - len(different)} with the same f32 arithmetic in order, "
          f"{len(different)} different ({sum(map(len, a.values()))} ops in {a_path})")
    return 1 if different or a.keys() != b.keys() else 0


def main(a_path: str, b_path: str) -> int:
    a, b = kernels(a_path), kernels(b_path)
    bodies_b = {}
    for name, body in b.items():
        bodies_b.setdefault(body, []).append(name)
    different = [name for name, body in a.items() if body not in bodies_b]
    for name in different:
        print(f"{name}: no kernel of {b_path} has its body")
    print(f"{len(a)} kernels in {a_path}, {len(b)} in {b_path}: "
          f"{len(a) - len(different)} identical, {len(different)} different")
    return 1 if different or len(a) != len(b) else 0


if __name__ == "__main__":
    if "--float-ops" in sys.argv:
        sys.exit(main_float_ops(*[a for a in sys.argv[1:] if a != "--float-ops"]))
    sys.exit(main(*sys.argv[1:3]))
