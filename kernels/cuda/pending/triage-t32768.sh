#!/bin/bash
# The triage of reports/gpu/562c4b6/production's red: gdn2 B1 T32768 H1, cuda-tc's db slope in
# chunk 337 at 1.02x the bf16 band (+2.922e-3 at 39dd1dd, +3.653e-3 at 562c4b6). Suspect: 28dd87e
# took A and M's narrow diagonal blocks (fwd.intra, tc_bwd_tokens) from pairwise f32 to bf16
# operands on the tensor cores. A device call, carry [".carry"]:
#   bash kernels/cuda/pending/triage-t32768.sh
# .carry/triage holds two deltaproof binaries of 562c4b6's tree (stripped, xz'd): -main as built,
# -pair with TcConfig::kSpanLimit = 0 (every diagonal block whose decays are not all zero takes the
# pairwise f32 path, the arithmetic before 28dd87e); .carry/noise the noise models of 39dd1dd's
# T32768 fixtures. Generates the gdn2 T32768 fixture (about 100 s), gates both builds on it, writes
# both candidates and runs scripts/alpha_contributions.py on chunk 337's db, each against the
# other. Everything lands in $OUT/triage.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
o=/tmp/triage
mkdir -p $o build/bin production/noise
for v in main pair; do
  xz -dc .carry/triage/deltaproof-$v.xz >$o/deltaproof-$v && chmod +x $o/deltaproof-$v
done
cp $o/deltaproof-main build/bin/deltaproof
PRODUCTION_NOISE_IN=.carry/noise PRODUCTION_ONLY='gdn2/t32768*' PRODUCTION_STEPS=1 \
  bash scripts/gpu-production.sh $o/production >$o/gen.txt 2>&1
echo "gen exit $?" | tee -a $o/summary.txt
cp .carry/noise/*.json production/noise/
fixture=$(ls production/gdn2/t32768*.safetensors | head -n 1)
for v in main pair; do
  $o/deltaproof-$v gate run --fixtures production 'gdn2.cuda-tc.t32768*.bwd' \
    --noise-cache production/noise --report $o/gates-$v.json >$o/gates-$v.txt 2>&1
  echo "gate run ($v) exit $?: $(grep -E '^(PASS|FAIL)' $o/gates-$v.txt)" | tee -a $o/summary.txt
  $o/deltaproof-$v run --backend cuda-tc --fixture "$fixture" --out $o/$v.safetensors \
    >$o/run-$v.txt 2>&1
  echo "run ($v) exit $?" | tee -a $o/summary.txt
done
for pair in "main pair" "pair main"; do
  set -- $pair
  python3 scripts/alpha_contributions.py "$fixture" $o/$1.safetensors --term db --chunk 337 \
    --compare $o/$2.safetensors >$o/alpha-db-337-$1.txt 2>&1
  echo "alpha_contributions ($1 against $2) exit $?" | tee -a $o/summary.txt
done
rm -f $o/*.safetensors $o/deltaproof-*
tar -cJf "${OUT:?}/triage.tar.xz" -C /tmp triage
