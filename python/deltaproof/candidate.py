"""deltaproof.check: a candidate callable with FLA's signature, run on a
fixture's inputs and judged by the gate check.

A candidate is called as FLA's chunked kernels are (fla-core 0.6.0):

    o, final_state = fn(q, k, v, g, beta,          # kda, gdn (gdn2: q, k, v, g, b, w)
                        scale=..., initial_state=h0, output_final_state=True,
                        [cu_seqlens=...], [FLA's identity options])[:2]

- Tokens-first layout as the fixture stores it: q, k [B,T,H,K]; v [B,T,HV,V];
  kda's g and gdn2's g, b [B,T,HV,K]; gdn2's w [B,T,HV,V]; beta and gdn's g
  [B,T,HV]; initial_state [N,HV,K,V]. q and k keep H heads, v and the gates HV
  (grouped value heads: value head hv reads key head hv // (HV // H)).
- g is the per-token log-decay (natural log, not cumulative).
- scale is the fixture's (K^-1/2); initial_state is the fixture's h0, and the
  backward reaches it (dh0).
- A packed fixture (gen --cu-seqlens) passes its cu_seqlens (int64, on the
  inputs' device; and cu_seqlens_cpu where the callable takes it), batch 1.
- Options that switch off a transformation the fixture's function does not
  have (IDENTITY_OPTIONS: q and k are already l2-normalised, g is already the
  log-decay, beta is already a gate; head_first=False) are passed when the
  callable's signature names them, and left out otherwise.
- Inputs in the precision class's dtype (bf16: bfloat16; f32, tf32: float32),
  but g and initial_state in float32 as FLA's own tests pass them (exact: the
  fixture's values are representable in its dtype). Every input is a leaf that
  requires grad for phase bwd.
- The backward is torch.autograd.backward of (o, final_state) with the
  fixture's cotangents (do, dht) in the outputs' dtypes; the gradients are the
  inputs' .grad: dq, dk, dv, dg, dbeta | db, dw, dh0.

The mapping is examples/fla_candidate.py's (it runs FLA's kernels through
run_candidate). This module needs torch, not the compiled core: a fixture may be
any object with op, scale, tensors and cu_seqlens as deltaproof.Fixture has them.
"""

import inspect
import os
import time
from contextlib import contextmanager

from deltaproof._errors import CandidateError, InputError

# op -> the inputs in FLA's positional order (fla/ops/gdn2/chunk.py chunk_gdn2,
# fla/ops/kda/chunk.py chunk_kda, fla/ops/gated_delta_rule/chunk.py chunk_gated_delta_rule)
INPUTS = {
    "gdn2": ("q", "k", "v", "g", "b", "w"),
    "kda": ("q", "k", "v", "g", "beta"),
    "gdn": ("q", "k", "v", "g", "beta"),
}
# op -> (FLA's module, its chunked function)
FLA_FUNCTIONS = {
    "gdn2": ("fla.ops.gdn2", "chunk_gdn2"),
    "kda": ("fla.ops.kda", "chunk_kda"),
    "gdn": ("fla.ops.gated_delta_rule", "chunk_gated_delta_rule"),
}
# Every transformation the fixture's function does not have, switched off. Options that a
# callable (or a given FLA version) lacks are dropped. Versions before 2025-07 took
# head_first, some defaulting to True (heads-first); the fixture is tokens-first.
IDENTITY_OPTIONS = dict(
    use_qk_l2norm_in_kernel=False,
    use_gate_in_kernel=False,
    use_beta_sigmoid_in_kernel=False,
    safe_gate=False,
    head_first=False,
)
PRECISIONS = ("f32", "tf32", "bf16")
FLOAT32_INPUTS = ("g", "h0")  # passed in float32 whatever the class, as FLA's tests do
POISON_PAD = 1 << 16  # poison_tail: NaN elements after each input's last one


class CandidateRun:
    """What run_candidate returns. outputs: {name: tensor} (o, ht and, for bwd,
    every gradient that reached its input), detached, on the inputs' device, in
    the dtype the callable returned. missing: the gradients that did not reach
    their input (its .grad stayed None). forward_s, backward_s: wall times
    (synchronised on a GPU). call: the call, in words."""

    def __init__(self, outputs, missing, forward_s, backward_s, call):
        self.outputs = outputs
        self.missing = missing
        self.forward_s = forward_s
        self.backward_s = backward_s
        self.call = call


def input_dtype(precision):
    """The dtype name of a class's inputs: 'bf16' for bf16, 'f32' for f32 and tf32."""
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision class {precision!r}; pass 'f32', 'tf32' or 'bf16'.")
    return "bf16" if precision == "bf16" else "f32"


def callable_name(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        return repr(fn)
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module and module != "__main__" else name


def resolve_fixture(fixture):
    """A Fixture (or an object with its op, scale, tensors and cu_seqlens), a
    fixture's path, or a committed fixture's name ('kda/t40-c16', in the folder
    deltaproof.fixtures_folder() finds)."""
    if not isinstance(fixture, (str, os.PathLike)):
        for attribute in ("op", "scale", "tensors", "cu_seqlens"):
            if not hasattr(fixture, attribute):
                raise InputError(
                    f"fixture is a {type(fixture).__name__} without {attribute!r}; pass a "
                    "deltaproof.Fixture, a fixture's path or a committed fixture's name "
                    "('kda/t40-c16')."
                )
        return fixture
    from deltaproof._fixture import fixtures_folder, load_fixture

    path = os.fspath(fixture)
    if not os.path.exists(path) and not path.endswith(".safetensors"):
        path = os.path.join(fixtures_folder(), path + ".safetensors")
    return load_fixture(path)


def _parameters(fn):
    """The callable's parameters by name; None for one without a signature (a builtin),
    which gets the options it needs and none of IDENTITY_OPTIONS."""
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def _build_inputs(fixture, dtype, device, requires_grad, poison_tail):
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    inputs = {}
    for name in INPUTS[fixture.op] + ("h0",):
        if name not in fixture.tensors:
            raise InputError(f"the fixture has no input {name!r}; a {fixture.op} fixture holds it.")
        want = torch.float32 if name in FLOAT32_INPUTS else torch_dtype
        value = torch.as_tensor(fixture.tensors[name]).to(device=device, dtype=want).contiguous()
        if poison_tail:  # a view of a larger NaN buffer: still contiguous, nothing copied
            buffer = torch.full(
                (value.numel() + POISON_PAD,), float("nan"), device=device, dtype=want
            )
            value = buffer[: value.numel()].view(value.shape).copy_(value)
        inputs[name] = value.requires_grad_(requires_grad)
    return inputs


def _options(fn, fixture, inputs, device):
    import torch

    parameters = _parameters(fn)
    options = {}
    if parameters is not None:
        options.update({k: v for k, v in IDENTITY_OPTIONS.items() if k in parameters})
    options.update(scale=float(fixture.scale), initial_state=inputs["h0"], output_final_state=True)
    cu_seqlens = fixture.tensors.get("cu_seqlens") if hasattr(fixture.tensors, "get") else None
    if cu_seqlens is not None:
        if parameters is not None and "cu_seqlens" not in parameters:
            raise InputError(
                f"{callable_name(fn)} takes no cu_seqlens, and the fixture is packed "
                f"(cu_seqlens {list(fixture.cu_seqlens)}); pass a dense fixture or a callable "
                "that takes cu_seqlens."
            )
        options["cu_seqlens"] = torch.as_tensor(cu_seqlens).to(device=device, dtype=torch.long)
        if parameters is not None and "cu_seqlens_cpu" in parameters:
            options["cu_seqlens_cpu"] = torch.as_tensor(cu_seqlens).to(dtype=torch.long)
    return options


def _describe_call(fn, op, options, by_keyword):
    inputs = ", ".join(f"{n}={n}" if by_keyword else n for n in INPUTS[op])
    shown = []
    for key, value in options.items():
        if key == "initial_state":
            shown.append("initial_state=h0")
        elif key in ("cu_seqlens", "cu_seqlens_cpu"):
            shown.append(f"{key}={value.tolist()}")
        else:
            shown.append(f"{key}={value!r}")
    return f"{callable_name(fn)}({inputs}, {', '.join(shown)})"


@contextmanager
def _precision_flags(precision):
    """TF32 in torch's float32 matmuls for class tf32 only, restored after."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _synchronize(device):
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _outputs_of(result, call, fixture, inputs):
    """(o, ht) of what the callable returned, checked against the fixture's shapes."""
    import torch

    if not isinstance(result, (tuple, list)) or len(result) < 2:
        raise InputError(
            f"{call} returned a {type(result).__name__}; a candidate returns (o, final_state) "
            "as FLA's functions do."
        )
    o, ht = result[0], result[1]
    q, v, h0 = inputs["q"], inputs["v"], inputs["h0"]
    expected = {"o": (q.shape[0], q.shape[1], v.shape[2], v.shape[3]), "ht": tuple(h0.shape)}
    for name, value, layout in (("o", o, "[B,T,HV,V]"), ("ht", ht, "[N,HV,K,V]")):
        what = "o" if name == "o" else "final_state (ht)"
        if value is None:
            raise InputError(f"{call} returned no {what} (None), although output_final_state=True.")
        if not isinstance(value, torch.Tensor):
            raise InputError(
                f"{call} returned {what} as a {type(value).__name__}; a tensor is expected."
            )
        if tuple(value.shape) != expected[name]:
            raise InputError(
                f"{call} returned {what} of shape {tuple(value.shape)}; a {fixture.op} fixture's "
                f"{name} is {layout} = {expected[name]}."
            )
    return o, ht


def run_candidate(
    fn,
    fixture,
    precision="f32",
    phase="bwd",
    *,
    device=None,
    poison_tail=False,
    by_keyword=False,
):
    """Runs a candidate with FLA's signature on a fixture's inputs: its forward
    and, for phase 'bwd', its backward with the fixture's cotangents. Returns a
    CandidateRun (outputs o, ht, dq, ... as torch tensors).

    fixture: see resolve_fixture. precision: 'f32', 'tf32' or 'bf16' (the
    inputs' dtype, and TF32 in torch's matmuls for tf32 only). device: where the
    inputs go ('cuda' when a GPU is there, else 'cpu'). poison_tail: each input
    at the start of a larger buffer whose other elements are NaN (a load past
    an input's end turns results NaN). by_keyword: pass the inputs by keyword
    (q=..., k=...) instead of by position.

    Raises InputError for a misshapen or missing output and a forward-only
    callable asked for phase 'bwd'; CandidateError when the callable (or its
    backward) raises.
    """
    import torch

    fixture = resolve_fixture(fixture)
    if fixture.op not in INPUTS:
        raise InputError(f"unknown op {fixture.op!r}; the ops are {', '.join(INPUTS)}.")
    if phase not in ("fwd", "bwd"):
        raise InputError(f"unknown phase {phase!r}; pass 'fwd' or 'bwd'.")
    dtype = input_dtype(precision)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    inputs = _build_inputs(fixture, dtype, device, phase == "bwd", poison_tail)
    options = _options(fn, fixture, inputs, device)
    call = _describe_call(fn, fixture.op, options, by_keyword)
    names = INPUTS[fixture.op]
    with _precision_flags(precision):
        start = time.perf_counter()
        try:
            if by_keyword:
                result = fn(**{n: inputs[n] for n in names}, **options)
            else:
                result = fn(*(inputs[n] for n in names), **options)
            _synchronize(device)
        except Exception as error:  # an assertion, a compile error, a CUDA fault: the kernel's
            raise CandidateError(
                f"{call} raised {type(error).__name__}: {error}", "forward", error
            ) from error
        forward_s = time.perf_counter() - start
        o, ht = _outputs_of(result, call, fixture, inputs)
        backward_s = 0.0
        if phase == "bwd":
            if not o.requires_grad:
                raise InputError(
                    f"{call} returned o without a graph (o.requires_grad is False): a "
                    "forward-only kernel; pass phase='fwd'."
                )
            do = torch.as_tensor(fixture.tensors["do"]).to(device=device, dtype=o.dtype)
            dht = torch.as_tensor(fixture.tensors["dht"]).to(device=device, dtype=ht.dtype)
            start = time.perf_counter()
            try:
                if ht.requires_grad:
                    torch.autograd.backward([o, ht], [do, dht])
                else:  # the final state has no graph: dht reaches nothing
                    torch.autograd.backward([o], [do])
                _synchronize(device)
            except Exception as error:
                raise CandidateError(
                    f"the backward of {call} (torch.autograd.backward of o and final_state with "
                    f"the fixture's do and dht) raised {type(error).__name__}: {error}",
                    "backward",
                    error,
                ) from error
            backward_s = time.perf_counter() - start
    outputs = {"o": o.detach(), "ht": ht.detach()}
    missing = []
    for name in names + ("h0",) if phase == "bwd" else ():
        if inputs[name].grad is None:
            missing.append("d" + name)
        else:
            outputs["d" + name] = inputs[name].grad
    return CandidateRun(outputs, missing, forward_s, backward_s, call)


def check(
    fn,
    fixture,
    precision="f32",
    phase=None,
    *,
    op=None,
    device=None,
    name=None,
    poison_tail=False,
    by_keyword=False,
):
    """Runs a candidate callable with FLA's signature on a fixture and judges its
    outputs as `deltaproof gate check` does. Returns a deltaproof.Report.

    fn: the kernel, e.g. fla.ops.kda.chunk_kda or deltaproof.reference.kda.
    fixture: a deltaproof.Fixture, a fixture's path, or a committed fixture's
    name ('kda/t40-c16'). precision: the kernel's class, 'f32', 'tf32' or
    'bf16': the inputs' dtype and the bars (docs/PRECISION.md). phase: 'fwd'
    (o and the final state) or 'bwd' (every gradient too); None is 'bwd'. op:
    when given, the fixture's op must be it. name: the gate is
    check.<op>.<name> (default: fn's name). device, poison_tail, by_keyword:
    as run_candidate.

    Raises InputError naming the tensor for a misshapen output, a gradient that
    never reached its input, a packed fixture given to a callable without
    cu_seqlens; CandidateError naming the call when the callable raises. A NaN
    is no error: it is a red verdict.
    """
    from deltaproof._check import check_outputs

    fixture = resolve_fixture(fixture)
    if op is not None and op != fixture.op:
        raise InputError(f"op {op!r} was asked for, and the fixture is a {fixture.op} fixture.")
    phase = "bwd" if phase is None else phase
    run = run_candidate(
        fn,
        fixture,
        precision,
        phase,
        device=device,
        poison_tail=poison_tail,
        by_keyword=by_keyword,
    )
    if run.missing:
        raise InputError(
            f"no gradient reached {', '.join(m[1:] for m in run.missing)} ("
            f"{', '.join(run.missing)} missing): the outputs of {run.call} do not depend on "
            "it through torch.autograd."
        )
    label = name or getattr(fn, "__name__", None) or "candidate"
    return check_outputs(fixture, run.outputs, precision=precision, phase=phase, name=label)
