#!/usr/bin/env python3
"""scripts/alpha_contributions.py on a committed fixture: a candidate equal to
the reference except head (0,1) of db scaled by 1.01 has alpha +1.000e-02 in
that head and 0 (to f32 precision) in every other; with --head the shares of
every element add up to that alpha; --chunk gives one chunk's alpha and grain and
--compare another candidate's; a missing tensor, a head or a chunk outside the
term exit 2 with a sentence. Exits 1 naming the first check that fails."""
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file, save_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "alpha_contributions.py"
FIXTURE = ROOT / "fixtures" / "gdn2" / "t40-c16-b2h3.safetensors"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def check(condition, what):
    if not condition:
        print(f"alpha_contributions_test: FAILED: {what}")
        sys.exit(1)


def main():
    reference = load_file(FIXTURE)
    candidate = {name: reference[name].astype(np.float32) for name in ("o", "ht", "db", "dh0")}
    candidate["db"][0, :, 1, :] *= np.float32(1.01)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "candidate.safetensors"
        save_file(candidate, str(path))

        every = run(FIXTURE, path, "--term", "db")
        check(every.returncode == 0, f"every head: exit {every.returncode}: {every.stderr}")
        alphas = {}
        for line in every.stdout.splitlines()[2:]:
            b, h, alpha = re.match(r"\s*\(\s*(\d+),\s*(\d+)\)\s+(\S+)", line).groups()
            alphas[f"({b},{h})"] = float(alpha)
        check(len(alphas) == 6, f"6 heads listed, got {len(alphas)}: {every.stdout}")
        check(abs(alphas.pop("(0,1)") - 0.01) < 1e-6, "head (0,1) scaled by 1.01 has alpha 0.01")
        check(all(abs(a) < 1e-6 for a in alphas.values()), f"the other heads have alpha 0: {alphas}")

        one = run(FIXTURE, path, "--term", "db", "--head", "0,1", "--top", 40 * 8)
        check(one.returncode == 0, f"--head 0,1: exit {one.returncode}: {one.stderr}")
        last = one.stdout.splitlines()[-1].split()
        check(abs(float(last[-1]) - 0.01) < 1e-6, f"the shares add up to alpha: {last}")

        # --chunk: chunk 1 (t 16..31) of head (0,1) carries the scaling, chunk 1 over every
        # head a sixth-weighted share of it; --compare: the reference itself has alpha 0
        # and no element equal to the candidate's in that head
        chunk = run(FIXTURE, path, "--term", "db", "--chunk", 1, "--chunk-size", 16, "--head", "0,1",
                    "--compare", FIXTURE)
        check(chunk.returncode == 0, f"--chunk 1: exit {chunk.returncode}: {chunk.stderr}")
        first = chunk.stdout.splitlines()[0]
        check(re.search(r"alpha \+1\.000e-02, n_eff \S+ of 128 elements, rounding grain", first), first)
        other = chunk.stdout.splitlines()[1]
        check(re.search(r"alpha [+-]0\.000e\+00; 0 of 128 elements", other), other)
        past = run(FIXTURE, path, "--term", "db", "--chunk", 3, "--chunk-size", 16)
        check(past.returncode == 2 and "T=40, 3 chunks" in past.stderr, f"a chunk past T: {past.stderr}")

        missing = run(FIXTURE, path, "--term", "dk")
        check(missing.returncode == 2 and "no tensor named 'dk'" in missing.stderr, f"a missing tensor: {missing.stderr}")
        outside = run(FIXTURE, path, "--term", "db", "--head", "2,0")
        check(outside.returncode == 2 and "B=2, H=3" in outside.stderr, f"a head outside: {outside.stderr}")
    print("alpha_contributions_test: 6 checks passed")


if __name__ == "__main__":
    main()
