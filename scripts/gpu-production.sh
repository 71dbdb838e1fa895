#!/usr/bin/env bash
# scripts/gpu-production.sh OUT_DIR — issue 13's production shape as a gate, on
# a machine with an NVIDIA GPU. Needs build/bin/deltaproof (built elsewhere
# with the CUDA backends and carried over); for step 4, python3 with torch,
# triton and safetensors and FLA's `fla` package on PYTHONPATH (e.g. .fla/).
#   1. `deltaproof gen --production --out production`: gdn2 and kda, bf16
#      inputs, B4 T4096 H16 K=V=128 and B1 T32768 H1 K=V=128, each computed in
#      f64 on the GPU (oracle/reference64) and checked against quad on
#      sampled sequences, by central differences and the Taylor remainder of
#      the reference's own function, and for determinism
#      (oracle/external.hpp). The fixtures (4-8 GB each) stay on the machine;
#      their self-checks come back in production-manifest.json.
#   2. `deltaproof gate run --fixtures production` for cuda-tc (class bf16:
#      the noise of its ensemble on each fixture sets the bars) and cuda-chunk
#      (class f32), fwd and bwd.
#   3. FLA's chunk_gdn2 and chunk_kda (examples/fla_candidate.py --dtype bf16
#      --first-config: every autotuner cut to its first config, same math) on
#      each fixture, then `deltaproof gate check --precision bf16`.
# PRODUCTION_NOISE_IN (a folder of noise models an earlier call brought back)
# seeds production/noise; the models measured here come back in OUT_DIR/noise.
# PRODUCTION_STEPS (default "1 2 3") picks the steps and their order ("2:B"
# is step 2 for backend B alone); PRODUCTION_GATES (default "cuda-tc
# cuda-chunk") the backends of step 2; PRODUCTION_ONLY (default all)
# a glob of the fixtures (gen --only), e.g. '*t32768*'. Step 2 gates the bwd
# phase (o, ht and every gradient). The noise models of the bf16 bars are kept
# in production/noise (--noise-cache): FLA's check on a fixture reuses
# cuda-tc's. Writes into OUT_DIR:
# production-manifest.json, gates-<backend>.json, fla-<fixture>.json,
# alpha-fla-<fixture>.txt (scripts/alpha_contributions.py on each head FLA's
# check found biased), summary.txt and logs.tar.
# Triage of a biased head: "3:f32" or "3:tf32" runs step 3 in that class
# (fla-<fixture>-<class>.json); "4:BACKEND" runs BACKEND on each fixture; both
# analyse PRODUCTION_TRIAGE's heads (e.g. "db:1,15 db:2,1") with
# scripts/alpha_contributions.py into alpha-*.txt.
set -uo pipefail
out=${1:?usage: scripts/gpu-production.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
bin=build/bin/deltaproof
steps=${PRODUCTION_STEPS:-1 2 3}
backends=${PRODUCTION_GATES:-cuda-tc cuda-chunk}
[[ -d .fla/fla ]] && export PYTHONPATH=$PWD/.fla${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
logs=production-logs
mkdir -p "$logs"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
timed() {  # label command...: runs it, logs to $logs/label.txt, one summary line
  local label=$1 s=$SECONDS rc
  shift
  "$@" >"$logs/$label.txt" 2>&1
  rc=$?
  summary "$label: exit $rc in $((SECONDS - s)) s"
  return $rc
}

[[ -x $bin ]] || { summary "no $bin: build it elsewhere and carry build/bin"; exit 2; }
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"

gen() {
  timed gen-production $bin gen --production --only "${PRODUCTION_ONLY:-*}" --out production \
    --overwrite
  cp production/manifest.json "$out/production-manifest.json" 2>/dev/null
  tail -n 60 "$logs/gen-production.txt"
}

mkdir -p production/noise
[[ -n ${PRODUCTION_NOISE_IN:-} ]] && cp "$PRODUCTION_NOISE_IN"/*.json production/noise/ 2>/dev/null
keep_noise() { mkdir -p "$out/noise" && cp production/noise/*.json "$out/noise/" 2>/dev/null; }

gates() {  # backend
  timed gates-$1 $bin gate run --fixtures production "*.$1.*.bwd" \
    --noise-cache production/noise --report "$out/gates-$1.json"
  tail -n 12 "$logs/gates-$1.txt"
  keep_noise
}

biased_heads() {  # report.json: "term b,h" for each red term whose most biased group is a head
  [[ -f $1 ]] && python3 -c '
import json, re, sys
for gate in json.load(open(sys.argv[1]))["gates"]:
    for t in gate["terms"]:
        where = (t.get("noise") or {}).get("bias_where", "")
        if t["status"] == "fail" and where.startswith("head"):
            print(t["term"], ",".join(re.findall(r"\d+", where)))' "$1"
}

alpha() {  # fixture candidate report out: scripts/alpha_contributions.py on each head the
  # check found biased and on each of PRODUCTION_TRIAGE's ("db:1,15 dh0:0,3")
  { biased_heads "$3"; for t in ${PRODUCTION_TRIAGE:-}; do echo "${t%%:*} ${t#*:}"; done; } |
    while read -r term head; do
      python3 scripts/alpha_contributions.py "$1" "$2" --term "$term" >>"$4" 2>&1
      python3 scripts/alpha_contributions.py "$1" "$2" --term "$term" --head "$head" --top 16 \
        >>"$4" 2>&1
    done
}

fla() {  # class: bf16 (default), f32 or tf32
  local class=${1:-bf16} dtype=bf16 tf32=() suffix=
  [[ $class != bf16 ]] && dtype=f32 suffix=-$class
  [[ $class == tf32 ]] && tf32=(--allow-tf32)
  for fixture in production/*/*.safetensors; do
    op=$(basename "$(dirname "$fixture")")
    name=$op-$(basename "$fixture" .safetensors)$suffix
    timed fla-$name python3 examples/fla_candidate.py "$fixture" --dtype $dtype "${tf32[@]}" \
      --first-config --out "$logs/$name.candidate.safetensors" &&
      timed check-fla-$name $bin gate check --fixture "$fixture" \
        --candidate "$logs/$name.candidate.safetensors" --precision "$class" --phase bwd \
        --noise-cache production/noise --report "$out/fla-$name.json"
    tail -n 14 "$logs/check-fla-$name.txt" 2>/dev/null
    alpha "$fixture" "$logs/$name.candidate.safetensors" "$out/fla-$name.json" \
      "$out/alpha-fla-$name.txt"
    rm -f "$logs/$name.candidate.safetensors"
  done
}

triage() {  # backend: its candidate on each fixture, and PRODUCTION_TRIAGE's heads
  for fixture in production/*/*.safetensors; do
    name=$(basename "$(dirname "$fixture")")-$(basename "$fixture" .safetensors)
    timed run-$1-$name $bin run --backend "$1" --fixture "$fixture" \
      --out "$logs/$name.$1.safetensors" &&
      alpha "$fixture" "$logs/$name.$1.safetensors" /dev/null "$out/alpha-$1-$name.txt"
    rm -f "$logs/$name.$1.safetensors"
  done
}

# the steps in the order given
for step in $steps; do
  case $step in
    1) gen ;;
    2) for backend in $backends; do gates "$backend"; done ;;
    2:*) gates "${step#2:}" ;;
    3) fla ;;
    3:*) fla "${step#3:}" ;;
    4:*) triage "${step#4:}" ;;
  esac
done

tar -cf "$out/logs.tar" "$logs"
