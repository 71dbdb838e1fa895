#!/bin/bash
# kernels/cuda/pending/build.sh PATCH: builds what kernels/cuda/pending/run.sh takes into
# .carry/next (run on the development machine, nvcc present, build/ configured): main's
# libdeltaproof_tc.so (build/, as it is) as libtc_main.so, and in a scratch worktree with PATCH
# applied its deltaproof, cuda_tc_stages_tests, cuda_tc_tests and libdeltaproof_tc.so
# (libtc_patch.so); each stripped and xz'd. FLA's fla/ as .carry/fla.tar.xz from a fetched
# fla-org/flash-linear-attention (FLA_GIT_DIR, its git dir), where given. About 10 minutes on
# two cores.
set -euo pipefail
patch=$(realpath "${1:?usage: kernels/cuda/pending/build.sh PATCH}")
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
out=.carry/next
work=$(mktemp -d)
trap 'git worktree remove --force "$work/patch" 2>/dev/null || true; rm -rf "$work"' EXIT
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
echo "main's library (build/)"
build "$root" deltaproof_tc
pack build/lib/libdeltaproof_tc.so libtc_main.so
echo "the patch's binaries"
git worktree add -q --detach "$work/patch" HEAD
git -C "$work/patch" apply "$patch"
build "$work/patch" deltaproof deltaproof_tc cuda_tc_stages_tests cuda_tc_tests
for f in deltaproof cuda_tc_stages_tests cuda_tc_tests; do pack "$work/patch/build/bin/$f" $f; done
pack "$work/patch/build/lib/libdeltaproof_tc.so" libtc_patch.so
if [[ -n ${FLA_GIT_DIR:-} ]]; then
  git --git-dir="$FLA_GIT_DIR" archive --format=tar HEAD fla | xz -9 >.carry/fla.tar.xz
fi
ls -la "$out" .carry/fla.tar.xz 2>/dev/null || true
