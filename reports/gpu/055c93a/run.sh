#!/bin/bash
# The device call for kernels/cuda/pending/issue38-state-kernels.patch (issue 38), built by
# issue38-state-kernels.build.sh into .carry/v8: deltaproof, cuda_tc_stages_tests, cuda_tc_tests
# and libtc_new.so, the patch's; cuda_tc_tests_red, with the -red patch on top; libtc_old.so,
# main's library; each stripped and xz'd; FLA's fla/ as .carry/fla.tar.xz. About 17 MB of carry:
# move reports/gpu/*/ out of the working tree for the call (the tree's limit), back after.
# In order of what matters if the call is cut short:
#   1. the variants test red on the red build; the end-to-end tests (CudaTcStateVariants: every
#      variant the same bits); the stage tests under each variant (DELTAPROOF_TC_STATE_TILE
#      16|32 x DELTAPROOF_TC_BK2_BUFFERS 1|2); cuda-tc's gates (each shape's own choice, and
#      with one bk2 buffer);
#   2. scripts/tc_stages.py, main's library beside the patch's, B4 T4096 and B1 T32768, then
#      the patch's under each forced variant (which one each shape should pick); 16 packed
#      sequences, the two libraries;
#   3. compute-sanitizer x4 on both bk2 variants and a packed fixture;
#   4. ncu (SpeedOfLight, Occupancy, memory and compute workload, hmma and FFMA counts, DRAM
#      bytes) of every cuda-tc kernel at B4 T4096 and the state kernels at B1 T32768;
#   5. beside fully autotuned FLA at B1 T32768, with 16 packed sequences, then B4 T4096 (the
#      JSON written row by row).
# Call it with the parts to run, in order (all three where none is named): checks (1, 2 and 4),
# sanitizers (3), fla (5); each part is a few minutes, so a call can take one or two of them.
cd "$(dirname "$0")/../../.."
out=${OUT:?}
v=.carry/v8
(cd $v && for f in *.xz; do xz -d -f $f; done; chmod +x deltaproof cuda_tc_stages_tests cuda_tc_tests cuda_tc_tests_red)
mkdir -p build/bin && cp $v/deltaproof build/bin/
PY=/opt/torch/.venv/bin/python
export PYTHONUNBUFFERED=1
s() { echo "$*" | tee -a $out/summary.txt; }
passed() { grep -E '^\[  PASSED|FAILED  \]' "$1" | head -3 | tr '\n' ' '; }
s "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

checks() {

  # the variants test shown red first: cuda_tc_tests_red is built with issue38-state-kernels-red.patch
  # on top (the pipelined bk2 loads the wrong chunk's dO rows), and must fail it
  timeout 60 $v/cuda_tc_tests_red --gtest_filter='CudaTcStateVariants.*' > $out/tc_tests-red.txt 2>&1; s "RED build, CudaTcStateVariants (must fail) exit $?: $(passed $out/tc_tests-red.txt)"
  # the end-to-end tests once (CudaTcStateVariants sets each variant itself), the stage tests under each
  timeout 120 $v/cuda_tc_tests > $out/tc_tests.txt 2>&1; s "cuda_tc_tests exit $?: $(passed $out/tc_tests.txt)"
  for tile in 16 32; do
    for buffers in 1 2; do
      tag=tile$tile-buffers$buffers
      DELTAPROOF_TC_STATE_TILE=$tile DELTAPROOF_TC_BK2_BUFFERS=$buffers timeout 60 $v/cuda_tc_stages_tests > $out/stages-$tag.txt 2>&1; s "stages $tag exit $?: $(passed $out/stages-$tag.txt)"
    done
  done
  timeout 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $out/gates.json > $out/gates.txt 2>&1; s "gates exit $?: $(tail -n 2 $out/gates.txt | tr '\n' ' ')"
  DELTAPROOF_TC_BK2_BUFFERS=1 timeout 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $out/gates-buffers1.json > $out/gates-buffers1.txt 2>&1; s "gates buffers 1 exit $?: $(tail -n 2 $out/gates-buffers1.txt | tr '\n' ' ')"

  for shape in "--B 4 --T 4096" "--B 1 --T 32768"; do
    tag=$(echo $shape | tr -d ' -')
    timeout 90 $PY scripts/tc_stages.py --lib $v/libtc_old.so --lib $v/libtc_new.so $shape --json $out/tc_stages_$tag.json > $out/tc_stages_$tag.txt 2>&1; s "tc_stages $tag exit $?"
    for variant in "32 1" "16 1" "32 2" "16 2"; do
      set -- $variant
      DELTAPROOF_TC_STATE_TILE=$1 DELTAPROOF_TC_BK2_BUFFERS=$2 timeout 90 $PY scripts/tc_stages.py --lib $v/libtc_new.so $shape --json $out/tc_stages_${tag}_tile$1_buffers$2.json > $out/tc_stages_${tag}_tile$1_buffers$2.txt 2>&1; s "tc_stages $tag tile $1 buffers $2 exit $?"
    done
  done
  timeout 90 $PY scripts/tc_stages.py --lib $v/libtc_old.so --lib $v/libtc_new.so --varlen 16 --json $out/tc_stages_varlen16.json > $out/tc_stages_varlen16.txt 2>&1; s "tc_stages varlen 16 exit $?"
  grep -H "ms;" $out/tc_stages_*.txt >> $out/summary.txt

  NCU="ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --metrics sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv --page details"
  for part in bwd fwd; do
    timeout 90 $NCU -k regex:tc_$part --launch-count 3 $PY scripts/tc_stages.py --lib $v/libtc_new.so --repeats 1 > $out/ncu_${part}_b4t4096.csv 2> $out/ncu_${part}_b4t4096.err; s "ncu $part B4 T4096 exit $?"
  done
  timeout 90 $NCU -k 'regex:tc_fwd_state|tc_bwd' --launch-count 5 $PY scripts/tc_stages.py --lib $v/libtc_new.so --B 1 --T 32768 --repeats 1 > $out/ncu_b1t32768.csv 2> $out/ncu_b1t32768.err; s "ncu B1 T32768 exit $?"
}

sanitizers() {
  for tool in memcheck racecheck initcheck synccheck; do
    for run in "16 2 gdn2/t200-c64" "32 1 gdn2/t200-c64" "16 1 kda/varlen-c64-k16" "32 2 kda/varlen-c64-k16"; do
      set -- $run
      DELTAPROOF_TC_STATE_TILE=$1 DELTAPROOF_TC_BK2_BUFFERS=$2 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 build/bin/deltaproof run --backend cuda-tc --phase bwd --fixture fixtures/$3.safetensors --out /tmp/s.safetensors > /tmp/san.txt 2>&1
      s "sanitizer $tool tile $1 buffers $2 $3 exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tr '\n' ' ')"
      cat /tmp/san.txt >> $out/sanitizers.txt
    done
  done
}

fla() {
  mkdir -p .fla && tar -xJf .carry/fla.tar.xz -C .fla
  PYTHONPATH=.fla $PY scripts/tc_vs_fla.py --lib $v/libtc_new.so --ops gdn2 kda --shapes 1x32768 4x4096 --varlen 16 --json $out/tc_vs_fla.json 2>&1 | tee $out/tc_vs_fla.txt | grep -E "ratio|median|shape" >> $out/summary.txt
  s "tc_vs_fla done"
}

parts=${*:-checks sanitizers fla}
for part in $parts; do
  s "part $part"
  $part
done
