#!/usr/bin/env bash
# scripts/gpu-fla.sh OUT_DIR — FLA's Triton kernels as deltaproof candidates, on
# a machine with an NVIDIA GPU, packed so that they can come back and be gated
# again elsewhere (on a CPU). Needs build/bin/deltaproof (built elsewhere and
# carried over), python3 with torch, triton and safetensors, and FLA's `fla`
# package on PYTHONPATH (e.g. a copy of its fla/ folder in .fla/).
#   1. `deltaproof gen` (in parallel) into fla-fixtures/: op kda and gdn2, T 256
#      and 1024, B 1 H 2 K 128 V 128 chunk 64, regime default, seed 0, dtype
#      f32 and bf16 (8 fixtures; deterministic: the same command makes the same
#      bytes anywhere, so they do not travel back).
#   2. examples/fla_candidate.py --first-config on each: the f32 fixtures as
#      class f32 and, with --allow-tf32, class tf32; the bf16 fixtures with
#      --dtype bf16 (class bf16): 12 candidates <op>-t<T>-<class>.candidate.safetensors.
#      The T256 ones first, all six at once (they compile the kernels into
#      Triton's cache), then the T1024 ones, all six at once.
#   3. `deltaproof gate check --precision CLASS` on each candidate (exit 1, red,
#      is a result, not a failure of this script).
# Writes into OUT_DIR (at most 8 files, each under 16 MiB, 64 MiB in all):
#   candidates-N.tar  the candidates, at most 15 MiB a tar, at most 6 tars; when
#                     they do not fit, the T1024 class-f32 ones are left out
#                     first (then the T1024 tf32 ones), and summary.txt says so
#   reports.tar       reports/<name>.json of each gate check, and logs/ (each
#                     step's output)
#   summary.txt       one line per step: what ran, its exit code and wall time
#   3b. `deltaproof falsify precision` at bf16 and tf32 with FLA's candidates:
#      FLA green in its class, every graded fault applied to its outputs red.
# FLA_PACK_CANDIDATES=0 leaves the candidates out of OUT_DIR.
# FLA_BUDGET_S (default 540) bounds the whole run: each step gets a timeout so
# that the packing still happens in time. FLA_T (default "256 1024") picks the
# sequence lengths (a quick trial: FLA_T=256).
set -uo pipefail
out=${1:?usage: scripts/gpu-fla.sh OUT_DIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
cd "$(dirname "$0")/.."
bin=build/bin/deltaproof
budget=${FLA_BUDGET_S:-540}
lengths=${FLA_T:-256 1024}
[[ -d .fla/fla ]] && export PYTHONPATH=$PWD/.fla${PYTHONPATH:+:$PYTHONPATH}
work=fla-work            # candidates, reports and logs before packing
fixtures=fla-fixtures
rm -rf "$work" && mkdir -p "$work/reports" "$work/logs" "$fixtures"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
left() { echo $((budget - SECONDS)); }  # seconds left of the budget

[[ -x $bin ]] || { summary "no $bin: build it elsewhere and carry build/bin"; exit 2; }
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
summary "python: $(python3 -c 'import sys, torch, triton, safetensors, fla; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "safetensors", safetensors.__version__, "fla", fla.__version__)' 2>&1 | tail -n 1)"

# 1. Fixtures, all eight at once (16 cores: two threads each).
start=$SECONDS
pids=()
for op in kda gdn2; do
  for T in $lengths; do
    for dtype in f32 bf16; do
      name=$op-t$T-$dtype
      ( s=$SECONDS
        timeout $(($(left) - 120)) $bin gen --op $op --B 1 --T $T --H 2 --K 128 --V 128 --chunk 64 \
          --regime default --dtype $dtype --seed 0 --threads 2 --overwrite \
          --out "$fixtures/$name.safetensors" >"$work/logs/gen-$name.txt" 2>&1
        summary "gen $name: exit $? in $((SECONDS - s)) s" ) &
      pids+=($!)
    done
  done
done
wait "${pids[@]}"
summary "gen: all ${#pids[@]} in $((SECONDS - start)) s"

# 2. Candidates: the T256 six at once, then the T1024 six at once.
candidate() {  # op T class
  local op=$1 T=$2 class=$3 fixture name s flags=()
  name=$op-t$T-$class
  case $class in
    f32) fixture=$op-t$T-f32 ;;
    tf32) fixture=$op-t$T-f32 flags=(--allow-tf32) ;;
    bf16) fixture=$op-t$T-bf16 flags=(--dtype bf16) ;;
  esac
  s=$SECONDS
  if [[ ! -f $fixtures/$fixture.safetensors ]]; then
    summary "fla $name: skipped (no fixture $fixture)"
    return
  fi
  timeout "$4" python3 examples/fla_candidate.py "$fixtures/$fixture.safetensors" --first-config \
    "${flags[@]}" --out "$work/$name.candidate.safetensors" >"$work/logs/fla-$name.txt" 2>&1
  summary "fla $name: exit $? in $((SECONDS - s)) s ($(grep -h '^first call' "$work/logs/fla-$name.txt" || tail -n 1 "$work/logs/fla-$name.txt"))"
}
for T in $lengths; do
  start=$SECONDS
  limit=$(( T == 256 ? $(left) * 2 / 3 - 40 : $(left) - 60 ))
  pids=()
  for op in kda gdn2; do
    for class in f32 tf32 bf16; do
      candidate $op $T $class $limit &
      pids+=($!)
    done
  done
  wait "${pids[@]}"
  summary "fla T$T: six in $((SECONDS - start)) s (timeout $limit s each)"
done

# 3. Gate checks (CPU).
for op in kda gdn2; do
  for T in $lengths; do
    for class in f32 tf32 bf16; do
      name=$op-t$T-$class
      fixture=$fixtures/$op-t$T-$([[ $class == bf16 ]] && echo bf16 || echo f32).safetensors
      [[ -f $work/$name.candidate.safetensors ]] || { summary "gate check $name: no candidate"; continue; }
      s=$SECONDS
      timeout 60 $bin gate check --fixture "$fixture" --candidate "$work/$name.candidate.safetensors" \
        --precision $class --report "$work/reports/$name.json" >"$work/logs/gate-$name.txt" 2>&1
      summary "gate check $name: exit $? in $((SECONDS - s)) s: $(grep -hE '^(PASS|FAIL|ERROR|SKIP)' "$work/logs/gate-$name.txt" || tail -n 1 "$work/logs/gate-$name.txt")"
    done
  done
done

# 3b. The precision campaigns with FLA's candidates (falsify/precision.hpp): FLA
# green in its class and every graded fault applied to its outputs red.
for class in bf16 tf32; do
  args=()
  for op in kda gdn2; do
    for T in $lengths; do
      c=$work/$op-t$T-$class.candidate.safetensors
      [[ -f $c ]] || continue
      args+=(--fixture "$fixtures/$op-t$T-$([[ $class == bf16 ]] && echo bf16 || echo f32).safetensors"
        --candidate "$c")
    done
  done
  ((${#args[@]})) || { summary "campaign $class: no candidate"; continue; }
  s=$SECONDS
  timeout $(($(left) - 60)) $bin falsify precision --precision $class "${args[@]}" \
    --report "$work/reports/campaign-$class.json" >"$work/logs/campaign-$class.txt" 2>&1
  summary "campaign $class: exit $? in $((SECONDS - s)) s: $(tail -n 1 "$work/logs/campaign-$class.txt")"
done

# 4. Pack: candidates into tars of at most 15 MiB (first fit, largest first),
# at most 6 of them and 62 MiB in all, beside reports.tar and summary.txt.
tar -C "$work" -cf "$out/reports.tar" reports logs
if [[ ${FLA_PACK_CANDIDATES:-1} == 0 ]]; then
  summary "pack: candidates left on the machine (FLA_PACK_CANDIDATES=0); whole run $SECONDS s"
  exit 0
fi
python3 - "$work" "$out" "$(stat -c %s "$out/reports.tar")" <<'EOF' | tee -a "$out/summary.txt"
import os, sys, tarfile
work, out, reports = sys.argv[1], sys.argv[2], int(sys.argv[3])
MiB = 1 << 20
cap, bins_max, total_max = 15 * MiB, 6, 62 * MiB - reports
files = sorted((f for f in os.listdir(work) if f.endswith(".candidate.safetensors")),
               key=lambda f: -os.path.getsize(os.path.join(work, f)))
size = lambda f: os.path.getsize(os.path.join(work, f)) + 2048  # tar header and padding
def pack(files):
    bins = []
    for f in files:
        for b in bins:
            if sum(map(size, b)) + size(f) <= cap - 10240:
                b.append(f)
                break
        else:
            bins.append([f])
    return bins
drop_order = [f"{op}-t1024-{c}.candidate.safetensors" for c in ("f32", "tf32") for op in ("kda", "gdn2")]
dropped = []
while True:
    bins = pack(files)
    if len(bins) <= bins_max and sum(map(size, files)) <= total_max:
        break
    victim = next((f for f in drop_order if f in files), None) or files[0]
    files.remove(victim)
    dropped.append(victim)
for i, b in enumerate(bins, 1):
    with tarfile.open(os.path.join(out, f"candidates-{i}.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
        for f in sorted(b):
            t.add(os.path.join(work, f), arcname=f)
    print(f"candidates-{i}.tar: {' '.join(sorted(b))} "
          f"({os.path.getsize(os.path.join(out, f'candidates-{i}.tar')) / MiB:.1f} MiB)")
print(f"packed {len(files)} candidates in {len(bins)} tars"
      + (f"; left out (too large to come back): {' '.join(dropped)}" if dropped else ""))
EOF
summary "pack: exit $?; total $(du -b "$out" | cut -f1) bytes in $(ls "$out" | wc -l) files; whole run $SECONDS s"
