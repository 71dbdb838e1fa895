#!/bin/bash
# Builds what issue38-state-kernels.run.sh takes into .carry/v8 (run from anywhere, on the
# development machine, nvcc present): main's libdeltaproof_tc.so (build/, as it is), and in
# scratch worktrees the patch's deltaproof, cuda_tc_stages_tests, cuda_tc_tests and library, and
# cuda_tc_tests with the red patch on top; each stripped and xz'd. FLA's fla/ as
# .carry/fla.tar.xz from a fetched fla-org/flash-linear-attention (FLA_GIT_DIR, its git dir).
# About 10 minutes on two cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
pending=kernels/cuda/pending
out=.carry/v8
work=$(mktemp -d)
trap 'for w in patch red; do git worktree remove --force "$work/$w" 2>/dev/null || true; done; rm -rf "$work"' EXIT
mkdir -p "$out"
build() {  # dir targets...
  local dir=$1
  shift
  (cd "$dir" && cmake --preset release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null &&
    cmake --build build -j "$(nproc)" --target "$@" >/dev/null)
}
pack() {  # from to
  strip -o "$out/$2" "$1" && xz -T0 -6 -f "$out/$2"
}
worktree() {  # name patches...: a scratch checkout of HEAD with the patches applied
  local dir=$work/$1
  shift
  git worktree add -q --detach "$dir" HEAD
  for patch in "$@"; do git -C "$dir" apply "$root/$pending/$patch"; done
}
echo "main's library (build/)"
build "$root" deltaproof_tc
pack build/lib/libdeltaproof_tc.so libtc_old.so
echo "the patch's binaries"
worktree patch issue38-state-kernels.patch
build "$work/patch" deltaproof deltaproof_tc cuda_tc_stages_tests cuda_tc_tests
for f in deltaproof cuda_tc_stages_tests cuda_tc_tests; do pack "$work/patch/build/bin/$f" $f; done
pack "$work/patch/build/lib/libdeltaproof_tc.so" libtc_new.so
echo "the red build's cuda_tc_tests"
worktree red issue38-state-kernels.patch issue38-state-kernels-red.patch
build "$work/red" cuda_tc_tests
pack "$work/red/build/bin/cuda_tc_tests" cuda_tc_tests_red
if [[ -n ${FLA_GIT_DIR:-} ]]; then
  git --git-dir="$FLA_GIT_DIR" archive --format=tar HEAD fla | xz -9 >.carry/fla.tar.xz
fi
ls -la "$out" .carry/fla.tar.xz 2>/dev/null || true
