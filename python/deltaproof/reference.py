"""deltaproof.reference: each op's function as the plain token recurrence in
torch, with FLA's signature: a candidate that runs on a CPU (or any device),
whose backward is torch.autograd's. For tests without a GPU, and as a reader's
reference: one screen per op, the names of DESIGN.md section 1.

    import deltaproof
    report = deltaproof.check(deltaproof.reference.kda, fixture="kda/t40-c16", precision="f32")

Per sequence and value head, state S in R^{K x V}, for t = 1..T:

    P   = Diag(exp g_t) S_{t-1}                  (decay)
    e   = (b_t * k_t)^T P                        (what is erased)
    S_t = P + k_t (w_t * v_t - e)^T              (erase and write)
    o_t = scale * S_t^T q_t

kda: b_t = w_t = beta_t (a scalar per token and head); gdn: as kda, with g_t a
scalar per token and head; gdn2: g_t, b_t in R^K and w_t in R^V. Layouts are
FLA's, tokens first: q, k [B,T,H,K]; v, o [B,T,HV,V]; states [N,HV,K,V]. Value
head hv reads key head hv // (HV // H). With cu_seqlens the tokens are packed in
batch 1 and sequence n owns tokens cu_seqlens[n]:cu_seqlens[n+1], with its own
initial and final state.

The recurrence runs in float32 (float64 for float64 inputs) whatever the
inputs' dtype; o comes back in q's dtype and the final state in float32, as
FLA's kernels return them, and each gradient in its input's dtype.
"""

import torch

from deltaproof._errors import InputError


def _recurrence(q, k, v, g, b, w, scale, h0):
    """One dense batch: q, k, g, b [B,T,HV,K] (q and k already per value head),
    v, w [B,T,HV,V], h0 [B,HV,K,V] or None. Returns o [B,T,HV,V], ht [B,HV,K,V]."""
    B, T, HV, K = k.shape
    V = v.shape[-1]
    S = h0 if h0 is not None else q.new_zeros(B, HV, K, V)
    o = []
    for t in range(T):
        P = torch.exp(g[:, t]).unsqueeze(-1) * S  # Diag(exp g_t) S_{t-1}
        e = torch.einsum("bhk,bhkv->bhv", b[:, t] * k[:, t], P)
        S = P + k[:, t].unsqueeze(-1) * (w[:, t] * v[:, t] - e).unsqueeze(-2)
        o.append(scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
    return torch.stack(o, dim=1) if o else v.new_zeros(B, 0, HV, V), S


def _as_value_heads(x, HV, name):
    """q or k [B,T,H,K] at the HV value heads that read them (hv reads hv // (HV // H));
    autograd sums a group's gradients back onto its key head."""
    H = x.shape[2]
    if HV % H:
        raise InputError(f"{name} has {H} heads and v has {HV}; HV must be a multiple of H.")
    return x.repeat_interleave(HV // H, dim=2)


def _run(q, k, v, g, b, w, scale, initial_state, output_final_state, cu_seqlens):
    """The ops' common body, in gdn2's terms (g, b per key and w per value element):
    dense, or sequence by sequence for packed tokens, each with its own state."""
    compute = torch.promote_types(q.dtype, torch.float32)
    q, k, v, g, b, w = (x.to(compute) for x in (q, k, v, g, b, w))
    HV = v.shape[2]
    if scale is None:
        scale = k.shape[-1] ** -0.5
    q, k = _as_value_heads(q, HV, "q"), _as_value_heads(k, HV, "k")
    h0 = initial_state.to(compute) if initial_state is not None else None
    if cu_seqlens is None:
        o, ht = _recurrence(q, k, v, g, b, w, scale, h0)
    else:
        if q.shape[0] != 1:
            raise InputError(f"cu_seqlens given with a batch of {q.shape[0]}; packed is batch 1.")
        bounds = [int(x) for x in cu_seqlens.tolist()]
        outputs, states = [], []
        for n, (begin, end) in enumerate(zip(bounds[:-1], bounds[1:])):
            piece = [x[:, begin:end] for x in (q, k, v, g, b, w)]
            o_n, ht_n = _recurrence(*piece, scale, h0[n : n + 1] if h0 is not None else None)
            outputs.append(o_n)
            states.append(ht_n)
        o, ht = torch.cat(outputs, dim=1), torch.cat(states, dim=0)
    return o, (ht if output_final_state else None)


def gdn2(
    q,
    k,
    v,
    g,
    b,
    w,
    scale=None,
    initial_state=None,
    output_final_state=False,
    cu_seqlens=None,
):
    """Gated DeltaNet-2 (FLA's chunk_gdn2 signature): g, b [B,T,HV,K], w [B,T,HV,V].
    Returns (o, final_state)."""
    o, ht = _run(q, k, v, g, b, w, scale, initial_state, output_final_state, cu_seqlens)
    return o.to(q.dtype), ht


def kda(
    q,
    k,
    v,
    g,
    beta,
    scale=None,
    initial_state=None,
    output_final_state=False,
    cu_seqlens=None,
):
    """Kimi Delta Attention (FLA's chunk_kda signature): g [B,T,HV,K], beta [B,T,HV]:
    b_t = w_t = beta_t. Returns (o, final_state)."""
    b = beta.unsqueeze(-1).expand(*beta.shape, k.shape[-1])
    w = beta.unsqueeze(-1).expand(*beta.shape, v.shape[-1])
    o, ht = _run(q, k, v, g, b, w, scale, initial_state, output_final_state, cu_seqlens)
    return o.to(q.dtype), ht


def gdn(
    q,
    k,
    v,
    g,
    beta,
    scale=None,
    initial_state=None,
    output_final_state=False,
    cu_seqlens=None,
):
    """Gated DeltaNet (FLA's chunk_gated_delta_rule signature): g and beta [B,T,HV],
    one scalar per token and head. Returns (o, final_state)."""
    g_k = g.unsqueeze(-1).expand(*g.shape, k.shape[-1])
    b = beta.unsqueeze(-1).expand(*beta.shape, k.shape[-1])
    w = beta.unsqueeze(-1).expand(*beta.shape, v.shape[-1])
    o, ht = _run(q, k, v, g_k, b, w, scale, initial_state, output_final_state, cu_seqlens)
    return o.to(q.dtype), ht


OPS = {"gdn2": gdn2, "kda": kda, "gdn": gdn}


def for_op(op):
    """The reference callable of an op ('gdn2', 'kda' or 'gdn')."""
    if op not in OPS:
        raise InputError(f"unknown op {op!r}; the ops are {', '.join(OPS)}.")
    return OPS[op]
