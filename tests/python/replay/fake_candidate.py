#!/usr/bin/env python3
"""A stand-in for examples/fla_candidate.py in tests/python/replay_test.py: reads
the fake FLA tree on PYTHONPATH (fla/ops/fake.py: SCALE, RAISE) and writes the
fixture's own reference outputs and gradients, in F32, times SCALE; with RAISE
set it quits as fla_candidate.py does when the kernel raised (exit 3)."""
import argparse
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

parser = argparse.ArgumentParser()
parser.add_argument("fixture")
parser.add_argument("--out", required=True)
args = parser.parse_args()
try:
    from fla.ops import fake
except ImportError as e:
    sys.exit(f"fla_candidate: cannot load fla.ops.fake ({e})")
if fake.RAISE:
    print(f"fla_candidate: the kernel raised AssertionError: {fake.RAISE}", file=sys.stderr)
    sys.exit(3)
with safe_open(args.fixture, framework="np") as f:
    meta = f.metadata()
reference = load_file(args.fixture)
names = meta["outputs"].split(",") + meta["gradients"].split(",")
save_file({n: (reference[n] * fake.SCALE).astype(np.float32) for n in names}, args.out,
          metadata={"format": "deltaproof-candidate/1", "backend": "fake", "op": meta["op"],
                    "phase": "bwd", "precision": "f32"})
