#!/usr/bin/env bash
# scripts/test.sh — set up, build, and run every test: ctest (unit tests, CLI
# tests, `gen --check fixtures/`), the Python load check of every committed
# fixture, and 60 seconds of libFuzzer on the safetensors reader.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== ctest"
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== Python: load every committed fixture with safetensors + numpy"
python3 scripts/check_fixtures.py fixtures

echo "== falsify build: every kernel fault point turns a fixture term red"
cmake --preset falsify >/dev/null
cmake --build build-falsify -j "$(nproc)" --target kernels_falsify_tests
./build-falsify/bin/kernels_falsify_tests

echo "== libFuzzer: safetensors reader, 60 s"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "$(nproc)"
corpus=$(mktemp -d)
cp tests/fuzz/corpus/* "$corpus"/
./build-fuzz/bin/safetensors_fuzz -max_total_time=60 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
rm -rf "$corpus"
echo "== all tests passed"
