#!/usr/bin/env bash
# scripts/demo.sh — the main job: set up, build, generate the canonical
# fixtures from the quad oracle into build/demo-fixtures with every self-check,
# print the self-check table, show that they match the committed ones, run
# every CPU gate on them (the CUDA gates run on a GPU machine:
# scripts/gpu-gates.sh), print the report of one multi-chunk gate term by
# term, run the falsification campaign of the fault catalog on the CPU
# backends (every fault killed as the catalog expects, the tree unchanged),
# gate a bf16-class candidate against its class's noise-calibrated bars, and
# write the gate reports and the campaign as HTML pages (report html).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rm -rf build/demo-fixtures
./build/bin/deltaproof gen --all --out build/demo-fixtures
echo
echo "committed fixtures vs this machine's regeneration:"
for f in $(cd fixtures && find . -name '*.safetensors' | sort); do
  if cmp -s "fixtures/$f" "build/demo-fixtures/$f"; then echo "  same bytes  ${f#./}";
  else echo "  DIFFERENT   ${f#./}"; exit 1; fi
done
echo
echo "== every CPU gate on the regenerated fixtures (report: build/demo-report.json)"
./build/bin/deltaproof gate run '*.cpu-*' --fixtures build/demo-fixtures \
  --repeat 2 --report build/demo-report.json
echo
echo "== one multi-chunk gate, term by term (16 chunks of 16 tokens)"
./build/bin/deltaproof gate run 'gdn2.cpu-chunk.t256-c16.bwd' --fixtures build/demo-fixtures \
  --replay 1 --report build/demo-one.json >/dev/null
./build/bin/deltaproof report show build/demo-one.json
echo
echo "== can these gates fail? The fault catalog's campaign on the CPU backends"
echo "   (falsify build; baselines both ways, then every fault judged against"
echo "   falsify/catalog.json; report: build-falsify/demo-falsify.json)"
cmake --preset falsify >/dev/null
cmake --build build-falsify -j "$(nproc)" --target deltaproof >/dev/null
./build-falsify/bin/deltaproof falsify run --fixtures build/demo-fixtures \
  --report build-falsify/demo-falsify.json
./build-falsify/bin/deltaproof report show build-falsify/demo-falsify.json
echo
echo "== precision classes (docs/PRECISION.md): a bf16-class candidate, the CPU twin under"
echo "   the bf16 contract, against bars and bias bands from the class's noise"
./build/bin/deltaproof run --backend cpu-chunk --precision bf16 \
  --fixture build/demo-fixtures/gdn2/t200-c64.safetensors --out build/demo-bf16.safetensors
./build/bin/deltaproof gate check --precision bf16 --fixture build/demo-fixtures/gdn2/t200-c64.safetensors \
  --candidate build/demo-bf16.safetensors --report build/demo-bf16.json
echo "   ... and graded faults applied to it: which does the bf16 class see?"
./build-falsify/bin/deltaproof falsify precision --precision bf16 --graded-not-required \
  --fixture build/demo-fixtures/gdn2/t200-c64.safetensors 2>/dev/null
echo
echo "== the reports as pages (one self-contained HTML file each: open it in a browser)"
./build/bin/deltaproof report html build/demo-report.json build/demo-one.json build/demo-bf16.json \
  -o build/demo-gates.html
./build/bin/deltaproof report html build-falsify/demo-falsify.json -o build/demo-campaign.html
echo "   gates:    file://$PWD/build/demo-gates.html"
echo "   campaign: file://$PWD/build/demo-campaign.html"
