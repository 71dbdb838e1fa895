#!/usr/bin/env python3
"""A kernel's warp-stall samples by phase: ncu's source page (`ncu -i REPORT --csv --page source
--print-source cuda,sass`, with SourceCounters and WarpStateStats collected) summed over ranges of
CUDA source lines, each phase with its three largest stall reasons.

    python3 scripts/ncu_phases.py ncu_state_b1t32768_cuda_sass.csv fetch:725:733 wait:750:754

A phase is NAME:FIRST:LAST, lines of the kernel's own .cu file (tc.cu: the line ranges belong to
the commit that was profiled); lines outside every phase count as "FILE:other", lines of other
files (inlined headers) under their file's name. Shares are of the samples on CUDA lines.
"""
import argparse
import csv
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def read_lines(path):
    """The CUDA-line rows of the source page, each a dict with its file's base name."""
    header, current, rows = None, None, []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "File Path":
                current = row[1].split("/")[-1]
            elif row[0] == "Line No":
                header = row
            elif row[0] != "Function Name" and header and current and row[0]:
                rows.append({**dict(zip(header, row)), "file": current})
    if header is None:
        sys.exit(f"ncu_phases.py: {path}: no 'Line No' header: not an ncu source page as CSV")
    return header, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="the source page as CSV (cuda,sass)")
    ap.add_argument("phases", nargs="*", help="NAME:FIRST:LAST")
    ap.add_argument("--file", default="tc.cu", help="the kernel's .cu file (default tc.cu)")
    args = ap.parse_args()
    phases = []
    for text in args.phases:
        try:
            name, first, last = text.rsplit(":", 2)
            phases.append((name, int(first), int(last)))
        except ValueError:
            sys.exit(f"ncu_phases.py: phase '{text}': expected NAME:FIRST:LAST")
    header, rows = read_lines(args.csv)
    samples = "Warp Stall Sampling (All Samples)"
    reasons = [h for h in header if h.startswith("stall_") and "Not Issu" not in h]
    total = sum(number(r[samples]) for r in rows)
    groups = {}
    for r in rows:
        key = r["file"]
        if key == args.file:
            line = int(number(r["Line No"]))
            key = next((n for n, a, b in phases if a <= line <= b), f"{args.file}:other")
        group = groups.setdefault(key, [0.0, dict.fromkeys(reasons, 0.0)])
        group[0] += number(r[samples])
        for h in reasons:
            group[1][h] += number(r[h])
    print(f"samples on CUDA lines: {total:.0f}")
    for key, (count, by) in sorted(groups.items(), key=lambda g: -g[1][0]):
        top = sorted(((v, h[len("stall_"):]) for h, v in by.items()), reverse=True)[:3]
        why = ", ".join(f"{h} {100 * v / max(count, 1):.0f}%" for v, h in top if v > 0)
        print(f"{100 * count / max(total, 1):5.1f}%  {key}  ({why})")


if __name__ == "__main__":
    main()
