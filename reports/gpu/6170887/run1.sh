#!/bin/bash
# device call 1 of 2026-12-06 (issue 38): the pending patch's kernels: stage tests, stage timing
# beside HEAD's library, cuda-tc's gates, the four sanitizers
cd "$(dirname "$0")/../.."
out=${OUT:?}
(cd .carry/vx && for f in *.xz; do xz -d -f $f; done; chmod +x deltaproof cuda_tc_stages_tests)
mkdir -p build/bin && cp .carry/vx/deltaproof build/bin/
PY=/opt/torch/.venv/bin/python
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/gpu.txt
timeout 150 .carry/vx/cuda_tc_stages_tests > $out/stages.txt 2>&1; echo "stages exit $?" | tee -a $out/summary.txt
grep -E "FAILED|PASSED|tests ran" $out/stages.txt | tail -8 | tee -a $out/summary.txt
timeout 80 $PY scripts/tc_stages.py --lib .carry/vx/libtc_old.so --lib .carry/vx/libtc_new.so --json $out/tc_stages.json > $out/tc_stages.txt 2>&1; echo "tc_stages exit $?" | tee -a $out/summary.txt
tail -n 25 $out/tc_stages.txt >> $out/summary.txt
timeout 130 build/bin/deltaproof gate run '*.cuda-tc.*' --report $out/gates.json > $out/gates.txt 2>&1; echo "gates exit $?" | tee -a $out/summary.txt
tail -n 4 $out/gates.txt | tee -a $out/summary.txt
for tool in memcheck racecheck initcheck synccheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 9 build/bin/deltaproof run --backend cuda-tc --phase bwd --fixture fixtures/gdn2/t200-c64.safetensors --out /tmp/s.safetensors > /tmp/san-$tool.txt 2>&1
  echo "sanitizer $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool.txt | tr '\n' ' ')" | tee -a $out/summary.txt
  cat /tmp/san-$tool.txt >> $out/sanitizers.txt
done
cat $out/summary.txt
