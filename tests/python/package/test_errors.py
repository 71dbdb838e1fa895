"""Bad input to deltaproof: a deltaproof.InputError (a ValueError) whose
sentence names the tensor and what was expected."""

import re

import numpy as np
import pytest

import deltaproof
from conftest import KDA, ROOT


def check_raises(outputs, match, **options):
    with pytest.raises(deltaproof.InputError, match=match):
        deltaproof.check_outputs(KDA, outputs, **options)


def test_input_error_is_a_value_error():
    assert issubclass(deltaproof.InputError, ValueError)


def test_missing_tensor(kda_outputs):
    outputs = dict(kda_outputs)
    del outputs["dbeta"]
    check_raises(
        outputs,
        r"outputs: missing 'dbeta'; a bwd check of a kda fixture needs "
        r"o, ht, dq, dk, dv, dg, dbeta, dh0",
    )
    check_raises({"o": kda_outputs["o"]}, r"missing 'ht'; a fwd check")


def test_unknown_tensor(kda_outputs):
    check_raises(
        dict(kda_outputs, dQ=kda_outputs["dq"]),
        r"outputs\['dQ'\]: a kda fixture has no output of that name; its outputs are o, ht, dq",
    )


def test_wrong_shape(kda_outputs):
    head_first = np.ascontiguousarray(kda_outputs["o"].transpose(0, 2, 1, 3))  # [B, H, T, V]
    check_raises(
        dict(kda_outputs, o=head_first),
        re.escape(
            "outputs: tensor 'o' has shape [1, 2, 40, 8], but the fixture needs [1, 40, 2, 8]."
        ),
    )
    check_raises(
        dict(kda_outputs, ht=kda_outputs["ht"][..., :4]),
        r"tensor 'ht' has shape \[1, 2, 8, 4\], but the fixture needs \[1, 2, 8, 8\]",
    )


def test_wrong_dtype(kda_outputs):
    check_raises(
        dict(kda_outputs, dv=kda_outputs["dv"].astype(np.int32)),
        r"outputs\['dv'\] has dtype int32; an output must be float32, float16, bfloat16 "
        r"\(ml_dtypes.bfloat16 or torch.bfloat16\) or float64",
    )
    # 16 bits of bfloat16 are passed as a bfloat16 view, never as integers
    check_raises(
        dict(kda_outputs, dv=kda_outputs["dv"].view(np.uint16)), r"outputs\['dv'\] has dtype uint16"
    )
    check_raises(
        dict(kda_outputs, dg=kda_outputs["dg"].tolist()),
        r"outputs\['dg'\] is a builtins.list; pass a numpy array or a torch tensor",
    )


def test_bad_options(kda_outputs):
    check_raises(
        kda_outputs, r"unknown precision class 'fp8'; pass 'f32', 'tf32' or 'bf16'", precision="fp8"
    )
    check_raises(
        kda_outputs, r"unknown phase 'backward'; pass 'fwd', 'bwd' or None", phase="backward"
    )
    check_raises(list(kda_outputs.values()), r"outputs is a list; pass a dict of name -> array")


def test_bad_fixture(tmp_path):
    with pytest.raises(deltaproof.InputError, match="no-such.safetensors"):
        deltaproof.load_fixture(tmp_path / "no-such.safetensors")
    not_safetensors = tmp_path / "junk.safetensors"
    not_safetensors.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(deltaproof.InputError, match="junk.safetensors"):
        deltaproof.load_fixture(not_safetensors)
    with pytest.raises(deltaproof.InputError, match="'dx' is no output of a kda fixture"):
        deltaproof.load_fixture(KDA).output_shape("dx")


def test_wrong_fixture_for_the_outputs(kda_outputs):
    """A candidate of another problem: its shapes name the difference."""
    other = ROOT / "fixtures" / "kda" / "t64-c64.safetensors"
    with pytest.raises(
        deltaproof.InputError,
        match=r"tensor 'o' has shape \[1, 40, 2, 8\], but the fixture needs \[1, 64, ",
    ):
        deltaproof.check_outputs(other, kda_outputs)


def test_a_fixture_with_a_nan_input(tmp_path):
    """A fixture whose input holds a NaN is refused, naming the tensor and the index."""
    import json
    import struct

    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(KDA))
    with open(KDA, "rb") as file:
        metadata = json.loads(file.read(struct.unpack("<Q", file.read(8))[0]))["__metadata__"]
    tensors["q"] = tensors["q"].copy()
    tensors["q"][0, 3, 1, 2] = np.nan
    broken = tmp_path / "nan-q.safetensors"
    save_file(tensors, str(broken), metadata=metadata)
    message = re.escape(
        f"{broken}: tensor 'q' has a NaN at index [0, 3, 1, 2]; inputs must be finite"
    )
    with pytest.raises(deltaproof.InputError, match=message):
        deltaproof.load_fixture(broken)
    with pytest.raises(deltaproof.InputError, match=message):
        deltaproof.noise_model(broken)


def test_a_torch_output_of_another_dtype(kda_outputs):
    torch = pytest.importorskip("torch")
    for dtype in (torch.int32, torch.complex64):
        outputs = {name: torch.from_numpy(array) for name, array in kda_outputs.items()}
        outputs["ht"] = outputs["ht"].to(dtype)
        check_raises(
            outputs,
            re.escape(f"outputs['ht'] is a torch tensor of {dtype}; an output must be float32, "),
        )


def test_a_nan_output_is_named_in_the_verdict(kda_outputs):
    """A NaN is a red verdict, not an exception (unwritten outputs are poisoned with NaN and
    must fail the gate with a count): the summary names the tensor and how many elements."""
    dv = kda_outputs["dv"].copy()
    dv[0, 7, 1, :3] = np.nan
    report = deltaproof.check_outputs(KDA, dict(kda_outputs, dv=dv))
    assert not report.passed
    assert re.search(
        r"^ +dv: 3 of 640 elements are NaN or inf \(unwritten outputs stay NaN\)$",
        report.summary(),
        re.M,
    ), report.summary()
