#!/usr/bin/env bash
# tests/cli/falsify_patch_test.sh DELTAPROOF SOURCE_DIR — `deltaproof falsify
# patch`: a patch that scales dg by 1.001 in the CPU chunk kernel is applied to
# a scratch worktree, built there and killed by the bwd gates (fwd green); a
# comment-only patch survives (exit 1); a patch that does not apply is a
# CompileError; a file that is no diff is exit 2; a patch campaign interrupted
# (SIGINT) in the middle of its build exits 130 with its scratch worktree gone.
# Every time, the source tree's tracked files hash the same before and after
# and git lists no extra worktree.
set -uo pipefail
bin=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$src" || exit 2

# the tree's state: every tracked file's hash, the worktree list, the status
tree_guard

make_patch() {  # make_patch NAME SED-EXPRESSION FILE
  mkdir -p "$work/$1/a/$(dirname "$3")" "$work/$1/b/$(dirname "$3")"
  cp "$3" "$work/$1/a/$3"
  sed -e "$2" "$3" >"$work/$1/b/$3"
  (cd "$work/$1" && diff -u "a/$3" "b/$3") >"$work/$1.patch"
  [[ -s $work/$1.patch ]] || fail "make_patch $1: sed changed nothing"
}
make_patch dg-scaled 's/? MatF(-d.dG) : d.dG;/? MatF(-d.dG) : MatF(d.dG * 1.001f);/' kernels/cpu/chunk.cpp
make_patch comment 's|^// kernels/cpu/chunk.cpp|// kernels/cpu/chunk.cpp (a comment-only patch)|' kernels/cpu/chunk.cpp

gates=(--gates '*.t32-c16.*' --gates '*.t40-c16.*')
expect 0 'scratch worktree of HEAD' 'dg-scaled.patch on cpu-chunk: Killed' '^verdict PASS' -- \
  falsify patch "$work/dg-scaled.patch" "${gates[@]}" --expect-red '*.bwd' --expect-green '*.fwd' \
  --report "$work/patch.json"
if python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); (f,e),=r['files'].items(); m=e['mutants'][0]
assert f=='kernels/cpu/chunk.cpp' and m['status']=='Killed' and m['killedBy'], m
assert 'MatF(d.dG * 1.001f)' in e['source'].splitlines()[m['location']['start']['line']+2], 'location'
assert r['deltaproof']['tree']['unchanged']" "$work/patch.json"; then
  echo "ok: the patch report names the file, the hunk and the killing gates"
else
  fail "patch report content"
fi
check_tree "after a killed patch"

expect 1 'comment.patch on cpu-chunk: Survived' 'no gate went red' '^verdict FAIL' -- \
  falsify patch "$work/comment.patch" --gates '*.t32-c16.*'
check_tree "after a surviving patch"

sed 's/d.dG/d.dQ_nonexistent/' "$work/dg-scaled.patch" | sed 's/^ .*MatF/ stale context MatF/' \
  >"$work/stale.patch"
expect 1 'CompileError' 'does not apply to HEAD' -- falsify patch "$work/stale.patch" --gates '*.t32-c16.*'
echo "not a diff" >"$work/nodiff.patch"
expect 2 'not a unified diff' -- falsify patch "$work/nodiff.patch"
expect 2 'no such patch file' -- falsify patch "$work/none.patch"
check_tree "after refused patches"

# interrupted midway: SIGINT while the patched tree builds
"$bin" falsify patch "$work/dg-scaled.patch" --gates '*.t32-c16.*' >"$work/interrupted.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q 'building the patched tree' "$work/interrupted.log" && break
  sleep 0.1
done
sleep 2
kill -INT "$pid"
wait "$pid"
status=$?
scratch=$(sed -n 's/^scratch worktree of HEAD [0-9a-f]* at \(.*\)\/tree$/\1/p' "$work/interrupted.log")
if [[ $status -eq 130 && -n $scratch && ! -e $scratch ]] && grep -q '^interrupted' "$work/interrupted.log"; then
  echo "ok: interrupted mid-build: exit 130, scratch $scratch removed"
else
  fail "interrupted patch campaign: exit $status (want 130), scratch '$scratch'"
  sed 's/^/    /' "$work/interrupted.log"
fi
check_tree "after an interrupted patch campaign"

finish "falsify patch"
