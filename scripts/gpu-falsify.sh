#!/usr/bin/env bash
# scripts/gpu-falsify.sh OUT_DIR — the falsification campaign of the CPU and CUDA
# backends (falsify/catalog.json) on a machine with an NVIDIA GPU:
#   falsify-gpu.json       the campaign's report (Stryker schemaVersion 2 +
#                           "deltaproof"): baselines both ways over every CUDA
#                           gate, each fault's status, killer, margin, and the
#                           racecheck / initcheck evidence the catalog asks for
#   falsify-gpu.txt        the campaign as printed
#   falsify-gpu-show.txt   `deltaproof report show --all-gates` of it
#   summary.txt             one line per step (appended)
# FALSIFY_BIN: a falsify build's deltaproof (default build-falsify/bin/deltaproof);
# SYNC_BIN_MISSING_BARRIER: the build with -DDELTAPROOF_SYNC_FAULT=missing-barrier-bk2
# (default build-sync-missing-barrier-bk2/bin/deltaproof; built when absent);
# SYNC_BIN_MISSING_BARRIER_TC: the missing-barrier-tc build (default
# build-sync-missing-barrier-tc/bin/deltaproof; given to the campaign, with
# --backend cuda-tc, where present).
# DELTAPROOF_GIT_COMMIT names the commit where the tree has no .git.
set -uo pipefail
out=${1:?usage: scripts/gpu-falsify.sh OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
falsify=${FALSIFY_BIN:-build-falsify/bin/deltaproof}
sync_bin=${SYNC_BIN_MISSING_BARRIER:-build-sync-missing-barrier-bk2/bin/deltaproof}
if [[ ! -x $falsify ]]; then
  cmake --preset falsify >/dev/null && cmake --build build-falsify -j "$(nproc)" --target deltaproof
fi
args=(--backend cpu-chunk --backend cpu-recurrent --backend cuda-chunk --backend cuda-recurrent --source . --report "$out/falsify-gpu.json")
[[ -x $sync_bin ]] && args+=(--sync-binary "missing-barrier-bk2=$sync_bin")
sync_tc=${SYNC_BIN_MISSING_BARRIER_TC:-build-sync-missing-barrier-tc/bin/deltaproof}
[[ -x $sync_tc ]] && args+=(--backend cuda-tc --sync-binary "missing-barrier-tc=$sync_tc")
"$falsify" falsify run "${args[@]}" >"$out/falsify-gpu.txt" 2>&1
summary "falsify run (CPU and CUDA backends): exit $? ($(grep -E 'faults ran' "$out/falsify-gpu.txt"))"
"$falsify" report show "$out/falsify-gpu.json" --all-gates >"$out/falsify-gpu-show.txt" 2>&1
