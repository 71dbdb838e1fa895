"""deltaproof.falsify on the torch references: the clean check green and every
injected fault red, by the terms it touches, at f32 and bf16, per op; and the
falsification itself can fail: a fault the check does not see is reported
green, a candidate red without a fault is reported."""

import re

import pytest

pytest.importorskip("torch")

import deltaproof  # noqa: E402
from deltaproof import _falsify, reference  # noqa: E402

# the terms each fault must turn red (a red forward leaves the gradients out of the verdict)
RED_BY = {
    "o-scaled": {"o"},
    "dk-scaled": {"dk"},
    "h0-dropped": {"o", "ht"},
    "g-dropped": {"o", "ht"},
    "dht-path-dropped": {"dk", "dv", "dg", "dbeta", "db", "dw", "dh0"},
}


@pytest.mark.parametrize(
    "name, precision",
    [
        ("kda/t40-c16", "f32"),
        ("gdn/t40-c16", "f32"),
        ("gdn2/t40-c16-mild", "f32"),
        ("kda/t32-c16-bf16", "bf16"),
        ("kda/varlen-hv2-c32", "f32"),
    ],
)
def test_every_fault_red_on_the_reference(name, precision):
    op = name.split("/")[0]
    result = deltaproof.falsify(reference.for_op(op), name, precision=precision)
    assert result.passed, result.summary()
    assert result.clean.passed
    assert [f.fault for f in result.faults] == list(deltaproof.FAULTS)
    for fault in result.faults:
        assert fault.red and set(fault.red_terms) & RED_BY[fault.fault], (
            fault.fault,
            fault.red_terms,
        )
        assert set(fault.red_terms) <= RED_BY[fault.fault] | {"o", "ht"}, fault.red_terms
    # a scaling touches its own term alone
    by_id = {f.fault: f for f in result.faults}
    assert by_id["o-scaled"].red_terms == ["o"] and by_id["dk-scaled"].red_terms == ["dk"]
    factor = "1.1" if precision == "bf16" else "1.03"
    assert by_id["o-scaled"].description == f"o scaled by {factor}"
    summary = result.summary()
    assert summary.startswith(f"falsify check.{op}.{op} (bwd, class {precision}): every fault red")
    assert re.search(r"^  dk-scaled +red on dk  \(dk scaled by ", summary, re.M)


def test_forward_phase_runs_the_forward_faults():
    result = deltaproof.falsify(reference.kda, "kda/t40-c16", phase="fwd")
    assert result.passed, result.summary()
    assert [f.fault for f in result.faults] == ["o-scaled", "h0-dropped", "g-dropped"]
    with pytest.raises(deltaproof.InputError, match="fault 'dk-scaled' acts on the backward"):
        deltaproof.falsify(reference.kda, "kda/t40-c16", phase="fwd", faults=["dk-scaled"])
    with pytest.raises(
        deltaproof.InputError, match="unknown fault 'dq-sign'; the faults are o-scaled"
    ):
        deltaproof.falsify(reference.kda, "kda/t40-c16", faults=["dq-sign"])


def test_a_fault_the_check_misses_fails_the_falsification(monkeypatch):
    faults = dict(
        _falsify.FAULTS,
        **{"no-op": ("nothing changed", ("fwd", "bwd"), ("output", 0, lambda x, factor: x))},
    )
    monkeypatch.setattr(_falsify, "FAULTS", faults)
    result = deltaproof.falsify(reference.kda, "kda/t40-c16", faults=["o-scaled", "no-op"])
    assert not result.passed
    assert [f.red for f in result.faults] == [True, False]
    assert "NOT falsified" in result.summary()
    assert re.search(
        r"^  no-op +GREEN: the check missed it  \(nothing changed\)$", result.summary(), re.M
    )


def test_a_candidate_red_without_a_fault():
    def ignores_h0(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        return reference.kda(q, k, v, g, beta, scale, initial_state * 0, output_final_state)

    result = deltaproof.falsify(ignores_h0, "kda/t40-c16")
    assert not result.passed and not result.clean.passed
    assert "FAIL (the check is red without a fault)" in result.summary()


def test_faults_keep_the_callables_names():
    """A callable whose inputs are named otherwise: faults find them by position."""

    def renamed(
        query, key, value, log_decay, gate, scale=None, initial_state=None, output_final_state=False
    ):
        return reference.kda(
            query, key, value, log_decay, gate, scale, initial_state, output_final_state
        )

    result = deltaproof.falsify(renamed, "kda/t40-c16", faults=["g-dropped", "dk-scaled"])
    assert result.passed, result.summary()
