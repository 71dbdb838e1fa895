#!/bin/bash
# Two deltaproof builds on the production fixtures at B1 T32768 H1 (OPS, default "gdn2 kda"; SHAPE
# "t4096" takes B4 T4096 H16 instead, and .carry/noise should then hold reports/gpu/1fa34fb/noise): each
# fixture generated once (scripts/gpu-production.sh, about 100 s each) with the noise models of
# .carry/noise (39dd1dd's), both builds' cuda-tc bwd gates on it, and for gdn2 both builds' outputs
# and scripts/alpha_contributions.py on db in chunk 337 (reports/gpu/562c4b6's red), each build
# against the other (T32768 only). NEW and OLD name the builds (stripped, xz'd; OLD "" runs NEW
# alone); by default .carry/next's (build.sh
# of a pending patch) and 562c4b6's as built
# (.carry/triage/deltaproof-main.xz, the red reference). reports/gpu/ecdfdf4/triage was this
# comparison with NEW a 562c4b6 tree built with TcConfig::kSpanLimit = 0 (every diagonal block
# pairwise in f32, the arithmetic before 28dd87e), OPS=gdn2; reports/gpu/512b3d8/t32768 with NEW
# the two-part diagonal operands (landed in 46bd0d7). A device call, carry [".carry"];
# BUDGET seconds (default 300) bound the generation of every fixture after the first:
#   bash kernels/cuda/pending/production-t32768.sh
# Everything lands in $OUT/production-t32768.tar.xz and $OUT/production-summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../../.."
shape=${SHAPE:-t32768}
builds=new
[[ -n ${OLD-x} ]] && builds="new old"
o=/tmp/production-t32768
deadline=$((SECONDS + ${BUDGET:-300}))
mkdir -p $o build/bin production/noise
xz -dc "${NEW:-.carry/next/deltaproof.xz}" >$o/deltaproof-new && chmod +x $o/deltaproof-new
[[ $builds == *old* ]] && xz -dc "${OLD:-.carry/triage/deltaproof-main.xz}" >$o/deltaproof-old &&
  chmod +x $o/deltaproof-old
cp $o/deltaproof-new build/bin/deltaproof
cp .carry/noise/*.json production/noise/
s() { echo "$*" | tee -a $o/summary.txt; cp $o/summary.txt "${OUT:?}/production-summary.txt"; }
first=1
for op in ${OPS:-gdn2 kda}; do
  if ((!first && deadline - SECONDS < 150)); then
    s "$op skipped: $((deadline - SECONDS)) s left"
    break
  fi
  first=0
  PRODUCTION_NOISE_IN=.carry/noise PRODUCTION_ONLY="$op/$shape*" PRODUCTION_STEPS=1 \
    bash scripts/gpu-production.sh $o/gen-$op >$o/gen-$op.txt 2>&1
  s "gen $op exit $?: $(grep gen-production $o/gen-$op/summary.txt)"
  fixture=$(ls production/$op/$shape*.safetensors | head -n 1)
  for v in $builds; do
    $o/deltaproof-$v gate run --fixtures production "$op.cuda-tc.$shape*.bwd" \
      --noise-cache production/noise --report $o/gates-$op-$v.json >$o/gates-$op-$v.txt 2>&1
    s "gate run $op ($v) exit $?: $(grep -E '^(PASS|FAIL)' $o/gates-$op-$v.txt)"
    [[ $op == gdn2 && $shape == t32768 ]] && $o/deltaproof-$v run --backend cuda-tc --fixture "$fixture" \
      --out $o/$v.safetensors >$o/run-$v.txt 2>&1
  done
  if [[ $op == gdn2 && $shape == t32768 && $builds == *old* ]]; then
    for pair in "new old" "old new"; do
      set -- $pair
      python3 scripts/alpha_contributions.py "$fixture" $o/$1.safetensors --term db --chunk 337 \
        --compare $o/$2.safetensors >$o/alpha-db-337-$1.txt 2>&1
      s "alpha_contributions ($1 against $2) exit $?: $(head -n 2 $o/alpha-db-337-$1.txt | tr '\n' ' ')"
    done
  fi
  rm -f production/$op/*.safetensors $o/*.safetensors
done
rm -f $o/deltaproof-*
tar -cJf "$OUT/production-t32768.tar.xz" -C /tmp production-t32768
