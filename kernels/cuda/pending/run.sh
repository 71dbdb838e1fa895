#!/bin/bash
# The device call for a pending cuda-tc patch, built by kernels/cuda/pending/build.sh into
# .carry/next (carry [".carry"], about 17 MB with FLA; move reports/gpu/*/ out of the working
# tree for the call, the tree's limit, and back after).
#   bash kernels/cuda/pending/run.sh [PART...]   (default: checks stages)
# Parts: checks (the red build; cuda_tc_tests; the stage tests; the cuda-tc gates;
# compute-sanitizer x4; each by default and under the forced variants), stages (tc_stages.py,
# main's library beside the patch's at B4 T4096, B1 T32768 and 16 packed sequences, then the
# patch's under each forced variant: DELTAPROOF_TC_INTER_LOOKAHEAD, _INTER_TILE, _PRODUCTS,
# _TOKENS), fla (tc_vs_fla.py at 1x32768, 4x4096
# and 16 packed sequences, FLA fully autotuned: its first calls take 7-9 minutes, so give it a
# call of its own). Everything lands in $OUT/out.tar.xz and $OUT/summary.txt: the device tool
# returns at most 8 files. Each step's timeout is cut to what is left of BUDGET seconds (default
# 540) so that the tarball is written before the call's limit.
cd "$(dirname "$0")/../../.."
o=/tmp/pending-out
mkdir -p $o
deadline=$((SECONDS + ${BUDGET:-540}))
v=.carry/next
(cd $v && for f in *.xz; do [[ -e $f ]] && xz -d -f $f; done; chmod +x deltaproof cuda_tc_*)
mkdir -p build/bin && cp $v/deltaproof build/bin/
PY=${PY:-/opt/torch/.venv/bin/python}
export PYTHONUNBUFFERED=1
s() { echo "$*" | tee -a $o/summary.txt; }
passed() { grep -E '^\[  PASSED|FAILED  \]' "$1" | head -3 | tr '\n' ' '; }
limited() {  # seconds command...: the command under a timeout no later than the deadline
  local want=$1 left=$((deadline - SECONDS))
  shift
  ((left < 5)) && { s "skipped (no time left): $*"; return 124; }
  timeout $((want < left ? want : left)) "$@"
}
s "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

checks() {
  if [[ -x $v/cuda_tc_tests_red ]]; then  # build.sh's RED patch: the variants test must fail
    limited 60 $v/cuda_tc_tests_red --gtest_filter='CudaTcStateVariants.*' > $o/tc_tests-red.txt 2>&1; s "RED build, CudaTcStateVariants (must fail) exit $?: $(passed $o/tc_tests-red.txt)"
  fi
  limited 120 $v/cuda_tc_tests > $o/tc_tests.txt 2>&1; s "cuda_tc_tests exit $?: $(passed $o/tc_tests.txt)"
  limited 60 $v/cuda_tc_stages_tests > $o/stages.txt 2>&1; s "stages exit $?: $(passed $o/stages.txt)"
  DELTAPROOF_TC_INTER_TILE=64 DELTAPROOF_TC_PRODUCTS=2 DELTAPROOF_TC_TOKENS=2 limited 60 $v/cuda_tc_stages_tests > $o/stages-variants.txt 2>&1; s "stages, fwd.inter tile 64, products in two launches, tokens in two blocks, exit $?: $(passed $o/stages-variants.txt)"
  limited 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $o/gates.json > $o/gates.txt 2>&1; s "gates exit $?: $(tail -n 2 $o/gates.txt | head -1)"
  DELTAPROOF_TC_INTER_TILE=64 DELTAPROOF_TC_PRODUCTS=2 DELTAPROOF_TC_TOKENS=2 limited 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $o/gates-variants.json > $o/gates-variants.txt 2>&1; s "gates, fwd.inter tile 64, products in two launches, tokens in two blocks, exit $?: $(tail -n 2 $o/gates-variants.txt | head -1)"
  for tool in memcheck racecheck initcheck synccheck; do
    for fixture in gdn2/t200-c64 kda/varlen-c64-k16; do
      for variant in DELTAPROOF_TC_PRODUCTS=1 "DELTAPROOF_TC_PRODUCTS=2 DELTAPROOF_TC_INTER_TILE=64 DELTAPROOF_TC_TOKENS=2"; do
        limited 60 env $variant compute-sanitizer --tool $tool --error-exitcode 9 build/bin/deltaproof run --backend cuda-tc --phase bwd --fixture fixtures/$fixture.safetensors --out /tmp/s.safetensors > /tmp/san.txt 2>&1
        s "sanitizer $tool $fixture $variant exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tr '\n' ' ')"
        cat /tmp/san.txt >> $o/sanitizers.txt
      done
    done
  done
}

stages() {
  for shape in "--B 4 --T 4096" "--B 1 --T 32768" "--varlen 16"; do
    tag=$(echo $shape | tr -d ' -')
    limited 90 $PY scripts/tc_stages.py --lib $v/libtc_main.so --lib $v/libtc_patch.so $shape --json $o/tc_stages_$tag.json > $o/tc_stages_$tag.txt 2>&1; s "tc_stages $tag exit $?"
    for variant in DELTAPROOF_TC_INTER_LOOKAHEAD=1 DELTAPROOF_TC_INTER_LOOKAHEAD=2 DELTAPROOF_TC_INTER_TILE=64 "DELTAPROOF_TC_PRODUCTS=2 DELTAPROOF_TC_TOKENS=2"; do  # products and tokens are stages of their own
      name=${tag}_$(echo $variant | sed 's/DELTAPROOF_TC_//g; s/[= ]/_/g' | tr A-Z a-z)
      limited 90 env $variant $PY scripts/tc_stages.py --lib $v/libtc_patch.so $shape --json $o/tc_stages_$name.json > $o/tc_stages_$name.txt 2>&1; s "tc_stages $tag $variant exit $?"
    done
  done
  grep -H "ms;" $o/tc_stages_*.txt >> $o/summary.txt
}

# FLA's autotuning (7-9 minutes of first calls at these shapes) is kept between sessions:
# Triton's autotune cache (TRITON_CACHE_AUTOTUNING=1) holds each kernel's configs and timings,
# and its *.autotune.json files come back as $OUT/fla-autotune-<GPU>.tar.xz; carried as
# .carry/fla-autotune-<GPU>.tar.xz, the next call on that GPU model reads FLA's choices from it
# and compiles only those (tc_vs_fla.py's method line says so).
fla() {
  mkdir -p .fla && tar -xJf .carry/fla.tar.xz -C .fla
  local gpu cache=/tmp/triton-cache
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' _)
  mkdir -p $cache
  if [[ -f .carry/fla-autotune-$gpu.tar.xz ]]; then
    tar -xJf .carry/fla-autotune-$gpu.tar.xz -C $cache && s "FLA's autotune results: .carry/fla-autotune-$gpu.tar.xz"
  fi
  TRITON_CACHE_AUTOTUNING=1 TRITON_CACHE_DIR=$cache PYTHONPATH=.fla limited 600 $PY scripts/tc_vs_fla.py --lib $v/libtc_patch.so --ops gdn2 kda --shapes 1x32768 4x4096 --varlen 16 --json $o/tc_vs_fla.json > $o/tc_vs_fla.txt 2>&1
  s "tc_vs_fla exit $?"
  grep -E "ratio|shape|first call" $o/tc_vs_fla.txt >> $o/summary.txt
  (cd $cache && find . -name '*.autotune.json' | tar -cJf "${OUT:?}/fla-autotune-$gpu.tar.xz" -T -)
}

for part in ${*:-checks stages}; do
  s "part $part"
  $part
done
cp $o/summary.txt "${OUT:?}/" && tar -cJf "$OUT/out.tar.xz" -C "$(dirname $o)" "$(basename $o)"
