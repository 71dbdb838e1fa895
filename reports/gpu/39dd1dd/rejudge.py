#!/usr/bin/env python3
"""The bias verdicts of this folder's bf16 reports under another rounding-grain rule.

The reports were written by 39dd1dd (grain_z = 4, the whole term's band with its grain);
the rule on main since is grain_z = 3 on chunks and heads only (gates/noise.cpp). Each
report's per-chunk and per-head bands are [mid -/+ (6 x half-range + 1e-3 + 4 x grain)];
the noise model of the same fixture gives the half-range, so grain = (band half-width -
6 x half-range - 1e-3) / 4, and every group's excess can be judged again for any z.
Prints the largest excess per report for z = 0 (no grain: the verdicts before), 2, 2.5, 3, 4.

    python3 reports/gpu/39dd1dd/rejudge.py   # from the repository root
"""
import glob
import json
import lzma

HERE = "reports/gpu/39dd1dd"
KAPPA, FLOOR, Z_WRITTEN = 6.0, 1e-3, 4.0


def load(path):
    return json.load(lzma.open(path) if path.endswith(".xz") else open(path))


def half0(band):
    return KAPPA * (band[1] - band[0]) / 2 + FLOOR


models = [load(f) for f in glob.glob(f"{HERE}/t32768/noise/*.xz") + glob.glob("reports/gpu/1fa34fb/noise/*.json")]


def model_of(term, noise):
    """The model term whose chunk and head band mid-points are the report's."""
    for model in models:
        mt = model["terms"].get(term)
        if not mt:
            continue
        ours = (mt.get("chunk_alpha") or []) + (mt.get("head_alpha") or [])
        theirs = (noise.get("per_chunk_alpha_band") or []) + (noise.get("per_head_alpha_band") or [])
        if len(ours) == len(theirs) and all(
            abs((a[0] + a[1]) / 2 - (b[0] + b[1]) / 2) < 1e-12
            for a, b in zip(ours, theirs) if a[0] is not None and b[0] is not None):
            return mt
    raise SystemExit(f"no noise model matches term {term}")


for report in sorted(glob.glob(f"{HERE}/t*/*.json.xz")):
    gate = load(report)["gates"][0]
    worst = {z: (0.0, "") for z in (0, 2, 2.5, 3, 4)}
    for t in gate["terms"]:
        noise = t.get("noise") or {}
        if noise.get("alpha") is None:
            continue
        mt = model_of(t["term"], noise)
        for kind in ("chunk", "head"):
            for alpha, written, band in zip(noise.get(f"per_{kind}_alpha") or [],
                                            noise.get(f"per_{kind}_alpha_band") or [],
                                            mt.get(f"{kind}_alpha") or []):
                if alpha is None or band[0] is None:
                    continue
                grain = ((written[1] - written[0]) / 2 - half0(band)) / Z_WRITTEN
                mid = (band[0] + band[1]) / 2
                for z in worst:
                    excess = abs(alpha - mid) / (half0(band) + z * grain)
                    if excess > worst[z][0]:
                        worst[z] = (excess, f"{t['term']} {kind} (grain {grain:.2e})")
        band = mt["alpha"][0]
        excess = abs(noise["alpha"] - (band[0] + band[1]) / 2) / half0(band)
        for z in worst:
            if excess > worst[z][0]:
                worst[z] = (excess, f"{t['term']} whole term")
    print(report[len(HERE) + 1:])
    for z, (excess, where) in worst.items():
        print(f"  grain_z {z}: largest excess {excess:.2f} ({where})")
