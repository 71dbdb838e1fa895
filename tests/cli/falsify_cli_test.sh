#!/usr/bin/env bash
# tests/cli/falsify_cli_test.sh DELTAPROOF_FALSIFY DELTAPROOF SOURCE_DIR — the
# CLI contract of `deltaproof falsify list|run` and of `report show` on a
# campaign report: a campaign kills what the catalog says, every status can
# come out (a catalog with a wrong expectation gives Survived, KilledWrongTerm,
# GreenBroken: exit 1), a red clean baseline stops the campaign, --shard splits
# the catalog, a fault no selected backend holds exits 77 (ctest's skip), and
# usage errors exit 2 with a sentence. DELTAPROOF is a normal build, which
# refuses `falsify run`.
set -uo pipefail
falsify_bin=$1
normal_bin=$2
src=$3
bin=$falsify_bin
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$src" || exit 2

expect 0 '^32 faults' 'ds-not-handed-back +kernel +fault-point' 'ceil-div-off-by-one +kernel +fault-point' 'missing-barrier-bk2 +kernel +sync-build' 'missing-barrier-tc +kernel +sync-build' \
  'oracle-double-exp +oracle +generator' -- falsify list

# a campaign of three faults over both CPU backends, with a report
expect 0 'baseline cpu-chunk: 208 gates' 'clean 208/208 green, poison 208/208 red' \
  'dg-sign-flipped +cpu-chunk +Killed +[a-z0-9.-]+\.bwd dg margin' \
  'dg-sign-flipped +cpu-recurrent +Killed' 'oracle-double-exp +oracle +Killed' \
  'layout-swapped +cpu-recurrent +Killed' 'tracked files unchanged' '^verdict PASS' -- \
  falsify run --fault dg-sign-flipped --fault oracle-double-exp --fault layout-swapped \
  --report "$work/campaign.json"
if python3 - "$work/campaign.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schemaVersion"] == "2", r["schemaVersion"]
mutants = [m for f in r["files"].values() for m in f["mutants"]]
assert len(mutants) == 5, len(mutants)  # dg x2, layout x2, oracle x1
assert all(m["status"] == "Killed" and m["killedBy"] for m in mutants)
assert all(m["location"]["start"]["line"] > 1 for m in mutants)
d = r["deltaproof"]
assert d["tree"]["unchanged"] and d["baseline"]["ok"] and d["verdict"] == "pass"
assert any(s["smallest_fault"] == "dg-sign-flipped" for s in d["separation"])
PY
  echo "ok: the campaign report: Stryker schemaVersion 2, 5 mutants killed, located, tree unchanged"
else
  fail "campaign report content"
fi
expect 0 'falsification campaign' 'dg-sign-flipped +kernel +cpu-chunk +Killed' \
  'separation \(per gate' 'weak gates of' -- report show "$work/campaign.json"
expect 0 'kda.cpu-chunk.t64-c64.bwd +[0-9.e+-]+ +[0-9.e+-]+ +[0-9.e+-]+ +dg-sign-flipped dg' -- \
  report show "$work/campaign.json" --all-gates

# --shard i/n: shard 2 of 2 of these two faults runs the second alone
expect 0 '\[1/1\] dh0-not-written' -- falsify run --fault dg-sign-flipped --fault dh0-not-written \
  --shard 2/2 --backend cpu-chunk --gates '*.t32-c16.*'
expect 2 'expected i/n' -- falsify run --shard 3/2
expect 2 "unknown fault 'nosuch'.*ds-not-handed-back" -- falsify run --fault nosuch
expect 2 "unknown backend" -- falsify run --fault dg-sign-flipped --backend gpu-chunk
expect 77 'nothing to run' 'missing-barrier-bk2 +- +Ignored +lives in cuda-chunk' -- \
  falsify run --fault missing-barrier-bk2 --backend cpu-chunk --gates '*.t32-c16.*'

# every way a catalog expectation can break, each exit 1 naming the gate
python3 - "$src/falsify/catalog.json" "$work" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
def edit(name, fault, change):
    d = json.loads(json.dumps(c))
    change(next(f for f in d["faults"] if f["id"] == fault))
    json.dump(d, open(f"{sys.argv[2]}/{name}.json", "w"))
edit("survived", "dg-sign-flipped", lambda f: f["red"].append({"gates": "*.fwd"}))
edit("wrong-term", "dg-sign-flipped", lambda f: f["red"].__setitem__(0, {"gates": "*.bwd", "terms": ["dk"]}))
def green_broken(f):  # red expected on t40 alone, green on t32 (where dh0 is unwritten too)
    f["red"] = [{"gates": "*.t40-c16.bwd", "terms": ["dh0"]}]
    f["green"].append({"gates": "*.t32-c16.bwd"})
edit("green-broken", "dh0-not-written", green_broken)
edit("bad", "dh0-not-written", lambda f: f.__setitem__("class", "kernal"))
PY
expect 1 'dg-sign-flipped +cpu-chunk +Survived' 'gdn2.cpu-chunk.t32-c16.fwd must go red and stayed green' \
  '^verdict FAIL' -- falsify run --catalog "$work/survived.json" --fault dg-sign-flipped --gates '*.t32-c16.*'
expect 1 'dg-sign-flipped +cpu-chunk +KilledWrongTerm' 'is red on dg; expected red only on dk' -- \
  falsify run --catalog "$work/wrong-term.json" --fault dg-sign-flipped --gates '*.t32-c16.*'
expect 1 'dh0-not-written +cpu-chunk +GreenBroken' 't32-c16.bwd must stay green and went red' -- \
  falsify run --catalog "$work/green-broken.json" --fault dh0-not-written --gates '*.t32-c16.*' '*.t40-c16.bwd'
expect 2 "fault 'dh0-not-written': class 'kernal' is unknown" -- \
  falsify run --catalog "$work/bad.json" --fault dh0-not-written

# a clean baseline that is red (a fixture whose reference o moved) stops the campaign
mkdir -p "$work/fixtures/gdn2"
cp fixtures/manifest.json "$work/fixtures/"
for op in gdn2 kda gdn; do mkdir -p "$work/fixtures/$op"; cp fixtures/$op/*.safetensors "$work/fixtures/$op/"; done
python3 - "$work/fixtures/gdn2/t32-c16.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
start, end = header["o"]["data_offsets"]
at = 8 + n + start + 8 * 3  # the fourth f64 of o: scaled by 1.01
value = struct.unpack("<d", data[at:at + 8])[0]
data[at:at + 8] = struct.pack("<d", value * 1.01 + 1e-3)
open(path, "wb").write(bytes(data))
PY
expect 1 'clean 4/6 green' 'clean: gdn2.cpu-chunk.t32-c16.fwd is fail' 'the baseline failed, so no fault ran' -- \
  falsify run --fault dg-sign-flipped --backend cpu-chunk --gates 'gdn2.*.t32-c16.*' 'gdn2.*.t16-c16.*' \
  'gdn2.*.t40-c16.fwd' 'gdn2.*.t40-c16.bwd' --fixtures "$work/fixtures"

# a precision campaign's twin is a backend that rounds under a contract
pc_fixture=fixtures/gdn2/t64-c64.safetensors
expect 2 "twin is cpu-chunk or cuda-chunk" -- falsify precision --backend cpu-recurrent \
  --fixture "$pc_fixture"
# cuda-chunk needs a GPU (a build without the CUDA backends does not know it)
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 2 "cuda-chunk needs a CUDA GPU|unknown backend 'cuda-chunk'" -- falsify precision \
    --backend cuda-chunk --fixture "$pc_fixture"
fi

# a normal build has no fault points: it refuses a campaign
bin=$normal_bin
expect 2 'needs the falsify build' -- falsify run
expect 0 '^32 faults' -- falsify list

finish "falsify CLI"
