"""deltaproof.check_outputs: the gate judgement of `deltaproof gate check` on
outputs held in memory, with no file between.

The C++ side runs the same function as the CLI (gates::check_candidate): the
bars and bias bands from the precision class's noise on this fixture, every
term compared, the same report JSON.
"""

import json
import os
from collections.abc import Mapping
from pathlib import Path

from deltaproof import _core
from deltaproof._arrays import raw_tensor
from deltaproof._fixture import Fixture

PRECISIONS = ("f32", "tf32", "bf16")


class Report:
    """A check's verdict and its report.

    passed: the verdict. summary(): what `gate check` prints (each term's
    status, baseline error, rel, bar, margin, alpha and band, worst index; the
    verdict line; each red reason, with the red chunks). json(): the text of
    the report file `gate check --report` writes (reports/schema/report-v1).
    data: that JSON as a dict. html_path: the page write_html() wrote last (None
    before).
    """

    def __init__(self, text, passed, summary):
        self._text = text
        self._summary = summary.rstrip("\n")
        self.passed = bool(passed)
        self.data = json.loads(text)
        self.html_path = None
        self._saved = None

    def summary(self):
        return self._summary

    def json(self):
        return self._text

    def save(self, path):
        """Writes the report file (for `deltaproof report show|html`)."""
        with open(path, "w", encoding="utf-8") as out:
            out.write(self._text)
        self._saved = os.fspath(path)

    def write_html(self, path, report_path=None):
        """Writes the report's HTML page (what `deltaproof report html REPORT -o PATH`
        writes: the terms against their bars, the per-chunk heat map) and returns its
        path (also html_path). The page renders the report's file, and names it:
        report_path when given (written now), else the file save() last wrote, else
        PATH with the suffix .json (written now)."""
        if report_path is None:
            report_path = self._saved or Path(path).with_suffix(".json")
        if os.fspath(report_path) != self._saved:
            self.save(report_path)
        page = html_page(report_path)
        with open(path, "w", encoding="utf-8") as out:
            out.write(page)
        self.html_path = Path(path)
        return self.html_path

    def __repr__(self):
        gate = self.data["gates"][0]
        return f"<deltaproof.Report {gate['name']}: {'PASS' if self.passed else 'FAIL'}>"


def html_page(*report_paths):
    """The HTML page of report files (gate reports, falsify campaigns), as text: what
    `deltaproof report html REPORTS -o PAGE` writes, byte for byte."""
    if not report_paths:
        raise _core.InputError("html_page: pass one report file or more.")
    return _core.html_page([os.fspath(path) for path in report_paths])


def _phase(fixture, outputs, phase):
    """The phase checked: as given, else bwd when any gradient is given (as `gate check`)."""
    if phase is not None:
        if phase not in ("fwd", "bwd"):
            raise _core.InputError(f"unknown phase {phase!r}; pass 'fwd', 'bwd' or None.")
        return phase
    gradients = set(fixture.output_names("bwd")) - set(fixture.output_names("fwd"))
    return "bwd" if gradients & set(outputs) else "fwd"


def check_outputs(fixture, outputs, precision="f32", phase=None, *, name="outputs", backend=None):
    """Judges a kernel's outputs against a fixture, as `deltaproof gate check` does.

    fixture: a Fixture or a fixture's path. outputs: {name: array} with o, ht
    and (for phase 'bwd') every gradient, in FLA layout, as numpy arrays or
    torch tensors of float32, float16, bfloat16 or float64. precision: the
    kernel's class, 'f32', 'tf32' or 'bf16' (docs/PRECISION.md). phase: 'fwd'
    (o and ht), 'bwd' (every gradient too), or None: bwd when any gradient is
    given. name: the gate is check.<op>.<name>. backend: the report's backend
    ('external' when None).

    Raises deltaproof.InputError, naming the tensor and what was expected, on
    a missing or unknown tensor, a wrong shape or dtype. A NaN is no error: it
    is a red verdict.
    """
    if not isinstance(fixture, Fixture):
        fixture = Fixture(fixture)
    if not isinstance(outputs, Mapping):
        raise _core.InputError(
            f"outputs is a {type(outputs).__name__}; pass a dict of name -> array "
            f"({', '.join(fixture.output_names('bwd'))})."
        )
    if precision not in PRECISIONS:
        raise _core.InputError(
            f"unknown precision class {precision!r}; pass 'f32', 'tf32' or 'bf16'."
        )
    known = fixture.output_names("bwd")
    for key in outputs:
        if key not in known:
            raise _core.InputError(
                f"outputs[{key!r}]: a {fixture.op} fixture has no output of that name; its outputs "
                f"are {', '.join(known)}."
            )
    phase_checked = _phase(fixture, outputs, phase)
    needed = fixture.output_names(phase_checked)
    missing = [key for key in needed if key not in outputs]
    if missing:
        raise _core.InputError(
            f"outputs: missing {', '.join(repr(key) for key in missing)}; a {phase_checked} "
            f"check of a {fixture.op} fixture needs {', '.join(needed)}."
        )
    raw = {key: raw_tensor(f"outputs[{key!r}]", outputs[key]) for key in needed}
    command = (
        f"deltaproof.check_outputs({fixture.path!r}, precision={precision!r}, phase={phase!r}, "
        f"name={name!r})"
    )
    result = _core.check(fixture.path, raw, name, backend, precision, phase, command)
    return Report(result["json"], result["passed"], result["summary"])
