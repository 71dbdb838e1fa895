#!/usr/bin/env python3
"""Which elements carry a term's regression slope in one head: the triage of a
per-head bias that `deltaproof gate check` reports (gates/noise.hpp).

alpha = <c - r, r> / <r, r> over one (b, h) of a term, r the fixture's
reference and c the candidate. A few large elements of r can carry <r, r>:
n_eff = <r, r>^2 / sum r^4 counts them. The element-by-element shares of
alpha then show whether one rounding of a dominant element, or a spread error,
moves it.

    python3 scripts/alpha_contributions.py FIXTURE CANDIDATE --term db --head 1,15 [--top 12]
    python3 scripts/alpha_contributions.py FIXTURE CANDIDATE --term db     # every head, most off first
    python3 scripts/alpha_contributions.py FIXTURE CANDIDATE --term o --chunk 226 [--head 0,0] \
        [--compare OTHER_CANDIDATE]     # one chunk (all heads, or one), beside another kernel

Prints, per head: alpha, n_eff and, with --head or --chunk, the --top elements
by |share of alpha|, and the group's rounding grain (sqrt(sum (ulp r)^2) / <r, r>,
bf16 ulps: gates/noise.hpp). --compare names a second candidate: its alpha in
the group, and how many of the group's elements the two hold bit for bit. Each comes with its index (t, i), r, c, the relative error
(c - r) / r, and how many bf16 ulps of r separate c from r. Reads the two
files' headers and maps only the term's bytes: a 4 GB production fixture
needs no more memory than the term. Reads F64, F32, F16 and BF16 tensors.
Exits 2 with a sentence on a missing file, tensor or head, or on a shape
mismatch.
"""
import argparse
import json
import pathlib
import struct
import sys

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def fail(message):
    print(f"alpha_contributions: {message}", file=sys.stderr)
    sys.exit(2)


def read_tensor(path, name):
    """One tensor of a safetensors file as float64, mapped rather than read whole."""
    path = pathlib.Path(path)
    if not path.is_file():
        fail(f"{path}: no such file")
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    if name not in header:
        fail(f"{path}: no tensor named '{name}' (it has {', '.join(sorted(k for k in header if k != '__metadata__'))})")
    entry = header[name]
    if entry["dtype"] not in DTYPES:
        fail(f"{path}: tensor '{name}' is {entry['dtype']}; F64, F32, F16 and BF16 are read")
    begin, end = entry["data_offsets"]
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length + begin, shape=(end - begin,))
    values = raw.view(DTYPES[entry["dtype"]]).reshape(entry["shape"])
    if entry["dtype"] == "BF16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float64)


def bf16_ulp(x):
    """The spacing of bf16 numbers at |x| (8 significant bits)."""
    exponent = np.floor(np.log2(np.maximum(np.abs(x), np.finfo(np.float64).tiny)))
    return np.exp2(exponent - 7)


def head_slices(shape, state):
    """(b, h) -> the view of one head: [T, width] for a token tensor, [K, V] for a state."""
    if state:
        B, H = shape[0], shape[1]
        return B, H, lambda x, b, h: x[b, h]
    B, H = shape[0], shape[2]
    return B, H, lambda x, b, h: x[b, :, h]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixture")
    parser.add_argument("candidate")
    parser.add_argument("--term", required=True, help="o, ht, dq, dk, dv, dg, db, dw, dbeta, dh0")
    parser.add_argument("--head", help="b,h: one head's dominant elements (default: every head's alpha)")
    parser.add_argument("--chunk", type=int, help="one chunk of a token tensor (with --head: of that head)")
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument("--compare", help="a second candidate, compared in the same group")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()

    r = read_tensor(args.fixture, args.term)
    c = read_tensor(args.candidate, args.term)
    if r.shape != c.shape:
        fail(f"{args.term}: the fixture's shape is {list(r.shape)}, the candidate's {list(c.shape)}")
    state = args.term in ("ht", "dh0")
    B, H, head = head_slices(r.shape, state)

    def slope(b, h):
        rh, ch = head(r, b, h), head(c, b, h)
        r2 = float(np.sum(rh * rh))
        alpha = float(np.sum((ch - rh) * rh)) / r2 if r2 > 0 else float("nan")
        n_eff = r2 * r2 / float(np.sum(rh**4)) if r2 > 0 else 0.0
        return alpha, n_eff

    if args.chunk is not None:
        return chunk_group(args, r, c, state)
    if args.head is None:
        rows = [(b, h, *slope(b, h)) for b in range(B) for h in range(H)]
        median = float(np.nanmedian([row[2] for row in rows]))
        print(f"{args.term}: per-head alpha (median {median:+.3e}), farthest from the median first")
        print(f"  {'head':>8} {'alpha':>11} {'n_eff':>9}")
        for b, h, alpha, n_eff in sorted(rows, key=lambda row: -abs(row[2] - median)):
            print(f"  ({b:>2},{h:>3}) {alpha:+.3e} {n_eff:9.1f}")
        return

    try:
        b, h = (int(x) for x in args.head.split(","))
    except ValueError:
        fail(f"--head {args.head}: expected b,h (two integers)")
    if not (0 <= b < B and 0 <= h < H):
        fail(f"--head {args.head}: the term has B={B}, H={H}")
    rh, ch = head(r, b, h), head(c, b, h)
    alpha, n_eff = slope(b, h)
    r2 = float(np.sum(rh * rh))
    share = (ch - rh) * rh / r2
    order = np.argsort(-np.abs(share), axis=None)[: args.top]
    names = ("i", "j") if state else ("t", "i")
    print(f"{args.term} head ({b},{h}): alpha {alpha:+.3e}, n_eff {n_eff:.1f} of {rh.size} elements")
    print(f"  {names[0]:>5} {names[1]:>4} {'r':>12} {'c':>12} {'(c-r)/r':>10} {'bf16 ulps':>9} {'share':>11} {'cumulative':>11}")
    total = 0.0
    for flat in order:
        row, col = np.unravel_index(flat, rh.shape)
        x, y, s = rh[row, col], ch[row, col], share[row, col]
        total += s
        ulps = (y - x) / bf16_ulp(x)
        rel = (y - x) / x if x != 0 else float("inf")
        print(f"  {row:>5} {col:>4} {x:+.5e} {y:+.5e} {rel:+.2e} {ulps:+9.2f} {s:+.3e} {total:+.3e}")


def chunk_group(args, r, c, state):
    """--chunk: the tokens of one chunk, over every head or one (--head)."""
    if state:
        fail(f"--chunk: {args.term} is a state; it has no chunks")
    T = r.shape[1]
    first, last = args.chunk * args.chunk_size, min(T, (args.chunk + 1) * args.chunk_size)
    if not 0 <= first < T:
        fail(f"--chunk {args.chunk}: the term has T={T}, {(T + args.chunk_size - 1) // args.chunk_size} chunks")
    heads = slice(None)
    if args.head is not None:
        b, h = (int(x) for x in args.head.split(","))
        r, c = r[b : b + 1, :, h : h + 1], c[b : b + 1, :, h : h + 1]
    rg, cg = r[:, first:last].reshape(-1), c[:, first:last].reshape(-1)
    r2 = float(np.sum(rg * rg))
    alpha = float(np.sum((cg - rg) * rg)) / r2
    n_eff = r2 * r2 / float(np.sum(rg**4))
    grain = float(np.sqrt(np.sum((bf16_ulp(rg) * rg) ** 2))) / r2
    where = f"chunk {args.chunk}" + (f" of head ({args.head})" if args.head else "")
    print(f"{args.term} {where}: alpha {alpha:+.3e}, n_eff {n_eff:.1f} of {rg.size} elements, "
          f"rounding grain {grain:.3e}")
    if args.compare:
        o = read_tensor(args.compare, args.term)
        if args.head is not None:
            o = o[b : b + 1, :, h : h + 1]
        og = o[:, first:last].reshape(-1)
        other = float(np.sum((og - rg) * rg)) / r2
        same = int(np.sum(og == cg))
        print(f"  {args.compare}: alpha {other:+.3e}; {same} of {rg.size} elements equal to the candidate's")
    share = (cg - rg) * rg / r2
    total = 0.0
    print(f"  {'index':>6} {'r':>12} {'c':>12} {'(c-r)/r':>10} {'bf16 ulps':>9} {'share':>11} {'cumulative':>11}")
    for flat in np.argsort(-np.abs(share))[: args.top]:
        x, y, s = rg[flat], cg[flat], share[flat]
        total += s
        rel = (y - x) / x if x != 0 else float("inf")
        print(f"  {flat:>6} {x:+.5e} {y:+.5e} {rel:+.2e} {(y - x) / bf16_ulp(x):+9.2f} {s:+.3e} {total:+.3e}")


if __name__ == "__main__":
    main()
