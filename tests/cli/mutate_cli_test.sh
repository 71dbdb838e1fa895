#!/usr/bin/env bash
# tests/cli/mutate_cli_test.sh DELTAPROOF SOURCE_DIR COMPILE_COMMANDS —
# `deltaproof falsify mutate` end to end, on mutants chosen for what they must
# be reported as (each status seen, issue 16):
#   Killed        the call that writes a sequence's outputs, deleted
#   Survived      the backward's Kdec loop starting at row 1: row 0's term,
#                 weighted by its decay to the chunk's end, is left out. Only a
#                 partial chunk keeps that weight above f32's grain, so the
#                 outputs of gdn2 t40-c16 (a tail of 8) move, inside the bars;
#                 the full run kills it on an edge fixture (reports/gpu/717e845)
#   NoEffect      parallel_for's thread count 0 -> 1: the same bits
#   NoCoverage    the partial-chunk fault's row count (its fault is off)
#   CompileError  a matrix product turned into a division (Eigen refuses it)
#   Timeout       a loop's step deleted: a real hang
# built as schemata in a scratch worktree of HEAD, against three gates of
# cpu-chunk; then `report show` prints the survivor's line and its diff, and
# bad input exits 2 (a missing file, an unknown operator or id, a --mutants
# list made from another version of the files). The tree's tracked files hash the same before and after.
set -uo pipefail
bin=$1
src=$2
compile_commands=$3
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$src" || exit 2

tree_guard

files=(kernels/cpu/backends.cpp kernels/cpu/chunk.cpp)
operators=arith,delete,constant,index,step
# the ids, listed as the run lists them (same files, same operators; the run
# lists HEAD's, which CI's fresh clone is)
python3 falsify/mutants.py list "${files[@]}" --operators "$operators" \
  --compile-commands "$compile_commands" >"$work/list.json" || {
  echo "FAIL: falsify/mutants.py list"
  exit 1
}
python3 - "$work/list.json" >"$work/ids.env" <<'EOF' || { echo "FAIL: choosing the mutants"; exit 1; }
import json, sys
mutants = json.load(open(sys.argv[1]))
def one(pred, what):
    found = [m["id"] for m in mutants if pred(m)]
    if len(found) != 1:
        sys.exit(f"{what}: {len(found)} mutants match (want 1)")
    return found[0]
back = lambda m: m["file"].endswith("backends.cpp")
killed = one(lambda m: back(m) and m["operator"] == "delete"
             and m["original"].startswith("scatter_head(s, r, result"), "killed")
kdec_line = next(n for n, text in enumerate(open("kernels/cpu/chunk.cpp"), 1)
                 if "// Kdec = K * exp(G_C - G) and exp(G_C)" in text) + 1
survived = one(lambda m: m["file"].endswith("chunk.cpp") and m["line"] == kdec_line
               and m["operator"] == "constant" and m["original"] == "0"
               and m["replacement"] == "1", "survived")
no_effect = one(lambda m: back(m) and m["operator"] == "constant" and m["line"] == next(
    x["line"] for x in mutants if x["original"].startswith("parallel_for(count, 0"))
    and m["replacement"] == "1", "no effect")
no_coverage = one(lambda m: back(m) and m["operator"] == "arith" and m["original"] == "/"
                  and m["function"] == "for_each_head" and m["replacement"] == "*"
                  and m["line"] == min(x["line"] for x in mutants if back(x)
                                       and x["original"] == "/" and x["function"] == "for_each_head"),
                  "no coverage")
timeout = one(lambda m: back(m) and m["operator"] == "step" and m["function"] == "gather_tokens"
              and m["original"] == "++t", "timeout")
# matrix products turned into divisions (held by a declaration or a statement):
# the compiler refuses at least one
compile_error = [m["id"] for m in mutants if m["file"].endswith("chunk.cpp")
                 and m["operator"] == "arith" and m["original"] == "*"
                 and m["schema"] and m["schema"]["kind"] != "expression"][:6]
if not compile_error:
    sys.exit("no matrix product to divide")
print(f"killed={killed} survived={survived} no_effect={no_effect} no_coverage={no_coverage} "
      f"timeout={timeout} compile_error={','.join(map(str, compile_error))}")
EOF
source "$work/ids.env"
echo "mutants: killed $killed, survived $survived, no effect $no_effect, no coverage $no_coverage," \
  "timeout $timeout, compile error among $compile_error"

expect 0 'mutants in kernels/cpu/backends.cpp' 'build round 2' 'baseline: 4 gates' \
  'mutation score' '^verdict PASS' -- \
  falsify mutate "${files[@]}" --operators "$operators" --source "$src" \
  --ids "$killed,$survived,$no_effect,$no_coverage,$timeout,$compile_error" \
  --backend cpu-chunk --gates 'gdn2.cpu-chunk.t32-c16-bf16.*' \
  --gates 'kda.cpu-chunk.t1-c16-k64-stress.fwd' 'gdn2.cpu-chunk.t40-c16.bwd' --timeout 20 \
  --report "$work/mutate.json"
if python3 - "$work/mutate.json" "$killed" "$survived" "$no_effect" "$no_coverage" "$timeout" \
  "$compile_error" <<'EOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
status = {int(m["id"]): m["deltaproofStatus"]
          for f in r["files"].values() for m in f["mutants"]}
want = {int(sys.argv[2]): "Killed", int(sys.argv[3]): "Survived", int(sys.argv[4]): "NoEffect",
        int(sys.argv[5]): "NoCoverage", int(sys.argv[6]): "Timeout"}
for i, s in want.items():
    assert status.get(i) == s, f"mutant {i}: {status.get(i)}, want {s}"
refused = [status[int(i)] for i in sys.argv[7].split(",")]
assert "CompileError" in refused, refused
stryker = {m["id"]: m["status"] for f in r["files"].values() for m in f["mutants"]}
assert stryker[sys.argv[4]] == "Ignored", "NoEffect is Stryker's Ignored"
d = r["deltaproof"]
counts = d["summary"]["statuses"]
assert d["tree"]["unchanged"], d["tree"]
assert abs(d["summary"]["score"] - counts["Killed"] / (counts["Killed"] + counts["Survived"])) < 1e-12
EOF
  echo "ok: every status as chosen; NoEffect written as Stryker's Ignored; the score"
else
  fail "mutation report content"
fi
check_tree "after a mutation run"

expect 0 "m$survived kernels/cpu/chunk.cpp" '  - +for \(int i = 0; i < L; \+\+i\)' \
  '  \+ +for \(int i = 1; i < L; \+\+i\)' 'gdn2.cpu-chunk.t40-c16.bwd' \
  'killed / \(killed \+ survived\)' -- \
  report show "$work/mutate.json" --all-gates
expect 0 "Killed m$killed" "Timeout m$timeout" -- report show "$work/mutate.json" --all-gates

expect 2 'no/such.cpp is not a file' -- falsify mutate no/such.cpp
expect 2 'unknown operators' -- falsify mutate kernels/cpu/backends.cpp --operators bogus
expect 2 '--ids: no mutant 999999' -- falsify mutate kernels/cpu/backends.cpp --ids 999999
python3 -c "
import json, sys; m = json.load(open(sys.argv[1])); m[0]['original'] += 'x'
json.dump(m, open(sys.argv[2], 'w'))" "$work/list.json" "$work/stale.json"
expect 2 'list it again' -- falsify mutate "${files[@]}" --source "$src" --mutants "$work/stale.json"
check_tree "after refused runs"

finish "falsify mutate"
