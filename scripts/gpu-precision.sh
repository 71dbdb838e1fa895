#!/usr/bin/env bash
# scripts/gpu-precision.sh OUT_DIR — cuda-chunk under the tf32 and bf16
# contracts (docs/PRECISION.md), on a machine with an NVIDIA GPU: the CUDA twin
# as a candidate of each class, its catalog faults switched on under the
# contract, and the f32 CUDA gates to show the f32 path unchanged. Needs
# build/bin/deltaproof and build-falsify/bin/deltaproof (CUDA, sm_90) and
# build/bin/gates_tests, built elsewhere and carried over (DP, DPF, GATES_TESTS
# override the paths).
#   1. `deltaproof gen` (in parallel) of the fixtures scripts/test.sh runs the
#      CPU campaign on: gdn2 and kda at T256, gdn at T200 (a partial last
#      chunk), B1 H2 K=V=128 chunk 64, seed 0, dtype bf16 and f32.
#   2. gates_tests -R Contract: the GPU branch of
#      Contract.CudaChunkTakesDeterministicContractsAndCudaRecurrentNone.
#   3. `falsify precision --backend cuda-chunk` at bf16 (bf16 fixtures) and
#      tf32 (f32 fixtures): cuda-chunk under the contract green, every graded
#      fault of the class's size red by its term, every cuda-chunk catalog
#      fault red (but global-scratch-unwritten, initcheck's); then the same
#      on every committed fixture with --graded-not-required.
#   4. `run --backend cuda-chunk --precision C` and `gate check --precision C`
#      on each fixture of step 1 (the per-term table: rel, bar, margin, alpha).
#   5. `gate run` of every f32 CUDA gate, --repeat 2 (bitwise the same).
#   6. compute-sanitizer memcheck, initcheck, racecheck, synccheck on
#      cuda-chunk under the bf16 contract (a partial last chunk, chunk 16).
# Writes into OUT_DIR: results.tar (reports/*.json and logs/*.txt) and
# summary.txt (one line per step: what ran, its exit code and wall time). A
# red gate or campaign is a result (its exit code in summary.txt), not a
# failure of this script.
set -uo pipefail
out=${1:?usage: scripts/gpu-precision.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
dp=${DP:-build/bin/deltaproof}
dpf=${DPF:-build-falsify/bin/deltaproof}
gates_tests=${GATES_TESTS:-build/bin/gates_tests}
work=gpu-precision-work
rm -rf "$work" && mkdir -p "$work/reports" "$work/logs" "$work/fixtures"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
# step NAME CMD...: runs CMD into logs/NAME.txt, one summary line
step() {
  local name=$1 s=$SECONDS
  shift
  "$@" >"$work/logs/$name.txt" 2>&1
  summary "$name: exit $? in $((SECONDS - s)) s"
}

for f in "$dp" "$dpf" "$gates_tests"; do
  [[ -x $f ]] || { summary "no $f: build it elsewhere and carry it"; exit 2; }
done
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
summary "commit: ${DELTAPROOF_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"

# 1. fixtures
names=(gdn2-t256 kda-t256 gdn-t200)
for name in "${names[@]}"; do
  for dtype in bf16 f32; do
    step "gen-$name-$dtype" "$dp" gen --op "${name%-t*}" --B 1 --T "${name#*-t}" --H 2 --K 128 \
      --V 128 --chunk 64 --dtype "$dtype" --seed 0 --threads 2 \
      --out "$work/fixtures/$name-$dtype.safetensors" &
  done
done
wait

# 2. the contract test on the GPU
step gates-tests-contract "$gates_tests" --gtest_filter='Contract.*'

# 3. campaigns with cuda-chunk as the twin
for class in bf16 tf32; do
  dtype=$([[ $class == bf16 ]] && echo bf16 || echo f32)
  step "campaign-cuda-$class" "$dpf" falsify precision --backend cuda-chunk --precision "$class" \
    $(for name in "${names[@]}"; do echo --fixture "$work/fixtures/$name-$dtype.safetensors"; done) \
    --report "$work/reports/campaign-cuda-$class.json"
  step "campaign-cuda-$class-committed" "$dpf" falsify precision --backend cuda-chunk \
    --precision "$class" --graded-not-required \
    $(for f in fixtures/*/*.safetensors; do echo --fixture "$f"; done) \
    --report "$work/reports/campaign-cuda-$class-committed.json"
done

# 4. the twin's gate checks, term by term
for class in bf16 tf32; do
  dtype=$([[ $class == bf16 ]] && echo bf16 || echo f32)
  for name in "${names[@]}"; do
    fixture=$work/fixtures/$name-$dtype.safetensors
    candidate=$work/$name-$class.candidate.safetensors
    step "run-cuda-$name-$class" "$dp" run --backend cuda-chunk --precision "$class" \
      --fixture "$fixture" --out "$candidate"
    step "check-cuda-$name-$class" "$dp" gate check --precision "$class" --fixture "$fixture" \
      --candidate "$candidate" --report "$work/reports/check-cuda-$name-$class.json"
  done
done

# 5. the f32 CUDA gates
step gates-cuda-f32 "$dp" gate run 'gdn2.cuda-*' 'kda.cuda-*' 'gdn.cuda-*' --repeat 2 \
  --report "$work/reports/gates-cuda-f32.json"

# 6. the sanitizers on the contract path
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck initcheck racecheck synccheck; do
    step "sanitizer-$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 "$dp" run \
      --backend cuda-chunk --precision bf16 --fixture fixtures/gdn2/t40-c16.safetensors \
      --out "$work/sanitizer-$tool.safetensors"
  done
else
  summary "compute-sanitizer: not found"
fi

tar -cf "$out/results.tar" -C "$work" reports logs
summary "packed: results.tar ($(du -h "$out/results.tar" | cut -f1))"
