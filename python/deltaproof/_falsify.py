"""deltaproof.falsify: can the check fail on this user's kernel? The callable
is wrapped with one injected fault at a time, each checked as the clean one is;
every fault must turn the check red, and the clean run must be green.

The faults (FAULTS) act on the callable's inputs and outputs only, so they apply
to any kernel with FLA's signature:

    o-scaled          o multiplied by the class's factor (1.03; 1.1 at bf16)
    dk-scaled         k's gradient multiplied by that factor (bwd)
    h0-dropped        initial_state read as zeros, and no gradient reaches it
    g-dropped         g read as zeros (no decay), and no gradient reaches it
    dht-path-dropped  the backward ignores dht: final_state passes no gradient (bwd)
"""

import functools
import inspect

from deltaproof._errors import InputError

# The size of a scaling fault per class: well above each class's bars (f32 and tf32:
# 3e-5 to 1e-3; bf16: up to about 1.3e-2 with the bias band, docs/PRECISION.md).
SCALE_FACTOR = {"f32": 1.03, "tf32": 1.03, "bf16": 1.1}


def _scale_gradient(x, factor):
    """x unchanged in the forward; its gradient multiplied by factor in the backward."""
    import torch

    class ScaleGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, value):
            return value.view_as(value)

        @staticmethod
        def backward(ctx, gradient):
            return gradient * factor

    return ScaleGradient.apply(x)


# id -> (what it does, phases it applies to, where it acts). `where`: ("input", name,
# transform) acts on an input (name "initial_state" or one of the op's inputs, by its
# position in FLA's order); ("output", index, transform) on o (0) or final_state (1).
FAULTS = {
    "o-scaled": (
        "o scaled by {factor}",
        ("fwd", "bwd"),
        ("output", 0, lambda x, factor: x * factor),
    ),
    "dk-scaled": (
        "dk scaled by {factor}",
        ("bwd",),
        ("input", "k", _scale_gradient),
    ),
    "h0-dropped": (
        "initial_state read as zeros, no gradient to it",
        ("fwd", "bwd"),
        ("input", "initial_state", lambda x, factor: x * 0),
    ),
    "g-dropped": (
        "g read as zeros (no decay), no gradient to it",
        ("fwd", "bwd"),
        ("input", "g", lambda x, factor: x * 0),
    ),
    "dht-path-dropped": (
        "the backward ignores dht",
        ("bwd",),
        ("output", 1, lambda x, factor: _scale_gradient(x, 0.0)),
    ),
}


def faulty(fn, fault, op, factor):
    """fn with one fault of FAULTS injected; the same signature."""
    from deltaproof.candidate import INPUTS

    _, _, (kind, where, transform) = FAULTS[fault]
    signature = inspect.signature(fn)
    if kind == "input" and where != "initial_state":
        # the input by its position in FLA's order: the callable may name it otherwise
        position = INPUTS[op].index(where)
        where = list(signature.parameters)[position]

    @functools.wraps(fn)
    def with_fault(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if kind == "input":
            if bound.arguments.get(where) is not None:
                bound.arguments[where] = transform(bound.arguments[where], factor)
            return fn(*bound.args, **bound.kwargs)
        result = list(fn(*bound.args, **bound.kwargs))
        result[where] = transform(result[where], factor)
        return tuple(result)

    return with_fault


class FaultResult:
    """One fault's check: fault (id), description, red (the check failed),
    red_terms (the terms whose status is 'fail'), report (deltaproof.Report)."""

    def __init__(self, fault, description, report):
        self.fault, self.description, self.report = fault, description, report
        self.red = not report.passed
        self.red_terms = [
            t["term"] for t in report.data["gates"][0]["terms"] if t["status"] == "fail"
        ]


class FalsifyReport:
    """falsify's result. clean: the report of the callable as given (it must
    pass). faults: a FaultResult per fault. passed: the clean run green and
    every fault red. summary(): a line each."""

    def __init__(self, clean, faults, phase, precision):
        self.clean, self.faults, self.phase, self.precision = clean, faults, phase, precision
        self.passed = clean.passed and all(f.red for f in faults)

    def summary(self):
        gate = self.clean.data["gates"][0]["name"]
        verdict = "every fault red, the clean run green" if self.passed else "NOT falsified"
        clean = "PASS" if self.clean.passed else "FAIL (the check is red without a fault)"
        lines = [
            f"falsify {gate} ({self.phase}, class {self.precision}): {verdict}",
            f"  {'clean':18} {clean}",
        ]
        for f in self.faults:
            verdict = f"red on {', '.join(f.red_terms)}" if f.red else "GREEN: the check missed it"
            lines.append(f"  {f.fault:18} {verdict}  ({f.description})")
        return "\n".join(lines)

    def __repr__(self):
        verdict = "passed" if self.passed else "failed"
        return f"<deltaproof.FalsifyReport {verdict}: {len(self.faults)} faults>"


def falsify(
    fn, fixture, precision="f32", phase=None, *, faults=None, device=None, by_keyword=False
):
    """Checks fn on fixture as deltaproof.check does, then once per fault of
    FAULTS injected into it (faults: ids to run, default all that apply to the
    phase). Returns a FalsifyReport: passed when the clean check is green and
    every fault's check red, which shows the check can fail on this kernel."""
    from deltaproof.candidate import check, input_dtype, resolve_fixture

    input_dtype(precision)  # a sentence for an unknown class
    fixture = resolve_fixture(fixture)
    phase = "bwd" if phase is None else phase
    chosen = (
        [f for f, (_, phases, _) in FAULTS.items() if phase in phases] if faults is None else faults
    )
    for fault in chosen:
        if fault not in FAULTS:
            raise InputError(f"unknown fault {fault!r}; the faults are {', '.join(FAULTS)}.")
        if phase not in FAULTS[fault][1]:
            raise InputError(f"fault {fault!r} acts on the backward; pass phase='bwd'.")
    factor = SCALE_FACTOR[precision]
    name = getattr(fn, "__name__", None) or "candidate"
    options = dict(device=device, by_keyword=by_keyword)
    clean = check(fn, fixture, precision, phase, name=name, **options)
    results = []
    for fault in chosen:
        wrapped = faulty(fn, fault, fixture.op, factor)
        report = check(wrapped, fixture, precision, phase, name=f"{name}+{fault}", **options)
        results.append(FaultResult(fault, FAULTS[fault][0].format(factor=factor), report))
    return FalsifyReport(clean, results, phase, precision)
