#!/usr/bin/env python3
"""How long a state kernel's slowest slot walks, in chunk steps, with its blocks in index order
and with the packed sequences longest first (state_row in kernels/cuda/tc.cu): each block walks its
sequence's chunks; the blocks start in grid order on the first free slot (greedy list scheduling).

    python3 kernels/cuda/pending/state_order_sim.py reports/gpu/8f5e255/tc_stages_varlen16.json

reads the packed sequence lengths of a tc_stages.py report; --heads, --tiles (V / the tile's
columns) and --slots (blocks resident at once: 132 SMs x 2 for fwd.inter's 32-column tiles).
"""
import argparse
import heapq
import json


def makespan(chunks, copies, slots):
    free = [0] * slots
    for c in chunks:
        for _ in range(copies):
            heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a tc_stages.py --json report of packed sequences")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--tiles", type=int, default=4)
    ap.add_argument("--slots", type=int, default=264)
    args = ap.parse_args()
    with open(args.report) as f:
        lengths = json.load(f)["packed sequence lengths"]
    chunks = [(n + 63) // 64 for n in lengths]
    copies = args.heads * args.tiles
    print(f"{len(chunks)} sequences, {sum(chunks)} chunks, the longest {max(chunks)}; "
          f"{len(chunks) * copies} blocks on {args.slots} slots")
    print(f"index order:    {makespan(chunks, copies, args.slots)} chunk steps")
    longest = sorted(chunks, key=lambda c: -c)  # Python's sort is stable: ties by index
    print(f"longest first:  {makespan(longest, copies, args.slots)} chunk steps")
    print(f"lower bound:    {sum(chunks) * copies / args.slots:.1f} chunk steps")


if __name__ == "__main__":
    main()
