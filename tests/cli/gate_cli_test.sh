#!/usr/bin/env bash
# tests/cli/gate_cli_test.sh DELTAPROOF SOURCE_DIR — the CLI contract of
# `deltaproof gate`: list and run by glob, exit 0 when green, --repeat and
# --replay (fresh processes) green on a deterministic kernel, a JSON report
# written atomically beside nothing else, `gate check` of a candidate written
# by `deltaproof run` green, of the same candidate for another fixture an
# input error, and every usage or input error (unknown gate, bad precision,
# missing files, report folder that does not exist) exit 2 with a sentence.
# No colour codes when stdout is not a terminal.
set -uo pipefail
bin=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$src" || exit 2

expect 0 '^890 gates$' -- gate list
expect 0 '^gdn2.cpu-recurrent.t32-c16-bf16.bwd +oracle' -- gate list 'gdn2.cpu-recurrent.*bf16*'
expect 0 '^12 gates$' -- gate list '*.t40-c16.causality'
expect 2 "no gate matches 'nosuch\.\*'" -- gate run 'nosuch.*'
expect 0 '2 gates: 2 passed, 0 failed, 0 skipped' -- \
  gate run 'kda.cpu-chunk.t40-c16.bwd' 'kda.cpu-recurrent.t40-c16.bwd' --repeat 3 --replay 2
expect 0 'PASS gdn.cpu-chunk.t40-c16.split-call' -- gate run 'gdn.cpu-chunk.t40-c16.split-call'
expect 2 'folder does not exist' -- gate run 'kda.cpu-chunk.t40-c16.fwd' --report "$work/no/r.json"
# a mutation run's flags: no schemata in this build, so no point is reached; an oracle
# gate hashes its outputs in a mutation run only
expect 0 '1 gates: 1 passed' -- gate run 'kda.cpu-chunk.t40-c16.fwd' --mutant 7 --first-red \
  --mutant-coverage "$work/coverage.json" --report "$work/m.json"
[[ $(cat "$work/coverage.json") == "[]" ]] || fail "--mutant-coverage: $(cat "$work/coverage.json")"
grep -Eq '"outputs_sha256": "[0-9a-f]{64}"' "$work/m.json" || fail "no outputs_sha256 in the report"
expect 0 '1 gates: 1 passed' -- gate run 'kda.cpu-chunk.t40-c16.fwd' --report "$work/plain.json"
grep -q outputs_sha256 "$work/plain.json" && fail "a gate run outside a mutation run hashed its outputs"
expect 2 "--mutant: Value 70000 not in range" -- gate run 'kda.cpu-chunk.t40-c16.fwd' --mutant 70000

# the report: one JSON document, no temp file left behind
expect 0 "report: $work/r.json" -- gate run 'gdn2.cpu-chunk.t256-c16.*' --report "$work/r.json"
if python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['schema']=='deltaproof-report/1'; assert len(r['gates'])==2; assert all(g['verdict']=='pass' for g in r['gates']); assert len(r['gates'][1]['terms'][0]['per_chunk_rel'])==16" "$work/r.json"; then
  echo "ok: the report holds both gates, green, 16 chunk figures for o"
else
  fail "report content"
fi
leftovers=$(find "$work" -name '*.tmp*' | wc -l)
[[ $leftovers -eq 0 ]] && echo "ok: no temporary file left" || fail "$leftovers temporary files left"

# colour only on a terminal
output=$("$bin" gate run 'gdn.cpu-chunk.t16-c16.fwd' 2>&1)
if grep -q $'\033' <<<"$output"; then fail "colour codes on a pipe"; else echo "ok: no colour on a pipe"; fi

# gate check: a candidate from `deltaproof run` is green under f32; wrong fixture is an input error
"$bin" run --backend cpu-chunk --fixture fixtures/gdn/t40-c16.safetensors --out "$work/c.safetensors" >/dev/null
expect 0 'PASS check.gdn.c.safetensors' -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/c.safetensors"
expect 0 'dbeta +pass' -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/c.safetensors" --precision tf32
expect 2 "tensor 'o' has shape \[1, 40, 2, 8\], but the fixture needs \[1, 64, 2, 64\]" -- \
  gate check --fixture fixtures/gdn/t64-c64.safetensors --candidate "$work/c.safetensors"
expect 2 "unknown precision class 'fp8'" -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/c.safetensors" --precision fp8
expect 2 "no-such.safetensors" -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/no-such.safetensors"
# a candidate with o and ht only: checked forward only, and the verdict line says so
"$bin" run --backend cpu-chunk --fixture fixtures/gdn/t40-c16.safetensors --phase fwd \
  --out "$work/fwd.safetensors" >/dev/null
expect 0 'PASS check.gdn.fwd.safetensors .*\[forward only: no gradient compared\]' -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/fwd.safetensors" \
  --report "$work/fwd.json"
if grep -q '"gradients_compared": false' "$work/fwd.json" &&
  grep -q 'forward only: o and ht compared' "$work/fwd.json"; then
  echo "ok: the forward-only report says no gradient was compared"
else
  fail "forward-only report"
fi
# ... and asked for the gradients it lacks, red on each of them
expect 1 'dq +missing' -- \
  gate check --fixture fixtures/gdn/t40-c16.safetensors --candidate "$work/fwd.safetensors" \
  --phase bwd
# a candidate from another fixture of the same shape (another regime): red at the forward
expect 1 'dq +not-compared' -- \
  gate check --fixture fixtures/gdn/t32-c16-mild.safetensors --candidate "$("$bin" run --backend cpu-chunk --fixture fixtures/gdn/t32-c16.safetensors --out "$work/d.safetensors" >/dev/null; echo "$work/d.safetensors")"

finish "gate CLI"
