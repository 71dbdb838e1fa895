"""deltaproof.noise_model: the bars `deltaproof gate check` (and check_outputs)
holds a fixture's terms to, from its precision class's noise on that fixture
(docs/PRECISION.md, gates/noise.hpp), measured by the C++ gates' own code."""

import json

from deltaproof import _core
from deltaproof._fixture import Fixture

# The keys of a term's figures, as a report's term row names them (its "bar" and
# the row's "noise" figures that do not depend on the candidate).
TERM_KEYS = (
    "bar",
    "baseline_rel",
    "ensemble_worst_rel",
    "alpha_band",
    "min_detectable_scaling",
    "ensemble_rel",
    "ensemble_alpha",
    "per_chunk_ensemble_worst_rel",
    "per_chunk_alpha_band",
    "per_head_alpha_band",
)


class NoiseModel:
    """A precision class's noise on one fixture, and the bars a check derives from it.

    bars: {term: bar} (the rel above which a term is red). terms: {term: figures},
    each a dict under the report's names (TERM_KEYS): bar; baseline_rel (the
    class's same-precision baseline against the reference), ensemble_worst_rel,
    ensemble_rel and ensemble_alpha (each legitimate variant's rel and slope);
    alpha_band, per_chunk_alpha_band, per_head_alpha_band (where the error's
    regression slope on the reference must lie: the bias bands);
    min_detectable_scaling (the smallest uniform scaling of the term that is red);
    per_chunk_ensemble_worst_rel. phase_bars: the report's bars object
    ({"precision", "fwd", "bwd", "noise": members, tolerances, seconds}).
    members, tolerances: the ensemble's variants and the class's kappas and floors.
    """

    def __init__(self, fixture, precision, phase, data):
        self.fixture, self.precision, self.phase = fixture, precision, phase
        self.phase_bars = data["bars"]
        self.terms = {row["term"]: {key: row[key] for key in TERM_KEYS} for row in data["terms"]}
        self.bars = {term: figures["bar"] for term, figures in self.terms.items()}
        noise = self.phase_bars["noise"]
        self.members = list(noise["members"])
        self.tolerances = {
            key: noise[key]
            for key in ("kappa_error", "error_floor", "kappa_bias", "bias_floor", "grain_z")
        }

    def __repr__(self):
        bars = ", ".join(f"{term} {bar:.2e}" for term, bar in self.bars.items())
        return f"<deltaproof.NoiseModel {self.precision} {self.phase} {self.fixture}: {bars}>"


def noise_model(fixture, precision="f32", phase="bwd"):
    """The noise model of `fixture` (a Fixture or a path) for a precision class
    ('f32', 'tf32' or 'bf16') at phase 'fwd' (o, ht) or 'bwd' (every gradient
    too): the bars and bias bands check_outputs would judge a candidate by, the
    same numbers its report holds. Measured with the gates' ensemble (seconds on
    a small fixture), or read from the cache of set_noise_cache."""
    path = fixture.path if isinstance(fixture, Fixture) else str(fixture)
    if phase not in ("fwd", "bwd"):
        raise _core.InputError(f"unknown phase {phase!r}; pass 'fwd' or 'bwd'.")
    data = json.loads(_core.noise(path, precision, phase))
    return NoiseModel(path, precision, phase, data)
