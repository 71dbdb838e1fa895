#!/usr/bin/env bash
# tests/cli/report_cli_test.sh DELTAPROOF — the CLI contract of `deltaproof
# report show|diff|html`: show prints the run's header, the table (gate / term, rel,
# bar, margin, worst index with its index names, status), the per-chunk line of
# oracle terms, the relation rows of metamorphic gates and the reasons of red
# gates; diff exits 0 on identical reports, 1 when a gate or term that passed
# in A fails in B (naming it), and both exit 2 with a sentence naming the file
# on a missing file, a file that is not JSON, a report of another schema and a
# gate lacking a field. html writes one page (the red gate's row and rel in
# it, nothing that refers to another file), diff --html too, and neither
# leaves a page behind for bad input. Report A comes from `deltaproof gate run`; B, the red
# variants and the broken ones are A edited with python3.
set -uo pipefail
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# edit IN OUT PYTHON: OUT is IN's JSON after the Python statements PYTHON ran on `d`.
edit() {
  python3 - "$1" "$2" "$3" <<'EOF' || fail "python3 could not write $2"
import json, sys
d = json.load(open(sys.argv[1]))
def gate(name):
    return next(g for g in d["gates"] if g["name"] == name)
def term(g, name):
    return next(t for t in g["terms"] if t["term"] == name)
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=2)
EOF
}

a=$work/a.json
"$bin" gate run --fixtures "$(dirname "$0")/../../fixtures" 'gdn2.cpu-chunk.t40-c16.*' \
  'kda.cpu-recurrent.t256-c16.bwd' --report "$a" >/dev/null
[[ -s $a ]] || {
  echo "FAIL: deltaproof gate run wrote no report"
  exit 1
}

# --- show ---------------------------------------------------------------------
expect 0 "^tool +deltaproof [0-9.]+$" "^commit +([0-9a-f]{40}(\+dirty)?|unknown)$" "^host +" \
  "^device +cpu$" "^created +[0-9-]{10}T[0-9:]{8}Z$" "^command +.*gate run" \
  "^gate / term +rel +bar +margin +worst index +status$" \
  "^gdn2\.cpu-chunk\.t40-c16\.bwd +PASS +\(oracle bwd, cpu-chunk, f32" \
  "^  dq +[0-9.]+e-[0-9]+ +5\.0e-05 +[0-9.]+ +\(b,t,h,i\)=\([0-9]+,[0-9]+,[0-9]+,[0-9]+\) +pass$" \
  "^  dh0 .*\(b,h,i,j\)=\(" \
  "^ +chunks: [0-9.]+e-[0-9]+ [0-9.]+e-[0-9]+ [0-9.]+e-[0-9]+$" \
  "^ +chunks:( [0-9.]+e-[0-9]+){8}$" \
  "^gdn2\.cpu-chunk\.t40-c16\.causality +PASS" "^  o\[t<16\] unchanged +0 +bitwise +- +- +pass$" \
  "^  dh0 split at t=16 +0 +bitwise" "^  o heads but 0 moved .*bitwise" \
  "^  dq split at t=8 vs oracle +[0-9.]+e-[0-9]+ +5\.0e-05 +[0-9.]+ +\(b,t,h,i\)=" \
  "^6 gates: 6 passed, 0 failed, 0 skipped .*verdict PASS$" -- report show "$a"

# a red gate: its term row, the chunk above the bar, and its reasons after the table
red=$work/red.json
edit "$a" "$red" '
g = gate("gdn2.cpu-chunk.t40-c16.bwd"); t = term(g, "dq")
g["verdict"] = d["verdict"] = "fail"
t.update(status="fail", rel=0.125, margin=4e-4, per_chunk_rel=[2e-7, 0.125, 3e-7],
         message="dq: rel 1.250e-01 above bar 5.000e-05 worst at (b,t,h,i) = (0,20,1,3); chunks above the bar: 1 of 3")
g["reasons"] = [t["message"]]'
expect 0 "^gdn2\.cpu-chunk\.t40-c16\.bwd +FAIL" "^  dq +1\.25e-01 +5\.0e-05 +0\.0004 .* fail$" \
  "chunks: 2\.0e-07 1\.2e-01 3\.0e-07 +\(above the bar: chunk 1 of 3\)" "^why not green:" \
  "^       dq: rel 1\.250e-01 above bar" "6 gates: 5 passed, 1 failed, 0 skipped .*verdict FAIL" \
  -- report show "$red"

# --- diff ---------------------------------------------------------------------
expect 0 "^gate / term +rel A +rel B +ratio +change$" "^  dq .* 1 +same$" \
  "6 gates in both, 0 with a changed verdict; 0 only in A, 0 only in B; terms: 0 worse, 0 better" \
  "nothing that passed in A fails in B" -- report diff "$a" "$a"
expect 1 "^gdn2\.cpu-chunk\.t40-c16\.bwd +VERDICT pass -> fail$" \
  "^  dq +[0-9.]+e-[0-9]+ +1\.25e-01 +[0-9.e+]+ +worse \(pass -> fail\)$" \
  "passed in A, not in B: gate gdn2\.cpu-chunk\.t40-c16\.bwd; gdn2\.cpu-chunk\.t40-c16\.bwd term dq" \
  -- report diff "$a" "$red"
# turned green: better, exit 0
expect 0 "VERDICT fail -> pass" "^  dq .* better \(fail -> pass\)$" -- report diff "$red" "$a"
# a rel that grows by more than 10% but stays under the bar is worse, and not red
grown=$work/grown.json
edit "$a" "$grown" '
t = term(gate("kda.cpu-recurrent.t256-c16.bwd"), "dk"); t["rel"] *= 1.5
t = term(gate("kda.cpu-recurrent.t256-c16.bwd"), "dv"); t["rel"] *= 1.05
t = term(gate("kda.cpu-recurrent.t256-c16.bwd"), "dg"); t["rel"] *= 0.5'
expect 0 "^  dk .* 1\.5 +worse$" "^  dv .* 1\.05 +same$" "^  dg .* 0\.5 +better$" \
  "terms: 1 worse, 1 better" -- report diff "$a" "$grown"
# gates and terms in one report only
fewer=$work/fewer.json
edit "$a" "$fewer" '
d["gates"] = [g for g in d["gates"] if g["name"] != "gdn2.cpu-chunk.t40-c16.fwd"]
g = gate("gdn2.cpu-chunk.t40-c16.bwd"); g["terms"] = [t for t in g["terms"] if t["term"] != "dw"]'
expect 0 "^only in A: gdn2\.cpu-chunk\.t40-c16\.fwd \(pass\)$" "^  dw .*only in A$" \
  "5 gates in both, 0 with a changed verdict; 1 only in A, 0 only in B" -- report diff "$a" "$fewer"
expect 0 "^only in B: gdn2\.cpu-chunk\.t40-c16\.fwd \(pass\)$" "^  dw .*only in B$" -- \
  report diff "$fewer" "$a"

# --- html: one self-contained page; diff --html --------------------------------
page=$work/page.html
expect 0 "^wrote .*page\.html \([0-9.]+ kB\)$" -- report html "$a" "$red" -o "$page"
head -c 15 "$page" | grep -q '^<!doctype html>' || fail "report html: $page is not an HTML page"
grep -q 'data-name="gdn2.cpu-chunk.t40-c16.bwd"[^>]*data-verdict="fail"' "$page" ||
  fail "report html: the red gate's row is not in the page"
grep -q '<td class="num">1.25e-01</td>' "$page" || fail "report html: the red term's rel is not shown"
grep -Eq '(src|href)="[^#]|url\(|@import' "$page" && fail "report html: the page refers to another file"
expect 1 "^wrote .*diff\.html" "passed in A, not in B" -- report diff "$a" "$red" --html "$work/diff.html"
grep -q 'passed in A, not in B' "$work/diff.html" || fail "report diff --html: no turned-red list"
expect 2 "Run 'deltaproof --help'" -- report html "$a"
expect 2 "no-such-folder/page\.html" -- report html "$a" -o "$work/no-such-folder/page.html"

# --- bad input: exit 2 and a sentence naming the file and the problem ---------
echo "not json {" >"$work/text.json"
echo '{"schema": "deltaproof-report/2", "gates": []}' >"$work/v2.json"
echo '{"gates": []}' >"$work/no-schema.json"
edit "$a" "$work/no-verdict.json" 'del gate("gdn2.cpu-chunk.t40-c16.bwd")["verdict"]'
edit "$a" "$work/no-rel.json" 'del term(gate("gdn2.cpu-chunk.t40-c16.bwd"), "dq")["rel"]'
for command in show diff html; do
  args=()
  [[ $command == diff ]] && args=("$a")
  [[ $command == html ]] && args=(-o "$work/bad.html" "$a")
  expect 2 "absent\.json: no such file" -- report "$command" "${args[@]}" "$work/absent.json"
  expect 2 "text\.json: not JSON \(parse error at line 1" -- report "$command" "${args[@]}" "$work/text.json"
  expect 2 "v2\.json: not a deltaproof-report/1 report: its schema is \"deltaproof-report/2\"" -- \
    report "$command" "${args[@]}" "$work/v2.json"
  expect 2 "no-schema\.json: not a deltaproof-report/1 report: it has no 'schema' field" -- \
    report "$command" "${args[@]}" "$work/no-schema.json"
  expect 2 "no-verdict\.json: gate [0-9]+ \('gdn2\.cpu-chunk\.t40-c16\.bwd'\) has no 'verdict' field" -- \
    report "$command" "${args[@]}" "$work/no-verdict.json"
  expect 2 "no-rel\.json: gate [0-9]+ \('gdn2\.cpu-chunk\.t40-c16\.bwd'\), term 'dq' has no 'rel' field" -- \
    report "$command" "${args[@]}" "$work/no-rel.json"
done
[[ -e $work/bad.html ]] && fail "report html wrote a page for a bad input"
expect 2 "text\.json: not JSON" -- report diff "$work/text.json" "$a"
expect 2 "Run 'deltaproof --help'" -- report diff "$a"
expect 2 "Run 'deltaproof --help'" -- report show

# --- colour only on a terminal --------------------------------------------------
if "$bin" report diff "$a" "$red" | grep -q $'\033'; then
  fail "report diff wrote colour codes into a pipe"
fi

finish "report CLI"
