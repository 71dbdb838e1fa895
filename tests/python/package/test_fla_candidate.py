"""examples/fla_candidate.py on top of deltaproof.run_candidate, run on the CPU
(--device cpu) with a stand-in `fla` whose chunk_kda and chunk_gdn2 are
deltaproof.reference's: the candidate file it writes passes `gate check`, a
kernel that raises exits 3 quoting its message (as scripts/replay.py reads it),
and it runs where the package is not importable (the repository's python/,
without the compiled core: as on the GPU machine)."""

import subprocess
import sys

import pytest

pytest.importorskip("torch")
from conftest import ROOT, run_cli  # noqa: E402

SCRIPT = ROOT / "examples" / "fla_candidate.py"


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    """A folder for PYTHONPATH: fla (FLA's module layout, torch references for kernels),
    and a deltaproof that does not import (so the script falls back to python/)."""
    folder = tmp_path_factory.mktemp("stand-in")
    files = {
        "fla/__init__.py": '__version__ = "stand-in"\n',
        "fla/ops/__init__.py": "",
        "fla/ops/kda/__init__.py": "from deltaproof.reference import kda as chunk_kda\n",
        "fla/ops/gdn2/__init__.py": "from deltaproof.reference import gdn2 as chunk_gdn2\n",
        "fla/ops/gated_delta_rule/__init__.py": (
            "def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,\n"
            "                           output_final_state=False, cu_seqlens=None):\n"
            "    assert q.shape[-1] % 16 == 0, 'K must be a multiple of 16'\n"
        ),
        "no-package/deltaproof/__init__.py": "raise ImportError('not built here')\n",
    }
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def fla_candidate(stand_in, fixture, out, *options, without_package=False):
    path = [str(stand_in)] + ([str(stand_in / "no-package")] if without_package else [])
    env = {"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(ROOT / "fixtures" / fixture),
            "--out",
            str(out),
            "--device",
            "cpu",
            *options,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    "fixture, options, without_package",
    [
        ("kda/varlen-hv2-c32.safetensors", [], False),
        ("gdn2/t40-c16.safetensors", ["--phase", "fwd"], True),
        ("kda/t32-c16-bf16.safetensors", [], True),
    ],
)
def test_candidate_passes_gate_check(stand_in, tmp_path, fixture, options, without_package):
    out = tmp_path / "candidate.safetensors"
    code, output = fla_candidate(stand_in, fixture, out, *options, without_package=without_package)
    assert code == 0, output
    from safetensors.torch import load_file

    tensors = load_file(str(out))
    dtype = "torch.bfloat16" if "bf16" in fixture else "torch.float32"
    assert {str(v.dtype) for v in tensors.values()} <= {dtype, "torch.float32"}
    assert ("--phase" in options) == (set(tensors) == {"o", "ht"})
    precision = "bf16" if "bf16" in fixture else "f32"
    code, output = run_cli(
        "gate",
        "check",
        "--fixture",
        ROOT / "fixtures" / fixture,
        "--candidate",
        out,
        "--precision",
        precision,
    )
    assert code == 0, output


def test_a_kernel_that_raises_exits_3(stand_in, tmp_path):
    code, output = fla_candidate(
        stand_in, "gdn/t40-c16.safetensors", tmp_path / "c.safetensors", without_package=True
    )
    assert code == 3, output
    last = output.strip().splitlines()[-1]
    assert last == "fla_candidate: the kernel raised AssertionError: K must be a multiple of 16"
