"""deltaproof.cuda_tc: cuda-tc as a candidate callable. Its GPU path runs on the device machine
(reports/gpu: check green on three gdn2 fixtures in class bf16, falsify red on every fault); here,
without a GPU, the refusals that need no device."""

import itertools
import os
import re
import sys
from pathlib import Path

import pytest

import deltaproof
from deltaproof import cuda_tc

REPO = Path(__file__).resolve().parents[3]


def test_a_missing_library_is_named(tmp_path):
    missing = tmp_path / "libdeltaproof_tc.so"
    with pytest.raises(
        deltaproof.InputError, match=r"libdeltaproof_tc\.so: no such file.*deltaproof_tc"
    ):
        cuda_tc.load(str(missing))


def _c_fields(struct):
    """The field names of `struct` in kernels/cuda/tc_capi.cu, in order."""
    source = (REPO / "kernels" / "cuda" / "tc_capi.cu").read_text()
    body = re.search(r"struct " + struct + r" \{(.*?)\n\};", source, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    names = []
    for declaration in body.split(";"):
        declaration = declaration.strip()
        if declaration:
            names += [re.sub(r"^.*[\s*]", "", d.strip()) for d in declaration.split(",")]
    return names


def test_the_c_structures_match_tc_capi():
    # read from kernels/cuda/tc_capi.cu itself, so a field added there and not here goes red
    problem = _c_fields("deltaproof_tc_problem")
    assert "cu_seqlens" in problem and problem[:2] == ["B", "T"]
    assert [n for n, _ in cuda_tc._Problem._fields_] == problem
    gradients = _c_fields("deltaproof_tc_gradients")
    assert gradients == ["d_o", "dht", "dq", "dk", "dv", "dg", "db", "dw", "dh0"]
    assert [n for n, _ in cuda_tc._Gradients._fields_] == gradients
    # scripts/tc_vs_fla.py (and tc_stages.py through it) declare the same structures
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import tc_vs_fla
    finally:
        sys.path.pop(0)
    assert [n for n, _ in tc_vs_fla.Problem._fields_] == problem
    assert [n for n, _ in tc_vs_fla.Gradients._fields_] == gradients


def test_cu_seqlens_is_checked_before_any_launch():
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 10, 2, 8)
    with pytest.raises(deltaproof.InputError, match=r"cu_seqlens: must run from 0 to T=10"):
        cuda_tc._packed([0, 4, 9], q)
    with pytest.raises(deltaproof.InputError, match=r"cu_seqlens: must not decrease"):
        cuda_tc._packed([0, 6, 4, 10], q)
    with pytest.raises(deltaproof.InputError, match=r"batch of 1, got q of batch 2"):
        cuda_tc._packed([0, 10], torch.zeros(2, 10, 2, 8))
    starts, longest = cuda_tc._packed([0, 1, 7, 10], q)
    assert starts.dtype == torch.int32 and starts.tolist() == [0, 1, 7, 10] and longest == 6


def test_packed_sequences_match_each_sequence_run_alone():
    # on a GPU with the library built (DELTAPROOF_TC_LIB, else build/lib): cuda-tc with
    # cu_seqlens gives each sequence, bit for bit, its output, final state and gradients
    # when run alone as a batch of one
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    path = os.environ.get("DELTAPROOF_TC_LIB", str(REPO / "build" / "lib" / "libdeltaproof_tc.so"))
    if not os.path.isfile(path):
        pytest.skip(f"{path} not built")
    chunk_gdn2 = cuda_tc.load(path)
    lengths, H, K, V = [1, 64, 135, 1, 129], 2, 64, 32
    gen = torch.Generator(device="cuda").manual_seed(3)

    def draw(*shape, lo=None, hi=None):
        x = torch.rand(*shape, generator=gen, device="cuda")
        return (lo + (hi - lo) * x) if lo is not None else 2 * x - 1

    T, N = sum(lengths), len(lengths)
    x = dict(q=draw(1, T, H, K), k=draw(1, T, H, K), v=draw(1, T, H, V),
             g=draw(1, T, H, K, lo=-0.1, hi=-0.001), b=draw(1, T, H, K, lo=0.05, hi=0.95),
             w=draw(1, T, H, V, lo=0.05, hi=0.95))
    x = {n: t.to(torch.bfloat16).requires_grad_() for n, t in x.items()}
    h0 = (0.1 * draw(N, H, K, V)).requires_grad_()
    do, dht = draw(1, T, H, V), 0.1 * draw(N, H, K, V)
    starts = torch.tensor([0] + list(itertools.accumulate(lengths)))

    def run(xs, state, d_o, d_ht, cu_seqlens=None):
        o, ht = chunk_gdn2(*xs.values(), initial_state=state, output_final_state=True,
                           cu_seqlens=cu_seqlens)
        grads = torch.autograd.grad([o, ht], [*xs.values(), state], [d_o, d_ht])
        return [o, ht, *grads]

    packed = run(x, h0, do, dht, starts)
    for n in range(N):
        a, e = int(starts[n]), int(starts[n + 1])
        alone = run({k: t[:, a:e].detach().requires_grad_() for k, t in x.items()},
                    h0[n:n + 1].detach().requires_grad_(), do[:, a:e], dht[n:n + 1])
        for i, (mine, theirs) in enumerate(zip(packed, alone)):
            state = i in (1, 8)  # ht and dh0: one per sequence
            part = mine[n:n + 1] if state else mine[:, a:e]
            assert torch.equal(part, theirs), f"sequence {n} ({a}..{e}): output {i} differs"
