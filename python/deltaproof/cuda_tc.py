"""cuda-tc, deltaproof's own tensor-core kernel (kernels/cuda/tc.cu), as a candidate callable
with FLA's chunk_gdn2 signature, so that deltaproof.check and deltaproof.falsify run it from
Python exactly as they run FLA's kernels:

    import deltaproof
    from deltaproof.cuda_tc import load
    chunk_gdn2 = load("build/lib/libdeltaproof_tc.so")
    report = deltaproof.check(chunk_gdn2, fixture="gdn2/t64-c64", precision="bf16")

The library is the CMake target deltaproof_tc (build/lib/libdeltaproof_tc.so, built where nvcc
is found): C functions on device pointers (kernels/cuda/tc_capi.cu). The forward returns o and
the final state in f32; the backward runs the library's forward and backward again on the
saved inputs with the cotangents in f32 and hands back the gradients in the inputs' dtypes.
cuda-tc runs chunk 64, K and V up to 128, dense batches or packed sequences (cu_seqlens, FLA's
varlen: a batch of one, one initial and final state per sequence): the library's sentence is
raised otherwise. Its precision class is bf16 (docs/PRECISION.md).
"""

import ctypes
import os

from deltaproof._errors import InputError

_GRADIENTS = ("dq", "dk", "dv", "dg", "db", "dw", "dh0")


class _Problem(ctypes.Structure):
    _fields_ = (
        [(n, ctypes.c_int) for n in ("B", "T", "H", "K", "V")]
        + [
            ("scale", ctypes.c_float),
            ("bf16_inputs", ctypes.c_int),
        ]
        + [
            (n, ctypes.c_void_p)
            for n in ("q", "k", "v", "g", "b", "w", "h0", "o", "ht", "cu_seqlens", "o_bf16", "beta")
        ]
    )


class _Gradients(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in ("d_o", "dht", *_GRADIENTS)]


def _open(path):
    if not os.path.isfile(path):
        raise InputError(
            f"{path}: no such file; cuda-tc's library is the CMake target deltaproof_tc "
            "(build/lib/libdeltaproof_tc.so, built where nvcc is found)"
        )
    lib = ctypes.CDLL(os.path.abspath(path))
    size_of = [ctypes.POINTER(_Problem)]
    lib.deltaproof_tc_scratch_bytes.restype = ctypes.c_size_t
    lib.deltaproof_tc_scratch_bytes.argtypes = size_of
    lib.deltaproof_tc_scratch_bytes_backward.restype = ctypes.c_size_t
    lib.deltaproof_tc_scratch_bytes_backward.argtypes = size_of
    lib.deltaproof_tc_forward.restype = ctypes.c_int
    lib.deltaproof_tc_forward.argtypes = [
        ctypes.POINTER(_Problem),
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_uint,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.deltaproof_tc_forward_backward.restype = ctypes.c_int
    lib.deltaproof_tc_forward_backward.argtypes = [
        ctypes.POINTER(_Problem),
        ctypes.POINTER(_Gradients),
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    return lib


def _packed(cu_seqlens, q):
    """FLA's cu_seqlens as the library takes them: (int32 starts on q's device, the longest
    sequence's length), or InputError naming what is wrong."""
    import torch

    if q.shape[0] != 1:
        raise InputError(f"cu_seqlens: packed sequences need a batch of 1, got q of batch {q.shape[0]}")
    starts = torch.as_tensor(cu_seqlens).to(device="cpu", dtype=torch.int64).reshape(-1)
    if starts.numel() < 2 or int(starts[0]) != 0 or int(starts[-1]) != q.shape[1]:
        raise InputError(
            f"cu_seqlens: must run from 0 to T={q.shape[1]} with at least one sequence, got "
            f"{starts.tolist()}"
        )
    lengths = starts[1:] - starts[:-1]
    if bool((lengths < 0).any()):
        raise InputError(f"cu_seqlens: must not decrease, got {starts.tolist()}")
    return starts.to(device=q.device, dtype=torch.int32), int(lengths.max())


def load(path="build/lib/libdeltaproof_tc.so"):
    """cuda-tc as `chunk_gdn2(q, k, v, g, b, w, scale=None, initial_state=None,
    output_final_state=False, cu_seqlens=None)` -> (o, final_state), FLA's layout: q k g b
    [B, T, H, K], v w [B, T, H, V], initial_state [B, H, K, V]; all of q k v g b w bf16 or
    all f32, on one CUDA device. With cu_seqlens (FLA's varlen: B = 1, N sequences packed
    along T), initial_state and the final state are [N, H, K, V] and each sequence runs as
    its own (natively: no padding). Differentiable through torch.autograd."""
    import torch

    lib = _open(path)

    def problem(x, o, ht):
        q, (starts, longest) = x[0], x[8]
        B, T, H, K = q.shape
        V = x[2].shape[-1]
        if starts is not None:  # packed: one row per sequence, T the longest
            B, T = starts.numel() - 1, longest
        p = _Problem(B, T, H, K, V, x[6], 1 if q.dtype == torch.bfloat16 else 0)
        for name, t in zip(("q", "k", "v", "g", "b", "w", "h0"), x[:6] + (x[7],)):
            setattr(p, name, t.data_ptr())
        p.o, p.ht = o.data_ptr(), ht.data_ptr()
        p.cu_seqlens = starts.data_ptr() if starts is not None else None
        return p

    def launch(size_of, p, invoke, device):
        size = size_of(ctypes.byref(p))
        if size == 0:
            raise InputError(
                f"cuda-tc cannot run B={p.B} T={p.T} H={p.H} K={p.K} V={p.V}: chunk 64, "
                "K and V up to 128 (kernels/cuda/tc.hpp, TcConfig::supports)"
            )
        scratch = torch.empty(size, dtype=torch.uint8, device=device)
        stream = torch.cuda.current_stream(device).cuda_stream
        error = ctypes.create_string_buffer(512)
        if invoke(ctypes.byref(p), scratch.data_ptr(), stream, error) != 0:
            raise RuntimeError(f"cuda-tc: {error.value.decode(errors='replace')}")
        torch.cuda.current_stream(device).synchronize()  # scratch lives until the kernels end

    class _Tc(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, g, b, w, scale, h0, packed):
            o = torch.empty(v.shape, dtype=torch.float32, device=q.device)
            ht = torch.empty(h0.shape, dtype=torch.float32, device=q.device)
            x = (q, k, v, g, b, w, scale, h0, packed)
            launch(
                lib.deltaproof_tc_scratch_bytes,
                problem(x, o, ht),
                lambda p, s, st, e: lib.deltaproof_tc_forward(p, s, st, 7, e, 512),
                q.device,
            )
            ctx.save_for_backward(q, k, v, g, b, w, h0)
            ctx.scale, ctx.packed = scale, packed
            return o, ht

        @staticmethod
        def backward(ctx, do, dht):
            q, k, v, g, b, w, h0 = ctx.saved_tensors
            x = (q, k, v, g, b, w, ctx.scale, h0, ctx.packed)
            f32 = dict(dtype=torch.float32, device=q.device)
            do = (torch.zeros(v.shape, **f32) if do is None else do.float()).contiguous()
            dht = (torch.zeros(h0.shape, **f32) if dht is None else dht.float()).contiguous()
            like = dict(dq=q, dk=k, dv=v, dg=g, db=b, dw=w, dh0=h0)
            grads = {n: torch.empty(like[n].shape, **f32) for n in _GRADIENTS}
            o = torch.empty(v.shape, **f32)
            ht = torch.empty(h0.shape, **f32)
            gr = _Gradients(
                do.data_ptr(), dht.data_ptr(), *[grads[n].data_ptr() for n in _GRADIENTS]
            )
            launch(
                lib.deltaproof_tc_scratch_bytes_backward,
                problem(x, o, ht),
                lambda p, s, st, e: lib.deltaproof_tc_forward_backward(
                    p, ctypes.byref(gr), s, st, e, 512
                ),
                q.device,
            )
            out = [grads[n].to(like[n].dtype) for n in _GRADIENTS]
            return (*out[:6], None, out[6], None)

    def chunk_gdn2(
        q, k, v, g, b, w, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None
    ):
        packed = (None, 0)
        if cu_seqlens is not None:
            packed = _packed(cu_seqlens, q)
        tensors = dict(q=q, k=k, v=v, g=g, b=b, w=w)
        dtype = q.dtype
        for name, t in tensors.items():
            if not t.is_cuda:
                raise InputError(f"{name}: cuda-tc needs CUDA tensors, got one on {t.device}")
        if dtype not in (torch.bfloat16, torch.float32):
            raise InputError(f"q: cuda-tc takes bf16 or f32 inputs, got {dtype}")
        B, T, H, K = q.shape
        V = v.shape[-1]
        h0 = initial_state
        states = B if packed[0] is None else packed[0].numel() - 1
        if h0 is None:
            h0 = torch.zeros((states, H, K, V), dtype=torch.float32, device=q.device)
        elif tuple(h0.shape) != (states, H, K, V):
            raise InputError(
                f"initial_state: cuda-tc needs [{states}, {H}, {K}, {V}] (one state per "
                f"{'sequence' if packed[0] is not None else 'batch row'}), got {list(h0.shape)}"
            )
        # one dtype for the token inputs (FLA's callers pass g in f32 beside bf16 q k v b w;
        # a bf16 fixture's g is bf16-exact, so the cast keeps its values)
        xs = [t.to(dtype).contiguous() for t in (q, k, v, g, b, w)]
        scale = float(K**-0.5 if scale is None else scale)
        o, ht = _Tc.apply(*xs, scale, h0.float().contiguous(), packed)
        return o, (ht if output_final_state else None)

    return chunk_gdn2
