"""deltaproof.generate_fixture: a fixture through the oracle from Python, the
bytes `deltaproof gen` writes for the same spec (dense, packed and grouped,
bf16, each regime's option), read back by load_fixture and judged by
check_outputs; a bad spec or out refused naming the field."""

import filecmp

import numpy as np
import pytest

import deltaproof
from conftest import cpu_chunk_candidate, run_cli

# (the package's keywords, gen's options) for one small spec each
SPECS = {
    "kda": (
        dict(op="kda", T=20, H=1, K=4, V=4, chunk=16, seed=3),
        "--op kda --T 20 --H 1 --K 4 --V 4 --chunk 16 --seed 3",
    ),
    "gdn2-packed-grouped-bf16": (
        dict(
            op="gdn2",
            cu_seqlens=[0, 7, 20],
            H=1,
            HV=2,
            K=4,
            V=4,
            chunk=16,
            seed=5,
            regime="stress",
            dtype="bf16",
            h0="zero",
            do_mask=True,
        ),
        "--op gdn2 --cu-seqlens 0,7,20 --H 1 --HV 2 --K 4 --V 4 --chunk 16 --seed 5 "
        "--regime stress --dtype bf16 --h0 zero --do-mask",
    ),
    "gdn-edge": (
        dict(op="gdn", B=2, T=33, H=2, K=4, V=8, chunk=16, seed=1, regime="edge"),
        "--op gdn --B 2 --T 33 --H 2 --K 4 --V 8 --chunk 16 --seed 1 --regime edge",
    ),
}


def gen_cli(options, out):
    code, output = run_cli("gen", *options.split(), "--out", out)
    assert code == 0, output


@pytest.mark.parametrize("case", SPECS)
def test_the_bytes_are_gen_s(case, tmp_path):
    keywords, options = SPECS[case]
    (tmp_path / "cli").mkdir()
    cli_file = tmp_path / "cli" / "fixture.safetensors"  # the same name: the command holds it
    gen_cli(options, cli_file)
    fixture = deltaproof.generate_fixture(tmp_path / "fixture.safetensors", **keywords)
    assert filecmp.cmp(fixture.path, cli_file, shallow=False), case
    assert fixture.metadata["status"] == "checked"
    command = fixture.metadata["command"]  # names the file, not its folder, as gen's does
    assert command.startswith(f"deltaproof gen --op {keywords['op']} ") and command.endswith(
        " --out fixture.safetensors"
    )
    assert fixture.op == keywords["op"] and fixture.K == keywords["K"]
    if "cu_seqlens" in keywords:
        assert fixture.cu_seqlens == keywords["cu_seqlens"] and fixture.HV == keywords["HV"]


def test_another_seed_other_bytes(tmp_path):
    """The comparison above can fail: a spec one field apart gives other bytes."""
    keywords, options = SPECS["kda"]
    (tmp_path / "cli").mkdir()
    gen_cli(options, tmp_path / "cli" / "fixture.safetensors")
    fixture = deltaproof.generate_fixture(
        tmp_path / "fixture.safetensors", **dict(keywords, seed=4)
    )
    assert not filecmp.cmp(fixture.path, tmp_path / "cli" / "fixture.safetensors", shallow=False)


def test_a_generated_fixture_is_checked(tmp_path):
    """load_fixture reads it; cpu-chunk's outputs on it are green, scaled ones red."""
    keywords, _ = SPECS["kda"]
    path = tmp_path / "kda.safetensors"
    deltaproof.generate_fixture(path, **keywords)
    fixture = deltaproof.load_fixture(path)
    assert (fixture.op, fixture.B, fixture.T, fixture.H, fixture.K, fixture.V) == (
        "kda",
        1,
        20,
        1,
        4,
        4,
    )
    assert set(fixture.inputs) == {"q", "k", "v", "g", "beta", "h0", "do", "dht"}
    assert all(array.dtype == np.float64 for array in fixture.tensors.values())
    outputs = cpu_chunk_candidate(path, tmp_path / "cpu-chunk.safetensors")
    assert deltaproof.check_outputs(fixture, outputs).passed
    scaled = dict(outputs, dv=outputs["dv"] * np.float32(1.03))
    assert not deltaproof.check_outputs(fixture, scaled).passed


def test_bad_spec(tmp_path):
    out = tmp_path / "f.safetensors"
    with pytest.raises(deltaproof.InputError, match="unknown op 'kdaa'; pass 'gdn2', 'kda'"):
        deltaproof.generate_fixture(out, op="kdaa", T=16)
    with pytest.raises(deltaproof.InputError, match="unknown regime 'wild'"):
        deltaproof.generate_fixture(out, op="kda", T=16, regime="wild")
    with pytest.raises(deltaproof.InputError, match="unknown dtype 'f16'; pass 'f32' or 'bf16'"):
        deltaproof.generate_fixture(out, op="kda", T=16, dtype="f16")
    with pytest.raises(deltaproof.InputError, match="T is missing"):
        deltaproof.generate_fixture(out, op="kda")
    # FixtureSpec::validate's sentence, gen's own
    with pytest.raises(deltaproof.InputError, match="chunk is 8, but kernels use chunk sizes 16"):
        deltaproof.generate_fixture(out, op="kda", T=16, chunk=8)
    assert not out.exists()


def test_out_refused(tmp_path):
    out = tmp_path / "f.safetensors"
    out.write_bytes(b"")
    with pytest.raises(deltaproof.InputError, match="f.safetensors exists; pass overwrite=True"):
        deltaproof.generate_fixture(out, op="kda", T=16)
    deltaproof.generate_fixture(out, op="kda", T=16, overwrite=True)
    assert deltaproof.load_fixture(out).T == 16
    with pytest.raises(deltaproof.InputError, match="the folder .*no-such does not exist"):
        deltaproof.generate_fixture(tmp_path / "no-such" / "f.safetensors", op="kda", T=16)
