#!/usr/bin/env bash
# The MarDyn strategy measurements of issue 4, on one GPU: launch sweeps on the LJ liquid at
# 1,048,576 particles, then every strategy on the Gaussian sigma 12 and 40 and on one particle
# per cell at 1,000,000 cells. JSON per run under $1 (default reports/bench/mardyn).
#   tools/bench_mardyn.sh [outdir] [quick]
set -euo pipefail
out=${1:-reports/bench/mardyn}
mkdir -p "$out"
py=${PYTHON:-python3}
opts=(--precision fp32 --warmup 2 --repeat 5 --min-time 0.1)
bench() {  # name, then harness bench arguments
  local tag=$1; shift
  $py -m harness bench "${opts[@]}" --json "$out/$tag.json" "$@" | grep -v '^\(GPU\|CPU\) ' | cut -c1-200
}
bench lj-base --strategies cells_fullshell_csr,c08_warp_csr,parity_reference --scenario lj_liquid --n large
for b in 32 64 128 256 512; do
  bench lj-tbp-$b --strategies tbp_parity --scenario lj_liquid --n large --launch block=$b
done
for w in 1 2 4 8 16; do
  bench lj-wbp-$w --strategies wbp_ --scenario lj_liquid --n large --launch warps=$w
done
bench lj-wbp-commit-atomic --strategies wbp_shared_,wbp_twopass_atomic --scenario lj_liquid --n large --launch commit=atomic
[ "${2:-}" = quick ] && exit 0
all=cells_fullshell_csr,c08_warp_csr,parity_reference,tbp_parity,wbp_
for spec in gaussian gaussian:sigma=40 one_per_cell; do
  bench "${spec//[:=]/-}" --strategies $all --scenario "$spec" --n large
  bench "${spec//[:=]/-}-commit-atomic" --strategies wbp_ --scenario "$spec" --n large --launch commit=atomic
done
