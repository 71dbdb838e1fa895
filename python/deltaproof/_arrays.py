"""Tensors across the boundary to deltaproof._core: (dtype, shape, bytes).

A candidate's output may be a numpy array or a torch tensor (torch is never
imported here: a tensor is known by its type's module) of float32, float16,
bfloat16 or float64. A bfloat16 numpy array is one of ml_dtypes.bfloat16 (the
numpy dtype JAX and TensorFlow use); a torch.bfloat16 tensor crosses as its
bits. Integer arrays are refused, uint16 included: raw bits that are meant as
bfloat16 are passed as `bits.view(ml_dtypes.bfloat16)`.
"""

import numpy as np

from deltaproof._core import InputError

# numpy dtype name -> the safetensors spelling the C++ side reads
_NUMPY_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}
_ACCEPTED = "float32, float16, bfloat16 (ml_dtypes.bfloat16 or torch.bfloat16) or float64"


def _is_torch_tensor(value):
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def _torch_to_numpy(label, tensor):
    import torch  # present: the value is one of its tensors

    tensor = tensor.detach().to("cpu").contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16), "BF16"
    if tensor.dtype not in (torch.float32, torch.float16, torch.float64):
        raise InputError(
            f"{label} is a torch tensor of {tensor.dtype}; an output must be {_ACCEPTED}."
        )
    array = tensor.numpy()
    return array, _NUMPY_DTYPES[array.dtype.name]


def raw_tensor(label, value):
    """(safetensors dtype, shape, little-endian bytes) of one output.

    `label` names it in errors ("outputs['dq']")."""
    if _is_torch_tensor(value):
        array, dtype = _torch_to_numpy(label, value)
    elif isinstance(value, np.ndarray):
        dtype = _NUMPY_DTYPES.get(value.dtype.name) if value.dtype.itemsize in (2, 4, 8) else None
        if dtype is None:
            raise InputError(
                f"{label} has dtype {value.dtype.name}; an output must be {_ACCEPTED}."
            )
        # bfloat16 crosses as its 16 bits; every other dtype as itself, little-endian
        array = value.view(np.uint16) if dtype == "BF16" else value
    else:
        raise InputError(
            f"{label} is a {type(value).__module__}.{type(value).__qualname__}; pass a numpy array "
            "or a torch tensor."
        )
    array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return dtype, list(array.shape), array.tobytes()


def numpy_of(dtype, shape, data):
    """A numpy array of a tensor read by the C++ side (a fixture's: F64, or I64
    for cu_seqlens); BF16 widens exactly to float32."""
    if dtype == "BF16":
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    numpy_dtype = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8"}[dtype]
    return np.frombuffer(data, dtype=numpy_dtype).reshape(shape).copy()
