#!/usr/bin/env bash
# scripts/test.sh — set up, build, and run every test: ctest (unit tests, CLI
# tests, `gen --check fixtures/`, `falsify patch` in a scratch worktree), the
# Python load check of every committed fixture, the Python package's pytest
# tests (tests/python/package), the falsification campaign of
# the catalog on the CPU backends (falsify build, and `ctest -L falsify`), the
# HTML report in headless Chromium (tests/browser/html_report_test.py), and
# 60 seconds of libFuzzer on the safetensors reader.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== ctest"
# each label selects its tests (a label lost in discovery selects none)
for label in unit cpu kernels gate cli; do
  count=$(ctest --test-dir build -N -L "^$label\$" | sed -n 's/^Total Tests: //p')
  echo "label $label: $count tests"
  ((count > 0)) || { echo "ctest -L $label selects no test"; exit 1; }
done
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== Python: load every committed fixture with safetensors + numpy"
python3 scripts/check_fixtures.py fixtures
echo "== Python: falsify/mutants.py finds every operator's sites with libclang, and its"
echo "   schemata switched on match the hand edits"
python3 tests/python/mutants_test.py
echo "== Python: the package deltaproof (pip install ./python): fixtures, check_outputs green"
echo "   and red, bad input, and the report byte for byte the one \`gate check\` writes"
python3 -m pytest -p no:cacheprovider -q tests/python/package
echo "== Python: scripts/alpha_contributions.py finds a head's 1% scaling"
python3 tests/python/alpha_contributions_test.py
echo "== Python: scripts/ncu_phases.py sums a source page's stall samples by phase"
python3 tests/python/ncu_phases_test.py

echo "== Python: scripts/replay.py (the real-bug corpus, falsify/real-bugs.json) on a fake FLA"
echo "   history: a scaling bug caught by the gate, a crash by its message, compat edits recorded"
python3 tests/python/replay_test.py --deltaproof build/bin/deltaproof

echo "== falsify build: the fault catalog's campaign on the CPU backends"
cmake --preset falsify >/dev/null
cmake --build build-falsify -j "$(nproc)" --target deltaproof kernels_falsify_tests
# Baselines both ways, then every catalog fault (the CUDA ones are Ignored
# here: reports/gpu/ holds their campaign), judged against falsify/catalog.json.
./build-falsify/bin/deltaproof falsify run --report build-falsify/falsify-cpu.json
./build-falsify/bin/deltaproof report show build-falsify/falsify-cpu.json
echo "== the HTML report (report html, report diff --html) in headless Chromium: no console"
echo "   error, nothing fetched, the JSON's numbers in the DOM; screenshots in build/html-test"
python3 tests/browser/html_report_test.py --deltaproof build/bin/deltaproof \
  --falsify-deltaproof build-falsify/bin/deltaproof --campaign build-falsify/falsify-cpu.json \
  --out build/html-test
echo "== precision classes (docs/PRECISION.md): graded and catalog faults against the"
echo "   noise-calibrated bf16 and tf32 gates"
# fixtures at a production width (K=V=128, chunk 64), made here: gdn2 and kda at T256
# (the bytes FLA was gated on: the oracle is deterministic), gdn at T200 (a partial
# last chunk of 8 rows)
precision=build-falsify/precision
mkdir -p "$precision"
fixtures_at_width=(gdn2-t256 kda-t256 gdn-t200)
for name in "${fixtures_at_width[@]}"; do
  for dtype in bf16 f32; do
    [[ -f $precision/$name-$dtype.safetensors ]] ||
      ./build/bin/deltaproof gen --op "${name%-t*}" --B 1 --T "${name#*-t}" --H 2 --K 128 --V 128 \
        --chunk 64 --dtype "$dtype" --seed 0 --out "$precision/$name-$dtype.safetensors" >/dev/null &
  done
done
wait
for class in bf16 tf32; do
  dtype=$([[ $class == bf16 ]] && echo bf16 || echo f32)
  # every graded fault of the class's size (1% bf16, 0.5% tf32) killed by its term, the
  # clean twin green, every cpu-chunk catalog fault killed under the class's contract
  ./build-falsify/bin/deltaproof falsify precision --precision "$class" \
    $(for name in "${fixtures_at_width[@]}"; do echo --fixture "$precision/$name-$dtype.safetensors"; done) \
    --report "build-falsify/precision-$class.json" 2>/dev/null
  # the committed fixtures (small widths): clean green, catalog faults killed; graded reported
  ./build-falsify/bin/deltaproof falsify precision --precision "$class" --graded-not-required \
    $(for f in fixtures/*/*.safetensors; do echo --fixture "$f"; done) \
    --report "build-falsify/precision-$class-committed.json" 2>/dev/null | tail -n 3
done

echo "== ctest -L falsify: every fault as its own test, the falsify CLI contract"
ctest --test-dir build-falsify -L falsify -j "$(nproc)" --output-on-failure

echo "== libFuzzer: safetensors reader, 60 s"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "$(nproc)"
corpus=$(mktemp -d)
cp tests/fuzz/corpus/* "$corpus"/
./build-fuzz/bin/safetensors_fuzz -max_total_time=60 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
rm -rf "$corpus"
echo "== all tests passed"
