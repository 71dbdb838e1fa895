"""deltaproof: the numerical verification harness for chunked linear-attention
kernels (gdn2, kda, gdn), from Python.

    import deltaproof
    from fla.ops.kda import chunk_kda
    report = deltaproof.check(chunk_kda, fixture="kda/t64-c64", precision="f32")
    assert report.passed, report.summary()

check() builds the inputs of a fixture as torch tensors, calls the candidate
with FLA's signature, runs its backward with the fixture's cotangents, and
judges the outputs with check_outputs: the C++ gate check (`deltaproof gate
check`) run in this process, the same verdict and the same report JSON.
falsify() shows that the check goes red on faults injected into the candidate;
gate() parametrises a pytest test over committed fixtures (fixtures() lists them).
generate_fixture() makes a fixture through the oracle (`deltaproof gen`'s code),
noise_model() returns the bars check_outputs holds a fixture's terms to, and
Report.write_html() renders the page of `deltaproof report html`.
deltaproof.reference holds the token recurrence of each op in torch.

Names are loaded on first use: deltaproof.candidate and deltaproof.reference
need torch but not the compiled core (examples/fla_candidate.py uses them on a
machine where the core is not built); check_outputs, load_fixture and the rest
need the core (pip install ./python builds it).
"""

import importlib
import importlib.util

from deltaproof._errors import CandidateError, InputError, SelfCheckError

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "PRECISIONS": "deltaproof._check",
    "Report": "deltaproof._check",
    "check_outputs": "deltaproof._check",
    "Fixture": "deltaproof._fixture",
    "load_fixture": "deltaproof._fixture",
    "generate_fixture": "deltaproof._fixture",
    "NoiseModel": "deltaproof._noise",
    "noise_model": "deltaproof._noise",
    "html_page": "deltaproof._check",
    "report_schema": "deltaproof._core",
    "set_noise_cache": "deltaproof._core",
    "tool_version": "deltaproof._core",
    "check": "deltaproof.candidate",
    "run_candidate": "deltaproof.candidate",
    "falsify": "deltaproof._falsify",
    "FAULTS": "deltaproof._falsify",
    "FalsifyReport": "deltaproof._falsify",
    "fixtures_folder": "deltaproof._fixture",
    "fixtures": "deltaproof._gate",
    "gate": "deltaproof._gate",
    "FixtureCase": "deltaproof._gate",
}
_SUBMODULES = ("candidate", "cuda_tc", "reference")
_NEEDS_CORE = {
    "deltaproof._check",
    "deltaproof._core",
    "deltaproof._fixture",
    "deltaproof._gate",
    "deltaproof._noise",
}

__all__ = sorted(["CandidateError", "InputError", "SelfCheckError", *_EXPORTS, *_SUBMODULES])


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"deltaproof.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'deltaproof' has no attribute {name!r}")
    module_name = _EXPORTS[name]
    if module_name in _NEEDS_CORE and importlib.util.find_spec("deltaproof._core") is None:
        raise ImportError(
            f"deltaproof.{name} needs the compiled core deltaproof._core, which is not built "
            "here: pip install ./python from the repository root (it builds the CMake target "
            "deltaproof_py)",
            name="deltaproof._core",
        )
    module = importlib.import_module(module_name)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
