#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/safetensors_fuzz into tests/fuzz/corpus/.

A few tiny valid files (written the way deltaproof's serializer writes them:
sorted compact JSON, tensors in name order, header padded with spaces to a
multiple of 8) and one invalid file per kind of refusal. Standard library only.

    python3 tests/fuzz/make_corpus.py [output folder]
"""
import json
import pathlib
import struct
import sys

DTYPE_FORMAT = {"F64": "<d", "F32": "<f", "F16": "<e"}


def header_bytes(header, pad=True):
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return text


def image(header_text, data=b"", header_length=None):
    length = len(header_text) if header_length is None else header_length
    return struct.pack("<Q", length) + header_text + data


def tensor_bytes(dtype, values):
    if dtype == "BF16":
        return b"".join(struct.pack("<f", v)[2:] for v in values)  # exact for these values
    return b"".join(struct.pack(DTYPE_FORMAT[dtype], v) for v in values)


def valid_file(tensors, metadata=None):
    """tensors: {name: (dtype, shape, values)}"""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dtype, shape, values = tensors[name]
        raw = tensor_bytes(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return image(header_bytes(header), data)


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def corpus():
    files = {
        "valid_empty": valid_file({}),
        "valid_one_f64": valid_file({"x": ("F64", [2], [1.0, -0.5])}),
        "valid_all_dtypes_metadata": valid_file(
            {
                "a": ("BF16", [2, 1], [1.0, -2.0]),
                "b": ("F16", [3], [0.5, 65504.0, -0.0]),
                "c": ("F32", [1, 2], [3.25, 1e-3]),
                "d": ("F64", [], [7.0]),
            },
            metadata={"op": "gdn2", "B": "1", "T": "2"},
        ),
        "valid_zero_sized": valid_file({"e": ("F32", [0, 3], []), "w": ("F64", [1], [2.0])}),
        "invalid_short": b"\x08\x00\x00",
        "invalid_header_length_zero": image(b"", b"\x00" * 8),
        "invalid_header_length_past_end": image(b"{}      ", header_length=64),
        "invalid_not_utf8": image(b'{"w\xff":1}'),
        "invalid_not_json": image(b'{"w": }'),
        "invalid_not_object": image(b"[1,2]   "),
        "invalid_metadata_value": image(header_bytes({"__metadata__": {"op": 1}})),
        "invalid_unknown_dtype": image(header_bytes({"w": entry("U8", [1], 0, 1)}), b"\x00"),
        "invalid_negative_dim": image(header_bytes({"w": entry("F64", [-1], 0, 8)}), b"\x00" * 8),
        "invalid_shape_overflow": image(
            header_bytes({"w": entry("F64", [4294967296, 4294967296], 0, 8)}), b"\x00" * 8
        ),
        "invalid_offsets_reversed": image(header_bytes({"w": entry("F64", [0], 8, 0)}), b"\x00" * 8),
        "invalid_overlap": image(
            header_bytes({"a": entry("F64", [2], 0, 16), "b": entry("F64", [2], 8, 24)}), b"\x00" * 24
        ),
        "invalid_gap": image(
            header_bytes({"a": entry("F64", [1], 0, 8), "b": entry("F64", [1], 16, 24)}), b"\x00" * 24
        ),
        "invalid_trailing_bytes": image(header_bytes({"w": entry("F32", [1], 0, 4)}), b"\x00" * 8),
        "invalid_size_mismatch": image(header_bytes({"w": entry("F64", [3], 0, 16)}), b"\x00" * 16),
    }
    return files


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "corpus"
    out.mkdir(parents=True, exist_ok=True)
    for name, data in corpus().items():
        (out / f"{name}.safetensors").write_bytes(data)
    print(f"wrote {len(corpus())} seed files to {out}")


if __name__ == "__main__":
    main()
