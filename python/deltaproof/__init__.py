"""deltaproof: the numerical verification harness for chunked linear-attention
kernels (gdn2, kda, gdn), from Python.

    import deltaproof
    fixture = deltaproof.load_fixture("fixtures/kda/t40-c16.safetensors")
    report = deltaproof.check_outputs(fixture, {"o": o, "ht": ht, "dq": dq, ...}, precision="bf16")
    assert report.passed, report.summary()

The judgement is the C++ gate check's (`deltaproof gate check`), run in this
process on the arrays given: the same verdict and the same report JSON.
"""

from deltaproof._check import PRECISIONS, Report, check_outputs
from deltaproof._core import InputError, report_schema, set_noise_cache, tool_version
from deltaproof._fixture import Fixture, load_fixture

InputError.__module__ = "deltaproof"  # raised by both sides: deltaproof.InputError
__version__ = "0.1.0"
__all__ = [
    "PRECISIONS",
    "Fixture",
    "InputError",
    "Report",
    "check_outputs",
    "load_fixture",
    "report_schema",
    "set_noise_cache",
    "tool_version",
]
