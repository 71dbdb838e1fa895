"""Two gate reports compared gate by gate and term by term, every field but the time.

    python3 scripts/same_report.py A.json B.json

For a move that must leave behaviour unchanged (issue 12): `deltaproof report diff`
compares verdicts and rel; this compares every figure a term holds (rel, abs max,
the worst index, the per-chunk error, the message) and each gate's verdict,
reasons and execution record. Prints each difference and a count; exit 1 if any.
"""
import json
import sys

IGNORED = {"seconds"}


def main(a_path: str, b_path: str) -> int:
    with open(a_path) as fa, open(b_path) as fb:
        gates_a = {g["name"]: g for g in json.load(fa)["gates"]}
        gates_b = {g["name"]: g for g in json.load(fb)["gates"]}
    if gates_a.keys() != gates_b.keys():
        print(f"the gate sets differ: only in A {sorted(gates_a.keys() - gates_b.keys())}, "
              f"only in B {sorted(gates_b.keys() - gates_a.keys())}")
        return 1
    differences = terms = 0
    for name, a in gates_a.items():
        b = gates_b[name]
        for field in ("verdict", "reasons", "record", "required_stages"):
            if a.get(field) != b.get(field):
                differences += 1
                print(f"{name}: {field} differs")
        if len(a["terms"]) != len(b["terms"]):
            differences += 1
            print(f"{name}: {len(a['terms'])} terms in A, {len(b['terms'])} in B")
            continue
        for ta, tb in zip(a["terms"], b["terms"]):
            terms += 1
            for field in sorted((set(ta) | set(tb)) - IGNORED):
                if ta.get(field) != tb.get(field):
                    differences += 1
                    print(f"{name} {ta.get('term')}: {field} {str(ta.get(field))[:60]} "
                          f"vs {str(tb.get(field))[:60]}")
                    break
    print(f"{len(gates_a)} gates, {terms} terms compared field by field: "
          f"{differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 scripts/same_report.py A.json B.json")
    sys.exit(main(sys.argv[1], sys.argv[2]))
