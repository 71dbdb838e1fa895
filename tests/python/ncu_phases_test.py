#!/usr/bin/env python3
"""scripts/ncu_phases.py on a small source page written here in ncu's CSV layout (a file's
"File Path" and "Function Name" rows, its header, CUDA-line rows with a line number and the SASS
rows under them without one): the samples of CUDA lines summed by phase, lines outside every
phase as "tc.cu:other", an inlined header under its own name, SASS rows not counted twice, the
three largest stall reasons; a CSV without a header and a malformed phase exit with a sentence.
Exits 1 naming the first check that fails."""
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ncu_phases.py"
HEADER = ('"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",'
          '"stall_wait","stall_long_sb","stall_barrier","stall_wait (Not Issued)"')


def page():
    rows = []
    for path, lines in (("/src/kernels/cuda/tc.cu", [(10, 30, 20, 10, 0), (11, 10, 0, 10, 0),
                                                      (20, 40, 0, 0, 40), (30, 5, 5, 0, 0)]),
                        ("/usr/local/cuda/include/cuda_bf16.hpp", [(585, 15, 15, 0, 0)])):
        rows += [f'"File Path","{path}"', '"Function Name","void tc_fwd_state<128>(...)"', HEADER]
        for line, total, wait, long_sb, barrier in lines:
            rows.append(f'"{line}","-","-","-","{total}","{wait}","{long_sb}","{barrier}","99"')
            # a SASS row of that line: no line number, the same samples again
            rows.append(f'"","LDS R1, [R2]","0x10","-","{total}","{wait}","{long_sb}","{barrier}","99"')
    return "\n".join(rows) + "\n"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True)


def check(condition, what, result=None):
    if not condition:
        print(f"ncu_phases_test: FAILED: {what}")
        if result is not None:
            print(result.stdout, result.stderr)
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as folder:
        csv = pathlib.Path(folder) / "page.csv"
        csv.write_text(page())
        result = run(csv, "fetch:10:11", "wait:20:20")
        check(result.returncode == 0, "a source page runs", result)
        lines = result.stdout.splitlines()
        check(lines[0] == "samples on CUDA lines: 100", "the total counts CUDA lines once", result)
        check(" 40.0%  fetch  (wait 50%, long_sb 50%)" in lines, "fetch: lines 10 and 11", result)
        check(" 40.0%  wait  (barrier 100%)" in lines, "wait: line 20, its barrier", result)
        check(" 15.0%  cuda_bf16.hpp  (wait 100%)" in lines, "an inlined header by name", result)
        check("  5.0%  tc.cu:other  (wait 100%)" in lines, "line 30 outside every phase", result)
        check(lines[1].split()[1] == "fetch" or lines[1].split()[1] == "wait",
              "the largest phase first", result)

        empty = pathlib.Path(folder) / "empty.csv"
        empty.write_text('"File Path","/src/tc.cu"\n')
        result = run(empty)
        check(result.returncode != 0 and "not an ncu source page" in result.stderr,
              "a CSV without the header exits with a sentence", result)
        result = run(csv, "fetch-10-11")
        check(result.returncode != 0 and "expected NAME:FIRST:LAST" in result.stderr,
              "a malformed phase exits with a sentence", result)
    print("ncu_phases_test: every check passed")


if __name__ == "__main__":
    main()
