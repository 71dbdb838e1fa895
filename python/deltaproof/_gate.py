"""deltaproof.fixtures and deltaproof.gate: the committed fixtures by name, and
a pytest test parametrised over them.

A case is named as the CLI's gates name theirs, less the backend:
"<op>.<fixture>.<phase>", e.g. "kda.t40-c16.bwd" for fixtures/kda/t40-c16.safetensors
at phase bwd (`deltaproof gate list` names it kda.<backend>.t40-c16.bwd). Patterns are
shell globs (fnmatch) over that name: "kda.*.bwd", "*.t40-c16.fwd", "gdn2.varlen-*.*".

    @deltaproof.gate("kda.t4*-c16.bwd", precision="bf16")
    def test_my_kda(fixture, phase, precision):
        return deltaproof.check(my_kda, fixture, precision, phase)   # red: fails with its summary

The folder is deltaproof.fixtures_folder(directory)'s.
"""

import fnmatch
import functools
import inspect
import json
from pathlib import Path

from deltaproof._errors import InputError
from deltaproof._fixture import fixtures_folder

PHASES = ("fwd", "bwd")
GATE_ARGUMENTS = ("fixture", "phase", "precision")  # what a gate's test may ask for


class FixtureCase:
    """One committed fixture at one phase: id ("kda.t40-c16.bwd"), op, name
    ("t40-c16"), phase, path. load() reads the fixture (deltaproof.Fixture)."""

    def __init__(self, op, name, phase, path):
        self.op, self.name, self.phase, self.path = op, name, phase, path
        self.id = f"{op}.{name}.{phase}"

    def load(self):
        from deltaproof._fixture import load_fixture

        return load_fixture(self.path)

    def __repr__(self):
        return f"<deltaproof.FixtureCase {self.id}: {self.path}>"


def fixtures(pattern="*", directory=None):
    """The committed fixtures whose "<op>.<fixture>.<phase>" matches the glob
    `pattern`, as FixtureCases in the manifest's order (each fixture's fwd,
    then its bwd)."""
    folder = fixtures_folder(directory)
    with open(folder / "manifest.json", encoding="utf-8") as manifest:
        entries = json.load(manifest)["fixtures"]
    cases = []
    for entry in entries:
        relative = Path(entry["file"])  # "kda/t40-c16.safetensors"
        op, name = relative.parent.name, relative.name.removesuffix(".safetensors")
        for phase in PHASES:
            case = FixtureCase(op, name, phase, str(folder / relative))
            if fnmatch.fnmatchcase(case.id, pattern):
                cases.append(case)
    return cases


def gate(pattern, precision="f32", directory=None):
    """A pytest decorator: the test runs once per committed fixture matching
    `pattern` (ids "kda.t40-c16.bwd"). It receives, by parameter name,
    `fixture` (a deltaproof.Fixture), `phase` ('fwd' or 'bwd') and `precision`
    (the class given here). A test that returns a red deltaproof.Report fails
    with Report.summary(): each term's status, rel, bar, worst index, and the
    red chunks."""
    import pytest

    cases = fixtures(pattern, directory)
    if not cases:
        raise InputError(
            f"deltaproof.gate({pattern!r}): no committed fixture matches; names are "
            "<op>.<fixture>.<phase>, e.g. kda.t40-c16.bwd (deltaproof.fixtures('*') lists them)."
        )
    from deltaproof._check import PRECISIONS, Report

    if precision not in PRECISIONS:
        raise InputError(f"unknown precision class {precision!r}; pass 'f32', 'tf32' or 'bf16'.")

    def decorate(test):
        parameters = inspect.signature(test).parameters
        wanted = [name for name in GATE_ARGUMENTS if name in parameters]
        if "fixture" not in wanted:
            raise TypeError(
                f"deltaproof.gate: {test.__name__} takes no parameter 'fixture'; it may take "
                f"{', '.join(GATE_ARGUMENTS)}."
            )

        @functools.wraps(test)
        def run(*args, **kwargs):
            result = test(*args, **kwargs)
            if isinstance(result, Report) and not result.passed:
                pytest.fail(result.summary(), pytrace=False)

        values = []
        for case in cases:
            given = {"fixture": case.load(), "phase": case.phase, "precision": precision}
            values.append(pytest.param(*(given[name] for name in wanted), id=case.id))
        return pytest.mark.parametrize(",".join(wanted), values)(run)

    return decorate
