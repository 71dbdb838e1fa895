#!/usr/bin/env bash
# scripts/gpu-verify.sh OUT_DIR PREVIOUS_DIR — on a machine with an NVIDIA GPU,
# after a change meant to leave the CUDA backends' behaviour as it was (or to
# change it in a declared way): the CUDA gates and the campaign, each compared
# with a previous GPU run's (reports/gpu/<commit>, its gates-cuda.json[.xz] and
# falsify-gpu.json[.xz]), each cuda-chunk stage against its CPU twin, and
# compute-sanitizer's four tools. Binaries: build/bin (deltaproof,
# cuda_stages_tests), build-falsify/bin (the same with the fault points) and
# build-sync-missing-barrier-bk2/bin/deltaproof, built elsewhere for sm_90 and
# carried. DELTAPROOF_GIT_COMMIT names the commit in the reports. Writes:
#   gates-cuda.json/.txt  every CUDA gate, --repeat 2 --replay 1
#   same.txt              scripts/same_report.py: every figure against PREVIOUS
#   diff.txt              deltaproof report diff PREVIOUS NOW (verdicts, rel ratios)
#   stages.txt            cuda_stages_tests (every stage's figures), and in the
#                         falsify build the fault that must turn bk1's dg red
#   falsify-gpu.*         scripts/gpu-falsify.sh; same-campaign.txt against PREVIOUS
#   sanitizers.txt        memcheck, racecheck, initcheck, synccheck of both CUDA
#                         backends on a gdn fixture (B2 H3: the dbeta fold) and of
#                         cuda_stages_tests (memcheck)
#   summary.txt           one line per step
set -uo pipefail
out=${1:?usage: scripts/gpu-verify.sh OUT_DIR PREVIOUS_DIR}
previous=${2:?usage: scripts/gpu-verify.sh OUT_DIR PREVIOUS_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
# a previous report, decompressed where it was kept as .xz
previous_json() {
  if [[ -f $previous/$1 ]]; then cat "$previous/$1"; else xz -dc "$previous/$1.xz"; fi
}
bin=build/bin/deltaproof
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

$bin gate run 'gdn2.cuda-*' 'kda.cuda-*' 'gdn.cuda-*' --repeat 2 --replay 1 \
  --report "$out/gates-cuda.json" >"$out/gates-cuda.txt" 2>&1
summary "gates: exit $? ($(tail -n 2 "$out/gates-cuda.txt" | head -n 1))"
previous_json gates-cuda.json >/tmp/previous-gates.json
python3 scripts/same_report.py /tmp/previous-gates.json "$out/gates-cuda.json" >"$out/same.txt" 2>&1
summary "same_report against $previous: $(tail -n 1 "$out/same.txt")"
$bin report diff /tmp/previous-gates.json "$out/gates-cuda.json" >"$out/diff.txt" 2>&1
summary "report diff against $previous: exit $? ($(tail -n 2 "$out/diff.txt" | tr '\n' ' '))"

{
  build/bin/cuda_stages_tests
  echo "exit $?"
  build-falsify/bin/cuda_stages_tests --gtest_filter='CudaStagesFalsify.*'
  echo "exit $?"
} >"$out/stages.txt" 2>&1
summary "cuda_stages_tests: $(grep -E '^exit|PASSED|FAILED' "$out/stages.txt" | tr '\n' ' ')"

FALSIFY_BIN=build-falsify/bin/deltaproof \
  SYNC_BIN_MISSING_BARRIER=build-sync-missing-barrier-bk2/bin/deltaproof \
  bash scripts/gpu-falsify.sh "$out" >/dev/null
previous_json falsify-gpu.json >/tmp/previous-falsify.json
python3 scripts/same_campaign.py /tmp/previous-falsify.json "$out/falsify-gpu.json" \
  >"$out/same-campaign.txt" 2>&1
summary "same_campaign against $previous: $(tail -n 1 "$out/same-campaign.txt")"

fixture=fixtures/gdn/t40-c16-b2h3.safetensors
for backend in cuda-chunk cuda-recurrent; do
  for tool in memcheck racecheck initcheck synccheck; do
    log=/tmp/sanitizer.txt
    compute-sanitizer --tool "$tool" --error-exitcode 9 $bin run --backend "$backend" \
      --fixture "$fixture" --out "/tmp/sanitized-$backend.safetensors" >"$log" 2>&1
    echo "$tool $backend $fixture: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1))" |
      tee -a "$out/sanitizers.txt"
  done
done
compute-sanitizer --tool memcheck --error-exitcode 9 build/bin/cuda_stages_tests >/tmp/sanitizer.txt 2>&1
echo "memcheck cuda_stages_tests: exit $? ($(grep -E 'ERROR SUMMARY' /tmp/sanitizer.txt | tail -n 1))" |
  tee -a "$out/sanitizers.txt"
summary "sanitizers: $(grep -c 'exit 0' "$out/sanitizers.txt") of $(wc -l <"$out/sanitizers.txt") exit 0"
