#!/usr/bin/env bash
# scripts/gpu-fla-varlen.sh OUT_DIR — FLA's Triton kernels on packed sequences
# (cu_seqlens) and grouped value heads (HV > H), gated in f32, tf32 and bf16
# (issue 14, docs/VARLEN.md). On a machine with an NVIDIA GPU; needs
# build/bin/deltaproof (built elsewhere and carried over), python3 with torch,
# triton and safetensors, and FLA's `fla` package in .fla/ or installed.
#   1. `deltaproof gen` (in parallel) into fla-varlen-fixtures/, K = V = 128,
#      chunk 64, H 2, seed 0, dtype f32 and bf16, four shapes:
#        gdn2-varlen     cu_seqlens 0,1,32,96,161,289,548: sequences of 1, 31, 64,
#                        65, 128 and 259 tokens (1 token, under a chunk, a chunk, a
#                        chunk plus one, two chunks, four chunks and a tail)
#        kda-varlen      the same packing
#        kda-hv2         HV 4 (value head hv on key head hv / 2), B 1, T 256
#        kda-varlen-hv2  both
#      FLA's chunk_gdn2 has no grouped value heads (it asserts v's heads equal q's).
#   2. examples/fla_candidate.py --first-config on each: class f32 and (with
#      --allow-tf32) tf32 on the f32 fixture, bf16 on the bf16 one; four shapes at
#      once per class.
#   3. `deltaproof gate check --precision CLASS` on each (exit 1, red, is a result).
# Writes OUT_DIR/reports.tar (reports/<name>.json, logs/) and OUT_DIR/summary.txt.
# FLA_BUDGET_S (default 480) bounds the whole run.
set -uo pipefail
out=${1:?usage: scripts/gpu-fla-varlen.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
bin=build/bin/deltaproof
budget=${FLA_BUDGET_S:-480}
[[ -d .fla/fla ]] && export PYTHONPATH=$PWD/.fla${PYTHONPATH:+:$PYTHONPATH}
work=fla-varlen-work
fixtures=fla-varlen-fixtures
rm -rf "$work" && mkdir -p "$work/reports" "$work/logs" "$fixtures"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
left() { echo $((budget - SECONDS)); }

[[ -x $bin ]] || { summary "no $bin: build it elsewhere and carry build/bin"; exit 2; }
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
summary "python: $(python3 -c 'import sys, torch, triton, safetensors, fla; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "fla", fla.__version__)' 2>&1 | tail -n 1)"

cu=0,1,32,96,161,289,548
declare -A shape=(
  [gdn2-varlen]="--op gdn2 --cu-seqlens $cu"
  [kda-varlen]="--op kda --cu-seqlens $cu"
  [kda-hv2]="--op kda --HV 4 --T 256"
  [kda-varlen-hv2]="--op kda --HV 4 --cu-seqlens $cu"
)
names=(gdn2-varlen kda-varlen kda-hv2 kda-varlen-hv2)

# 1. Fixtures, all eight at once (two threads each).
start=$SECONDS
for name in "${names[@]}"; do
  for dtype in f32 bf16; do
    ( s=$SECONDS
      # shellcheck disable=SC2086
      timeout $(($(left) - 200)) $bin gen ${shape[$name]} --B 1 --H 2 --K 128 --V 128 --chunk 64 \
        --regime default --dtype $dtype --seed 0 --threads 2 --overwrite \
        --out "$fixtures/$name-$dtype.safetensors" >"$work/logs/gen-$name-$dtype.txt" 2>&1
      summary "gen $name-$dtype: exit $? in $((SECONDS - s)) s" ) &
  done
done
wait
summary "gen: all in $((SECONDS - start)) s"

# 2. Candidates, a class at a time (the first compiles the kernels into Triton's cache).
for class in f32 tf32 bf16; do
  start=$SECONDS
  for name in "${names[@]}"; do
    case $class in
      f32) fixture=$name-f32 flags=() ;;
      tf32) fixture=$name-f32 flags=(--allow-tf32) ;;
      bf16) fixture=$name-bf16 flags=(--dtype bf16) ;;
    esac
    ( s=$SECONDS
      [[ -f $fixtures/$fixture.safetensors ]] || { summary "fla $name-$class: no fixture"; exit; }
      timeout $(($(left) / 2)) python3 examples/fla_candidate.py "$fixtures/$fixture.safetensors" \
        --first-config "${flags[@]}" --out "$work/$name-$class.candidate.safetensors" \
        >"$work/logs/fla-$name-$class.txt" 2>&1
      summary "fla $name-$class: exit $? in $((SECONDS - s)) s ($(grep -h '^first call' "$work/logs/fla-$name-$class.txt" || tail -n 1 "$work/logs/fla-$name-$class.txt"))" ) &
  done
  wait
  summary "fla $class: four in $((SECONDS - start)) s"
done

# 3. Gate checks.
for name in "${names[@]}"; do
  for class in f32 tf32 bf16; do
    fixture=$fixtures/$name-$([[ $class == bf16 ]] && echo bf16 || echo f32).safetensors
    c=$work/$name-$class.candidate.safetensors
    [[ -f $c ]] || { summary "gate check $name-$class: no candidate"; continue; }
    s=$SECONDS
    timeout 120 $bin gate check --fixture "$fixture" --candidate "$c" --precision $class \
      --report "$work/reports/$name-$class.json" >"$work/logs/gate-$name-$class.txt" 2>&1
    summary "gate check $name-$class: exit $? in $((SECONDS - s)) s: $(grep -hE '^(PASS|FAIL|ERROR|SKIP)' "$work/logs/gate-$name-$class.txt" || tail -n 1 "$work/logs/gate-$name-$class.txt")"
  done
done
tar -C "$work" -cf "$out/reports.tar" reports logs
summary "whole run $SECONDS s"
