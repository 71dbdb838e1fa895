#!/usr/bin/env bash
# tests/cli/gen_cli_test.sh DELTAPROOF — the CLI contract of `deltaproof gen`:
# bad input exits 2 with a sentence that says what to change; a broken
# generator exits 1, names the failing check and writes nothing; --force
# writes a fixture marked unchecked; a good run writes the file and a report.
set -uo pipefail
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

small=(--T 20 --K 4 --V 4)
expect 2 "--K is 0.*pass --K N" -- gen --op gdn2 --T 8 --K 0 --out "$work/a.safetensors"
expect 2 "--T is 0.*pass --T N" -- gen --op gdn2 --T 0 --out "$work/a.safetensors"
expect 2 "unknown op 'gdn3'; pass --op gdn2, kda or gdn" -- gen --op gdn3 --T 8 --out "$work/a.safetensors"
expect 2 "unknown regime 'wild'; pass --regime default, mild, stress or edge" -- gen --regime wild --T 8 --out "$work/a.safetensors"
expect 2 "unknown dtype 'f16'; pass --dtype f32 or --dtype bf16" -- gen --dtype f16 --T 8 --out "$work/a.safetensors"
expect 2 "--chunk is 12.*16, 32 or 64" -- gen --chunk 12 --T 8 --out "$work/a.safetensors"
expect 2 "unknown --h0 'one'; pass --h0 drawn or --h0 zero" -- gen --h0 one --T 8 --out "$work/a.safetensors"
expect 2 "the folder .*/missing does not exist; create it or choose another --out" -- gen "${small[@]}" --out "$work/missing/a.safetensors"
expect 2 "needs --out" -- gen "${small[@]}"
expect 2 "Run 'deltaproof --help'" -- gen --T banana --out "$work/a.safetensors"
expect 2 "manifest.json does not exist" -- gen --check "$work"
# the f64 GPU reference: a sentence where there is no GPU (or no CUDA build),
# before anything is written; its options checked first
expect 2 "unknown --reference 'nope'; pass quad or gpu-f64" -- gen --reference nope --T 8 --out "$work/a.safetensors"
expect 2 "gpu-f64 (computes the reference on a CUDA GPU, and this machine has none|needs a build with the CUDA backends)" -- gen --reference gpu-f64 --T 8 --out "$work/a.safetensors"
expect 2 "--only 'zz\*' matches none of the production fixtures \(gdn2/t4096-c64-k128-b4h16-bf16" -- gen --production --only 'zz*' --out "$work/prod"
expect 2 "gpu-f64 (computes the reference on a CUDA GPU|needs a build with the CUDA backends)" -- gen --production --out "$work/prod"
expect 2 "--all, --production and --check are separate jobs" -- gen --production --all --out "$work/prod"
[[ ! -e $work/a.safetensors && ! -e $work/prod ]] || fail "a refused gpu-f64 run wrote something"

# a good fixture, then the same path again without --overwrite
expect 0 "determinism .* pass" -- gen --op kda "${small[@]}" --out "$work/good.safetensors" --report "$work/good.json"
[[ -s $work/good.safetensors && -s $work/good.json ]] || fail "good fixture or report missing"
grep -q '"status": "checked"' "$work/good.json" || fail "report lacks status checked"
expect 2 "good.safetensors exists; pass --overwrite" -- gen --op kda "${small[@]}" --out "$work/good.safetensors"
expect 0 "pass" -- gen --op kda "${small[@]}" --out "$work/good.safetensors" --overwrite
# --h0 zero: the initial state is zero, said in the metadata and in the command that remakes it
expect 0 "pass" -- gen --op gdn "${small[@]}" --h0 zero --out "$work/h0zero.safetensors" --report "$work/h0zero.json"
grep -q '"h0": "zero"' "$work/h0zero.json" || fail "the report's spec lacks h0 zero"
grep -q -- '--h0 zero' "$work/h0zero.safetensors" || fail "the fixture's command lacks --h0 zero"

# packed sequences and grouped value heads (issue 14): refused with a sentence,
# written with packed_vs_alone among the self-checks, run by cpu-chunk, checked by
# `gate check`
expect 2 "--HV is 3, but the value heads must be a multiple of the 2 key heads" -- gen "${small[@]}" --HV 3 --out "$work/a.safetensors"
expect 2 "--cu-seqlens 0,5,3: it must increase strictly" -- gen --K 4 --V 4 --cu-seqlens 0,5,3 --out "$work/a.safetensors"
expect 2 "--cu-seqlens 0,5,20: packed sequences need batch size 1, not 2" -- gen --B 2 --K 4 --V 4 --cu-seqlens 0,5,20 --out "$work/a.safetensors"
expect 2 "--cu-seqlens 0,5,20: it must end at the 30 tokens \(T\), not at 20" -- gen --T 30 --K 4 --V 4 --cu-seqlens 0,5,20 --out "$work/a.safetensors"
expect 2 "--cu-seqlens 1,5,20: it must start at 0, not 1" -- gen --K 4 --V 4 --cu-seqlens 1,5,20 --out "$work/a.safetensors"
expect 2 "Run 'deltaproof --help'" -- gen --K 4 --V 4 --cu-seqlens 0,x,20 --out "$work/a.safetensors"
[[ ! -e $work/a.safetensors ]] || fail "a refused packed spec wrote something"
expect 0 "packed_vs_alone .*pass" -- gen --op kda --K 4 --V 4 --H 1 --HV 2 --cu-seqlens 0,1,7,20 --out "$work/packed.safetensors"
grep -q -- '--HV 2 --cu-seqlens 0,1,7,20' "$work/packed.safetensors" || fail "the packed fixture's command lacks --HV and --cu-seqlens"
expect 0 "" -- run --backend cpu-chunk --fixture "$work/packed.safetensors" --out "$work/packed-run.safetensors"
expect 0 "PASS check.kda.packed-run.safetensors" -- gate check --fixture "$work/packed.safetensors" --candidate "$work/packed-run.safetensors"
# (the CUDA backends take it where a GPU is; here, in CI, there is none)
expect 2 "backend cuda-chunk needs a CUDA GPU|unknown backend 'cuda-chunk'" -- run --backend cuda-chunk --fixture "$work/packed.safetensors" --out "$work/packed-cuda.safetensors"

# an unwritable folder (skipped as root, who can write anywhere)
if [[ $(id -u) -ne 0 ]]; then
  mkdir "$work/locked" && chmod 555 "$work/locked"
  expect 2 "is not writable" -- gen "${small[@]}" --out "$work/locked/a.safetensors"
fi

# the double exp of background/000: refused, named, nothing written
expect 1 "self-check 'reverse_vs_forward_mode' failed.*nothing written" -- gen "${small[@]}" --inject-generator-fault double-exp --out "$work/bad.safetensors"
[[ ! -e $work/bad.safetensors ]] || fail "a refused fixture was written"
# a carry cut at the chunk boundary: refused by liveness
expect 1 "self-check 'liveness' failed" -- gen "${small[@]}" --chunk 16 --inject-generator-fault cut-carry --out "$work/cut.safetensors"
[[ ! -e $work/cut.safetensors ]] || fail "a refused fixture was written"
# --force writes it anyway, marked unchecked
expect 1 "writing the fixture marked 'unchecked'" -- gen "${small[@]}" --inject-generator-fault double-exp --force --out "$work/forced.safetensors"
grep -q '"status":"unchecked"' "$work/forced.safetensors" || fail "forced fixture not marked unchecked"

# gen --check: a folder whose fixture regenerates passes; one corrupted byte in
# a tensor fails, naming the file and the tensor
mkdir "$work/set"
"$bin" gen --op gdn --T 20 --out "$work/set/one.safetensors" >/dev/null
printf '{"fixtures": [{"file": "one.safetensors"}]}' >"$work/set/manifest.json"
expect 0 "1 of 1 fixtures regenerate byte for byte" -- gen --check "$work/set"
size=$(stat -c %s "$work/set/one.safetensors")
printf '\x01' | dd of="$work/set/one.safetensors" bs=1 seek=$((size - 1)) conv=notrunc status=none
expect 1 "FAIL one.safetensors: tensor 'v' differs in 1 of" -- gen --check "$work/set"
rm "$work/set/one.safetensors"
expect 1 "listed in the manifest but missing" -- gen --check "$work/set"

finish CLI
