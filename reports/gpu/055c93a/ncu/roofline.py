"""The roofline rows of docs/PERFORMANCE.md from ncu CSVs (`ncu --csv --page details`).

    python3 roofline.py ncu_fwd_b4t4096.csv ncu_bwd_b4t4096.csv ncu_b1t32768.csv

One row a kernel (its first launch in each file): time, DRAM bytes and rate, tensor FLOP
(hmma warp instructions x 4096, one m16n8k16 each) and f32 FFMA FLOP (thread instructions x 2)
against an H100 SXM's 989 TFLOP/s bf16, 67 TFLOP/s f32 and 3.35 TB/s; occupancy; the busiest
compute pipe and the memory units' throughput.
"""
import collections
import csv
import io
import sys

PEAK_TENSOR, PEAK_FFMA, PEAK_DRAM = 989e12, 67e12, 3.35e12


def launches(path):
    """{(launch id, kernel name): {metric: value}}; rates in byte/s keyed apart from the % ones."""
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    found = collections.OrderedDict()
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        metrics = found.setdefault((row["ID"], row["Kernel Name"]), {})
        name = row["Metric Name"] + (" bytes" if row["Metric Unit"] == "byte/s" else "")
        metrics[name] = row["Metric Value"]
    return found


def number(text):
    return float(text.replace(",", ""))


def row(kernel, m):
    t = number(m["Duration"]) * 1e-9
    read, written = number(m["dram__bytes_read.sum"]), number(m["dram__bytes_write.sum"])
    tensor = number(m["sm__inst_executed_pipe_tensor_op_hmma.sum"]) * 4096
    ffma = number(m["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]) * 2
    dram = (read + written) / t
    return (f"| {kernel} | {t * 1e6:.0f} us | {read / 1e6:.0f} + {written / 1e6:.0f} MB "
            f"| {dram / 1e12:.2f} TB/s ({dram / PEAK_DRAM:.0%}) "
            f"| {tensor / 1e9:.1f} G, {tensor / t / 1e12:.0f} TFLOP/s ({tensor / t / PEAK_TENSOR:.1%}) "
            f"| {ffma / t / 1e12:.2f} TFLOP/s ({ffma / t / PEAK_FFMA:.1%}) "
            f"| {m['Achieved Occupancy']}% / {m['Theoretical Occupancy']}%; "
            f"{m['Registers Per Thread']} regs, "
            f"{number(m['Dynamic Shared Memory Per Block']) / 1024:.0f} KB, grid {m['Grid Size']} "
            f"| SM {m['Compute (SM) Throughput']}%; L1 {m['L1/TEX Cache Throughput']} / "
            f"L2 {m['L2 Cache Throughput']} / DRAM {m['DRAM Throughput']}%; "
            f"IPC {m['Executed Ipc Active']} |")


for path in sys.argv[1:]:
    seen = set()
    for (_, name), metrics in launches(path).items():
        kernel = name.split("(")[0].replace("void unnamed>::", "")
        if kernel not in seen:
            seen.add(kernel)
            print(row(kernel, metrics))
