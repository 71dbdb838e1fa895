"""Shared pieces of the Python package's tests (tests/python/package/).

The package under test is the installed one (`pip install ./python`, as
scripts/setup.sh does); the CLI is build/bin/deltaproof, or DELTAPROOF_BIN.
Candidates come from the CPU backend: `deltaproof run --backend cpu-chunk`.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
KDA = ROOT / "fixtures" / "kda" / "t40-c16.safetensors"  # 3 chunks of 16, B1 H2 K=V=8


def cli():
    return os.environ.get("DELTAPROOF_BIN", str(ROOT / "build" / "bin" / "deltaproof"))


def run_cli(*args):
    """The CLI's exit code and output (it runs from the repository root)."""
    done = subprocess.run([cli(), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def read_candidate(path):
    """A candidate file's tensors as float32 numpy arrays (deltaproof run writes F32)."""
    from safetensors.numpy import load_file

    return load_file(str(path))


def write_candidate(path, outputs):
    """A safetensors file of `outputs`, written here without the package's own conversion
    (float32 and float16 as numpy holds them; ml_dtypes.bfloat16 as its 16 bits)."""
    import json
    import struct

    spelling = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}
    header, blobs, offset = {}, [], 0
    for name in sorted(outputs):
        array = np.ascontiguousarray(outputs[name])
        data = (array.view(np.uint16) if array.dtype.name == "bfloat16" else array).tobytes()
        header[name] = {
            "dtype": spelling[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def cpu_chunk_candidate(fixture, out):
    """The CPU chunked backend's outputs on `fixture`, written to `out` by the CLI."""
    code, output = run_cli("run", "--backend", "cpu-chunk", "--fixture", fixture, "--out", out)
    assert code == 0, output
    return read_candidate(out)


@pytest.fixture(scope="session")
def kda_outputs(tmp_path_factory):
    """cpu-chunk's o, ht and gradients on the kda fixture (float32 arrays)."""
    return cpu_chunk_candidate(KDA, tmp_path_factory.mktemp("kda") / "cpu-chunk.safetensors")
