#!/usr/bin/env bash
# scripts/test.sh — set up, build, and run every test: ctest (unit tests, CLI
# tests, `gen --check fixtures/`, `falsify patch` in a scratch worktree), the
# Python load check of every committed fixture, the falsification campaign of
# the catalog on the CPU backends (falsify build, and `ctest -L falsify`), and
# 60 seconds of libFuzzer on the safetensors reader.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== ctest"
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== Python: load every committed fixture with safetensors + numpy"
python3 scripts/check_fixtures.py fixtures

echo "== falsify build: the fault catalog's campaign on the CPU backends"
cmake --preset falsify >/dev/null
cmake --build build-falsify -j "$(nproc)" --target deltaproof kernels_falsify_tests
# Baselines both ways, then every catalog fault (the CUDA ones are Ignored
# here: reports/gpu/ holds their campaign), judged against falsify/catalog.json.
./build-falsify/bin/deltaproof falsify run --report build-falsify/falsify-cpu.json
./build-falsify/bin/deltaproof report show build-falsify/falsify-cpu.json
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
