"""deltaproof.cuda_tc: cuda-tc as a candidate callable. Its GPU path runs on the device machine
(reports/gpu: check green on three gdn2 fixtures in class bf16, falsify red on every fault); here,
without a GPU, the refusals that need no device."""

import pytest

import deltaproof
from deltaproof import cuda_tc


def test_a_missing_library_is_named(tmp_path):
    missing = tmp_path / "libdeltaproof_tc.so"
    with pytest.raises(
        deltaproof.InputError, match=r"libdeltaproof_tc\.so: no such file.*deltaproof_tc"
    ):
        cuda_tc.load(str(missing))


def test_the_c_structures_match_tc_capi():
    # kernels/cuda/tc_capi.cu: five ints, the scale, the bf16 flag, nine pointers; the
    # gradients' struct: do, dht and seven gradients
    assert [n for n, _ in cuda_tc._Problem._fields_] == [
        "B",
        "T",
        "H",
        "K",
        "V",
        "scale",
        "bf16_inputs",
        "q",
        "k",
        "v",
        "g",
        "b",
        "w",
        "h0",
        "o",
        "ht",
    ]
    assert [n for n, _ in cuda_tc._Gradients._fields_] == [
        "d_o",
        "dht",
        "dq",
        "dk",
        "dv",
        "dg",
        "db",
        "dw",
        "dh0",
    ]
