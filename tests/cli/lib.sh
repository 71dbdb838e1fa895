# tests/cli/lib.sh — sourced by the CLI contract tests (tests/cli/*_test.sh)
# after they set $bin, the deltaproof executable: a scratch folder $work
# removed on exit, a failure count, `fail`, `expect` and `finish`.

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect CODE PATTERN... -- ARGS...: `deltaproof ARGS` exits CODE and its
# stdout+stderr has a line matching every PATTERN (grep -E).
expect() {
  local code=$1
  shift
  local patterns=()
  while [[ $1 != -- ]]; do
    patterns+=("$1")
    shift
  done
  shift
  local output status pattern unmatched=()
  output=$("$bin" "$@" 2>&1)
  status=$?
  for pattern in "${patterns[@]}"; do
    grep -qE -- "$pattern" <<<"$output" || unmatched+=("$pattern")
  done
  if [[ $status -eq $code && ${#unmatched[@]} -eq 0 ]]; then
    echo "ok: deltaproof $* -> $status"
  else
    fail "deltaproof $* -> exit $status (want $code), output:"
    echo "$output" | head -60 | sed 's/^/    /'
    for pattern in "${unmatched[@]}"; do echo "    (no line matches: $pattern)"; done
  fi
}

# finish WHAT: exit 1 with the count of failed cases, else say all passed.
finish() {
  if ((failures)); then
    echo "$failures $1 case(s) failed"
    exit 1
  fi
  echo "all $1 cases passed"
}

# tree_guard: remembers the source tree's state (every tracked file's hash,
# the worktree list, the status); check_tree WHEN fails if it changed since.
tree_snapshot() {
  git ls-files -z | xargs -0 sha256sum | sha256sum
  git worktree list --porcelain | grep -c '^worktree'
  git status --porcelain --untracked-files=no
}
tree_guard() { tree_before=$(tree_snapshot); }
check_tree() {
  if [[ $(tree_snapshot) == "$tree_before" ]]; then
    echo "ok: tracked files, worktree list and status unchanged ($1)"
  else
    fail "the source tree changed ($1)"
  fi
}
