#!/usr/bin/env python3
"""Checks the safetensors fixtures in a folder with Python's own reader.

For every *.safetensors file in the folder (default: fixtures/) it checks that
  - the metadata names a known op ("op": gdn2, kda or gdn) and gives B, T, H,
    K and V as positive decimal strings;
  - the tensors present are exactly the op's set, every one float64 (F64);
  - every shape matches the metadata (see EXPECTED_SHAPES below);
  - a packed fixture (metadata N, issue 14) also holds cu_seqlens, int64 [N + 1]:
    0, strictly increasing, ending at T, with B = 1; its states are [N, HV, K, V];
  - with grouped value heads (metadata HV) q, k, dq, dk have H heads, every
    other tensor HV.
If the folder holds a manifest.json ({"fixtures": [{"file": "...", ...}]}),
every file it lists must exist.

Prints one line per good file; on any problem prints one line per problem,
naming the file and tensor, and exits 1. Needs only numpy and safetensors:

    pip install numpy safetensors
    python3 scripts/check_fixtures.py [folder]
"""
import json
import pathlib
import re
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

# Tensor names by op: inputs, upstream gradients, forward outputs, gradients.
EXPECTED_NAMES = {
    "gdn2": "q k v g b w h0 do dht o ht dq dk dv dg db dw dh0".split(),
    "kda": "q k v g beta h0 do dht o ht dq dk dv dg dbeta dh0".split(),
    "gdn": "q k v g beta h0 do dht o ht dq dk dv dg dbeta dh0".split(),
}

# Shapes as tuples of metadata keys, by tensor name; gdn's gate is per head.
# HV: the value heads (H without grouping); N: the states (B when dense).
_COMMON_SHAPES = {
    **dict.fromkeys(["q", "k", "dq", "dk"], ("B", "T", "H", "K")),
    **dict.fromkeys(["b", "db"], ("B", "T", "HV", "K")),
    **dict.fromkeys(["v", "w", "o", "do", "dv", "dw"], ("B", "T", "HV", "V")),
    **dict.fromkeys(["beta", "dbeta"], ("B", "T", "HV")),
    **dict.fromkeys(["h0", "ht", "dht", "dh0"], ("N", "HV", "K", "V")),
}
EXPECTED_SHAPES = {
    "gdn2": {**_COMMON_SHAPES, "g": ("B", "T", "HV", "K"), "dg": ("B", "T", "HV", "K")},
    "kda": {**_COMMON_SHAPES, "g": ("B", "T", "HV", "K"), "dg": ("B", "T", "HV", "K")},
    "gdn": {**_COMMON_SHAPES, "g": ("B", "T", "HV"), "dg": ("B", "T", "HV")},
}

DIMENSION_KEYS = ("B", "T", "H", "K", "V")
POSITIVE_DECIMAL = re.compile(r"[1-9][0-9]*")


def check_file(path):
    """Returns (problems, summary) for one fixture file."""
    problems = []

    def problem(message, tensor=None):
        where = f"{path}: tensor '{tensor}'" if tensor is not None else f"{path}"
        problems.append(f"{where}: {message}")

    try:
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            stored_dtypes = {name: handle.get_slice(name).get_dtype() for name in handle.keys()}
    except Exception as error:  # the reader's own message says what is wrong
        problem(f"safetensors cannot open it ({error})")
        return problems, None

    # Metadata: the op and the dimensions.
    op = metadata.get("op")
    if op not in EXPECTED_NAMES:
        problem(
            f"metadata 'op' is {op!r}; expected one of {', '.join(sorted(EXPECTED_NAMES))}"
        )
        return problems, None
    dims = {}
    for key in DIMENSION_KEYS:
        value = metadata.get(key)
        if value is None:
            problem(f"metadata has no '{key}'; B, T, H, K and V must all be given")
        elif not POSITIVE_DECIMAL.fullmatch(value):
            problem(f"metadata '{key}' is {value!r}; it must be a positive decimal integer")
        else:
            dims[key] = int(value)

    # Grouped value heads and packed sequences (issue 14, docs/VARLEN.md).
    for key, default in (("HV", dims.get("H")), ("N", dims.get("B"))):
        value = metadata.get(key)
        if value is None:
            if default is not None:
                dims[key] = default
        elif not POSITIVE_DECIMAL.fullmatch(value):
            problem(f"metadata '{key}' is {value!r}; it must be a positive decimal integer")
        else:
            dims[key] = int(value)
    if "HV" in dims and "H" in dims and dims["HV"] % dims["H"] != 0:
        problem(f"metadata 'HV' is {dims['HV']}: the value heads must be a multiple of H={dims['H']}")
    packed = "N" in metadata

    # Names and dtypes (from the header, so that a non-float64 tensor is named
    # even when numpy cannot represent it).
    expected = set(EXPECTED_NAMES[op]) | ({"cu_seqlens"} if packed else set())
    present = set(stored_dtypes)
    for name in sorted(expected - present):
        problem(f"missing; a {op} fixture holds {' '.join(EXPECTED_NAMES[op])}", tensor=name)
    for name in sorted(present - expected):
        problem(f"unexpected in a {op} fixture", tensor=name)
    for name in sorted(present):
        want = "I64" if name == "cu_seqlens" else "F64"
        if stored_dtypes[name] != want:
            problem(f"dtype is {stored_dtypes[name]}; it must be {want}"
                    + ("" if name == "cu_seqlens" else " (fixtures hold float64 only)"), tensor=name)
    if problems:
        return problems, None

    # Values and shapes, through numpy.
    try:
        arrays = load_file(str(path))
    except Exception as error:
        problem(f"safetensors.numpy.load_file failed ({error})")
        return problems, None
    if packed and "cu_seqlens" in arrays and len(dims) == len(DIMENSION_KEYS) + 2:
        cu = arrays["cu_seqlens"]
        if cu.shape != (dims["N"] + 1,):
            problem(f"shape is {list(cu.shape)}; expected [N + 1] = [{dims['N'] + 1}]", tensor="cu_seqlens")
        elif cu[0] != 0 or cu[-1] != dims["T"] or not np.all(np.diff(cu) > 0) or dims["B"] != 1:
            problem(f"{cu.tolist()} must start at 0, increase strictly and end at T={dims['T']}, "
                    f"with B = 1 (B={dims['B']})", tensor="cu_seqlens")
    for name in sorted(arrays):
        array = arrays[name]
        if name == "cu_seqlens":
            continue
        if array.dtype != np.float64:
            problem(f"numpy dtype is {array.dtype}; expected float64", tensor=name)
        if len(dims) == len(DIMENSION_KEYS) + 2:
            keys = EXPECTED_SHAPES[op][name]
            want = tuple(dims[key] for key in keys)
            if tuple(array.shape) != want:
                problem(
                    f"shape is {list(array.shape)}; expected [{', '.join(keys)}] = {list(want)}",
                    tensor=name,
                )
    summary = " ".join(f"{key}={dims[key]}" for key in DIMENSION_KEYS if key in dims)
    if dims.get("HV") != dims.get("H"):
        summary += f" HV={dims['HV']}"
    if packed:
        summary += f" N={dims['N']}"
    return problems, f"op={op} {summary}, {len(arrays)} tensors"


def check_manifest(folder):
    """Problems with folder/manifest.json, or [] if there is none or it is fine."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        return []
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return [f"{manifest_path}: cannot be read as JSON ({error})"]
    fixtures = manifest.get("fixtures") if isinstance(manifest, dict) else None
    if not isinstance(fixtures, list):
        return [f"{manifest_path}: must be an object with a 'fixtures' list"]
    problems = []
    for index, item in enumerate(fixtures):
        listed = item.get("file") if isinstance(item, dict) else None
        if not isinstance(listed, str):
            problems.append(f"{manifest_path}: fixtures[{index}] has no 'file' string")
        elif not (folder / listed).is_file():
            problems.append(f"{manifest_path}: fixtures[{index}] lists '{listed}', which does not exist")
    return problems


def main(argv):
    if len(argv) > 2:
        print(f"usage: {argv[0]} [folder]   (default: fixtures/)", file=sys.stderr)
        return 2
    folder = pathlib.Path(argv[1] if len(argv) == 2 else "fixtures")
    if not folder.is_dir():
        print(f"{folder}: no such folder; pass the fixtures folder as the argument", file=sys.stderr)
        return 1

    problems = check_manifest(folder)
    files = sorted(folder.rglob("*.safetensors"))
    if not files:
        problems.append(f"{folder}: holds no *.safetensors files")
    for path in files:
        file_problems, summary = check_file(path)
        if file_problems:
            problems.extend(file_problems)
        else:
            print(f"ok {path}: {summary}")

    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
