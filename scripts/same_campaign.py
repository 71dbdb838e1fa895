"""Two falsification campaign reports compared fault by fault: the same outcome, killer and margin.

    python3 scripts/same_campaign.py A.json B.json

For a move that must leave behaviour unchanged (issue 12): each mutant (a fault
on a backend) is matched by its id, wherever its file now is, and every figure
of its outcome is compared: the status, the gate and term that killed it, the
margin, every gate that saw it red and the reason. Where a fault sits (file,
line, the file's hash) may move with the code and is not compared. Also the
campaign's verdict and summary. Prints each difference and a count; exit 1 if any.
"""
import json
import sys

COMPARED = ("status", "deltaproofStatus", "statusReason", "gate", "term", "margin", "killedBy",
            "class", "backend", "expected")


def mutants(report: dict) -> dict:
    return {m["id"]: m for f in report["files"].values() for m in f["mutants"]}


def untimed(value):
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "seconds"}
    return value


def main(a_path: str, b_path: str) -> int:
    with open(a_path) as fa, open(b_path) as fb:
        a, b = json.load(fa), json.load(fb)
    ma, mb = mutants(a), mutants(b)
    diffs = 0
    for missing in sorted(ma.keys() ^ mb.keys()):
        print(f"{missing}: in only one report")
        diffs += 1
    for mid in sorted(ma.keys() & mb.keys()):
        for field in COMPARED:
            if ma[mid].get(field) != mb[mid].get(field):
                print(f"{mid}: {field}: {str(ma[mid].get(field))[:100]} != "
                      f"{str(mb[mid].get(field))[:100]}")
                diffs += 1
    for field in ("verdict", "summary", "separation"):
        fa, fb = (untimed(r["deltaproof"].get(field)) for r in (a, b))
        if fa != fb:
            print(f"campaign {field}: {fa} != {fb}")
            diffs += 1
    print(f"{len(ma.keys() & mb.keys())} mutants compared outcome by outcome: {diffs} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
