#!/bin/bash
# The device call for a cuda-tc change (a pending patch built by kernels/cuda/pending/build.sh,
# or a landed commit's binaries packed the same way) in .carry/next (carry [".carry"], about 25 MB
# with FLA; move reports/gpu/*/ out of the working tree for the call, the tree's limit, and back).
#   bash kernels/cuda/pending/run.sh [PART...]   (default: checks stages)
# FORCED (default "DELTAPROOF_TC_PRODUCTS=1 DELTAPROOF_TC_TOKENS=1", the paths the shape does not
# choose) is the environment of the forced runs; VARIANTS (default FORCED), environments separated
# by ';', those the stages part times libtc_patch.so under. FLA_ARGS: more arguments of
# tc_vs_fla.py (--o-f32 for a library without the C API's o_bf16); FLA_SHAPES its dense BxT
# shapes (default "1x32768 4x4096"; each costs FLA's autotune from cold), timed after the packed
# case in a process of their own; FLA_LIMIT the seconds each of the two may take (default 600);
# FLA_CASES which of the two run (default "varlen16 dense"). RED_TESTS: the suites of
# cuda_tc_tests the red build must fail, each run alone (default CudaTcStateVariants CudaTcBeta);
# RED_STAGES: the stage tests the red build's cuda_tc_stages_tests must fail (default
# CudaTcFwdOutput.*), under the environment RED_ENV (default none).
# Parts: checks (the red build; cuda_tc_tests; the stage tests; the cuda-tc gates;
# compute-sanitizer x4, SANITIZERS naming the tools (default all four; "" none); each by default
# and under FORCED), stages (tc_stages.py,
# libtc_main.so beside libtc_patch.so at B4 T4096, B1 T32768 and 16 packed sequences, then
# the two again under each of VARIANTS: main's library does not know a new switch, so that run
# is the patch's variant against main's arithmetic, in the same process), ncu (fwd.intra at B4 T4096 and fwd.inter at B1 T32768 line
# by line: SourceCounters and WarpStateStats with the SASS page; fwd.inter and bwd.bk2 at B1 T32768), fla (tc_vs_fla.py at
# 1x32768, 4x4096 and 16 packed sequences, FLA fully autotuned: its first calls take 7-9 minutes, so give it a
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
read -ra forced <<<"${FORCED:-DELTAPROOF_TC_PRODUCTS=1 DELTAPROOF_TC_TOKENS=1}"
export PYTHONUNBUFFERED=1
# each line also to $OUT at once, so that a call cut short still brings back what it saw
s() { echo "$*" | tee -a $o/summary.txt; cp $o/summary.txt "${OUT:?}/"; }
passed() { grep -E '^\[  PASSED|FAILED  \]' "$1" | head -3 | tr '\n' ' '; }
limited() {  # seconds command...: the command under a timeout no later than the deadline
  local want=$1 left=$((deadline - SECONDS))
  shift
  ((left < 5)) && { s "skipped (no time left): $*"; return 124; }
  timeout $((want < left ? want : left)) "$@"
}
s "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

part_checks() {
  if [[ -x $v/cuda_tc_tests_red ]]; then  # build.sh's RED patch: the variants test must fail
    for red in ${RED_TESTS:-CudaTcStateVariants CudaTcBeta}; do
      limited 60 $v/cuda_tc_tests_red --gtest_filter="$red.*" > $o/tc_tests-red-$red.txt 2>&1; s "RED build, $red (must fail) exit $?: $(passed $o/tc_tests-red-$red.txt)"
    done
  fi
  if [[ -x $v/cuda_tc_stages_tests_red ]]; then  # and its stage tests: RED_STAGES must fail
    limited 60 env ${RED_ENV:-} $v/cuda_tc_stages_tests_red --gtest_filter="${RED_STAGES:-CudaTcFwdOutput.*}" > $o/stages-red.txt 2>&1; s "RED build, ${RED_ENV:-} ${RED_STAGES:-CudaTcFwdOutput.*} (must fail) exit $?: $(passed $o/stages-red.txt)"
  fi
  limited 120 $v/cuda_tc_tests > $o/tc_tests.txt 2>&1; s "cuda_tc_tests exit $?: $(passed $o/tc_tests.txt)"
  limited 60 $v/cuda_tc_stages_tests > $o/stages.txt 2>&1; s "stages exit $?: $(passed $o/stages.txt)"
  limited 60 env "${forced[@]}" $v/cuda_tc_stages_tests > $o/stages-forced.txt 2>&1; s "stages, ${forced[*]}, exit $?: $(passed $o/stages-forced.txt)"
  limited 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $o/gates.json > $o/gates.txt 2>&1; s "gates exit $?: $(tail -n 2 $o/gates.txt | head -1)"
  limited 120 env "${forced[@]}" build/bin/deltaproof gate run '*.cuda-tc.*' --report $o/gates-forced.json > $o/gates-forced.txt 2>&1; s "gates, ${forced[*]}, exit $?: $(tail -n 2 $o/gates-forced.txt | head -1)"
  for tool in ${SANITIZERS-memcheck racecheck initcheck synccheck}; do
    for fixture in gdn2/t200-c64 kda/varlen-c64-k16; do
      for variant in "" "${forced[*]}"; do
        limited 60 env $variant compute-sanitizer --tool $tool --error-exitcode 9 build/bin/deltaproof run --backend cuda-tc --phase bwd --fixture fixtures/$fixture.safetensors --out /tmp/s.safetensors > /tmp/san.txt 2>&1
        s "sanitizer $tool $fixture ${variant:-default} exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tr '\n' ' ')"
        cat /tmp/san.txt >> $o/sanitizers.txt
      done
    done
  done
}

part_stages() {
  for shape in "--B 4 --T 4096" "--B 1 --T 32768" "--varlen 16"; do
    tag=$(echo $shape | tr -d ' -')
    limited 90 $PY scripts/tc_stages.py --lib $v/libtc_main.so --lib $v/libtc_patch.so $shape --json $o/tc_stages_$tag.json > $o/tc_stages_$tag.txt 2>&1; s "tc_stages $tag exit $?"
    IFS=';' read -ra variants <<<"${VARIANTS:-${forced[*]}}"
    for variant in "${variants[@]}"; do
      name=${tag}_$(echo $variant | sed 's/DELTAPROOF_TC_//g; s/[= ]/_/g' | tr A-Z a-z)
      limited 120 env $variant $PY scripts/tc_stages.py --lib $v/libtc_main.so --lib $v/libtc_patch.so $shape --json $o/tc_stages_$name.json > $o/tc_stages_$name.txt 2>&1; s "tc_stages $tag $variant exit $?"
    done
  done
  grep -H "ms;" $o/tc_stages_*.txt >> $o/summary.txt
}

part_ncu() {
  local sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
  local lines="--section SourceCounters --section WarpStateStats --import-source yes"
  ncu --version > $o/ncu-version.txt 2>&1
  limited 120 ncu --clock-control none $sections $lines -k regex:tc_fwd_intra --launch-count 1 -o $o/ncu_intra_b4t4096 $PY scripts/tc_stages.py --lib $v/libtc_patch.so --repeats 1 > $o/ncu_intra_b4t4096.log 2>&1; s "ncu fwd.intra B4 T4096 exit $?"
  ncu -i $o/ncu_intra_b4t4096.ncu-rep --csv --page details > $o/ncu_intra_b4t4096.csv 2>&1; s "ncu details exit $?"
  ncu -i $o/ncu_intra_b4t4096.ncu-rep --csv --page source --print-source sass > $o/ncu_intra_b4t4096_sass.csv 2>&1; s "ncu source page (sass) exit $?"
  ncu -i $o/ncu_intra_b4t4096.ncu-rep --csv --page source --print-source cuda,sass > $o/ncu_intra_b4t4096_cuda_sass.csv 2>&1; s "ncu source page (cuda,sass) exit $?"
  limited 120 ncu --clock-control none $sections $lines -k regex:tc_fwd_state --launch-count 1 -o $o/ncu_state_b1t32768 $PY scripts/tc_stages.py --lib $v/libtc_patch.so --B 1 --T 32768 --repeats 1 > $o/ncu_state_b1t32768.log 2>&1; s "ncu fwd.inter B1 T32768 (source) exit $?"
  ncu -i $o/ncu_state_b1t32768.ncu-rep --csv --page source --print-source cuda,sass > $o/ncu_state_b1t32768_cuda_sass.csv 2>&1; s "ncu fwd.inter source page (cuda,sass) exit $?"
  for kernel in tc_fwd_state tc_bwd_state; do
    limited 90 ncu --clock-control none $sections --csv --page details -k regex:$kernel --launch-count 1 $PY scripts/tc_stages.py --lib $v/libtc_patch.so --B 1 --T 32768 --repeats 1 > $o/ncu_${kernel}_b1t32768.csv 2> $o/ncu_${kernel}_b1t32768.err; s "ncu $kernel B1 T32768 exit $?"
  done
}

# FLA's autotuning (7-9 minutes of first calls at these shapes) is kept between sessions:
# Triton's autotune cache (TRITON_CACHE_AUTOTUNING=1) holds each kernel's configs and timings,
# and its *.autotune.json files come back as $OUT/fla-autotune-<GPU>.tar.xz; carried as
# .carry/fla-autotune-<GPU>.tar.xz, or committed as reports/fla-autotune/fla-autotune-<GPU>.tar.xz
# (a fresh checkout has no .carry: 2026-12-07's fourth session found none that way), the next
# call on that GPU model reads FLA's choices from it and compiles only those (tc_vs_fla.py's
# method line says so).
part_fla() {
  mkdir -p .fla && tar -xJf .carry/fla.tar.xz -C .fla
  local gpu cache=/tmp/triton-cache tuned
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' _)
  mkdir -p $cache
  for tuned in .carry/fla-autotune-$gpu.tar.xz reports/fla-autotune/fla-autotune-$gpu.tar.xz; do
    if [[ -f $tuned ]]; then
      tar -xJf $tuned -C $cache && s "FLA's autotune results: $tuned"
      break
    fi
  done
  # the packed case first, then the dense shapes, each its own process (a case cut short by the
  # budget leaves those before it timed), FLA's autotune results saved after each
  local name cases
  for name in ${FLA_CASES:-varlen16 dense}; do
    [[ $name == varlen16 ]] && cases=(--shapes --varlen 16) || cases=(--shapes ${FLA_SHAPES:-1x32768 4x4096})
    TRITON_CACHE_AUTOTUNING=1 TRITON_CACHE_DIR=$cache PYTHONPATH=.fla limited ${FLA_LIMIT:-600} $PY scripts/tc_vs_fla.py --lib $v/libtc_patch.so --ops gdn2 kda "${cases[@]}" ${FLA_ARGS:-} --json $o/tc_vs_fla_$name.json > $o/tc_vs_fla_$name.txt 2>&1
    s "tc_vs_fla ($name) exit $?"
    grep -E "ratio|shape|first call" $o/tc_vs_fla_$name.txt >> $o/summary.txt
    cp $o/summary.txt "${OUT:?}/"
    (cd $cache && find . -name '*.autotune.json' | tar -cJf "${OUT:?}/fla-autotune-$gpu.tar.xz" -T -)
  done
}

for part in ${*:-checks stages}; do
  declare -F "part_$part" >/dev/null || { s "no part '$part': checks, stages, ncu or fla"; continue; }
  s "part $part"
  "part_$part"
done
tar -cJf "${OUT:?}/out.tar.xz" -C "$(dirname $o)" "$(basename $o)"
