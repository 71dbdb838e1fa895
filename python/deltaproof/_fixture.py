"""deltaproof.load_fixture: a fixture written by `deltaproof gen`, read by the
C++ reader (which refuses a malformed file, naming the tensor); and
deltaproof.generate_fixture: one made through the oracle, as `deltaproof gen` makes it."""

import json
import os
from pathlib import Path

from deltaproof import _core
from deltaproof._errors import InputError, SelfCheckError
from deltaproof._arrays import numpy_of


class Fixture:
    """A fixture: its metadata, its tensors as numpy arrays (float64 in FLA
    layout; cu_seqlens int64), and the kernel's view of its shape.

    Attributes: path, metadata (dict of str), tensors (dict of arrays), op,
    B, T, H, HV, K, V, chunk, scale, cu_seqlens (a list; empty when dense).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        raw = _core.read_fixture(self.path)
        self.metadata = dict(raw["metadata"])
        self.tensors = {name: numpy_of(*tensor) for name, tensor in raw["tensors"].items()}
        shape = raw["shape"]
        self.op = shape["op"]
        self.B, self.T, self.H, self.HV = shape["B"], shape["T"], shape["H"], shape["HV"]
        self.K, self.V, self.chunk, self.scale = (
            shape["K"],
            shape["V"],
            shape["chunk"],
            shape["scale"],
        )
        self.cu_seqlens = list(shape["cu_seqlens"])
        self._input_names = list(raw["inputs"])
        self._output_names = {phase: list(names) for phase, names in raw["outputs"].items()}
        self._output_shapes = {name: tuple(s) for name, s in raw["output_shapes"].items()}

    def output_names(self, phase="bwd"):
        """The tensors a candidate holds: o and ht ('fwd'), and every gradient ('bwd')."""
        if phase not in self._output_names:
            raise _core.InputError(f"unknown phase {phase!r}; pass 'fwd' or 'bwd'.")
        return list(self._output_names[phase])

    def output_shape(self, name):
        """The FLA shape a candidate's output `name` must have."""
        if name not in self._output_shapes:
            raise _core.InputError(
                f"{name!r} is no output of a {self.op} fixture; its outputs are "
                f"{', '.join(self._output_shapes)}."
            )
        return self._output_shapes[name]

    @property
    def inputs(self):
        """The inputs and cotangents (q, k, v, ..., do, dht) a kernel reads."""
        return {name: self.tensors[name] for name in self._input_names if name in self.tensors}

    def reference(self, phase="bwd"):
        """The oracle's outputs: o, ht and (bwd) every gradient."""
        return {name: self.tensors[name] for name in self.output_names(phase)}

    def __repr__(self):
        return (
            f"<deltaproof.Fixture {self.path}: {self.op} B{self.B} T{self.T} H{self.H} "
            f"HV{self.HV} K{self.K} V{self.V} chunk {self.chunk}>"
        )


def load_fixture(path):
    """Reads a fixture (a safetensors file written by `deltaproof gen`)."""
    return Fixture(path)


def generate_fixture(
    out,
    *,
    op,
    T=None,
    B=None,
    H=None,
    HV=None,
    K=None,
    V=None,
    chunk=None,
    cu_seqlens=None,
    regime="default",
    dtype="f32",
    h0="drawn",
    do_mask=False,
    seed=0,
    overwrite=False,
    force=False,
    threads=0,
):
    """Generates a fixture through the quad oracle and writes it to `out`; returns
    it read back (a Fixture).

    The C++ code path of `deltaproof gen --out OUT` (oracle::generate_fixture):
    the same spec gives the same bytes. The keywords are gen's options: op
    ('gdn2', 'kda' or 'gdn'), T (tokens; a packed spec's default is its last
    offset), B, H, HV (grouped value heads), K, V, chunk (16, 32 or 64), cu_seqlens
    (packed sequences' offsets, B 1), regime ('default', 'mild', 'stress', 'edge'),
    dtype ('f32' or 'bf16': the inputs are exact in it), h0 ('drawn' or 'zero'),
    do_mask, seed; None takes gen's default. threads: the oracle's (0: every core).

    Raises InputError naming the field for a bad spec, or for an `out` that exists
    (without overwrite) or whose folder does not; SelfCheckError when a self-check
    fails, writing nothing unless force (then the file is marked 'unchecked').
    """
    out = os.fspath(out)
    spec = _core.fixture_spec(
        op,
        B,
        T,
        H,
        HV,
        K,
        V,
        chunk,
        [] if cu_seqlens is None else [int(offset) for offset in cu_seqlens],
        regime,
        dtype,
        h0,
        bool(do_mask),
        seed,
    )
    if os.path.exists(out) and not overwrite:
        raise InputError(f"{out} exists; pass overwrite=True to replace it, or choose another out.")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {out}: the folder {folder} does not exist.")
    result = _core.generate(spec, out, bool(force), int(threads))
    if not result["passed"] and not force:
        raise SelfCheckError(
            f"{result['describe']}: {result['failure']}; nothing written (pass force=True to write "
            "it marked 'unchecked').",
            json.loads(result["self_checks"]),
        )
    return Fixture(out)


def fixtures_folder(directory=None):
    """The folder of the committed fixtures (one with a manifest.json): the
    directory given; else $DELTAPROOF_FIXTURES; else the nearest fixtures/
    holding a manifest.json from the working directory up. Committed fixtures
    are named by their path in it less the extension: 'kda/t40-c16'."""
    if directory is None:
        directory = os.environ.get("DELTAPROOF_FIXTURES")
    if directory is not None:
        folder = Path(directory)
        if not (folder / "manifest.json").is_file():
            raise InputError(
                f"{folder} holds no manifest.json; pass the folder `deltaproof gen --all` wrote "
                "(the repository's fixtures/)."
            )
        return folder
    for parent in (Path.cwd(), *Path.cwd().parents):
        if (parent / "fixtures" / "manifest.json").is_file():
            return parent / "fixtures"
    raise InputError(
        f"no fixtures/manifest.json in {Path.cwd()} or above it; pass directory=, set "
        "DELTAPROOF_FIXTURES, or run from the repository."
    )
