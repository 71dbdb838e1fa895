#!/usr/bin/env bash
# scripts/gpu-varlen-cuda.sh OUT_DIR — the CUDA backends on packed sequences
# and grouped value heads (issue 14), on a machine with an NVIDIA GPU. Needs
# build/bin/deltaproof and build/bin/kernels_tests (built elsewhere, carried).
#   1. kernels_tests PackedKernels.*: cuda-chunk and cuda-recurrent against the
#      f64 oracle, packed = each sequence alone bit for bit, isolation.
#   2. every CUDA gate on the packed and grouped fixtures (oracle, isolation,
#      packing, causality, batch-head, split-call): OUT_DIR/gates.json.
#   3. compute-sanitizer memcheck, racecheck, initcheck and synccheck on a packed
#      grouped backward gate of each CUDA backend.
# Writes OUT_DIR/summary.txt, OUT_DIR/gates.json and OUT_DIR/logs.tar.
set -uo pipefail
out=${1:?usage: scripts/gpu-varlen-cuda.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
bin=build/bin/deltaproof
logs=$(mktemp -d)
summary() { echo "$*" | tee -a "$out/summary.txt"; }
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"

s=$SECONDS
build/bin/kernels_tests --gtest_filter='PackedKernels.*' >"$logs/kernels_tests.txt" 2>&1
summary "kernels_tests PackedKernels.*: exit $? in $((SECONDS - s)) s: $(grep -E '^\[  (PASSED|FAILED) ' "$logs/kernels_tests.txt" | tr '\n' ' ')"

s=$SECONDS
$bin gate run '*.cuda-*.varlen*' '*.cuda-*.hv*' --report "$out/gates.json" >"$logs/gates.txt" 2>&1
summary "gate run (CUDA, packed and grouped): exit $? in $((SECONDS - s)) s: $(tail -n 2 "$logs/gates.txt" | head -n 1)"

cuda_gates=(kda.cuda-chunk.varlen-hv2-c32.bwd kda.cuda-recurrent.varlen-hv2-c32.bwd kda.cuda-tc.varlen-c64-k16.bwd)
for tool in memcheck racecheck initcheck synccheck; do
  s=$SECONDS
  compute-sanitizer --tool $tool --error-exitcode 3 $bin gate run "${cuda_gates[@]}" \
    >"$logs/sanitizer-$tool.txt" 2>&1
  summary "compute-sanitizer $tool on ${cuda_gates[*]}: exit $? in $((SECONDS - s)) s: $(grep -hE 'ERROR SUMMARY|gates:' "$logs/sanitizer-$tool.txt" | tr '\n' ' ')"
done
tar -C "$logs" -cf "$out/logs.tar" .
