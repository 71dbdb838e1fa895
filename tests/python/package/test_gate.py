"""deltaproof.fixtures and @deltaproof.gate: committed fixtures named
"<op>.<fixture>.<phase>" and matched by glob; a pytest test parametrised over
them, green on the reference, and on a broken candidate failing with the gate's
terms (term, rel, bar, worst index, red chunks)."""

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

import deltaproof  # noqa: E402
from conftest import ROOT  # noqa: E402
from deltaproof import reference  # noqa: E402


def test_fixtures_by_pattern():
    manifest = json.loads((ROOT / "fixtures" / "manifest.json").read_text())["fixtures"]
    everything = deltaproof.fixtures()
    assert len(everything) == 2 * len(manifest)
    assert [c.id for c in deltaproof.fixtures("kda.t40-c16.*")] == [
        "kda.t40-c16.fwd",
        "kda.t40-c16.bwd",
    ]
    kda_bwd = deltaproof.fixtures("kda.*.bwd")
    assert len(kda_bwd) == sum(e["file"].startswith("kda/") for e in manifest)
    case = kda_bwd[0]
    assert (case.op, case.phase) == ("kda", "bwd") and case.path.endswith(
        f"kda/{case.name}.safetensors"
    )
    assert case.load().op == "kda"
    assert deltaproof.fixtures("nope.*") == []
    # the names `deltaproof gate list` gives, less the backend
    listed = subprocess.run(
        [str(ROOT / "build" / "bin" / "deltaproof"), "gate", "list", "gdn.cpu-chunk.*"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    oracle = {
        line.split()[0].replace(".cpu-chunk.", ".")
        for line in listed.splitlines()
        if line.split()[1:2] == ["oracle"]
    }
    assert oracle == {c.id for c in deltaproof.fixtures("gdn.*")}


@deltaproof.gate("kda.t4*-c16*.bwd", precision="f32")
def test_gate_on_the_reference(fixture, phase, precision):
    assert (fixture.op, fixture.T, phase, precision) == ("kda", fixture.T, "bwd", "f32")
    return deltaproof.check(reference.kda, fixture, precision, phase)


@deltaproof.gate("gdn.t40-c16.*")
def test_gate_asks_for_the_fixture_alone(fixture):
    assert deltaproof.check(reference.gdn, fixture, phase="fwd").passed


BROKEN = """
import deltaproof
from deltaproof import reference


def kda_scaled(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    o, ht = reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state)
    return o * 1.03, ht


@deltaproof.gate("kda.t40-c16*.fwd", precision="bf16")
def test_kda(fixture, phase, precision):
    return deltaproof.check(kda_scaled, fixture, precision, phase)


@deltaproof.gate("kda.t40-c16.bwd")
def test_kda_assert(fixture, phase):
    report = deltaproof.check(kda_scaled, fixture, phase=phase)
    assert report.passed, report.summary()
"""


def test_a_red_gate_fails_with_its_terms(tmp_path):
    (tmp_path / "test_broken.py").write_text(BROKEN)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rf",
            str(tmp_path / "test_broken.py"),
            "--rootdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # four t40-c16* fixtures at fwd (t40-c16, -mild, -b2h3, -domask) and one at bwd
    assert "5 failed" in output, output
    for case in (
        "kda.t40-c16.fwd",
        "kda.t40-c16-mild.fwd",
        "kda.t40-c16-b2h3.fwd",
        "kda.t40-c16-domask.fwd",
    ):
        assert f"test_broken.py::test_kda[{case}]" in output, output
    # the failure message is the gate's summary: term, rel, bar, worst index, red chunks
    # (at bf16, 3% on top of the inputs' rounding)
    assert re.search(
        r"^FAIL check\.kda\.kda_scaled +worst o rel [23]\.\d\de-02 / bar \S+ \[forward",
        output,
        re.M,
    ), output
    assert re.search(
        r"^ +o: rel [23]\.\d+e-02 above bar \S+ \(abs .*\) worst at \(b,t,h,i\) = "
        r"\(\d+,\d+,\d+,\d+\); chunks above the bar: 0,1,2 of 3",
        output,
        re.M,
    ), output
    assert re.search(r"^  o +fail ", output, re.M), output
    # and the test that asserts itself, at f32: the same summary in the assertion's message
    assert re.search(r"^E +FAIL check\.kda\.kda_scaled +worst o rel 3\.00e-02 / bar ", output, re.M)


def test_bad_gates():
    with pytest.raises(
        deltaproof.InputError,
        match=r"deltaproof.gate\('kda.t40-c16'\): no committed "
        "fixture matches; names are <op>.<fixture>.<phase>",
    ):
        deltaproof.gate("kda.t40-c16")
    with pytest.raises(deltaproof.InputError, match="unknown precision class 'fp16'"):
        deltaproof.gate("kda.*", precision="fp16")
    with pytest.raises(TypeError, match="test_x takes no parameter 'fixture'; it may take fixture"):

        @deltaproof.gate("kda.t40-c16.fwd")
        def test_x(phase):
            pass
