#!/usr/bin/env bash
# tests/cli/run_cli_test.sh DELTAPROOF MAKE_BAD_INPUTS — the CLI contract of
# `deltaproof run`: a file holding only the inputs and cotangents is enough
# (op inferred, chunk 64), for both CPU backends and both phases, and the
# candidate holds the tensors of that phase; a missing tensor, a shape that
# disagrees, a NaN or inf, an unknown backend or phase, a bad chunk size and a
# missing --out folder each exit 2 with a sentence naming what to change, and
# write nothing. Needs no Python: the fixtures come from `deltaproof gen`, the
# broken variants from make_bad_inputs, and the candidate's names from its
# JSON header.
set -uo pipefail
bin=$1
make_bad_inputs=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The JSON header of a safetensors file: 8-byte little-endian length, then that many bytes.
header() {
  local length
  length=$(od -An -tu8 -N8 "$1" | tr -d ' ')
  tail -c +9 "$1" | head -c "$length"
}

# (Each check reads the header into a variable first: `grep -q` in a pipe would end
# the pipe early, and pipefail would count that as a failure.)

# has_tensor FILE NAME SHAPE: an F32 tensor NAME of SHAPE (e.g. 1,20,2,4) in FILE's header.
has_tensor() {
  local text
  text=$(header "$1")
  if grep -qE "\"$2\":\\{\"data_offsets\":\\[[0-9]+,[0-9]+\\],\"dtype\":\"F32\",\"shape\":\\[$3\\]\\}" <<<"$text"; then
    echo "ok: $(basename "$1") holds $2 F32 [$3]"
  else
    fail "$(basename "$1") lacks an F32 tensor $2 of shape [$3]; header:"
    head -c 600 <<<"$text" | sed "s/^/    /"
    echo
  fi
}

# lacks_tensor FILE NAME
lacks_tensor() {
  local text
  text=$(header "$1")
  if grep -q "\"$2\":{" <<<"$text"; then
    fail "$(basename "$1") holds $2, which its phase does not write"
  else
    echo "ok: $(basename "$1") has no $2"
  fi
}

# written FILE / not_written FILE
written() { [[ -s $1 ]] || fail "$(basename "$1") was not written"; }
not_written() { [[ ! -e $1 ]] || fail "$(basename "$1") was written by a refused run"; }

# B1 T20 H2 K4 V4: small, and more than one chunk at --chunk 16.
for op in gdn2 kda gdn; do
  mkdir "$work/$op"
  "$bin" gen --op "$op" --T 20 --K 4 --V 4 --out "$work/$op/fixture.safetensors" >/dev/null ||
    fail "deltaproof gen --op $op did not write a fixture"
  "$make_bad_inputs" "$work/$op/fixture.safetensors" "$work/$op" >/dev/null ||
    fail "make_bad_inputs did not write the variants of $op"
done
out=$work/out
mkdir "$out"

# --- inputs alone are enough: op inferred, chunk 64 unless --chunk ----------
for op in gdn2 kda gdn; do
  for backend in cpu-chunk cpu-recurrent; do
    for phase in fwd bwd; do
      candidate=$out/$op-$backend-$phase.safetensors
      expect 0 "^$backend $phase $op B1 T20 H2 K4 V4 chunk64 -> " -- run --backend "$backend" \
        --fixture "$work/$op/inputs-only.safetensors" --phase "$phase" --out "$candidate"
      written "$candidate"
    done
  done
done
expect 0 "^cpu-chunk bwd kda B1 T20 H2 K4 V4 chunk16 -> .*stages:" -- run --backend cpu-chunk \
  --fixture "$work/kda/inputs-only.safetensors" --chunk 16 --out "$out/kda-c16.safetensors"
# --phase fwd needs no cotangents; bwd does
expect 0 "^cpu-chunk fwd gdn2 " -- run --backend cpu-chunk --phase fwd \
  --fixture "$work/gdn2/no-cotangents.safetensors" --out "$out/fwd-only.safetensors"
expect 2 "no-cotangents.safetensors: tensor 'do' is missing; a gdn2 kernel needs q k v g b w h0 do dht" -- \
  run --backend cpu-chunk --fixture "$work/gdn2/no-cotangents.safetensors" --out "$out/refused.safetensors"
# bwd is the default phase
expect 0 "^cpu-recurrent bwd gdn " -- run --backend cpu-recurrent \
  --fixture "$work/gdn/fixture.safetensors" --out "$out/default-phase.safetensors"

# --- the candidates hold the tensors of their phase, F32 in FLA shapes -------
c=$out/gdn2-cpu-chunk-bwd.safetensors
has_tensor "$c" o 1,20,2,4
has_tensor "$c" ht 1,2,4,4
has_tensor "$c" dq 1,20,2,4
has_tensor "$c" dk 1,20,2,4
has_tensor "$c" dv 1,20,2,4
has_tensor "$c" dg 1,20,2,4
has_tensor "$c" db 1,20,2,4
has_tensor "$c" dw 1,20,2,4
has_tensor "$c" dh0 1,2,4,4
text=$(header "$c")
grep -q '"backend":"cpu-chunk"' <<<"$text" || fail "$(basename "$c") metadata lacks backend cpu-chunk"
grep -q '"phase":"bwd"' <<<"$text" || fail "$(basename "$c") metadata lacks phase bwd"
grep -q '"execution_record":"{\\"bwd.bk1\\":' <<<"$text" || fail "$(basename "$c") metadata lacks the execution record"
c=$out/gdn-cpu-recurrent-bwd.safetensors
has_tensor "$c" dg 1,20,2
has_tensor "$c" dbeta 1,20,2
lacks_tensor "$c" dw
for c in "$out"/*-fwd.safetensors "$out/fwd-only.safetensors"; do
  has_tensor "$c" o 1,20,2,4
  has_tensor "$c" ht 1,2,4,4
  lacks_tensor "$c" dq
  lacks_tensor "$c" dh0
done

# --- broken inputs: exit 2, the file, the tensor and the problem -------------
refused=$out/refused.safetensors
expect 2 "missing-w.safetensors: tensor 'w' is missing; a gdn2 kernel needs q k v g b w h0 do dht" -- \
  run --backend cpu-chunk --fixture "$work/gdn2/missing-w.safetensors" --out "$refused"
expect 2 "missing-beta.safetensors: cannot tell the op: no metadata .op., and neither b/w \(gdn2\) nor beta \(kda, gdn\) is present" -- \
  run --backend cpu-chunk --fixture "$work/kda/missing-beta.safetensors" --out "$refused"
expect 2 "wrong-shape-v.safetensors: tensor 'v' has shape \[1, 19, 2, 4\], but q and v say B=1 T=20 H=2 K=4 V=4, so it must be \[1, 20, 2, 4\]" -- \
  run --backend cpu-chunk --fixture "$work/gdn2/wrong-shape-v.safetensors" --out "$refused"
expect 2 "wrong-shape-v.safetensors: tensor 'v' has shape \[1, 19, 2, 4\].*must be \[1, 20, 2, 4\]" -- \
  run --backend cpu-recurrent --fixture "$work/kda/wrong-shape-v.safetensors" --out "$refused"
expect 2 "nan-in-g.safetensors: tensor 'g' has a NaN at index \[0, 0, 1, 1\]; inputs must be finite" -- \
  run --backend cpu-chunk --fixture "$work/gdn2/nan-in-g.safetensors" --out "$refused"
expect 2 "nan-in-g.safetensors: tensor 'g' has a NaN at index \[0, 2, 1\]; inputs must be finite" -- \
  run --backend cpu-recurrent --fixture "$work/gdn/nan-in-g.safetensors" --out "$refused"
expect 2 "inf-in-q.safetensors: tensor 'q' has an inf at index \[0, 19, 1, 3\]; inputs must be finite" -- \
  run --backend cpu-chunk --fixture "$work/kda/inf-in-q.safetensors" --out "$refused"
expect 2 "inf-in-q.safetensors: tensor 'q' has an inf" -- \
  run --backend cpu-chunk --phase fwd --fixture "$work/gdn2/inf-in-q.safetensors" --out "$refused"
not_written "$refused"

# --- bad options: exit 2 with what to pass instead --------------------------
good=$work/gdn2/inputs-only.safetensors
expect 2 "unknown backend 'cuda-magic'; the backends are: cpu-chunk, cpu-recurrent" -- \
  run --backend cuda-magic --fixture "$good" --out "$refused"
expect 2 "unknown phase 'sideways'; pass --phase fwd or --phase bwd" -- \
  run --backend cpu-chunk --phase sideways --fixture "$good" --out "$refused"
expect 2 "chunk size 48 is not supported; pass --chunk 16, 32 or 64" -- \
  run --backend cpu-chunk --chunk 48 --fixture "$good" --out "$refused"
expect 2 "chunk size 0 is not supported; pass --chunk 16, 32 or 64" -- \
  run --backend cpu-chunk --chunk 0 --fixture "$good" --out "$refused"
expect 2 "chunk size -16 is not supported; pass --chunk 16, 32 or 64" -- \
  run --backend cpu-recurrent --chunk -16 --fixture "$good" --out "$refused"
expect 2 "cannot write .*/nowhere/c.safetensors: the folder .*/nowhere does not exist; create it or choose another --out" -- \
  run --backend cpu-chunk --fixture "$good" --out "$work/nowhere/c.safetensors"
[[ ! -e $work/nowhere ]] || fail "a refused run created the --out folder"
expect 2 "absent.safetensors.*does not exist" -- \
  run --backend cpu-chunk --fixture "$work/absent.safetensors" --out "$refused"
echo "not a safetensors file" >"$work/text.safetensors"
expect 2 "text.safetensors" -- run --backend cpu-chunk --fixture "$work/text.safetensors" --out "$refused"
expect 2 "Run 'deltaproof --help'" -- run --backend cpu-chunk --fixture "$good"
not_written "$refused"
# the candidate may not overwrite the fixture it was computed from
before=$(sha256sum "$good" | cut -c1-64)
expect 2 "is the fixture itself; choose another path" -- run --backend cpu-chunk --fixture "$good" --out "$good"
[[ $(sha256sum "$good" | cut -c1-64) == "$before" ]] || fail "run overwrote its own fixture"

# the CPU twin under a precision contract; a backend that cannot emulate one refuses it
expect 0 "^cpu-chunk bwd gdn2 .* \\[bf16 contract\\]$" -- run --backend cpu-chunk \
  --fixture "$good" --precision bf16 --out "$work/bf16.safetensors"
expect 2 "cpu-recurrent runs f32 arithmetic only; the bf16 contract is emulated by cpu-chunk and cuda-chunk" -- \
  run --backend cpu-recurrent --fixture "$good" --precision bf16 \
  --out "$work/bf16r.safetensors"
expect 2 "unknown precision class 'fp8'" -- run --backend cpu-chunk \
  --fixture "$good" --precision fp8 --out "$work/fp8.safetensors"

finish "run CLI"
