#!/usr/bin/env python3
"""tc_fwd_intra's Tinv levels on the tensor cores (kernels/cuda/tc.cu's kIntraTinvTc) lane by
lane on the CPU: each mma.sync m16n8k16 rebuilt from the fragment registers as the PTX ISA lays them
out ("Matrix Fragments for mma.m16n8k16 with floating point type"), every fragment formed with the
kernel's own index expressions (split_a, split_b, the accumulators' reuse, the transposed store),
bf16 rounding to nearest even, f32 sums. Checks that the levels give Tinv = (I + A)^-1 below the
diagonal, and how far from f64 they are against the f32 dot products of the other path
(DELTAPROOF_TC_INTRA_TINV=2: the same sums in the same order, in f32), over chunks of the stage
tests' kinds of A.

    python3 kernels/cuda/pending/tinv_tc_sim.py [--chunks 200] [--seed 1]

The verdict line: every chunk's Tinv within 2^-12 of f64 (relative Frobenius norm, each 16 x 16
block below the diagonal) where the f32 path is within 2^-20, else exit 1. --red stores Tinv_RI
transposed (issue38-intra-red.patch's plant, in git history at 8c5e3b9), which must fail.
"""
import argparse
import sys

import numpy as np

C, BLK, NB = 64, 16, 4  # chunk, block, blocks


def bf16(x):
    """float32 -> nearest-even bf16, back as float32."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def split(x0, x1):
    """mma::pack and mma::pack_rest: (hi pair, rest pair)."""
    h0, h1 = bf16(x0), bf16(x1)
    return (h0, h1), (bf16(np.float32(x0) - h0), bf16(np.float32(x1) - h1))


def lanes():
    return [(lane // 4, lane % 4) for lane in range(32)]


def mma(d, a, b):
    """d[lane] (4 f32) += A B; a[lane] 4 pairs, b[lane] 2 pairs, laid out as the PTX ISA says."""
    A = np.zeros((16, 16), np.float64)
    B = np.zeros((16, 8), np.float64)
    for lane, (g, t) in enumerate(lanes()):
        for j in range(4):  # a0..a7: rows g, g+8; columns 2t, 2t+1, +8
            row, col = g + 8 * (j & 1), 2 * t + 8 * (j >> 1)
            A[row, col], A[row, col + 1] = a[lane][j]
        for j in range(2):  # b0..b3: rows 2t, 2t+1 (+8), column g
            B[2 * t + 8 * j, g], B[2 * t + 8 * j + 1, g] = b[lane][j]
    D = A @ B  # bf16 products are exact in f64; f32 accumulation below
    for lane, (g, t) in enumerate(lanes()):
        for e in range(4):
            row, col = g + (8 if e >= 2 else 0), 2 * t + (e & 1)
            d[lane][e] = np.float32(d[lane][e] + np.float32(D[row, col]))


def split_a(at):
    hi, rest = [], []
    for g, t in lanes():
        h, r = [], []
        for j in range(4):
            m, k = g + (j & 1) * 8, 2 * t + (j >> 1) * 8
            ph, pr = split(at(m, k), at(m, k + 1))
            h.append(ph), r.append(pr)
        hi.append(h), rest.append(r)
    return hi, rest


def split_b(at, n0):
    hi, rest = [], []
    for g, t in lanes():
        h, r = [], []
        for j in range(2):
            n, k = n0 + g, 2 * t + 8 * j
            ph, pr = split(at(n, k), at(n, k + 1))
            h.append(ph), r.append(pr)
        hi.append(h), rest.append(r)
    return hi, rest


def product(d, a, a_rest, b, b_rest):
    mma(d, a, b)
    mma(d, a, b_rest)
    mma(d, a_rest, b)


def block_of(slot):
    first = lambda d: (d - 1) * (2 * NB - d) // 2  # noqa: E731
    d = 1
    while slot >= first(d + 1):
        d += 1
    I = slot - first(d)
    return I + d, I


def diagonal(A):
    """The diagonal blocks by forward substitution in f32 (as the kernel), zeros above."""
    T = np.zeros((C, C), np.float32)
    for base in range(0, C, BLK):
        for col in range(BLK):
            x = np.zeros(BLK, np.float32)
            for r in range(BLK):
                v = np.float32(1.0 if r == col else 0.0)
                for i in range(r):
                    v = np.float32(v - np.float32(A[base + r, base + i] * x[i]))
                x[r] = v
            T[base:base + BLK, base + col] = x
    return T


def levels_tc(A, T, red=False):
    """tc.cu's kIntraTinvTc rounds, warp by warp, on T (f32, diagonal blocks set)."""
    T = T.copy()
    y = {w: [np.zeros((32, 4), np.float32) for _ in range(2)] for w in range(6)}
    for k in range(1, NB):
        writes = []
        for w in range(6):
            R, I = block_of(w)
            if R - I >= k:
                J = I + k - 1
                t, t_rest = split_a(lambda i, j: T[BLK * J + j, BLK * I + i])
                for nt in range(2):
                    a, a_rest = split_b(lambda r, j: A[BLK * R + r, BLK * J + j], 8 * nt)
                    product(y[w][nt], t, t_rest, a, a_rest)
            if R - I == k:
                yt = [[None] * 4 for _ in range(32)]
                yt_rest = [[None] * 4 for _ in range(32)]
                for lane in range(32):
                    for j in range(4):
                        c = y[w][j // 2][lane]
                        yt[lane][j], yt_rest[lane][j] = split(c[2 * (j % 2)], c[2 * (j % 2) + 1])
                x = [np.zeros((32, 4), np.float32) for _ in range(2)]
                for nt in range(2):
                    tr, tr_rest = split_b(lambda r, r2: T[BLK * R + r, BLK * R + r2], 8 * nt)
                    product(x[nt], yt, yt_rest, tr, tr_rest)
                for nt in range(2):
                    for lane, (g, tt) in enumerate(lanes()):
                        for e in range(4):
                            row, col = g + (8 if e >= 2 else 0), 2 * tt + (e & 1)
                            if red:
                                at = (BLK * R + row, BLK * I + 8 * nt + col)
                            else:
                                at = (BLK * R + 8 * nt + col, BLK * I + row)
                            writes.append((at, -x[nt][lane][e]))
        for at, v in writes:  # the barrier: this round's blocks are read in the next
            T[at] = v
    return T


def levels_f32(A, T):
    """The f32 path (DELTAPROOF_TC_INTRA_TINV=2): Y_RI = sum_j A_Rj Tinv_jI (j ascending),
    Tinv_RI = -Tinv_RR Y, in f32."""
    T = T.copy()
    for d in range(1, NB):
        for I in range(NB - d):
            R = I + d
            Y = np.zeros((BLK, BLK), np.float32)
            for j in range(BLK * I, BLK * R):
                Y = (Y + np.float32(1) * np.outer(A[BLK * R:BLK * R + BLK, j],
                                                   T[j, BLK * I:BLK * I + BLK])).astype(np.float32)
            X = np.zeros((BLK, BLK), np.float32)
            for m in range(BLK):
                X = (X - np.outer(T[BLK * R:BLK * R + BLK, BLK * R + m], Y[m])).astype(np.float32)
            T[BLK * R:BLK * R + BLK, BLK * I:BLK * I + BLK] = X
    return T


def draw_A(rng, kind):
    """A = strictly lower (beta_r k_r . k_i e^(G_r - G_i)), K = 128: the stage tests' kinds of chunk."""
    K = 128
    k = rng.standard_normal((C, K))
    k /= np.linalg.norm(k, axis=1, keepdims=True)  # l2-normalised keys, as the models use
    beta = rng.uniform(0.0, 1.0, C) if kind != "strong" else rng.uniform(0.9, 1.0, C)
    g = -rng.uniform(0.0, 0.05 if kind == "mild" else 1.0, (C, K))
    G = np.cumsum(g, axis=0)
    A = np.zeros((C, C))
    for r in range(C):
        for i in range(r):
            A[r, i] = beta[r] * np.sum(k[r] * k[i] * np.exp(G[r] - G[i]))
    return A.astype(np.float32)


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--red", action="store_true", help="store Tinv_RI transposed (must fail)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    worst_tc = worst_f32 = 0.0
    for n in range(args.chunks):
        kind = ("mild", "strong", "wide")[n % 3]
        A = draw_A(rng, kind)
        exact = np.linalg.inv(np.eye(C) + A.astype(np.float64))
        T0 = diagonal(A)
        tc, f32 = levels_tc(A, T0, args.red), levels_f32(A, T0)
        for d in range(1, NB):
            for I in range(NB - d):
                R = I + d
                s = np.s_[BLK * R:BLK * R + BLK, BLK * I:BLK * I + BLK]
                worst_tc = max(worst_tc, rel(tc[s].astype(np.float64), exact[s]))
                worst_f32 = max(worst_f32, rel(f32[s].astype(np.float64), exact[s]))
    ok = worst_tc <= 2.0**-12 and worst_f32 <= 2.0**-20
    print(f"{args.chunks} chunks: worst block of Tinv below the diagonal against f64, relative "
          f"Frobenius: tensor cores (two bf16 parts) {worst_tc:.2e} (2^{np.log2(worst_tc):.1f}), "
          f"f32 dot products {worst_f32:.2e} (2^{np.log2(worst_f32):.1f}), bf16's rounding 2^-9: "
          f"{'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
