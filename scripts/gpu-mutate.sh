#!/usr/bin/env bash
# scripts/gpu-mutate.sh start|wait OUT_DIR [MUTATE ARGS...] — a whole mutation
# run (falsify mutate, docs/MUTATION.md) on the GPU machine, whose 16 cores
# build the schemata and run the mutants 8 at once. That machine has no
# libclang and no .git: the mutants come listed from here (--mutants, made by
# falsify/mutants.py list), and the tree is copied, not checked out. fmt and
# CLI11, which its image lacks, come as a carried prefix (.carry/sysroot/usr),
# made here with:
#   for d in /usr/include/{fmt,CLI,valijson} /usr/lib/x86_64-linux-gnu/cmake/fmt \
#            /usr/share/cmake/CLI11; do mkdir -p .carry/sysroot$(dirname $d); cp -r $d .carry/sysroot$d; done
#   for f in libfmt.so libfmt.so.9; do   # real files: a link travels only as a link
#     cp /usr/lib/x86_64-linux-gnu/libfmt.so.9.* .carry/sysroot/usr/lib/x86_64-linux-gnu/$f; done
# and the mutants listed here: python3 falsify/mutants.py list FILE... \
#   --compile-commands build/compile_commands.json > .carry/mutants-cpu.json
#   start  builds deltaproof and starts the run in its own session (it outlives
#          the device call), logging to /tmp/mutate/run.log
#   wait   waits (at most WAIT_S seconds, default 540) for it, then copies the
#          log, the journal and the report (/tmp/mutate/report.json) to OUT_DIR
# The run keeps a journal (--journal /tmp/mutate/journal.jsonl): a run that
# does not end within the call still brings back every result it got, and
# JOURNAL=FILE (carried) starts a run from such a journal: the mutants it
# holds are not run again, and the report covers them all.
# PARALLEL sets how many mutants run at once (default 8).
# DELTAPROOF_GIT_COMMIT names the commit in the report; CUDA=ON builds this
# deltaproof with its CUDA backends (for --backend cuda-chunk), default OFF.
set -uo pipefail
verb=${1:?usage: scripts/gpu-mutate.sh start|wait OUT_DIR [ARGS...]}
out=${2:?usage: scripts/gpu-mutate.sh start|wait OUT_DIR [ARGS...]}
shift 2
cd "$(dirname "$0")/.."
mkdir -p "$out" /tmp/mutate
export CMAKE_PREFIX_PATH=$PWD/.carry/sysroot/usr
export LD_LIBRARY_PATH=$PWD/.carry/sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [[ $verb == start ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDELTAPROOF_TESTS=OFF -DDELTAPROOF_BENCH=OFF \
    -DDELTAPROOF_CUDA="${CUDA:-OFF}" -DDELTAPROOF_WERROR=OFF >/tmp/mutate/configure.log 2>&1 &&
    cmake --build build -j "$(nproc)" --target deltaproof >/tmp/mutate/build.log 2>&1 || {
    tail -n 30 /tmp/mutate/configure.log /tmp/mutate/build.log
    exit 1
  }
  pkill -f 'deltaproof falsify mutate' && sleep 2
  rm -f /tmp/mutate/journal.jsonl /tmp/mutate/report.json
  if [[ -n ${JOURNAL:-} ]]; then cp "$JOURNAL" /tmp/mutate/journal.jsonl || exit 1; fi
  setsid nohup build/bin/deltaproof falsify mutate --source . --fixtures fixtures --working-tree \
    --jobs "$(nproc)" --parallel "${PARALLEL:-8}" --report /tmp/mutate/report.json \
    --journal /tmp/mutate/journal.jsonl "$@" \
    >/tmp/mutate/run.log 2>&1 </dev/null &
  echo "started: $*"
  sleep 20
  tail -n 5 /tmp/mutate/run.log
  exit 0
fi
for _ in $(seq "${WAIT_S:-540}"); do
  pgrep -f 'deltaproof falsify mutate' >/dev/null || break
  sleep 1
done
cp /tmp/mutate/run.log "$out/run.log"
[[ -f /tmp/mutate/report.json ]] && gzip -c /tmp/mutate/report.json >"$out/report.json.gz"
[[ -f /tmp/mutate/journal.jsonl ]] && gzip -c /tmp/mutate/journal.jsonl >"$out/journal.jsonl.gz"
tail -n 12 /tmp/mutate/run.log
pgrep -f 'deltaproof falsify mutate' >/dev/null && echo "still running" || echo "finished"
