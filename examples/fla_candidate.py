#!/usr/bin/env python3
"""Run flash-linear-attention's (FLA) chunked kernel on a deltaproof fixture
and write a candidate file for `deltaproof gate check`.

Needs a CUDA GPU, PyTorch, safetensors and FLA (`pip install fla-core`; the
signatures below were read from fla-core 0.6.0). CI does not run this example.
FLA's first call compiles and autotunes its Triton kernels: on an H200 (torch
2.11, triton 3.6, fla-core 0.6.0) chunk_kda's first forward+backward had not
finished after 200 s (2026-11-29, reports/gpu/README.md); allow minutes, or pass
--first-config: each Triton autotuner then keeps only its first config (same
math, only the tiling differs), so nothing is benchmarked and a first call is
a compile alone. The wall time of the first call is printed.

    python examples/fla_candidate.py fixtures/kda/t64-c64.safetensors \
        --out kda-t64.candidate.safetensors [--dtype bf16|f32] [--allow-tf32] [--first-config]
        [--config BK=32,num_warps=4] [--function fused_recurrent] [--phase fwd] [--poison-tail]
        [--device cpu]

Exit codes: 0 written; 1 the candidate could not be set up (no GPU, FLA does not
import, the fixture is unreadable); 3 the kernel raised while it ran (its forward or
backward: an assertion, a compile error, a CUDA fault), its message quoted on the
last line as "fla_candidate: the kernel raised TYPE: MESSAGE" (scripts/replay.py
counts that as a crash the kernel reported).

A packed fixture (gen --cu-seqlens) passes its cu_seqlens to FLA; a grouped one
(gen --HV) has v, the gates and the states at HV heads already, as FLA takes them
(FLA's chunk_gdn2 has no grouped value heads at bc3b101d: it refuses them).

The fixture's inputs (F64, FLA layout) are cast to --dtype (default: the
fixture's own `dtype`, in which every input is exactly representable), run
through FLA's Triton kernel forward and backward with the fixture's cotangents
do and dht, and o, ht and the gradients "d" + input name are written in the dtype
FLA returns them in (bf16 stays bf16, f32 stays f32: lossless; `gate check`
reads F32, F16 and BF16). The metadata records the autotuning ("first-config"
or "full") and the first call's wall time.

The inputs, the call and the backward are the Python package's
(deltaproof.run_candidate, python/deltaproof/candidate.py: FLA's layout, scale, g
form, cu_seqlens and identity options); this script adds FLA's setup (precision
flags, autotuning, which function) and writes the file. That part of the package
needs torch, not its compiled core: where the package is not installed, this
repository's python/ is imported. --device cpu runs on the CPU (a stand-in `fla`
whose functions are torch code: tests/python/package/test_fla_candidate.py).
"""
import argparse
import importlib
import logging
import os
import sys
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# --function fused_recurrent: the token-by-token kernels (forward only for kda), called by keyword.
RECURRENT = {
    "kda": ("fla.ops.kda", "fused_recurrent_kda"),
    "gdn": ("fla.ops.gated_delta_rule", "fused_recurrent_gated_delta_rule"),
}
KERNEL_RAISED = 3  # the exit code when the kernel itself raised (scripts/replay.py: a crash)


def fail(message):
    sys.exit(f"fla_candidate: {message}")


def kernel_raised(error):
    """The kernel (FLA's function, its backward, or a CUDA error they left) raised: quote it."""
    import traceback
    traceback.print_exc()
    message = " ".join(str(error).split())
    print(f"fla_candidate: the kernel raised {type(error).__name__}: {message}", file=sys.stderr)
    sys.exit(KERNEL_RAISED)


def import_candidate():
    """deltaproof.candidate: the installed package's, else this repository's python/."""
    try:
        from deltaproof import candidate
    except ImportError:
        for name in [m for m in sys.modules if m == "deltaproof" or m.startswith("deltaproof.")]:
            del sys.modules[name]
        sys.path.insert(0, os.path.join(REPO, "python"))
        from deltaproof import candidate
    return candidate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixture", help="deltaproof fixture (.safetensors)")
    parser.add_argument("--out", required=True, help="candidate file to write")
    parser.add_argument("--dtype", choices=["bf16", "f32"], help="input dtype (default: the fixture's)")
    parser.add_argument("--allow-tf32", action="store_true", help="let f32 matmuls use TF32 (class tf32)")
    parser.add_argument("--first-config", action="store_true",
                        help="keep only each Triton autotuner's first config (no autotuning; same math)")
    parser.add_argument("--config", metavar="KEY=VALUE,...",
                        help="keep, in each Triton autotuner, only the first config whose kwargs (or "
                             "num_warps, num_stages) match every KEY=VALUE; an autotuner with none "
                             "keeps its first config. Reaches a tiling that autotuning may pick on "
                             "another machine, e.g. BK=32,num_warps=4")
    parser.add_argument("--function", choices=["chunk", "fused_recurrent"], default="chunk",
                        help="which of FLA's kernels: chunk (default) or fused_recurrent (the "
                             "token-by-token kernel; kda's is forward only: --phase fwd)")
    parser.add_argument("--phase", choices=["fwd", "bwd"], default="bwd",
                        help="bwd (default): forward and backward; fwd: o and ht only")
    parser.add_argument("--poison-tail", action="store_true",
                        help="place each input at the start of a larger buffer whose other "
                             "elements are NaN: a load past an input's end (a missing "
                             "mask) turns results NaN instead of reading harmless neighbours")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="where the inputs go (default cuda; cpu: a stand-in fla in tests)")
    args = parser.parse_args()
    if os.path.exists(args.out) and os.path.samefile(args.out, args.fixture):
        fail("--out is the fixture itself; choose another path")

    try:  # imported here so that --help works without them
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file, save_file
    except ImportError as e:
        fail(f"{e.name} is not installed (pip install torch safetensors)")
    candidate = import_candidate()
    with safe_open(args.fixture, framework="pt") as f:
        meta = f.metadata() or {}
    op = meta.get("op")
    if op not in candidate.FLA_FUNCTIONS:
        fail(f"{args.fixture}: unknown op {op!r} in its metadata (expected one of "
             f"{', '.join(candidate.FLA_FUNCTIONS)})")
    dtype = args.dtype or meta.get("dtype", "f32")
    if dtype == "bf16" and meta.get("dtype") != "bf16":
        print("warning: the fixture's inputs are f32; casting them to bf16 rounds them, so the gate "
              "measures input rounding too (make a bf16 fixture: deltaproof gen --dtype bf16)")
    precision = "bf16" if dtype == "bf16" else "tf32" if args.allow_tf32 else "f32"
    on_gpu = args.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        fail("no CUDA device: FLA's Triton kernels need a GPU")

    # Precision. Triton's fp32 tl.dot is TF32 unless TRITON_F32_DEFAULT=ieee; set it, and
    # PyTorch's matmul flag, before FLA compiles anything. Pin FLA's own Triton path: without
    # FLA_DISABLE_BACKEND_DISPATCH=1 (fla/backends.py) a call may be routed to another installed
    # backend (FlashKDA, FlashQLA, ...). Set it to 0 yourself to test those instead.
    torch.backends.cuda.matmul.allow_tf32 = args.allow_tf32
    if not args.allow_tf32:
        os.environ["TRITON_F32_DEFAULT"] = "ieee"
        os.environ["FLA_TRIL_PRECISION"] = "ieee"
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    logging.basicConfig(format="%(name)s: %(message)s")
    logging.getLogger("fla").setLevel(logging.INFO)  # FLA logs which backend each call took
    module_name, function_name = candidate.FLA_FUNCTIONS[op]
    if args.function == "fused_recurrent":
        if op not in RECURRENT:
            fail(f"--function fused_recurrent: no recurrent kernel is wired for op {op}")
        module_name, function_name = RECURRENT[op]
    if args.config:
        try:
            wanted = dict(item.split("=", 1) for item in args.config.split(","))
        except ValueError:
            fail(f"--config {args.config!r}: expected KEY=VALUE[,KEY=VALUE...]")
        from triton.runtime.autotuner import Autotuner
        all_init = Autotuner.__init__

        def matches(config):
            have = dict(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
            return all(k in have and str(have[k]) == v for k, v in wanted.items())

        def chosen_config_init(self, fn, arg_names, configs, *rest, **kwargs):
            configs = list(configs)
            keep = [c for c in configs if matches(c)][:1] or configs[:1]
            all_init(self, fn, arg_names, keep, *rest, **kwargs)
        Autotuner.__init__ = chosen_config_init
    elif args.first_config:
        # Before FLA is imported: its kernels build their autotuners (triton.autotune and FLA's
        # CachedAutotuner, a subclass) at import time. With one config Triton benchmarks nothing.
        from triton.runtime.autotuner import Autotuner
        full_init = Autotuner.__init__

        def first_config_init(self, fn, arg_names, configs, *rest, **kwargs):
            full_init(self, fn, arg_names, list(configs)[:1], *rest, **kwargs)
        Autotuner.__init__ = first_config_init
    try:
        fla = importlib.import_module("fla")
        fn = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as e:
        fail(f"cannot load {module_name}.{function_name} ({e}); pip install fla-core")
    import inspect
    if op == "gdn2" and "w" not in inspect.signature(fn).parameters:
        fail("this FLA's chunk_gdn2 is the older scalar-beta form; a version whose chunk_gdn2 "
             "takes (q, k, v, g, b, w) is needed, e.g. fla-core 0.6.0")
    if on_gpu and precision == "f32" and torch.cuda.get_device_capability()[0] >= 8:
        print("note: on Ampere and newer FLA fixes TF32 for the intra-chunk triangular solve "
              "(SOLVE_TRIL_DOT_PRECISION in fla/ops/*/chunk_intra.py, gated_delta_rule/chunk_fwd.py); "
              "if the f32 bars fail, compare with --allow-tf32")

    # The fixture's tensors as read by safetensors (the compiled core is not needed here). The
    # package builds the inputs (q k v b w beta in the compute dtype; g and h0 in float32 as
    # FLA's own tests pass them), calls FLA with scale from the metadata (decimal string,
    # K^-1/2), h0 and the final state, and a packed fixture's cu_seqlens; FLA uses its own chunk
    # size (64; gdn2 accepts only 64): the function does not depend on it.
    tensors = load_file(args.fixture)
    cu_seqlens = tensors["cu_seqlens"].tolist() if "cu_seqlens" in tensors else []
    fixture = types.SimpleNamespace(op=op, scale=float(meta["scale"]), tensors=tensors,
                                    cu_seqlens=cu_seqlens)
    if tensors["v"].shape[2] != tensors["q"].shape[2]:
        print(f"grouped value heads: H={tensors['q'].shape[2]}, HV={tensors['v'].shape[2]}")
    try:  # by keyword for the recurrent kernels: they put other parameters between the inputs
        run = candidate.run_candidate(fn, fixture, precision, args.phase, device=args.device,
                                      poison_tail=args.poison_tail,
                                      by_keyword=args.function != "chunk")
    except candidate.CandidateError as error:  # an assertion, a Triton compile error, a CUDA fault
        kernel_raised(error.error)
    except candidate.InputError as error:  # no cu_seqlens, no graph, a misshapen output
        fail(f"{function_name}: {error}")
    autotune = f"config {args.config}" if args.config else (
        "first-config" if args.first_config else "full")
    print(f"first call ({autotune} autotuning, compile included): forward {run.forward_s:.1f} s, "
          f"backward {run.backward_s:.1f} s, total {run.forward_s + run.backward_s:.1f} s")
    for name in run.missing:
        print(f"warning: FLA produced no gradient for {name[1:]}; {name} is left out of the candidate")

    # FLA's own dtype (lossless); anything but bf16 and f32 (none seen) as float32.
    out = {k: (v if v.dtype in (torch.bfloat16, torch.float32) else v.float()).detach().contiguous().cpu()
           for k, v in run.outputs.items()}
    save_file(out, args.out, metadata={
        "format": "deltaproof-candidate/1", "backend": f"fla-{function_name}", "op": op,
        "phase": args.phase, "precision": precision, "poison_tail": str(args.poison_tail).lower(), "dtype": dtype, "fixture": args.fixture,
        "autotune": autotune, "first_call_forward_s": f"{run.forward_s:.3f}",
        "first_call_backward_s": f"{run.backward_s:.3f}",
        "fla_version": str(getattr(fla, "__version__", "unknown")), "torch_version": torch.__version__,
        "device": torch.cuda.get_device_name() if on_gpu else "cpu"})
    dtypes = ", ".join(f"{k} {str(v.dtype).removeprefix('torch.')}" for k, v in sorted(out.items()))
    print(f"wrote {args.out}: {dtypes} ({op}, {dtype} inputs, class {precision})")
    print("gate it with:\n  build/bin/deltaproof gate check --fixture "
          f"{args.fixture} --candidate {args.out} --precision {precision}")


if __name__ == "__main__":
    main()
