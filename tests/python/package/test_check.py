"""deltaproof.check_outputs: green on the CPU backend's outputs, red on a 3%
scaling, NaN red (not an error), f16 and bf16 outputs accepted, and the
report the same bytes as `deltaproof gate check` writes for the same tensors."""

import json
import re

import numpy as np
import pytest

import deltaproof
from conftest import KDA, ROOT, cpu_chunk_candidate, run_cli, write_candidate


def test_load_fixture():
    fixture = deltaproof.load_fixture(KDA)
    assert (fixture.op, fixture.B, fixture.T, fixture.H, fixture.HV) == ("kda", 1, 40, 2, 2)
    assert (fixture.K, fixture.V, fixture.chunk, fixture.cu_seqlens) == (8, 8, 16, [])
    assert fixture.metadata["op"] == "kda" and fixture.metadata["status"] == "checked"
    assert fixture.output_names("fwd") == ["o", "ht"]
    assert fixture.output_names("bwd") == ["o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"]
    assert fixture.output_shape("dbeta") == (1, 40, 2)
    assert fixture.output_shape("ht") == (1, 2, 8, 8)
    assert set(fixture.inputs) == {"q", "k", "v", "g", "beta", "h0", "do", "dht"}
    for name, array in fixture.tensors.items():
        assert array.dtype == np.float64, name
    # the C++ reader's values are the file's (safetensors' own reader)
    from safetensors.numpy import load_file

    for name, array in load_file(str(KDA)).items():
        np.testing.assert_array_equal(fixture.tensors[name], array)
    reference = fixture.reference("fwd")
    assert list(reference) == ["o", "ht"] and reference["o"].shape == (1, 40, 2, 8)


def test_packed_fixture_has_cu_seqlens():
    fixture = deltaproof.load_fixture(ROOT / "fixtures" / "kda" / "varlen-c64-k16.safetensors")
    assert fixture.cu_seqlens[0] == 0 and fixture.cu_seqlens[-1] == fixture.T
    assert fixture.tensors["cu_seqlens"].dtype == np.int64


def test_green(kda_outputs):
    report = deltaproof.check_outputs(KDA, kda_outputs, precision="f32")
    assert report.passed, report.summary()
    assert report.data["verdict"] == "pass"
    gate = report.data["gates"][0]
    assert gate["name"] == "check.kda.outputs" and gate["phase"] == "bwd"
    assert gate["backend"] == "external"
    assert [t["term"] for t in gate["terms"]] == deltaproof.load_fixture(KDA).output_names("bwd")
    assert re.search(r"^PASS check\.kda\.outputs +worst \w+ rel ", report.summary(), re.M)


def test_red_on_a_3_percent_scaling(kda_outputs):
    outputs = dict(kda_outputs, dq=kda_outputs["dq"] * np.float32(1.03))
    report = deltaproof.check_outputs(KDA, outputs)
    assert not report.passed
    terms = {t["term"]: t["status"] for t in report.data["gates"][0]["terms"]}
    assert terms.pop("dq") == "fail" and set(terms.values()) == {"pass"}
    summary = report.summary()
    # the gate's message: the term, its rel, the bar, the worst index, the red chunks
    assert re.search(r"^FAIL check\.kda\.outputs +worst dq rel 3\.00e-02 / bar ", summary, re.M)
    assert re.search(
        r"dq: rel 3\.000e-02 above bar .* worst at \(b,t,h,i\) = \(\d+,\d+,\d+,\d+\)", summary
    )
    assert "chunks above the bar" in summary


def test_red_forward_leaves_gradients_out_of_the_verdict(kda_outputs):
    outputs = dict(kda_outputs, o=kda_outputs["o"] * np.float32(1.03))
    report = deltaproof.check_outputs(KDA, outputs)
    statuses = {t["term"]: t["status"] for t in report.data["gates"][0]["terms"]}
    assert not report.passed and statuses["o"] == "fail" and statuses["dq"] == "not-compared"


def test_nan_is_a_red_verdict_not_an_error(kda_outputs):
    dk = kda_outputs["dk"].copy()
    dk[0, 5, 1, 2] = np.nan
    report = deltaproof.check_outputs(KDA, dict(kda_outputs, dk=dk))
    assert not report.passed
    dk_row = next(t for t in report.data["gates"][0]["terms"] if t["term"] == "dk")
    assert dk_row["status"] == "fail" and dk_row["non_finite"] == 1


def test_forward_only(kda_outputs):
    outputs = {name: kda_outputs[name] for name in ("o", "ht")}
    report = deltaproof.check_outputs(KDA, outputs)
    assert report.passed and report.data["gates"][0]["phase"] == "fwd"
    assert "[forward only: no gradient compared]" in report.summary()
    # every gradient given, the forward asked for: o and ht alone are compared
    report = deltaproof.check_outputs(KDA, kda_outputs, phase="fwd")
    assert [t["term"] for t in report.data["gates"][0]["terms"]] == ["o", "ht"]


def test_f16_and_bf16_outputs(kda_outputs):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype in (np.float16, ml_dtypes.bfloat16):
        outputs = {name: array.astype(dtype) for name, array in kda_outputs.items()}
        report = deltaproof.check_outputs(KDA, outputs, precision="bf16")
        assert report.passed, report.summary()
        assert report.data["gates"][0]["precision"] == "bf16"
    scaled = {name: array.astype(ml_dtypes.bfloat16) for name, array in kda_outputs.items()}
    scaled["dv"] = (kda_outputs["dv"] * np.float32(1.03)).astype(ml_dtypes.bfloat16)
    assert not deltaproof.check_outputs(KDA, scaled, precision="bf16").passed


def test_torch_tensors(kda_outputs):
    torch = pytest.importorskip("torch")
    tensors = {
        name: torch.from_numpy(array).to(torch.bfloat16) for name, array in kda_outputs.items()
    }
    as_numpy = {
        name: array.astype(pytest.importorskip("ml_dtypes").bfloat16)
        for name, array in kda_outputs.items()
    }
    a = deltaproof.check_outputs(KDA, tensors, precision="bf16")
    b = deltaproof.check_outputs(KDA, as_numpy, precision="bf16")
    assert a.passed and a.data["gates"][0]["terms"] == b.data["gates"][0]["terms"]


# --- the same report as `deltaproof gate check`, byte for byte ---------------------

# What legitimately differs between two runs of one check: when it ran, the
# command that ran it, and how long it took (the gate's, the summary's and the
# noise ensemble's seconds).
VOLATILE = re.compile(r'^(\s*"(?:created|command|seconds)": ).*?(,?)$', re.M)
VOLATILE_PATHS = {
    ("created",),
    ("command",),
    ("summary", "seconds"),
    ("gates", 0, "seconds"),
    ("gates", 0, "bars", "noise", "seconds"),
}


def differing_paths(a, b, path=()):
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return set().union(*(differing_paths(a[k], b[k], path + (k,)) for k in a))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(
            *(differing_paths(x, y, path + (i,)) for i, (x, y) in enumerate(zip(a, b)))
        )
    return set() if a == b else {path}


def cli_and_package_reports(tmp_path, fixture, outputs, precision, phase=None):
    candidate = tmp_path / "candidate.safetensors"
    write_candidate(candidate, outputs)
    report_path = tmp_path / "cli.json"
    args = [
        "gate",
        "check",
        "--fixture",
        fixture,
        "--candidate",
        candidate,
        "--precision",
        precision,
        "--report",
        report_path,
    ] + (["--phase", phase] if phase else [])
    code, output = run_cli(*args)
    assert code in (0, 1), output
    report = deltaproof.check_outputs(
        fixture, outputs, precision=precision, phase=phase, name=candidate.name
    )
    assert report.passed == (code == 0), output
    return report_path.read_text(), report.json()


def scaled_dq(outputs):
    return dict(outputs, dq=outputs["dq"] * np.float32(1.03))


@pytest.mark.parametrize(
    "case",
    [
        "green-f32",
        "red-f32",
        "nan-f32",
        "fwd-tf32",
        "f16-bf16",
        "bf16-bf16",
        "red-bf16",
        "gdn2",
        "packed",
    ],
)
def test_report_is_the_cli_report(case, kda_outputs, tmp_path):
    fixture, outputs, precision, phase = str(KDA), kda_outputs, "f32", None
    if case == "red-f32":
        outputs = scaled_dq(outputs)
    elif case == "nan-f32":
        outputs = dict(outputs, o=np.full_like(outputs["o"], np.nan))
    elif case == "fwd-tf32":
        precision, phase = "tf32", "fwd"
    elif case in ("f16-bf16", "bf16-bf16", "red-bf16"):
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dtype = np.float16 if case == "f16-bf16" else ml_dtypes.bfloat16
        base = scaled_dq(outputs) if case == "red-bf16" else outputs
        outputs, precision = {name: array.astype(dtype) for name, array in base.items()}, "bf16"
    elif case in ("gdn2", "packed"):
        fixture = str(
            ROOT
            / "fixtures"
            / ("gdn2/t40-c16.safetensors" if case == "gdn2" else "kda/varlen-c64-k16.safetensors")
        )
        outputs = cpu_chunk_candidate(fixture, tmp_path / "cpu-chunk.safetensors")
    cli_text, package_text = cli_and_package_reports(tmp_path, fixture, outputs, precision, phase)
    cli_json, package_json = json.loads(cli_text), json.loads(package_text)
    assert differing_paths(cli_json, package_json) <= VOLATILE_PATHS
    assert package_json["command"].startswith("deltaproof.check_outputs(")
    # the bytes, with only those fields' values blanked
    assert len(VOLATILE.findall(cli_text)) == len(VOLATILE_PATHS)
    assert VOLATILE.sub(r"\1\2", cli_text) == VOLATILE.sub(r"\1\2", package_text)
