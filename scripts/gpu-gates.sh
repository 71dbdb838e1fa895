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

# Falsification of the CUDA kernels, where a falsify build is at hand
# (FALSIFY_BIN, default build-falsify/bin/deltaproof): each catalog fault alone
# against every bwd oracle gate of each CUDA backend; the fault is caught when
# at least one gate goes red. faults.json holds the worst term per fault.
falsify=${FALSIFY_BIN:-build-falsify/bin/deltaproof}
if [[ -x $falsify ]]; then
  for fault in $(grep -oE '^  *\{Fault::[a-z_0-9]+, "[a-z0-9-]+"' kernels/faults.cpp | grep -oE '"[a-z0-9-]+"' | tr -d '"'); do
    for backend in cuda-chunk cuda-recurrent; do
      $falsify gate run "*.$backend.*.bwd" --fault "$fault" \
        --report "$out/falsify-$backend-$fault.json" >/dev/null 2>&1
      summary "fault $fault on $backend: exit $?"
    done
  done
  python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "falsify-*.json"))):
    report = json.load(open(path))
    name = os.path.basename(path)[len("falsify-"):-len(".json")]
    backend = "-".join(name.split("-")[:2]); fault = "-".join(name.split("-")[2:])
    red = [g for g in report["gates"] if g["verdict"] == "fail"]
    worst = (0.0, "")
    smallest = (float("inf"), "")
    for g in red:
        for t in g["terms"]:
            if t["status"] == "fail":
                rel = float("inf") if t["rel"] is None else t["rel"]
                ratio = rel / t["bar"]
                if ratio > worst[0]: worst = (ratio, f'{g["name"]} {t["term"]} rel {rel:.3g}')
        gate_worst = max((float("inf") if t["rel"] is None else t["rel"]) for t in g["terms"] if t["status"] == "fail")
        if gate_worst < smallest[0]: smallest = (gate_worst, g["name"])
    print(f"{backend:15s} {fault:34s} red {len(red):2d}/{len(report['gates'])}  worst {worst[1]}  smallest-red {smallest[0]:.3g} {smallest[1]}")
    rows.append({"backend": backend, "fault": fault, "red": len(red), "gates": len(report["gates"]), "worst": worst[1], "smallest_red_rel": None if smallest[0] == float("inf") else smallest[0], "smallest_red_gate": smallest[1]})
json.dump(rows, open(os.path.join(out, "faults.json"), "w"), indent=1)
PY
fi

# The race the missing-barrier fault plants, as racecheck sees it.
if [[ -x $falsify ]]; then
  compute-sanitizer --tool racecheck --error-exitcode 9 \
    $falsify run --backend cuda-chunk --fixture "$fixture" --fault missing-barrier-bk2 \
    --out /tmp/racy.safetensors >"$out/sanitizer-cuda-chunk-racecheck-missing-barrier.txt" 2>&1
  summary "racecheck on the missing-barrier-bk2 fault: exit $? ($(grep -E 'RACECHECK SUMMARY' "$out/sanitizer-cuda-chunk-racecheck-missing-barrier.txt" | tail -n 1))"
fi
