#!/usr/bin/env bash
# scripts/setup.sh — installs everything deltaproof needs on a fresh Debian
# machine (run as root), then configures and builds build/ (Release).
# Dependencies come from Debian's packages and, for the Python-side checks, PyPI;
# last, it installs the Python package deltaproof from python/ (pip install ./python;
# torch, from PyPI, runs its candidate callables in the tests);
# Chromium (headless) for the HTML report's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make g++ clang libclang-rt-14-dev python3 python3-pip git
          libboost-dev libeigen3-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev
          libcli11-dev libfmt-dev libvalijson-dev
          chromium chromium-driver python3-selenium fonts-dejavu-core
          python3-clang libclang1-14 python3-dev pybind11-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! python3 -c 'import safetensors, numpy' 2>/dev/null; then
  echo "setup: installing safetensors and numpy from PyPI"
  python3 -m pip install --quiet safetensors numpy 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages safetensors numpy
fi

# scripts/replay.py validates its corpus and reports against their JSON schemas
if ! python3 -c 'import jsonschema' 2>/dev/null; then
  echo "setup: installing jsonschema from PyPI"
  python3 -m pip install --quiet jsonschema 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages jsonschema
fi

# the HTML report's browser test drives headless Chromium with selenium; a
# python3 other than Debian's (pyenv, say) takes it from PyPI
if ! python3 -c 'import selenium' 2>/dev/null; then
  echo "setup: installing selenium from PyPI"
  python3 -m pip install --quiet selenium 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages selenium
fi

# falsify/mutants.py finds mutation sites with libclang's Python bindings
if ! python3 -c 'import clang.cindex' 2>/dev/null; then
  echo "setup: installing libclang's Python bindings (clang 14) from PyPI"
  python3 -m pip install --quiet "clang==14.0" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "clang==14.0"
fi

# the Python package's tests (tests/python/package) run with pytest; ml_dtypes is
# numpy's bfloat16, which check_outputs takes
if ! python3 -c 'import pytest, ml_dtypes' 2>/dev/null; then
  echo "setup: installing pytest and ml_dtypes from PyPI"
  python3 -m pip install --quiet pytest ml_dtypes 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pytest ml_dtypes
fi

# the Python package's tests run candidate callables (deltaproof.check on the torch
# references of deltaproof.reference) with torch on the CPU. PyPI's wheel is the one
# these registries offer (it brings CUDA libraries a CPU machine leaves unused); a torch
# that already imports is kept
if ! python3 -c 'import torch' 2>/dev/null; then
  echo "setup: installing torch from PyPI"
  python3 -m pip install --quiet torch 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages torch
fi

# build/ also makes the Python package's compiled core (DELTAPROOF_PYTHON: the
# target deltaproof_py, for the python3 found here), which `pip install ./python`
# then takes from it without building anything else
cmake --preset release -DDELTAPROOF_PYTHON=ON \
  -DPython3_EXECUTABLE="$(python3 -c 'import sys; print(sys.executable)')" >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: installing the Python package deltaproof (pip install ./python)"
python3 -m pip install --quiet ./python 2>/dev/null ||
  python3 -m pip install --quiet --break-system-packages ./python
