#!/usr/bin/env python3
"""cuda-tc beside FLA's Triton kernels, on the same inputs, in one process, timed
with CUDA events (docs/PERFORMANCE.md's side-by-side table).

Usage (on a machine with an NVIDIA GPU, torch and triton, FLA's `fla` package on
PYTHONPATH, e.g. a copy of its fla/ folder in .fla/):
    python3 scripts/tc_vs_fla.py --lib build/lib/libdeltaproof_tc.so \\
        [--ops gdn2 kda] [--B 4 --T 4096 --H 16 --K 128 --V 128] [--repeats 20] [--json OUT]
        [--shapes 4x4096 1x32768] [--varlen 16]

--shapes runs several BxT shapes in one process (FLA autotunes once per kernel and key);
--varlen N adds N packed sequences of mixed lengths (mixed_lengths: uniform in [128, 4096),
a fixed draw) in a batch of one, FLA with cu_seqlens and cuda-tc natively (its C API's
cu_seqlens), one initial and final state per sequence.

For each op: three input sets in bf16 (q, k l2-normalised; g uniform in [-0.1, -0.001],
log-decay per token and channel (kda: per token, channel-wise too, as FLA's kda takes it);
b, w or beta uniform in [0.05, 0.95]; h0 f32), each several times the L2, rotated call by
call. FLA takes g and h0 as float32 (what its tests pass; the same values), cuda-tc takes
every input in bf16 and kda's beta [B,T,H] as it is (its C API's beta, read once a row and
broadcast over b's and w's channels in the kernels) unless --kda-gdn2-form has it take kda in
gdn2 form (beta broadcast into b [B,T,H,K] and w [B,T,H,V] before timing, read in full).
Both write o in bf16 (cuda-tc through its C API's o_bf16: its f32 o rounded to nearest
even) unless --o-f32 has cuda-tc write it in f32; ht is f32 in both.

What it prints and writes:
  - first call: the wall time of each kernel's very first call (FLA's includes Triton's
    compile and autotune; cuda-tc's its module load), synchronised;
  - the median (and min, max) of --repeats calls after warm-up (FLA autotuned first),
    CUDA events around each call; FLA forward, FLA forward+backward, cuda-tc forward,
    cuda-tc forward+backward (do and dht given in f32, gradients written in f32);
  - cuda-tc's stages, each alone on the scratch the last whole run left (fwd.intra,
    fwd.inter, fwd.output, bwd.bk2, tc_bwd_products, tc_bwd_tokens);
  - the ratios cuda-tc / FLA, nominal TFLOP/s and GB/s against the H200's limits;
  - agreement: cuda-tc's o, ht and every gradient against FLA's on the same inputs
    (max|a-b| / max|b|; kda's dbeta folded from cuda-tc's gdn2-form db and dw), a
    cross-check that both computed the same function.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import write_atomically  # noqa: E402

# (bf16 dense TFLOP/s, HBM TB/s) from the vendors' datasheets (SXM parts), by device name;
# the percentages printed are of the running GPU's (2026-12-08: an H100's were printed against
# the H200's 4.8 TB/s).
PEAKS = {"H200": (989.0, 4.8), "H100": (989.0, 3.35)}


def peaks(name):
    """The datasheet peaks of the GPU called name, (TFLOP/s, TB/s), or None if not listed."""
    return next((p for key, p in PEAKS.items() if key in name), None)


class Gradients(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p)
                for name in ("d_o", "dht", "dq", "dk", "dv", "dg", "db", "dw", "dh0")]


class Problem(ctypes.Structure):
    _fields_ = [("B", ctypes.c_int), ("T", ctypes.c_int), ("H", ctypes.c_int),
                ("K", ctypes.c_int), ("V", ctypes.c_int), ("scale", ctypes.c_float),
                ("bf16_inputs", ctypes.c_int),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("g", ctypes.c_void_p), ("b", ctypes.c_void_p), ("w", ctypes.c_void_p),
                ("h0", ctypes.c_void_p), ("o", ctypes.c_void_p), ("ht", ctypes.c_void_p),
                ("cu_seqlens", ctypes.c_void_p), ("o_bf16", ctypes.c_void_p),
                ("beta", ctypes.c_void_p)]


def mixed_lengths(n, seed=0, lo=128, hi=4096):
    """n sequence lengths drawn uniformly in [lo, hi) (a fixed draw per seed): the varlen case."""
    import random
    rng = random.Random(seed)
    return [rng.randrange(lo, hi) for _ in range(n)]


def sequence_offsets(lengths):
    """cu_seqlens of packed sequences of these lengths: 0, then each one's end."""
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return offsets


def write_json(path, figures):
    """figures as JSON at path, whole or not at all (scripts/replay.py's write_atomically)."""
    write_atomically(path, lambda f: json.dump(figures, f, indent=2))


def nominal_flops(B, T, H, K, V, C=64):
    """The chunked algorithm's matrix work, as bench/cuda_bench.cpp counts it (forward)."""
    c, k, v = C, K, V
    per_chunk = 2 * (c * c * k * 2 + c * c * c / 3 + c * c * (v + k) + c * k * v * 3 + c * c * v)
    return per_chunk * B * H * math.ceil(T / C)


def nominal_flops_fwd_bwd(B, T, H, K, V, C=64):
    """Forward and backward: the backward counted as twice the forward (as
    bench/cuda_bench.cpp counts it)."""
    return 3 * nominal_flops(B, T, H, K, V, C)


def minimum_bytes_fwd_bwd(B, T, H, K, V, kda):
    """The forward's, and do read once (bf16), dht once (f32), every gradient written once
    (bf16; dh0 f32; kda's dbeta once per token)."""
    tk, tv, state = B * T * H * K, B * T * H * V, B * H * K * V
    gates = B * T * H if kda else tk + tv
    return (minimum_bytes(B, T, H, K, V, kda) + 2 * tv + 4 * state
            + 2 * (3 * tk + tv + gates) + 4 * state)


def minimum_bytes(B, T, H, K, V, kda):
    """Each input read once (bf16; kda's beta once per token), o written once (bf16), h0 and
    ht once (f32): the fewest bytes a forward must move."""
    tk, tv, state = B * T * H * K, B * T * H * V, B * H * K * V
    gates = B * T * H if kda else tk + tv
    return 2 * (3 * tk + tv + gates + tv) + 4 * 2 * state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libdeltaproof_tc.so (build/lib)")
    ap.add_argument("--ops", nargs="+", default=["gdn2", "kda"], choices=["gdn2", "kda"])
    for name, default in (("B", 4), ("T", 4096), ("H", 16), ("K", 128), ("V", 128)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--sets", type=int, default=3, help="input sets rotated call by call")
    ap.add_argument("--no-backward", action="store_true", help="time FLA's forward only")
    ap.add_argument("--o-f32", action="store_true",
                    help="cuda-tc writes o in f32 (default: bf16, the type FLA writes it in)")
    ap.add_argument("--kda-gdn2-form", action="store_true",
                    help="cuda-tc takes kda's beta broadcast into b and w at full width "
                    "(default: beta as it is, its C API's beta)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--shapes", nargs="*", help="BxT shapes, e.g. 4x4096 1x32768 (instead of "
                    "--B and --T; none, with --varlen, for the packed case alone)")
    ap.add_argument("--varlen", type=int, default=0,
                    help="also N packed sequences of mixed lengths (FLA's cu_seqlens)")
    args = ap.parse_args()
    cases = []  # (B, T, lengths or None)
    for text in [f"{args.B}x{args.T}"] if args.shapes is None else args.shapes:
        try:
            b_text, t_text = text.lower().split("x")
            cases.append((int(b_text), int(t_text), None))
        except ValueError:
            sys.exit(f"tc_vs_fla.py: --shapes takes BxT, e.g. 4x4096, not {text!r}")
    if args.varlen:
        lengths = mixed_lengths(args.varlen)
        cases.append((1, sum(lengths), lengths))
    if not cases:
        sys.exit("tc_vs_fla.py: nothing to time (--shapes with no shape and no --varlen)")

    import torch
    if not torch.cuda.is_available():
        sys.exit("tc_vs_fla.py: no CUDA device")
    if not os.path.exists(args.lib):
        sys.exit(f"tc_vs_fla.py: {args.lib} does not exist (build the deltaproof_tc target)")
    lib = ctypes.CDLL(os.path.abspath(args.lib))
    lib.deltaproof_tc_scratch_bytes.restype = ctypes.c_size_t
    lib.deltaproof_tc_scratch_bytes.argtypes = [ctypes.POINTER(Problem)]
    lib.deltaproof_tc_forward.restype = ctypes.c_int
    lib.deltaproof_tc_forward.argtypes = [ctypes.POINTER(Problem), ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_uint, ctypes.c_char_p,
                                          ctypes.c_size_t]
    lib.deltaproof_tc_scratch_bytes_backward.restype = ctypes.c_size_t
    lib.deltaproof_tc_scratch_bytes_backward.argtypes = [ctypes.POINTER(Problem)]
    lib.deltaproof_tc_backward.restype = ctypes.c_int
    lib.deltaproof_tc_backward.argtypes = [
        ctypes.POINTER(Problem), ctypes.POINTER(Gradients), ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
    lib.deltaproof_tc_forward_backward.restype = ctypes.c_int
    lib.deltaproof_tc_forward_backward.argtypes = [
        ctypes.POINTER(Problem), ctypes.POINTER(Gradients), ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_char_p, ctypes.c_size_t]
    import fla
    from fla.ops.gdn2 import chunk_gdn2
    from fla.ops.kda import chunk_kda

    H, K, V = args.H, args.K, args.V
    B, T, N, lengths, starts, longest = 0, 0, 0, None, None, 0  # set per case below
    scale = K ** -0.5
    dev = torch.device("cuda")
    bf = torch.bfloat16
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
          f"fla {getattr(fla, '__version__', '?')}; H{H} K{K} V{V} bf16")
    peak = peaks(props.name)

    def of_peak(rr):  # the rates as shares of this GPU's datasheet peaks, where it is listed
        if peak is None:
            return f"{rr['TFLOPs']:.1f} TFLOP/s, {rr['GBps']:.0f} GB/s (no peaks for this GPU)"
        return (f"{rr['TFLOPs']:.1f} TFLOP/s ({100 * rr['TFLOPs'] / peak[0]:.1f}% of {peak[0]:.0f}), "
                f"{rr['GBps']:.0f} GB/s ({100 * rr['GBps'] / 1e3 / peak[1]:.1f}% of {peak[1]} TB/s)")

    def make_set(op, seed):
        gen = torch.Generator(device=dev).manual_seed(seed)
        def normal(*shape):
            return torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32)
        def uniform(lo, hi, *shape):
            return lo + (hi - lo) * torch.rand(*shape, generator=gen, device=dev)
        x = {}
        x["q"] = torch.nn.functional.normalize(normal(B, T, H, K), dim=-1).to(bf)
        x["k"] = torch.nn.functional.normalize(normal(B, T, H, K), dim=-1).to(bf)
        x["v"] = normal(B, T, H, V).to(bf)
        x["g"] = uniform(-0.1, -0.001, B, T, H, K).to(bf)
        if op == "kda":
            x["beta"] = uniform(0.05, 0.95, B, T, H).to(bf)
            if args.kda_gdn2_form:
                x["b"] = x["beta"][..., None].expand(B, T, H, K).contiguous()
                x["w"] = x["beta"][..., None].expand(B, T, H, V).contiguous()
        else:
            x["b"] = uniform(0.05, 0.95, B, T, H, K).to(bf)
            x["w"] = uniform(0.05, 0.95, B, T, H, V).to(bf)
        x["h0"] = 0.1 * normal(N, H, K, V)
        x["do"] = normal(B, T, H, V).to(bf)
        x["dht"] = 0.1 * normal(N, H, K, V)
        x["do32"] = x["do"].float()
        return x

    scratch_cache = {}
    def problem_of(x, o, ht):
        """The C API's problem: packed, one row per sequence and T the longest; o in bf16
        (o_bf16) or f32 (o) as its tensor is; kda's beta as it is (beta) where the set has
        no b and w."""
        rows, length = (N, longest) if lengths else (B, T)
        o16 = o.dtype == torch.bfloat16
        def ptr(name):
            return x[name].data_ptr() if name in x else None
        native_beta = "b" not in x
        return Problem(rows, length, H, K, V, scale, 1, ptr("q"), ptr("k"), ptr("v"), ptr("g"),
                       ptr("b"), ptr("w"), ptr("h0"), None if o16 else o.data_ptr(),
                       ht.data_ptr(), starts["int32"].data_ptr() if lengths else None,
                       o.data_ptr() if o16 else None, ptr("beta") if native_beta else None)

    def launch(size_of, p, invoke):
        """invoke(problem, scratch, stream, error) runs one of the library's launches with
        scratch of size_of(problem) bytes (allocated once per size) on the current stream;
        a failure exits with the library's sentence."""
        size = size_of(ctypes.byref(p))
        if size == 0:
            sys.exit(f"tc_vs_fla.py: cuda-tc does not run K={K} V={V}")
        if size not in scratch_cache:
            scratch_cache[size] = torch.empty(size, dtype=torch.uint8, device=dev)
        error = ctypes.create_string_buffer(512)
        stream = torch.cuda.current_stream().cuda_stream
        if invoke(ctypes.byref(p), scratch_cache[size].data_ptr(), stream, error) != 0:
            sys.exit(f"tc_vs_fla.py: cuda-tc: {error.value.decode()}")

    def tc_forward(x, o, ht, stages=7):
        launch(lib.deltaproof_tc_scratch_bytes, problem_of(x, o, ht),
               lambda p, scratch, stream, error:
               lib.deltaproof_tc_forward(p, scratch, stream, stages, error, 512))

    def gradients_of(x, grads):
        return Gradients(x["do32"].data_ptr(), x["dht"].data_ptr(),
                         *[grads[n].data_ptr() for n in ("dq", "dk", "dv", "dg", "db", "dw", "dh0")])

    def tc_forward_backward(x, o, ht, grads):
        gr = gradients_of(x, grads)
        launch(lib.deltaproof_tc_scratch_bytes_backward, problem_of(x, o, ht),
               lambda p, scratch, stream, error: lib.deltaproof_tc_forward_backward(
                   p, ctypes.byref(gr), scratch, stream, error, 512))

    def tc_backward(x, o, ht, grads, stages):
        """The backward's stages alone (8 bwd.bk2, 16 tc_bwd_products, 32 tc_bwd_tokens) on
        the scratch the last forward and backward left."""
        gr = gradients_of(x, grads)
        launch(lib.deltaproof_tc_scratch_bytes_backward, problem_of(x, o, ht),
               lambda p, scratch, stream, error: lib.deltaproof_tc_backward(
                   p, ctypes.byref(gr), scratch, stream, stages, error, 512))

    def fla_call(op, x, backward):
        g = x["g"].float()
        h0 = x["h0"]
        if backward:
            leaves = {n: x[n].detach().clone().requires_grad_()
                      for n in (["q", "k", "v", "beta"] if op == "kda" else
                                ["q", "k", "v", "b", "w"])}
            g = g.detach().clone().requires_grad_()
            h0 = h0.detach().clone().requires_grad_()
        else:
            leaves = {n: x[n] for n in ("q", "k", "v", "b", "w", "beta") if n in x}
        common = dict(scale=scale, initial_state=h0, output_final_state=True,
                      use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False)
        if lengths:
            common["cu_seqlens"] = starts["int64"]
        if op == "kda":
            o, ht = chunk_kda(leaves["q"], leaves["k"], leaves["v"], g, leaves["beta"], **common)[:2]
        else:
            o, ht = chunk_gdn2(leaves["q"], leaves["k"], leaves["v"], g, leaves["b"],
                               leaves["w"], **common)[:2]
        if backward:
            torch.autograd.backward([o, ht], [x["do"], x["dht"]])
            grads = {"d" + n: t.grad for n, t in leaves.items()}
            grads["dg"], grads["dh0"] = g.grad, h0.grad
            return o, ht, grads
        return o, ht

    def timed(fn, sets):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for i in range(args.repeats):
            x = sets[i % len(sets)]
            start.record()
            fn(x)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return {"median_ms": statistics.median(times), "min_ms": min(times),
                "max_ms": max(times), "repeats": args.repeats}

    rows = []
    for B, T, lengths in cases:
        N = len(lengths) if lengths else B
        if lengths:
            offsets = sequence_offsets(lengths)
            starts = {"int32": torch.tensor(offsets, dtype=torch.int32, device=dev),
                      "int64": torch.tensor(offsets, dtype=torch.int64, device=dev)}
            longest = max(lengths)
        print(f"\nshape B{B} T{T}" + (f", {N} packed sequences of {min(lengths)}..{longest} "
                                      f"tokens" if lengths else ""))
        for op in args.ops:
            sets = [make_set(op, 1000 * (op == "kda") + s) for s in range(args.sets)]
            o_tc = torch.empty(B, T, H, V, dtype=torch.float32 if args.o_f32 else bf, device=dev)
            ht_tc = torch.empty(N, H, K, V, dtype=torch.float32, device=dev)
            torch.cuda.synchronize()

            start = time.perf_counter()
            tc_forward(sets[0], o_tc, ht_tc)
            torch.cuda.synchronize()
            tc_first = time.perf_counter() - start
            start = time.perf_counter()
            with torch.no_grad():
                o_fla, ht_fla = fla_call(op, sets[0], False)
            torch.cuda.synchronize()
            fla_first = time.perf_counter() - start
            tc_grads = {n: torch.full((B, T, H, V if n in ("dv", "dw") else K), float("nan"),
                                      device=dev) for n in ("dq", "dk", "dv", "dg", "db", "dw")}
            tc_grads["dh0"] = torch.full((N, H, K, V), float("nan"), device=dev)
            start = time.perf_counter()
            tc_forward_backward(sets[0], o_tc, ht_tc, tc_grads)
            torch.cuda.synchronize()
            tc_first_bwd = time.perf_counter() - start
            fla_first_bwd = None
            grad_agree = {}
            if not args.no_backward:
                start = time.perf_counter()
                fla_grads = fla_call(op, sets[0], True)[2]
                torch.cuda.synchronize()
                fla_first_bwd = time.perf_counter() - start
                mine = dict(tc_grads)
                if op == "kda":
                    mine["dbeta"] = mine.pop("db").sum(-1) + mine.pop("dw").sum(-1)
                for name, b in fla_grads.items():
                    a = mine[name].float()
                    grad_agree[name] = float((a - b.float()).abs().max() / b.float().abs().max())
            unwritten_grads = {n: int(torch.isnan(t).sum()) for n, t in tc_grads.items()}

            # agreement on set 0 (both are bf16-class kernels: expect ~1e-2 at most)
            o_poison = torch.full_like(o_tc, float("nan"))
            tc_forward(sets[0], o_poison, ht_tc)
            torch.cuda.synchronize()
            unwritten = int(torch.isnan(o_poison).sum())
            agree = {name: float((a.float() - b.float()).abs().max() / b.float().abs().max())
                     for name, a, b in (("o", o_poison, o_fla), ("ht", ht_tc, ht_fla))}

            # warm-up (FLA autotunes on its first calls), then the timed calls
            for _ in range(3):
                with torch.no_grad():
                    fla_call(op, sets[0], False)
                tc_forward(sets[0], o_tc, ht_tc)
            torch.cuda.synchronize()
            with torch.no_grad():
                fla_fwd = timed(lambda x: fla_call(op, x, False), sets)
            tc_fwd = timed(lambda x: tc_forward(x, o_tc, ht_tc), sets)
            # each stage alone, on the scratch the last whole run left (one input set: the
            # stages must read what the run before them wrote)
            tc_stages = {name: timed(lambda x: tc_forward(sets[0], o_tc, ht_tc, bit), sets)
                         for name, bit in (("fwd.intra", 1), ("fwd.inter", 2), ("fwd.output", 4))}
            for _ in range(2):
                tc_forward_backward(sets[0], o_tc, ht_tc, tc_grads)
            tc_bwd = timed(lambda x: tc_forward_backward(x, o_tc, ht_tc, tc_grads), sets)
            tc_forward_backward(sets[0], o_tc, ht_tc, tc_grads)
            tc_stages.update({name: timed(lambda x: tc_backward(sets[0], o_tc, ht_tc, tc_grads, bit),
                                          sets)
                              for name, bit in (("bwd.bk2", 8), ("tc_bwd_products", 16),
                                                ("tc_bwd_tokens", 32))})
            fla_bwd = None
            if not args.no_backward:
                for _ in range(2):
                    fla_call(op, sets[0], True)
                fla_bwd = timed(lambda x: fla_call(op, x, True), sets)

            flops = nominal_flops(B, T, H, K, V)
            nbytes = minimum_bytes(B, T, H, K, V, op == "kda")
            def rates(ms):
                return {"TFLOPs": flops / (ms * 1e-3) / 1e12, "GBps": nbytes / (ms * 1e-3) / 1e9}
            flops_fb = nominal_flops_fwd_bwd(B, T, H, K, V)
            nbytes_fb = minimum_bytes_fwd_bwd(B, T, H, K, V, op == "kda")
            def rates_fwd_bwd(ms):
                return {"TFLOPs": flops_fb / (ms * 1e-3) / 1e12,
                        "GBps": nbytes_fb / (ms * 1e-3) / 1e9}
            row = {"op": op, "shape": f"B{B} T{T} H{H} K{K} V{V}", "inputs": "bf16",
                   "cuda-tc o": "f32" if args.o_f32 else "bf16",
                   "cuda-tc kda beta": (None if op != "kda" else
                                        "gdn2 form" if args.kda_gdn2_form else "native"),
                   "packed sequence lengths": lengths,
                   "first_call_s": {"cuda-tc fwd": tc_first, "fla fwd": fla_first,
                                    "cuda-tc fwd+bwd": tc_first_bwd, "fla fwd+bwd": fla_first_bwd},
                   "cuda-tc fwd+bwd": {**tc_bwd, **rates_fwd_bwd(tc_bwd["median_ms"])},
                   "ratio fwd+bwd (cuda-tc / fla)":
                       tc_bwd["median_ms"] / fla_bwd["median_ms"] if fla_bwd else None,
                   "gradient agreement with fla (max|a-b|/max|b|)": grad_agree,
                   "cuda-tc unwritten gradient elements": unwritten_grads,
                   "cuda-tc fwd": {**tc_fwd, **rates(tc_fwd["median_ms"])},
                   "fla fwd": {**fla_fwd, **rates(fla_fwd["median_ms"])},
                   "fla fwd+bwd": ({**fla_bwd, **rates_fwd_bwd(fla_bwd["median_ms"])}
                                   if fla_bwd else None),
                   "cuda-tc stages": tc_stages,
                   "ratio fwd (cuda-tc / fla)": tc_fwd["median_ms"] / fla_fwd["median_ms"],
                   "agreement with fla (max|a-b|/max|b|)": agree,
                   "cuda-tc unwritten o elements": unwritten,
                   "nominal_flops_fwd": flops, "minimum_bytes_fwd": nbytes,
                   "nominal_flops_fwd_bwd": flops_fb, "minimum_bytes_fwd_bwd": nbytes_fb}
            rows.append(row)
            print(f"\n{op}: first call cuda-tc {tc_first:.3f} s, FLA fwd {fla_first:.1f} s"
                  + (f", FLA fwd+bwd {fla_first_bwd:.1f} s" if fla_first_bwd is not None else ""))
            print(f"{op}: agreement with FLA: o {agree['o']:.2e}, ht {agree['ht']:.2e}; "
                  f"unwritten o: {unwritten} (cuda-tc's o in {row['cuda-tc o']})")
            for name, r in (("fla fwd", fla_fwd), ("cuda-tc fwd", tc_fwd)):
                rr = rates(r["median_ms"])
                print(f"{op}: {name:12s} median {r['median_ms']:.3f} ms (min {r['min_ms']:.3f}, max "
                      f"{r['max_ms']:.3f}); {of_peak(rr)}")
            print(f"{op}: cuda-tc stages alone: " + ", ".join(
                f"{name} {r['median_ms']:.3f} ms" for name, r in tc_stages.items()))
            rb = rates_fwd_bwd(tc_bwd["median_ms"])
            print(f"{op}: cuda-tc fwd+bwd {rb['TFLOPs']:.1f} TFLOP/s, {rb['GBps']:.0f} GB/s")
            print(f"{op}: cuda-tc fwd+bwd median {tc_bwd['median_ms']:.3f} ms; first call "
                  f"{tc_first_bwd:.3f} s; unwritten gradients {unwritten_grads}")
            if fla_bwd:
                print(f"{op}: fla fwd+bwd  median {fla_bwd['median_ms']:.3f} ms; ratio fwd+bwd "
                      f"cuda-tc / FLA = {tc_bwd['median_ms'] / fla_bwd['median_ms']:.3f}")
                print(f"{op}: gradient agreement with FLA: " +
                      ", ".join(f"{n} {v:.2e}" for n, v in grad_agree.items()))
            print(f"{op}: ratio fwd cuda-tc / FLA = {row['ratio fwd (cuda-tc / fla)']:.3f}")
            if args.json:  # after every row: a run cut off keeps what it measured
                write_json(args.json, {
                    "device": props.name, "torch": torch.__version__,
                    "fla": getattr(fla, "__version__", "?"), "rows": rows,
                    "method": "CUDA events around each call, median of --repeats after warm-up, "
                              f"{args.sets} input sets rotated; FLA fully autotuned" +
                              (" (its choices read from Triton's autotune cache where an earlier "
                               "run on this GPU model left them: TRITON_CACHE_AUTOTUNING=1, "
                               f"TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR', '~/.triton')})"
                               if os.environ.get("TRITON_CACHE_AUTOTUNING") == "1" else "")})
            del sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
