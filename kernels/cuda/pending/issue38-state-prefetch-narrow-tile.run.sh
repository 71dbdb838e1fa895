#!/bin/bash
# the device call for issue38-state-prefetch-narrow-tile.patch (issue 38), applied and built:
# 834c989's state kernels (L2 prefetch, 16-column state tile) checked under both tiles (stage
# tests, end-to-end tests, cuda-tc's gates, the four sanitizers), timed stage by stage beside
# main's library, ncu's roofline of every cuda-tc kernel, then beside FLA at B1 T32768 and
# with 16 packed sequences until the device time runs out (the JSON is written row by row).
cd "$(dirname "$0")/../../.."
out=${OUT:?}
v=.carry/v7
(cd $v && for f in *.xz; do xz -d -f $f; done; chmod +x deltaproof cuda_tc_stages_tests cuda_tc_tests)
mkdir -p build/bin && cp $v/deltaproof build/bin/
PY=/opt/torch/.venv/bin/python
export PYTHONUNBUFFERED=1
s() { echo "$*" | tee -a $out/summary.txt; }
s "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
for tile in default 32; do
  if [[ $tile == default ]]; then unset DELTAPROOF_TC_STATE_TILE; else export DELTAPROOF_TC_STATE_TILE=$tile; fi
  timeout 120 $v/cuda_tc_stages_tests > $out/stages-$tile.txt 2>&1; s "stages tile $tile exit $?: $(grep -E '^\[  PASSED|FAILED  \]' $out/stages-$tile.txt | head -3 | tr '\n' ' ')"
  timeout 60 $v/cuda_tc_tests > $out/tc_tests-$tile.txt 2>&1; s "cuda_tc_tests tile $tile exit $?: $(grep -E '^\[  PASSED|FAILED  \]' $out/tc_tests-$tile.txt | head -3 | tr '\n' ' ')"
done
unset DELTAPROOF_TC_STATE_TILE
timeout 120 build/bin/deltaproof gate run '*.cuda-tc.*' --report $out/gates.json > $out/gates.txt 2>&1; s "gates exit $?: $(tail -n 2 $out/gates.txt | tr '\n' ' ')"
for shape in "--B 4 --T 4096" "--B 1 --T 32768"; do
  tag=$(echo $shape | tr -d ' -')
  timeout 90 $PY scripts/tc_stages.py --lib $v/libtc_old.so --lib $v/libtc_new.so $shape --json $out/tc_stages_$tag.json > $out/tc_stages_$tag.txt 2>&1; s "tc_stages $tag exit $?"
  DELTAPROOF_TC_STATE_TILE=32 timeout 90 $PY scripts/tc_stages.py --lib $v/libtc_new.so $shape --json $out/tc_stages_${tag}_tile32.json > $out/tc_stages_${tag}_tile32.txt 2>&1; s "tc_stages $tag tile 32 exit $?"
done
grep -hE "fwd|stage|ms" $out/tc_stages_*.txt | head -60 >> $out/summary.txt
for tool in memcheck racecheck initcheck synccheck; do
  for run in "16 gdn2/t200-c64" "32 gdn2/t200-c64" "16 kda/varlen-c64-k16"; do
    set -- $run
    DELTAPROOF_TC_STATE_TILE=$1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 build/bin/deltaproof run --backend cuda-tc --phase bwd --fixture fixtures/$2.safetensors --out /tmp/s.safetensors > /tmp/san.txt 2>&1
    s "sanitizer $tool tile $1 $2 exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tr '\n' ' ')"
    cat /tmp/san.txt >> $out/sanitizers.txt
  done
done
NCU="ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --metrics sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv --page details"
for part in bwd fwd; do
  timeout 90 $NCU -k regex:tc_$part --launch-count 3 $PY scripts/tc_stages.py --lib $v/libtc_new.so --repeats 1 > $out/ncu_${part}_b4t4096.csv 2> $out/ncu_${part}_b4t4096.err; s "ncu $part B4 T4096 exit $?"
done
timeout 90 $NCU -k 'regex:tc_fwd_state|tc_bwd' --launch-count 5 $PY scripts/tc_stages.py --lib $v/libtc_new.so --B 1 --T 32768 --repeats 1 > $out/ncu_b1t32768.csv 2> $out/ncu_b1t32768.err; s "ncu B1 T32768 exit $?"
mkdir -p .fla && tar -xJf .carry/fla.tar.xz -C .fla
PYTHONPATH=.fla $PY scripts/tc_vs_fla.py --lib $v/libtc_new.so --ops gdn2 kda --shapes 1x32768 --varlen 16 --json $out/tc_vs_fla.json 2>&1 | tee $out/tc_vs_fla.txt | grep -E "ratio|median|shape" >> $out/summary.txt
s "tc_vs_fla done"
