#!/usr/bin/env python3
"""cuda-tc alone, stage by stage, one or more builds of it side by side in one process (no FLA):
the tool for a kernel change, where scripts/tc_vs_fla.py is the one for the comparison.

Usage (on a machine with an NVIDIA GPU and torch):
    python3 scripts/tc_stages.py --lib build/lib/libdeltaproof_tc.so [--lib OTHER.so ...]
        [--B 4 --T 4096 --H 16 --K 128 --V 128] [--varlen N] [--repeats 20] [--json OUT]

For each library, on the same bf16 inputs (tc_vs_fla.py's draws, gdn2 form): the forward, the
forward and backward, then each stage alone on the scratch the last whole run left
(fwd.intra, fwd.inter, fwd.output, bwd.bk2, tc_bwd_products, tc_bwd_tokens), CUDA events
around each call, the median of --repeats after 3 warm-up calls. Last, o and every gradient
against the first library's (max|a-b| / max|b|): a changed kernel must agree with the old one
to the bf16 class's noise (about 1e-2 at most), and a NaN there is a broken build.

--varlen N times N packed sequences instead of the dense batch (tc_vs_fla.py's mixed_lengths:
uniform in [128, 4096), a fixed draw; --B and --T are then ignored): the tokens in a batch of
one, the C API's cu_seqlens, one initial and final state per sequence.
"""
import argparse
import ctypes
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tc_vs_fla import (Gradients, Problem, mixed_lengths, sequence_offsets,  # noqa: E402
                       write_json)

STAGES = (("fwd.intra", "forward", 1), ("fwd.inter", "forward", 2), ("fwd.output", "forward", 4),
          ("bwd.bk2", "backward", 8), ("tc_bwd_products", "backward", 16),
          ("tc_bwd_tokens", "backward", 32))
GRADIENTS = ("dq", "dk", "dv", "dg", "db", "dw", "dh0")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", action="append", required=True, help="libdeltaproof_tc.so (repeat)")
    for name, default in (("B", 4), ("T", 4096), ("H", 16), ("K", 128), ("V", 128)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--varlen", type=int, default=0, help="N packed sequences of mixed lengths")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.varlen < 0:
        sys.exit(f"tc_stages.py: --varlen takes a number of sequences, not {args.varlen}")

    import torch
    if not torch.cuda.is_available():
        sys.exit("tc_stages.py: no CUDA device")
    B, T, H, K, V = args.B, args.T, args.H, args.K, args.V
    dev, bf = torch.device("cuda"), torch.bfloat16
    lengths = mixed_lengths(args.varlen) if args.varlen else None
    # the tensors' batch and tokens; the problem's sequences (N) and longest (T) where packed
    if lengths:
        B, T = 1, sum(lengths)
        cu_seqlens = torch.tensor(sequence_offsets(lengths), dtype=torch.int32, device=dev)
    N = len(lengths) if lengths else B
    gen = torch.Generator(device=dev).manual_seed(0)

    def normal(*shape):
        return torch.randn(*shape, generator=gen, device=dev)

    def uniform(lo, hi, *shape):
        return lo + (hi - lo) * torch.rand(*shape, generator=gen, device=dev)

    x = {"q": torch.nn.functional.normalize(normal(B, T, H, K), dim=-1).to(bf),
         "k": torch.nn.functional.normalize(normal(B, T, H, K), dim=-1).to(bf),
         "v": normal(B, T, H, V).to(bf), "g": uniform(-0.1, -0.001, B, T, H, K).to(bf),
         "b": uniform(0.05, 0.95, B, T, H, K).to(bf), "w": uniform(0.05, 0.95, B, T, H, V).to(bf),
         "h0": 0.1 * normal(N, H, K, V), "do": normal(B, T, H, V), "dht": 0.1 * normal(N, H, K, V)}
    o = torch.empty(B, T, H, V, device=dev)
    ht = torch.empty(N, H, K, V, device=dev)
    grads = {n: torch.empty(B, T, H, V if n in ("dv", "dw") else K, device=dev)
             for n in GRADIENTS[:-1]}
    grads["dh0"] = torch.empty(N, H, K, V, device=dev)
    problem = Problem(N, max(lengths) if lengths else T, H, K, V, K ** -0.5, 1,
                      *[x[n].data_ptr() for n in ("q", "k", "v", "g", "b", "w", "h0")],
                      o.data_ptr(), ht.data_ptr(), cu_seqlens.data_ptr() if lengths else None)
    gradients = Gradients(x["do"].data_ptr(), x["dht"].data_ptr(),
                          *[grads[n].data_ptr() for n in GRADIENTS])

    def median_ms(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(args.repeats):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return statistics.median(times)

    rows, first = [], None
    for path in args.lib:
        if not os.path.exists(path):
            sys.exit(f"tc_stages.py: {path} does not exist (build the deltaproof_tc target)")
        lib = ctypes.CDLL(os.path.abspath(path))
        lib.deltaproof_tc_scratch_bytes_backward.restype = ctypes.c_size_t
        size = lib.deltaproof_tc_scratch_bytes_backward(ctypes.byref(problem))
        if size == 0:
            sys.exit(f"tc_stages.py: cuda-tc does not run K={K} V={V}")
        scratch = torch.empty(size, dtype=torch.uint8, device=dev)
        error = ctypes.create_string_buffer(512)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        at = ctypes.c_void_p(scratch.data_ptr())

        def call(status):
            if status != 0:
                sys.exit(f"tc_stages.py: {path}: {error.value.decode()}")

        def forward(stages=7):
            call(lib.deltaproof_tc_forward(ctypes.byref(problem), at, stream, stages, error, 512))

        def forward_backward():
            call(lib.deltaproof_tc_forward_backward(ctypes.byref(problem), ctypes.byref(gradients),
                                                    at, stream, error, 512))

        def backward(stages):
            call(lib.deltaproof_tc_backward(ctypes.byref(problem), ctypes.byref(gradients), at,
                                            stream, stages, error, 512))

        row = {"lib": path, "fwd_ms": median_ms(forward), "fwd_bwd_ms": median_ms(forward_backward)}
        for name, part, bit in STAGES:
            if part == "backward" and not hasattr(lib, "deltaproof_tc_backward"):
                continue
            row[name + "_ms"] = median_ms(
                (lambda b=bit: forward(b)) if part == "forward" else (lambda b=bit: backward(b)))
        forward_backward()
        torch.cuda.synchronize()
        results = {"o": o.clone(), **{n: t.clone() for n, t in grads.items()}}
        if first is None:
            first = results
        row["agreement with the first (max|a-b|/max|b|)"] = {
            n: float((results[n] - first[n]).abs().max() / first[n].abs().max()) for n in results}
        rows.append(row)
        worst = max(v if v == v else float("inf")  # a NaN is the worst
                    for v in row["agreement with the first (max|a-b|/max|b|)"].values())
        print(f"{os.path.basename(path)}: " + ", ".join(
            f"{k[:-3]} {v:.3f}" for k, v in row.items() if k.endswith("_ms"))
            + f" ms; worst disagreement with the first {worst:.2e}", flush=True)

    if args.json:
        write_json(args.json, {
            "device": torch.cuda.get_device_properties(0).name, "torch": torch.__version__,
            "shape": (f"{N} packed sequences of {min(lengths)}..{max(lengths)} tokens ({T}) "
                      if lengths else f"B{B} T{T} ") + f"H{H} K{K} V{V} bf16 inputs",
            "packed sequence lengths": lengths, "repeats": args.repeats, "rows": rows})


if __name__ == "__main__":
    main()
