#!/usr/bin/env python3
"""tests/python/mutants_test.py — falsify/mutants.py on a small program
(tests/python/mutants/sample.cpp): every operator finds its sites, nothing
under a fault point or in a macro is mutated, the schemata compile once the
mutants the compiler refuses are set aside (each named by its line), and a
mutant switched on in the schemata prints what the same edit made to the
source by hand prints, for one mutant of every operator.

  python3 tests/python/mutants_test.py
"""
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "falsify"))
import mutants  # noqa: E402

SAMPLE = ROOT / "tests/python/mutants/sample.cpp"
SWITCH = ROOT / "kernels/mutants.cpp"  # the switch itself: DELTAPROOF_MUTANT from the environment
FLAGS = ["-std=gnu++20", "-O0", "-isystem", "/usr/include/eigen3", f"-I{ROOT}"]


def build(sources, out):
    result = subprocess.run(["c++", *FLAGS, *map(str, sources), "-o", str(out)],
                            capture_output=True, text=True)
    return result.returncode == 0, result.stderr


def output(binary, mutant=0):
    env = dict(os.environ, DELTAPROOF_MUTANT=str(mutant))
    return subprocess.run([str(binary)], capture_output=True, text=True, env=env).stdout


def main():
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    work = pathlib.Path(tempfile.mkdtemp())
    commands = work / "compile_commands.json"
    commands.write_text(json.dumps([{"directory": str(work), "file": str(SAMPLE),
                                     "command": f"c++ {' '.join(FLAGS)} -c {SAMPLE}"}]))
    found = mutants.list_mutants([str(SAMPLE)], str(commands), mutants.OPERATORS, 1)
    by_operator = collections.Counter(m["operator"] for m in found)
    print(f"{len(found)} mutants: {dict(by_operator)}")
    for operator in mutants.OPERATORS:
        expect(by_operator[operator] > 0, f"operator {operator} found no site")
    text = SAMPLE.read_text().splitlines()
    fault_line = next(i + 1 for i, l in enumerate(text) if "DELTAPROOF_FAULT(skip_row)" in l)
    expect(all(m["line"] != fault_line for m in found), "a mutant under a fault point")
    define_line = next(i + 1 for i, l in enumerate(text) if l.startswith("#define"))
    expect(all(m["line"] != define_line for m in found), "a mutant in a macro")
    edits = {(m["operator"], m["original"], m["replacement"]) for m in found}
    for want in [("arith", "*", "/"), ("arith", "-", "+"), ("arith", "+=", "-="),
                 ("relational", "<", "<="), ("bound", "rows", "(rows) + 1"),
                 ("swap", "r, 1", "1, r"), ("unary", "std::exp", "std::exp2"),
                 ("unary", "std::exp", ""), ("unary", "-", ""),
                 ("constant", "0.0f", "1.0f"), ("index", "r", "(r) - 1"),
                 ("delete", "total += x(r, 1) * std::exp(-x(r, 0));", ";")]:
        expect(want in edits, f"no mutant {want}")

    # the schemata: compile, set aside what the compiler refuses, compile again
    held = list(found)
    refused = []
    for round_ in range(4):
        source, lines, _ = mutants.schemata(SAMPLE.read_bytes(), held)
        schema = work / "sample.schemata.cpp"
        schema.write_text('#include "kernels/mutants.hpp"\n' + source)
        lines = {str(m): [a + 1, b + 1] for m, (a, b) in lines.items()}
        ok, errors = build([schema, SWITCH], work / "schemata")
        if ok:
            break
        bad = mutants.mutants_in_errors(errors, str(schema), lines)
        expect(bad, f"round {round_}: errors name no mutant:\n{errors[:2000]}")
        if not bad:
            break
        refused += bad
        held = [m for m in held if m["id"] not in bad]
    expect(ok, "the schemata never compiled")
    print(f"schemata compiled after setting aside {len(refused)} mutants the compiler refuses: "
          f"{sorted({(m['operator'], m['original'], m['replacement']) for m in found if m['id'] in refused})}")
    expect(all(next(m for m in found if m["id"] == r)["original"] == "*" for r in refused),
           "a mutant other than a matrix product turned into a division was refused")
    if not ok:
        print("\n".join(f"FAIL: {f}" for f in failures))
        return 1

    # each operator's first schema-held mutant: the schemata print what the hand edit prints
    original_text = SAMPLE.read_bytes()
    ok0, _ = build([SAMPLE], work / "original")
    expect(ok0 and output(work / "original") == output(work / "schemata", 0),
           "the schemata with no mutant on print other than the original")
    checked = 0
    for operator in mutants.OPERATORS:
        m = next((m for m in held if m["operator"] == operator and m["schema"]), None)
        if m is None:
            continue
        edited = (original_text[:m["offset"]] + m["replacement"].encode()
                  + original_text[m["offset"] + m["length"]:])
        path = work / f"edited-{m['id']}.cpp"
        path.write_bytes(edited)
        built, errors = build([path], work / f"edited-{m['id']}")
        if not built:
            expect(False, f"mutant {m['id']} ({operator}) does not compile by hand: {errors[:500]}")
            continue
        by_hand, switched = output(work / f"edited-{m['id']}"), output(work / "schemata", m["id"])
        expect(by_hand == switched, f"mutant {m['id']} ({operator} {m['original']!r} -> "
                                    f"{m['replacement']!r}): by hand {by_hand!r}, "
                                    f"switched on {switched!r}")
        checked += 1
    print(f"{checked} mutants, one per operator: the schemata switched on print what the hand "
          "edit prints")
    if failures:
        print("\n".join(f"FAIL: {f}" for f in failures))
        return 1
    print("mutants test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
