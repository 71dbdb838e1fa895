#!/bin/bash
# The production gates at B1 T32768 H1 (gdn2, then kda) for the build in .carry/next (build.sh of
# a pending patch, e.g. issue38-diagonal-split.patch) beside an older one
# (.carry/triage/deltaproof-main.xz, 562c4b6's), on the same fixtures and noise models
# (.carry/noise, 39dd1dd's), with scripts/alpha_contributions.py on each build's db in chunk 337
# of gdn2 against the other's. A device call, carry [".carry"]; BUDGET seconds (default 300)
# bound the kda fixture's generation, the last step:
#   bash kernels/cuda/pending/production-t32768.sh
# Everything lands in $OUT/production-t32768.tar.xz and $OUT/production-summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../../.."
o=/tmp/production-t32768
deadline=$((SECONDS + ${BUDGET:-300}))
mkdir -p $o build/bin production/noise
xz -dc .carry/next/deltaproof.xz >$o/deltaproof-new && chmod +x $o/deltaproof-new
xz -dc .carry/triage/deltaproof-main.xz >$o/deltaproof-old && chmod +x $o/deltaproof-old
cp $o/deltaproof-new build/bin/deltaproof
cp .carry/noise/*.json production/noise/
s() { echo "$*" | tee -a $o/summary.txt; cp $o/summary.txt "${OUT:?}/production-summary.txt"; }
for op in gdn2 kda; do
  if [[ $op == kda ]] && ((deadline - SECONDS < 150)); then
    s "kda skipped: $((deadline - SECONDS)) s left"
    break
  fi
  PRODUCTION_NOISE_IN=.carry/noise PRODUCTION_ONLY="$op/t32768*" PRODUCTION_STEPS=1 \
    bash scripts/gpu-production.sh $o/gen-$op >$o/gen-$op.txt 2>&1
  s "gen $op exit $?: $(grep gen-production $o/gen-$op/summary.txt)"
  fixture=$(ls production/$op/t32768*.safetensors | head -n 1)
  for v in new old; do
    $o/deltaproof-$v gate run --fixtures production "$op.cuda-tc.t32768*.bwd" \
      --noise-cache production/noise --report $o/gates-$op-$v.json >$o/gates-$op-$v.txt 2>&1
    s "gate run $op ($v) exit $?: $(grep -E '^(PASS|FAIL)' $o/gates-$op-$v.txt)"
    [[ $op == gdn2 ]] && $o/deltaproof-$v run --backend cuda-tc --fixture "$fixture" \
      --out $o/$v.safetensors >$o/run-$v.txt 2>&1
  done
  if [[ $op == gdn2 ]]; then
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
