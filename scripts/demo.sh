#!/usr/bin/env bash
# scripts/demo.sh — the main job: set up, build, generate the canonical
# fixtures from the quad oracle into build/demo-fixtures with every self-check,
# print the self-check table, and show that they match the committed ones.
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
