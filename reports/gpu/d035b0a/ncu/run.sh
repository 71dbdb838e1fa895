#!/bin/bash
set -u
mkdir -p /tmp/b $OUT/ncu
xz -dc .carry/cuda_bench.xz > /tmp/b/cuda_bench && chmod +x /tmp/b/cuda_bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/ncu/gpu.txt
ncu --version | tail -1 >> $OUT/ncu/gpu.txt
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis"
timeout 250 ncu --clock-control none -k regex:tc_ -c 9 $S --metrics $M /tmp/b/cuda_bench --backend cuda-tc --repeats 1 > $OUT/ncu/ncu-tc.txt 2>&1
rc=$?; echo "ncu exit $rc" >> $OUT/ncu/ncu-tc.txt
if [ $rc -ne 0 ]; then timeout 200 ncu --clock-control none -k regex:tc_ -c 9 $S /tmp/b/cuda_bench --backend cuda-tc --repeats 1 > $OUT/ncu/ncu-tc-sections.txt 2>&1; fi
grep -E "tc_|Duration|hmma|ffma|dram__bytes|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|ncu exit" $OUT/ncu/ncu-tc*.txt | head -150
