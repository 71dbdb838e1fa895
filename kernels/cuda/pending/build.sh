#!/bin/bash
# kernels/cuda/pending/build.sh PATCH [RED_PATCH]: builds what kernels/cuda/pending/run.sh takes into
# .carry/next (run on the development machine, nvcc present, build/ configured, the tree clean:
# build/ is rebuilt from it): main's libdeltaproof_tc.so as libtc_main.so, and in a scratch worktree with PATCH
# applied its deltaproof, cuda_tc_stages_tests, cuda_tc_tests and libdeltaproof_tc.so
# (libtc_patch.so), and with RED_PATCH on top its cuda_tc_tests and cuda_tc_stages_tests
# (cuda_tc_tests_red, cuda_tc_stages_tests_red, which run.sh expects to fail); each stripped
# and xz'd. FLA's fla/ as .carry/fla.tar.xz from a fetched fla-org/flash-linear-attention
# (FLA_GIT_DIR, its git dir), where given. About 10 minutes on two cores.
set -euo pipefail
patch=$(realpath "${1:?usage: kernels/cuda/pending/build.sh PATCH [RED_PATCH]}")
red=${2:+$(realpath "$2")}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
out=.carry/next
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
echo "main's library (build/)"
build "$root" deltaproof_tc
pack build/lib/libdeltaproof_tc.so libtc_main.so
echo "the patch's binaries"
git worktree add -q --detach "$work/patch" HEAD
git -C "$work/patch" apply "$patch"
build "$work/patch" deltaproof deltaproof_tc cuda_tc_stages_tests cuda_tc_tests
for f in deltaproof cuda_tc_stages_tests cuda_tc_tests; do pack "$work/patch/build/bin/$f" $f; done
pack "$work/patch/build/lib/libdeltaproof_tc.so" libtc_patch.so
if [[ -n $red ]]; then
  echo "the red build's cuda_tc_tests and cuda_tc_stages_tests"
  git worktree add -q --detach "$work/red" HEAD
  git -C "$work/red" apply "$patch" "$red"
  build "$work/red" cuda_tc_tests cuda_tc_stages_tests
  pack "$work/red/build/bin/cuda_tc_tests" cuda_tc_tests_red
  pack "$work/red/build/bin/cuda_tc_stages_tests" cuda_tc_stages_tests_red
fi
if [[ -n ${FLA_GIT_DIR:-} ]]; then
  git --git-dir="$FLA_GIT_DIR" archive --format=tar HEAD fla | xz -9 >.carry/fla.tar.xz
fi
ls -la "$out" .carry/fla.tar.xz 2>/dev/null || true
