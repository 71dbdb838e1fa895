#!/usr/bin/env bash
# scripts/gpu-tc.sh OUT_DIR — cuda-tc on a machine with an NVIDIA GPU: its gates,
# its class check at K=V=128, and the sanitizers, forward and backward. Needs build/bin/deltaproof
# (built elsewhere with nvcc and carried over); with build-falsify/bin/deltaproof
# present, also shows the gates red under each cuda-tc fault point.
#   1. `gate run '*.cuda-tc.*'`: the committed chunk-64 fixtures, forward and
#      backward, at the bf16 class's noise-calibrated bars; causality at chunk 64.
#   2. `gen` K=V=128 bf16 fixtures (T 1000: a 40-row tail; default and stress
#      regimes; gdn2, kda, gdn), `run --backend cuda-tc --phase bwd` on each and
#      `gate check --precision bf16 --phase bwd`.
#   3. compute-sanitizer memcheck, racecheck, initcheck and synccheck of
#      `run --backend cuda-tc --phase bwd` on gdn2/t200-c64 and on a K=V=128 fixture.
#   4. (falsify build) each fault point of cuda-tc switched on: its gate red.
#   5. the GPU test binaries, where built: cuda_tc_tests (cuda-tc forward and
#      backward on seven odd shapes) and reference64_tests (the f64 reference
#      against the f64 and quad oracles, and `gen --reference gpu-f64`'s
#      self-checks on it).
#   6. (build-sync-missing-barrier-tc, where built) racecheck of the backward
#      on two fixtures (the race must be reported: exit 9) and its bwd gates.
# Writes into OUT_DIR: gates.json, check-*.json, summary.txt, logs.tar.
# TC_BUDGET_S (default 560) bounds the whole run; TC_STEPS (default "1 2 3 4 5 6")
# picks the steps.
set -uo pipefail
out=${1:?usage: scripts/gpu-tc.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
bin=build/bin/deltaproof
budget=${TC_BUDGET_S:-560}
work=tc-work
rm -rf "$work" && mkdir -p "$work/logs" "$work/fixtures"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
left() { echo $((budget - SECONDS)); }
step() {  # step NAME COMMAND...: runs it, logs it, notes its exit code and time
  local name=$1 s=$SECONDS rc
  shift
  timeout "$(($(left) > 30 ? $(left) - 20 : 10))" "$@" >"$work/logs/$name.txt" 2>&1
  rc=$?
  summary "$name: exit $rc in $((SECONDS - s)) s"
  return $rc
}

[[ -x $bin ]] || { summary "no $bin: build it elsewhere and carry build/bin"; exit 2; }
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"

steps=${TC_STEPS:-1 2 3 4 5 6}
want() { [[ " $steps " == *" $1 "* ]]; }

# 1. the registered gates
want 1 && step gates $bin gate run '*.cuda-tc.*' --report "$out/gates.json"
want 1 && tail -n 4 "$work/logs/gates.txt" | tee -a "$out/summary.txt"

# 2. K=V=128, bf16, a partial last chunk
specs=("gdn2 default" "kda default" "gdn default" "gdn2 stress")
want 2 || specs=()
pids=()
for spec in "${specs[@]}"; do
  set -- $spec
  name=$1-t1000-$2
  step "gen-$name" $bin gen --op "$1" --B 1 --T 1000 --H 2 --K 128 --V 128 --chunk 64 \
    --regime "$2" --dtype bf16 --seed 0 --threads 4 --overwrite \
    --out "$work/fixtures/$name.safetensors" &
  pids+=($!)
done
wait "${pids[@]}"
for spec in "${specs[@]}"; do
  set -- $spec
  name=$1-t1000-$2
  f=$work/fixtures/$name.safetensors
  [[ -f $f ]] || continue
  step "run-$name" $bin run --backend cuda-tc --phase bwd --fixture "$f" \
    --out "$work/$name.candidate.safetensors"
  step "check-$name" $bin gate check --fixture "$f" --candidate "$work/$name.candidate.safetensors" \
    --precision bf16 --phase bwd --report "$out/check-$name.json"
  grep -E "PASS|FAIL|verdict" "$work/logs/check-$name.txt" | tail -n 2 | tee -a "$out/summary.txt"
done

# 3. sanitizers
if ! want 3; then
  :
elif command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck initcheck synccheck; do
    for f in fixtures/gdn2/t200-c64.safetensors "$work/fixtures/kda-t1000-default.safetensors"; do
      [[ -f $f ]] || continue
      step "sanitizer-$tool-$(basename "$f" .safetensors)" compute-sanitizer --tool "$tool" \
        --error-exitcode 9 $bin run --backend cuda-tc --phase bwd --fixture "$f" \
        --out "$work/sanitized.safetensors"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$work/logs/sanitizer-$tool-$(basename "$f" .safetensors).txt" |
        tee -a "$out/summary.txt"
    done
  done
else
  summary "compute-sanitizer not found"
fi

# 4. each cuda-tc fault point, in the falsify build: the gate that must see it
fbin=build-falsify/bin/deltaproof
if want 4 && [[ -x $fbin ]]; then
  for fault in state-not-carried double-exp-chunk-decay cumulative-decay-off-by-one h0-ignored \
    partial-chunk-reads-past-t; do
    # a mild fixture (g near 0) keeps h0 and the carried state alive to the
    # last chunk; default-regime decay wipes them out within a chunk of 64
    step "fault-$fault" $fbin gate run 'gdn2.cuda-tc.t200-c64.fwd' 'kda.cuda-tc.t192-c64.fwd' \
      'kda.cuda-tc.t112-c64-k8-mild.fwd' 'gdn.cuda-tc.t192-c64-k8-mild.fwd' \
      --fault "$fault" --report "$work/fault-$fault.json"
    grep -E "passed|failed|red|green" "$work/logs/fault-$fault.txt" | tail -n 1 | tee -a "$out/summary.txt"
  done
  # the backward's: through the gradients
  for fault in dht-ignored ds-not-handed-back dh0-not-written dg-sign-flipped; do
    step "fault-$fault" $fbin gate run 'gdn2.cuda-tc.t200-c64.bwd' 'kda.cuda-tc.t192-c64.bwd' \
      'kda.cuda-tc.t112-c64-k8-mild.bwd' 'gdn.cuda-tc.t192-c64-k8-mild.bwd' \
      --fault "$fault" --report "$work/fault-$fault.json"
    grep -E "passed|failed|red|green" "$work/logs/fault-$fault.txt" | tail -n 1 | tee -a "$out/summary.txt"
  done
fi

# 6. the missing-barrier-tc build (a sync fault is its own build): racecheck
#    must report the race on the backward, and the numeric gates are reported
sbin=build-sync-missing-barrier-tc/bin/deltaproof
if want 6 && [[ -x $sbin ]] && command -v compute-sanitizer >/dev/null; then
  for f in fixtures/gdn2/t200-c64.safetensors fixtures/kda/t192-c64.safetensors; do
    name=$(basename "$(dirname "$f")")-$(basename "$f" .safetensors)
    step "sync-racecheck-$name" compute-sanitizer --tool racecheck --error-exitcode 9 \
      $sbin run --backend cuda-tc --phase bwd --fixture "$f" --out "$work/raced.safetensors"
    grep -E "RACECHECK SUMMARY" "$work/logs/sync-racecheck-$name.txt" | tee -a "$out/summary.txt"
  done
  step sync-gates $sbin gate run '*.cuda-tc.*.bwd' --report "$work/sync-gates.json"
  tail -n 2 "$work/logs/sync-gates.txt" | tee -a "$out/summary.txt"
fi

# 5. the GPU test binaries
if want 5; then
  for tests in cuda_tc_tests reference64_tests; do
    [[ -x build/bin/$tests ]] || continue
    step "$tests" build/bin/$tests
    grep -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$work/logs/$tests.txt" |
      sed "s/^/$tests: /" | tee -a "$out/summary.txt"
  done
fi

tar -cf "$out/logs.tar" -C "$work" logs $(cd "$work" && ls fault-*.json sync-*.json 2>/dev/null)
summary "total: $SECONDS s"
