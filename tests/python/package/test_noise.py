"""deltaproof.noise_model: the bars and bias bands of a fixture's precision
class, the numbers the report of check_outputs (and `gate check`) holds for the
same fixture; a scaling just past a term's minimum detectable effect is red,
half of it green."""

import numpy as np
import pytest

import deltaproof
from conftest import KDA, ROOT, cpu_chunk_candidate
from deltaproof._noise import TERM_KEYS


def report_terms(report):
    """{term: the figures noise_model returns} as the report's rows hold them."""
    rows = {}
    for row in report.data["gates"][0]["terms"]:
        figures = {"bar": row["bar"], **row["noise"]}
        rows[row["term"]] = {key: figures[key] for key in TERM_KEYS}
    return rows


def without_seconds(bars):
    return dict(bars, noise={k: v for k, v in bars["noise"].items() if k != "seconds"})


@pytest.mark.parametrize(
    "fixture, precision, phase",
    [
        (KDA, "f32", "bwd"),
        (KDA, "bf16", "bwd"),
        (KDA, "tf32", "fwd"),
        (ROOT / "fixtures" / "gdn2" / "t40-c16.safetensors", "bf16", "bwd"),
    ],
)
def test_the_report_s_bars(fixture, precision, phase, tmp_path):
    outputs = cpu_chunk_candidate(fixture, tmp_path / "cpu-chunk.safetensors")
    report = deltaproof.check_outputs(fixture, outputs, precision=precision, phase=phase)
    noise = deltaproof.noise_model(fixture, precision, phase)
    assert noise.terms == report_terms(report)  # the same numbers, the same order
    assert list(noise.terms) == deltaproof.load_fixture(fixture).output_names(phase)
    assert noise.bars == {term: row["bar"] for term, row in report_terms(report).items()}
    assert without_seconds(noise.phase_bars) == without_seconds(report.data["gates"][0]["bars"])
    assert noise.members == report.data["gates"][0]["bars"]["noise"]["members"]
    assert noise.tolerances["error_floor"] <= min(noise.bars.values())


def test_classes_differ():
    """The comparison above can fail: another class's bars are not these."""
    f32, bf16 = deltaproof.noise_model(KDA, "f32"), deltaproof.noise_model(KDA, "bf16")
    assert all(bf16.bars[term] > 10 * f32.bars[term] for term in f32.bars)
    assert f32.terms["dq"] != bf16.terms["dq"]


def test_the_minimum_detectable_effect_is_the_gate_s(kda_outputs):
    noise = deltaproof.noise_model(KDA, "f32")
    for term in ("o", "dq", "dg"):
        mde = noise.terms[term]["min_detectable_scaling"]
        assert 0 < mde <= noise.bars[term]
        for factor, passed in ((0.5, True), (1.5, False)):
            scaled = dict(kda_outputs)
            scaled[term] = (kda_outputs[term].astype(np.float64) * (1 + factor * mde)).astype(
                np.float32
            )
            report = deltaproof.check_outputs(KDA, scaled)
            assert report.passed == passed, (term, factor, report.summary())


def test_bad_input():
    with pytest.raises(deltaproof.InputError, match="unknown precision class 'fp8'"):
        deltaproof.noise_model(KDA, "fp8")
    with pytest.raises(deltaproof.InputError, match="unknown phase 'both'"):
        deltaproof.noise_model(KDA, "f32", "both")
    with pytest.raises(deltaproof.InputError, match="no-such.safetensors"):
        deltaproof.noise_model(ROOT / "no-such.safetensors")
