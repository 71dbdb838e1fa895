#!/usr/bin/env bash
# scripts/gpu-gates.sh OUT_DIR — the CUDA gates on a machine with an NVIDIA
# GPU. Uses build/bin (built elsewhere with nvcc for sm_90 and carried over) or
# builds it when absent. Writes into OUT_DIR:
#   gates.json        every CUDA gate, --repeat 3 --replay 2 (bitwise across
#                     runs and processes)
#   gates.txt         the same, as printed
#   sanitizer-*.txt   compute-sanitizer memcheck, racecheck, initcheck and
#                     synccheck over one bwd run of each CUDA backend (every
#                     kernel launches in a bwd run)
#   summary.txt       one line per step: what ran and how it ended
# DELTAPROOF_GIT_COMMIT names the commit in the reports where the tree has no
# .git (a copied working tree).
set -uo pipefail
out=${1:?usage: scripts/gpu-gates.sh OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
bin=build/bin/deltaproof
if [[ ! -x $bin ]]; then
  cmake --preset release >/dev/null && cmake --build build -j "$(nproc)" --target deltaproof
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
summary() { echo "$*" | tee -a "$out/summary.txt"; }

$bin gate run 'gdn2.cuda-*' 'kda.cuda-*' 'gdn.cuda-*' --repeat 3 --replay 2 \
  --report "$out/gates.json" >"$out/gates.txt" 2>&1
summary "gates: exit $? ($(tail -n 2 "$out/gates.txt" | head -n 1))"

fixture=fixtures/gdn2/t200-c64.safetensors  # multi-chunk, partial last chunk, K=V=64
for backend in cuda-chunk cuda-recurrent; do
  for tool in memcheck racecheck initcheck synccheck; do
    log="$out/sanitizer-$backend-$tool.txt"
    compute-sanitizer --tool "$tool" --error-exitcode 9 \
      $bin run --backend "$backend" --fixture "$fixture" --out "/tmp/sanitized-$backend.safetensors" \
      >"$log" 2>&1
    summary "compute-sanitizer $tool $backend: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1))"
  done
done

# The falsification campaign of the CUDA backends: scripts/gpu-falsify.sh.
bash scripts/gpu-falsify.sh "$out"
