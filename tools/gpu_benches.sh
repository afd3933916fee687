#!/usr/bin/env bash
# Named benchmark sets for tools/gpu_run.sh: bash tools/gpu_benches.sh NAME RESULTS_DIR.
# "before": the same points on the tree of an earlier commit unpacked in .before/ (strategies by
# their names of then), timed in the same call as the current tree.
set -u
name=$1
out=$2
PY=${PY:-python3}
common=(--min-time 0.1 --repeat 10 --quiet --out "$out/bench")
# the L1 figures of a kernel's loads under ncu (tools/ncu_metrics.py prints them as one line per kernel)
L1_METRICS=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
L1_METRICS=$L1_METRICS,smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
L1_METRICS=$L1_METRICS,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts.sum
L1_METRICS=$L1_METRICS,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct
L1_METRICS=$L1_METRICS,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
# warp states besides (tools/ncu_metrics.py: elig, lsb/issue, nsel/issue)
STALL_METRICS=smsp__warps_eligible.avg.per_cycle_active
STALL_METRICS=$STALL_METRICS,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
STALL_METRICS=$STALL_METRICS,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
# the SMs' active cycles against the elapsed ones, and the clock (tools/ncu_metrics.py: sm_act%, MHz)
CYCLE_METRICS=sm__cycles_active.avg,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second

ncu_points() {  # TAG POINT...: ncu_verlet for each PHASE:OUTPUTS:LAUNCH point, into $out/profile/ncu-TAG-*
  local tag=$1 v phase outs launch stem
  shift
  mkdir -p "$out/profile"
  for v in "$@"; do
    IFS=: read -r phase outs launch <<<"$v"
    stem="$out/profile/ncu-$tag-$phase-$outs-$launch"; stem=${stem//[=,]/-}
    ncu_verlet "$stem" "$phase" "$outs" "$launch" | sed "s|^|$phase $outs $launch: |"
  done
}

profile_points() {  # OUTPUTS:LAUNCH...: OpenMM's kernels, then `harness profile` of verlet_thread_padded at each
  # point (LJ 1M, fp32), into $out/profile
  local v launch
  $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile"
  for v in "$@"; do
    launch=${v#*:}
    $PY -m harness profile --strategy verlet_thread_padded --scenario lj_liquid --n large --outputs ${v%%:*} \
      ${launch:+--launch $launch} --out "$out/profile"
  done
}

cprune_md_check() {  # MDPREFIX: harness md of clusterpair_warp_padded without and with its inner list (LJ 1M,
  # fp32; $out/md/MDPREFIX-cp-*), then both cluster strategies' default kernels against .before, alternating
  local v rep tree tag hc cps=clusterpair_warp_padded,clusterpair_warp_newton3
  mkdir -p "$out/md"
  for v in prune=off prune=0.1 prune=0.1,rolling=2 prune=0.1,rolling=4; do
    $PY -m harness md --strategy clusterpair_warp_padded --launch $v --n large \
      --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/$1-cp-${v//[=,]/-}-1m-s28.json" | tail -1 \
      | sed "s|^|clusterpair_warp_padded $v 1M: |"
  done
  [ -d .before ] || return 0
  for rep in 1 2; do
    for tree in . .before; do
      tag=after hc=${HARNESS_COMMIT:-}
      [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
      (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench --strategies $cps \
        --scenario lj_liquid --n large --outputs forces,all --amortised 0 --name s28-cpcheck-$tag-$rep \
        "${common[@]}" | grep "clusterpair.*ok" | sed "s|^|$tag $rep: |")
    done
  done
}

ncu_verlet() {  # STEM PHASE OUTPUTS [LAUNCH]: one point of $VS (default verlet_thread_padded; LJ 1M, fp32) under
  # ncu ($METRICS, default L1_METRICS; $SECTION, a section besides): STEM.ncu-rep, STEM.csv (raw page), STEM.log;
  # prints ncu_metrics.py's lines for the phase's kernels
  local stem=$1 phase=$2 outs=$3 launch=${4:-} vs=${VS:-verlet_thread_padded}
  ncu --nvtx --nvtx-include "$phase/$vs/" --clock-control none --metrics ${METRICS:-$L1_METRICS} \
    ${SECTION:+--section $SECTION} -f -o "$stem" \
    $PY -m harness profile --inner --strategy $vs --scenario lj_liquid --n large \
    --precision fp32 --outputs $outs ${launch:+--launch $launch} > "$stem.log" 2>&1
  ncu --import "$stem.ncu-rep" --csv --page raw > "$stem.csv" 2>>"$stem.log"
  $PY tools/ncu_metrics.py "$stem.csv" | tail -n +2
}
bits_check() {  # [LARGE]: forces, energy, virial and pairs of seven strategies in every precision (LJ 4,000) and
  # the packed Verlet list at 30,000 in this tree and in .before, compared ($out/bits-{after,before}.txt); LARGE=1
  # adds LJ 1M (8,192 force blocks, so that the final reduction runs several rounds of its loads)
  local tree large=${1:-0}
  for tree in . .before; do
    (cd "$tree" && LARGE=$large PYTHONPATH=/tmp/site:$PWD $PY -c "import hashlib, os, numpy as np, strategies
from harness import scenarios
def h(a): return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]
for name, launch in (('verlet_thread_padded', {}), ('fullshell_thread_csr', {}), ('clusterpair_warp_padded', {}),
                     ('allpairs_thread_tiled', {}), ('parity_warpblock_twopass_mutex', {}), ('c08_warp_csr', {}),
                     ('verlet_thread_pairrows', {})):
    for prec in ('fp32', 'mixed', 'fixed', 'fp64'):
        p = scenarios.make('lj_liquid', 4000, seed=2, precision=prec)
        f = strategies.create(name, **launch).evaluate(p)
        print(name, prec, h(f.forces), repr(f.energy), h(f.virial), f.pairs)
p = scenarios.make('lj_liquid:density=0.1', 30000, seed=3, precision='fp32')
for out in ('forces', 'all'):
    f = strategies.create('verlet_thread_padded', layout='packed').evaluate(p, out)
    print('packed', out, h(f.forces), repr(f.energy), h(f.virial), f.pairs)
if os.environ['LARGE'] == '1':
    for prec in ('fp32', 'mixed', 'fixed'):
        p = scenarios.make('lj_liquid', 1048576, seed=2, precision=prec)
        for name, launch in (('verlet_thread_padded', {'layout': 'packed'} if prec == 'fp32' else {}),
                             ('clusterpair_warp_padded', {})):
            f = strategies.create(name, **launch).evaluate(p)
            print(name, prec, '1M', h(f.forces), repr(f.energy), h(f.virial), f.pairs)") \
      > "$out/bits-$( [ $tree = . ] && echo after || echo before).txt" 2>&1
  done
  cmp -s "$out/bits-after.txt" "$out/bits-before.txt" && echo "bits: the same in $(wc -l < "$out/bits-after.txt") outputs" \
    || { echo "bits DIFFER:"; diff "$out/bits-after.txt" "$out/bits-before.txt" | head -20; }
}

md_ab() {  # TAG [N STEPS LAUNCH]: harness md of the Verlet list at LJ N (default 1M, 2,000 steps, layout=packed;
  # fp32) in this tree and in .before, alternating, two runs each (md/TAG-{after,before}-REP.json)
  local rep tree tag hc n=${2:-large} steps=${3:-2000} launch=${4-layout=packed}
  mkdir -p "$out/md"
  for rep in 1 2; do
    for tree in . .before; do
      tag=after hc=${HARNESS_COMMIT:-}
      [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
      (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness md --strategy verlet_thread_padded \
        ${launch:+--launch $launch} --n $n --precision fp32 --steps $steps --sample $((steps / 2)) --quiet \
        --json "$out/md/$1-$tag-$rep.json" | tail -1 | sed "s|^|$tag $rep: |")
    done
  done
}

md_launches() {  # TAG LAUNCH...: harness md of the Verlet list at LJ 1M (fp32, 2,000 steps) for each launch,
  # alternating, two runs (md/TAG-<launch>-REP.json, the launch's , = : as _)
  local rep l tag=$1
  shift
  mkdir -p "$out/md"
  for rep in 1 2; do
    for l in "$@"; do
      $PY -m harness md --strategy verlet_thread_padded --launch $l --n large --precision fp32 --steps 2000 \
        --sample 1000 --quiet --json "$out/md/$tag-$(echo $l | tr ',=:' '___')-$rep.json" | tail -1 \
        | sed "s|^|$l $rep: |" | cut -c1-150
    done
  done
}

with_list_ab() {  # NAME [STRATEGY:ARGS...]: this tree against .before, alternating, two runs each: the with-list
  # columns (forces, all outputs) at LJ 1M, fp32 (bench/NAME-{after,before}-*) of the strategies named (default: the
  # packed Verlet list and the cluster pairs)
  local rep tree tag hc v name=$1
  shift
  local specs=("$@")
  [ ${#specs[@]} -gt 0 ] || specs=(verlet_thread_padded:--launch=layout=packed clusterpair_warp_padded:)
  for rep in 1 2; do
    for tree in . .before; do
      tag=after hc=${HARNESS_COMMIT:-}
      [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
      for v in "${specs[@]}"; do
        (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench --strategies ${v%%:*} \
          ${v#*:} --scenario lj_liquid --n large --outputs forces,all --amortised 0 \
          --name $name-$tag-${v%%_*}-$rep "${common[@]}" | grep " ok" | sed "s|^|$tag $rep: |")
      done
    done
  done
}

verlet_bits() {  # the Verlet list's forces, energy, virial and pairs in this tree and in .before, compared ($out/vbits-*.txt):
  # every precision at LJ 4,000 (split by entries) and 256,000 (a thread per row), layout=packed at 30,000 (gas) and 1M
  local tree
  for tree in . .before; do
    (cd "$tree" && PYTHONPATH=/tmp/site:$PWD $PY -c "import hashlib, numpy as np, strategies
from harness import scenarios
def h(a): return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]
for n in (4000, 256000):
    for prec in ('fp32', 'mixed', 'fixed', 'fp64'):
        p = scenarios.make('lj_liquid', n, seed=2, precision=prec)
        for out in ('forces', 'all'):
            f = strategies.create('verlet_thread_padded').evaluate(p, out)
            print(n, prec, out, h(f.forces), repr(f.energy), h(f.virial), f.pairs)
for spec, n in (('lj_liquid:density=0.1', 30000), ('lj_liquid', 1048576)):
    p = scenarios.make(spec, n, seed=3, precision='fp32')
    for out in ('forces', 'all'):
        f = strategies.create('verlet_thread_padded', layout='packed').evaluate(p, out)
        print('packed', n, out, h(f.forces), repr(f.energy), h(f.virial), f.pairs)") \
      > "$out/vbits-$( [ $tree = . ] && echo after || echo before).txt" 2>&1
  done
  cmp -s "$out/vbits-after.txt" "$out/vbits-before.txt" && echo "bits: the same in $(wc -l < "$out/vbits-after.txt") outputs" \
    || { echo "bits DIFFER:"; diff "$out/vbits-after.txt" "$out/vbits-before.txt" | head -20; }
}

points_ab() {  # TAG SPEC...: this tree against .before, alternating, two runs each: the Verlet list's build and
  # with-list columns (bench, forces; no amortised column) at each SPEC, scenario:n[:launch] (n a comma list)
  local rep tree tag hc spec sc n launch name=$1
  shift
  for rep in 1 2; do
    for tree in . .before; do
      tag=after hc=${HARNESS_COMMIT:-}
      [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
      for spec in "$@"; do
        IFS=: read -r sc n launch <<<"$spec"
        (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench --strategies verlet_thread_padded \
          ${launch:+--launch $launch} --scenario $sc --n $n --outputs forces --amortised 0 \
          --name $name-$sc$(echo $n | tr , -)${launch:+-$(echo $launch | tr ',=:' '___')}-$tag-$rep "${common[@]}" \
          | grep " ok" | sed "s|^|$tag $rep: |")
      done
    done
  done
}

trees_ab() {  # NAME TREE=COMMIT...: the with-list columns (forces, all outputs; LJ 1M, fp32, packed) and harness md
  # (LJ 1M, packed, 2,000 steps) of each tree unpacked in TREE ('.': this one), the trees alternating, two runs each
  # (bench/NAME-TREE-*, md/NAME-TREE-REP.json)
  local rep spec tree hc tag name=$1
  shift
  mkdir -p "$out/md"
  for rep in 1 2; do
    for spec in "$@"; do
      tree=${spec%%=*} hc=${spec#*=}
      tag=$( [ "$tree" = . ] && echo this || echo "${tree#.}")
      (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench --strategies verlet_thread_padded \
        --launch layout=packed --scenario lj_liquid --n large --outputs forces,all --amortised 0 \
        --name $name-$tag-$rep "${common[@]}" | grep " ok" | sed "s|^|$tag $rep: |")
      (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness md --strategy verlet_thread_padded \
        --launch layout=packed --n large --precision fp32 --steps 2000 --sample 1000 --quiet \
        --json "$out/md/$name-$tag-$rep.json" | tail -1 | sed "s|^|$tag $rep md: |")
    done
  done
}

ncu_tree() {  # TREE LABEL STEM LAUNCH: ncu_verlet of the forces flavour (LJ 1M, fp32) on the code in TREE, with the L1
  # and warp-state metrics; its figures printed by this tree's ncu_metrics.py, each line led by LABEL
  (cd "$1" && PYTHONPATH=/tmp/site:$PWD METRICS=$L1_METRICS,$STALL_METRICS ncu_verlet "$3" force forces "$4" > /dev/null)
  $PY tools/ncu_metrics.py "$3.csv" --match verlet_force | tail -n +2 | sed "s|^|$2: |"
}

build_ncu() {  # STEM: the build phase's kernels under ncu (LJ 1M, fp32, packed) in this tree and in .before
  # ($out/profile/STEM-{after,before}.*); prints ncu_metrics.py's lines
  local tree tag
  mkdir -p "$out/profile"
  for tree in . .before; do
    tag=$( [ "$tree" = . ] && echo after || echo before)
    (cd "$tree" && PYTHONPATH=/tmp/site:$PWD ncu --nvtx --nvtx-include "build/verlet_thread_padded/" --clock-control none \
      --metrics $L1_METRICS -f -o "$out/profile/$1-$tag" $PY -m harness profile --inner \
      --strategy verlet_thread_padded --scenario lj_liquid --n large --precision fp32 --outputs forces \
      --launch layout=packed > "$out/profile/$1-$tag.log" 2>&1
     ncu --import "$out/profile/$1-$tag.ncu-rep" --csv --page raw > "$out/profile/$1-$tag.csv" 2>>"$out/profile/$1-$tag.log"
     $PY tools/ncu_metrics.py "$out/profile/$1-$tag.csv" | tail -n +2 | sed "s|^|ncu build $tag: |")
  done
}

sanitize_each() {  # GREP COND CODE: the Python CODE under compute-sanitizer, each tool (SAN_TOOL in its environment
  # names it); COND 'split': memcheck and initcheck with the conditional upkeep, racecheck and synccheck with the
  # guarded launches (they do not follow conditional bodies: harness/sanitize.py, GUARDED_TOOLS); 0: guarded for all.
  # Prints the lines matching GREP, the summaries and each tool's exit status
  local t cond log rc
  for t in memcheck racecheck initcheck synccheck; do
    cond=0
    [ "$2" = split ] && case $t in memcheck|initcheck) cond=1 ;; esac
    log=$(SAN_TOOL=$t MDFORCE_CONDITIONAL=$cond compute-sanitizer --tool $t --error-exitcode 9 $PY -c "$3" 2>&1)
    rc=$?
    echo "$log" | grep -E "$1|ERROR SUMMARY|Error|error" | head -6
    echo "$t: exit $rc"
  done
}

adapt_build_ncu() {  # STEM: the strip build of the fused MD steps under ncu (LJ 1M, fp32, packed, skin 0.4), without
  # and with adapt=0.11:6 (40 steps, guarded launches: the builds that returned at once are listed too, the ones
  # that ran take over 100 us); $out/profile/STEM-<launch>.*
  local l stem
  mkdir -p "$out/profile"
  for l in layout=packed,skin=0.4 layout=packed,skin=0.4,adapt=0.11:6; do
    stem="$out/profile/$1-$(echo $l | tr ',=:' '___')"
    MDFORCE_CONDITIONAL=0 ncu --kernel-name regex:verlet_build --clock-control none \
      --metrics $L1_METRICS,$STALL_METRICS -f -o "$stem" $PY -m harness md --strategy verlet_thread_padded \
      --launch $l --n large --precision fp32 --steps 40 --sample 40 --quiet > "$stem.log" 2>&1
    ncu --import "$stem.ncu-rep" --csv --page raw > "$stem.csv" 2>>"$stem.log"
    $PY tools/ncu_metrics.py "$stem.csv" | tail -n +2 | awk '{for (i = 1; i < NF; i++) if ($i == "us" && $(i + 1) > 100) print}' \
      | sed "s|^|$l: |" 
  done
}

skin_sweep() {  # TAG: the packed Verlet list's three columns at seven skins (LJ 1M, fp32; bench/skin-TAG) and
  # harness md at skins 0.3, 0.4 and 0.5 (md/md-skinS-1m-TAG.json)
  local sk
  mkdir -p "$out/md"
  $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
    --outputs forces,all --sweep skin=0.05:0.1:0.15:0.2:0.3:0.4:0.5 --name skin-$1 "${common[@]}"
  for sk in 0.3 0.4 0.5; do
    $PY -m harness md --strategy verlet_thread_padded --launch layout=packed,skin=$sk --n large \
      --precision fp32 --steps 2000 --sample 1000 --quiet --json "$out/md/md-skin$sk-1m-$1.json" | tail -1 \
      | sed "s|^|skin $sk packed 1M: |"
  done
}

issue_figures() {  # TAG: issue 13's figures on this GPU: three columns at LJ 1M (packed) beside OpenMM's whole
  # step, 4,000 (defaults), harness md (upkeep conditional / guarded at 1M; 4,000), OpenMM's kernels under ncu;
  # unless NCU_OURS=0, the parts of a 1M step (tools/step_parts.py) and the packed force kernel (both flavours)
  # under ncu in the same call
  local tag=$1 cond outs
  mkdir -p "$out/md" "$out/profile"
  $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
    --outputs forces,all --peers openmm --name $tag-1m "${common[@]}"
  $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces,all \
    --name $tag-4k "${common[@]}"
  for cond in 1 0 1; do
    MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --launch layout=packed --n large \
      --precision fp32 --steps 2000 --sample 1000 --quiet --json "$out/md/md-$tag-cond$cond-1m.json" | tail -1 \
      | sed "s|^|cond=$cond packed 1M: |"
  done
  $PY -m harness md --strategy verlet_thread_padded --n 4000 --precision fp32 --steps 20000 --sample 10000 --quiet \
    --json "$out/md/md-$tag-4k.json" | tail -1 | sed "s|^|4,000: |"
  $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" 2>&1 | tail -4
  [ "${NCU_OURS:-1}" = 1 ] || return 0
  $PY tools/step_parts.py --strategy verlet_thread_padded --launch layout=packed --n large \
    --json "$out/md/parts-$tag-1m.json" 2>&1 | tail -12
  for outs in forces all; do
    ncu_verlet "$out/profile/ncu-$tag-$outs" force $outs layout=packed | sed "s|^|ncu $outs: |"
  done
}

case "$name" in
  ab)  # before/after at LJ 4,000 and 1,048,576, fp32, the strategies issue 12 names
    $PY -m harness bench --strategies fullshell_thread_csr,c08_warp_csr,parity_block_csr,parity_warpblock_shared_atomic \
      --scenario lj_liquid --n 4000,large --outputs all,forces --name after-lj "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies cells_fullshell_csr,c08_warp_csr,tbp_parity,wbp_shared_atomic --scenario lj_liquid --n 4000,large \
        --name before-lj "${common[@]}")
    fi ;;
  md)  # the MD loop: ms per step (graph replay between samples) at LJ 4,000 and 1,048,576, each precision
    for n in 4000 large; do
      for prec in fp32 mixed fp64; do
        $PY -m harness md --strategy ${MD_STRATEGY:-fullshell_thread_csr} --n $n --precision $prec --steps 2000 \
          --sample 500 --quiet --json "$out/bench/md-$n-$prec.json"
      done
    done ;;
  verlet)  # the Verlet list beside the CSR full shell: force with a built list and from scratch, tpp sweep
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs all,forces \
      --sweep tpp=1:2:4:8 --name verlet "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces \
      --sweep window=0:1 --name verlet-build "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n 4000,large --outputs all,forces \
      --name fullshell "${common[@]}"
    for n in 4000 large; do
      for s in verlet_thread_padded fullshell_thread_csr; do
        $PY -m harness md --strategy $s --n $n --precision fp32 --steps 2000 --sample 500 --quiet \
          --json "$out/bench/md-$s-$n.json"
      done
    done ;;
  three)  # the three timing columns (from scratch, with a built list, amortised per step) at LJ 4,000 and 1M
    $PY -m harness bench --strategies verlet_thread_padded,fullshell_thread_csr,c08_warp_csr,parity_warpblock_shared_atomic \
      --scenario lj_liquid --n 4000,large --outputs forces,all --name three "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 \
      --outputs forces,all --name three-tpp8 "${common[@]}" ;;
  cluster)  # the cluster pairs beside the Verlet list and the CSR full shell: three columns, split sweep, Gaussian
    $PY -m harness bench --strategies clusterpair_warp_padded,verlet_thread_padded,fullshell_thread_csr \
      --scenario lj_liquid --n 4000,large --outputs forces,all --name cluster "${common[@]}"
    $PY -m harness bench --strategies clusterpair_warp_padded --scenario lj_liquid --n 4000 --outputs forces \
      --sweep split=1:2:4:8 --launch block=256 --amortised 0 --name cluster-split "${common[@]}"
    $PY -m harness bench --strategies clusterpair_warp_padded,verlet_thread_padded,fullshell_thread_csr \
      --scenario gaussian --n large --outputs forces --name cluster-gauss "${common[@]}"
    for n in 4000 large; do
      $PY -m harness md --strategy clusterpair_warp_padded --n $n --precision fp32 --steps 2000 --sample 500 --quiet \
        --json "$out/bench/md-clusterpair-$n.json"
    done ;;
  n3)  # the cluster pairs with Newton3 (half list, atomics) beside the full list: three columns, split, Gaussian, MD
    $PY -m harness bench --strategies clusterpair_warp_newton3,clusterpair_warp_padded --scenario lj_liquid \
      --n 4000,large --outputs forces,all --name n3 "${common[@]}"
    $PY -m harness bench --strategies clusterpair_warp_newton3 --scenario lj_liquid --n 4000 --outputs forces \
      --sweep split=1:2:4:8 --launch block=256 --amortised 0 --name n3-split "${common[@]}"
    $PY -m harness bench --strategies clusterpair_warp_newton3,clusterpair_warp_padded --scenario gaussian --n large \
      --outputs forces --name n3-gauss "${common[@]}"
    for n in 4000 large; do
      $PY -m harness md --strategy clusterpair_warp_newton3 --n $n --precision fp32 --steps 2000 --sample 500 --quiet \
        --json "$out/bench/md-clusterpair-n3-$n.json"
    done ;;
  lists-peers)  # the list strategies' three columns with OpenMM's whole step in the same run (LJ 4,000 and 1M, fp32)
    $PY -m harness bench --strategies clusterpair_warp_newton3,clusterpair_warp_padded,verlet_thread_padded \
      --scenario lj_liquid --n 4000,large --outputs forces --peers openmm --name lists-peers "${common[@]}" ;;
  amort)  # the three columns of the list strategies and the CSR full shell, LJ 4,000 and 1M, forces only
    $PY -m harness bench --strategies clusterpair_warp_newton3,clusterpair_warp_padded,verlet_thread_padded,fullshell_thread_csr \
      --scenario lj_liquid --n 4000,large --outputs forces --name amort "${common[@]}" ;;
  layout-verlet)  # the Verlet list's layouts (its force kernel gathers neighbours in input order)
    for prec in fp32 fp64; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 32000,large --precision $prec \
        --outputs forces --sweep layout=aos4:aos3:soa --amortised 0 --name layout-verlet-$prec "${common[@]}"
    done ;;
  layout)  # position layouts (issue 15 item 3; seed 003's float3 vs float4, seeds 002/003's AoS vs SoA), fp32 and fp64
    for prec in fp32 fp64; do
      $PY -m harness bench --strategies fullshell_thread_csr,verlet_thread_padded --scenario lj_liquid --n 32000,large \
        --precision $prec --outputs forces --sweep layout=aos4:aos3:soa --amortised 0 --name layout-fs-$prec "${common[@]}"
      $PY -m harness bench --strategies allpairs_thread_tiled,allpairs_thread_naive --scenario lj_liquid --n 32000 \
        --precision $prec --outputs forces --sweep layout=aos4:aos3:soa --amortised 0 --name layout-ap-$prec "${common[@]}"
    done ;;
  claims-cells)  # the cell strategies' claims: views, c08 on inhomogeneous input, the MarDyn Newton3 modes and mutex
    $PY -m harness bench --strategies fullshell_thread_2d,fullshell_thread_nested,c08_thread_2d,c08_thread_nested,c08_warp_2d,c08_warp_nested,c08_thread_csr,c08_warp_csr,fullshell_thread_csr,parity_warpblock_shared_atomic,parity_warpblock_shared_mutex,parity_warpblock_twopass_atomic,parity_warpblock_twopass_mutex \
      --scenario lj_liquid --scenario gaussian --scenario gaussian:sigma=40 --n large --outputs forces --amortised 0 \
      --name claims-cells "${common[@]}" ;;
  claims-rest)  # claims-cells' inhomogeneous points that one call cannot fit at 10 repeats (c08_thread takes seconds there)
    $PY -m harness bench --strategies c08_thread_csr,c08_warp_csr,fullshell_thread_csr,parity_warpblock_shared_atomic,parity_warpblock_shared_mutex,parity_warpblock_twopass_atomic,parity_warpblock_twopass_mutex \
      --scenario gaussian --n large --outputs forces --amortised 0 --warmup 1 --repeat 3 --min-time 0 --quiet \
      --out "$out/bench" --name claims-rest-gauss
    $PY -m harness bench --strategies fullshell_thread_2d,fullshell_thread_nested,c08_thread_2d,c08_thread_nested,c08_warp_2d,c08_warp_nested,c08_thread_csr,c08_warp_csr,fullshell_thread_csr,parity_warpblock_shared_atomic,parity_warpblock_shared_mutex,parity_warpblock_twopass_atomic,parity_warpblock_twopass_mutex \
      --scenario gaussian:sigma=40 --n large --outputs forces --amortised 0 --warmup 1 --repeat 3 --min-time 0 --quiet \
      --out "$out/bench" --name claims-rest-gauss40 ;;
  claims)  # the seed claims' measurements on today's kernels (issue 15 item 4; python -m harness claims reads them)
    bash "$0" claims-cells "$out"
    $PY -m harness bench --strategies allpairs_thread_naive,allpairs_thread_tiled,fullshell_thread_csr,verlet_thread_padded \
      --scenario lj_liquid --n 4000,32000 --outputs all --amortised 0 --potential coordination:r0=1,n=6,dmax=2.5 \
      --name claims-coordination "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr,clusterpair_warp_newton3 --scenario lj_liquid --n large \
      --precision fp32,mixed,fp64 --outputs all --amortised 0 --name claims-precision "${common[@]}" ;;
  fixed)  # the fixed-point mode against fp32 and mixed (seed 003's quantization claim): every GPU strategy at LJ
    # 4,000 and 256,000 (a strategy's force phase with a built list, all outputs), the main ones at 1M and forces only
    $PY -m harness bench --strategies backend=cuda --scenario lj_liquid --n 4000,256000 --precision fp32,mixed,fixed \
      --outputs all --amortised 0 --min-time 0.05 --repeat 5 --quiet --out "$out/bench" --name fixed-all
    $PY -m harness bench --strategies fullshell_thread_csr,c08_warp_csr,parity_warpblock_shared_atomic,verlet_thread_padded,clusterpair_warp_padded,clusterpair_warp_newton3 \
      --scenario lj_liquid --n large --precision fp32,mixed,fixed --outputs forces,all --amortised 0 --name fixed-1m \
      "${common[@]}" ;;
  fixed-coord)  # verify: the fixed-point mode with the coordination potential, every strategy, small
    $PY -m harness verify --size small --precision fixed --potential coordination:r0=1,n=6,dmax=2.5 --quiet \
      --out "$out/verify-fixed-coordination" | tail -4 ;;
  tune)  # harness tune on three inputs (issue 16): the LJ liquid at 1M, the sigma-12 Gaussian at 1M, a file
    mkdir -p "$out/tune"
    $PY -m harness tune --scenario lj_liquid --n large --budget 60s --cache "$out/tune/cache.json" \
      --json "$out/tune/lj-1m.json" --quiet
    $PY -m harness tune --scenario gaussian --n large --budget 60s --cache "$out/tune/cache.json" \
      --json "$out/tune/gauss-1m.json" --quiet
    $PY -m harness export --scenario uniform --n 256000 --seed 3 --out /tmp/uniform-256k.xyz
    $PY -m harness tune --input /tmp/uniform-256k.xyz --budget 45s --cache "$out/tune/cache.json" \
      --json "$out/tune/file-256k.json" --quiet
    $PY -m harness tune --scenario lj_liquid --n large --seed 5 --budget 60s --cache "$out/tune/cache.json" --quiet ;;
  ab-s5)  # the fifth session's kernel edits (halving by shift, the Newton3 j-sum type) before and after, LJ 1M, fp32
    s5=fullshell_thread_csr,clusterpair_warp_newton3,verlet_thread_padded,c08_warp_csr
    $PY -m harness bench --strategies $s5 --scenario lj_liquid --n large --outputs all,forces --amortised 0 \
      --name after-s5 "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies $s5 --scenario lj_liquid --n large --outputs all,forces --amortised 0 --name before-s5 \
        "${common[@]}")
    fi ;;
  minb)  # the Verlet force kernel's register cap (minb: blocks per SM), both flavours, LJ 4,000 and 1M, fp32
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs all,forces \
      --sweep minb=0:10:12:16 --amortised 0 --name minb "${common[@]}" ;;
  batch)  # the Verlet force kernel's gathers in flight (batch) with and without a register cap (minb); tpp at 4,000
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs all,forces \
      --sweep batch=1:2:4:8 --sweep minb=0:12 --amortised 0 --name batch "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs all,forces \
      --sweep tpp=1:4:8 --sweep batch=1:4 --amortised 0 --name batch-tpp "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs all,forces --sweep minb=0:12 \
        --amortised 0 --name before-batch "${common[@]}")
    fi ;;
  s6)  # the sixth session's Verlet defaults beside the full shell and the Newton3 cluster pairs: three columns, LJ 4,000 and 1M
    $PY -m harness bench --strategies verlet_thread_padded,fullshell_thread_csr,clusterpair_warp_newton3 \
      --scenario lj_liquid --n 4000,large --outputs forces,all --name after-s6 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 \
      --outputs forces,all --name after-s6-tpp8 "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
        --name before-s6 "${common[@]}")
    fi ;;
  s7)  # the seventh session's Verlet list in cell order (positions gathered by the check, rows split by image) before
    # and after in one call: three columns at LJ 4,000 and 1M beside the full shell, the Newton3 cluster pairs and
    # OpenMM's whole step; the uniform liquid at 1M (input order random in space); tpp=8 at 4,000; the MD loop at 4,000
    $PY -m harness bench --strategies verlet_thread_padded,fullshell_thread_csr,clusterpair_warp_newton3 \
      --scenario lj_liquid --n 4000,large --outputs forces,all --peers openmm --name after-s7 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 \
      --outputs forces,all --name after-s7-tpp8 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded,fullshell_thread_csr --scenario uniform --n large \
      --outputs forces,all --name after-s7-uniform "${common[@]}"
    $PY -m harness md --strategy verlet_thread_padded --launch tpp=8 --n 4000 --precision fp32 --steps 2000 \
      --sample 500 --quiet --json "$out/bench/md-verlet-4000-s7.json"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
        --name before-s7 "${common[@]}"
       HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 --outputs forces,all \
        --name before-s7-tpp8 "${common[@]}"
       HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario uniform --n large --outputs forces,all \
        --name before-s7-uniform "${common[@]}")
    fi ;;
  uniform-s7)  # the Verlet list before and after it moved to cell order, on the uniform liquid at 1M (input order
    # random in space) and the LJ lattice at 1M (input order already local): with a built list, one call
    $PY -m harness bench --strategies verlet_thread_padded --scenario uniform --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --name after-s7-order "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario uniform --scenario lj_liquid --n large --outputs forces,all \
        --amortised 0 --name before-s7-order "${common[@]}")
    fi ;;
  san-verlet)  # compute-sanitizer's four tools on the Verlet list's three builds (make sanitize reaches the default only)
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios
p = scenarios.make('uniform', 2048, seed=1)
for b in ('strip', 'cell', 'warp'):
    r = strategies.create('verlet_thread_padded', build=b).evaluate(p)
    print(b, r.pairs)" || echo "sanitizer $t: FAILED"
    done ;;
  full)  # issue 16: `make bench SUITE=full` in slices of SWEEP_S seconds (default 540), named SWEEP_NAME: the partial
    # file carried in .sweep/ is resumed in $out/bench, where every finished point is appended as it ends, so a slice
    # killed by the stage's limit still brings back what it measured (copy it into .sweep/ before the next call)
    mkdir -p "$out/bench"
    cp .sweep/* "$out/bench/" 2>/dev/null
    timeout -k 10 -s INT ${SWEEP_S:-540} $PY -m harness bench --suite full --amortised 0 --name ${SWEEP_NAME:-full} \
      --out "$out/bench" --resume --min-time 0.1 --repeat 10 --max-checks-cpu 4e9 --quiet
    echo "sweep exit $?; $(($(wc -l <"$out/bench/${SWEEP_NAME:-full}.partial.jsonl" 2>/dev/null || echo 1) - 1)) points in the partial file" ;;
  default-amortised)  # the default suite with the per-MD-step column (the full sweep runs without it)
    $PY -m harness bench --suite default --name default-s6 --min-time 0.1 --repeat 10 --max-checks-cpu 4e9 \
      --out "$out/bench" --quiet ;;
  amortised-s6)  # the per-MD-step column at the tune inputs' periodic points (LJ 32,000, uniform 64,000), GPU strategies
    gpu=fullshell_thread_csr,fullshell_thread_2d,fullshell_thread_nested,c08_warp_csr,c08_warp_2d,c08_warp_nested
    gpu=$gpu,parity_block_csr,parity_warpblock_shared_atomic,verlet_thread_padded,clusterpair_warp_newton3
    gpu=$gpu,clusterpair_warp_padded,allpairs_thread_tiled
    $PY -m harness bench --strategies $gpu --scenario lj_liquid --n medium --name amortised-lj-s6 "${common[@]}"
    $PY -m harness bench --strategies $gpu --scenario uniform --n 64000 --name amortised-uniform-s6 "${common[@]}" ;;
  gauss-s6)  # the Gaussian medium point again beside tune (same call): the sweep's top three, and the full shell at cell_factor 0.5
    mkdir -p "$out/tune"
    $PY -m harness bench --strategies clusterpair_warp_newton3,fullshell_thread_csr,clusterpair_warp_padded \
      --scenario gaussian --n medium --name gauss-medium-s6 "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --launch cell_factor=0.5 --scenario gaussian --n medium \
      --name gauss-medium-cf05-s6 "${common[@]}"
    $PY -m harness tune --scenario gaussian --n medium --budget 60s --no-cache --json "$out/tune/gauss-medium.json" --quiet ;;
  gauss-forces-s6)  # the Gaussian medium point forces only (tune's default flavour), and tune with all outputs (the sweep's)
    mkdir -p "$out/tune"
    $PY -m harness bench --strategies clusterpair_warp_newton3,fullshell_thread_csr,clusterpair_warp_padded \
      --scenario gaussian --n medium --outputs forces --name gauss-medium-forces-s6 "${common[@]}"
    $PY -m harness tune --scenario gaussian --n medium --outputs all --budget 60s --no-cache \
      --json "$out/tune/gauss-medium-all.json" --quiet ;;
  cf-s6)  # the full shell's cell_factor 1 and 0.5 on the LJ liquid and the sigma-12 Gaussian at 1M (issue 12's Gaussian target)
    $PY -m harness bench --strategies fullshell_thread_csr,clusterpair_warp_newton3 --sweep cell_factor=1.0:0.5 \
      --scenario lj_liquid --scenario gaussian --n large --outputs forces,all --amortised 0 --name cf-s6 "${common[@]}" ;;
  build-s6)  # the Verlet build per strip, per cell and a warp per row, 4,000 to 1M: build, with a list, per MD step
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,32000,256000,large \
      --outputs forces --sweep build=strip:cell:warp --name build-s6 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 \
      --outputs forces --sweep build=strip:warp --name build-s6-tpp8 "${common[@]}"
    for b in strip warp; do
      $PY -m harness md --strategy verlet_thread_padded --launch tpp=8,build=$b --n 4000 --precision fp32 --steps 2000 \
        --sample 500 --quiet --json "$out/bench/md-verlet-4000-$b.json"
    done ;;
  san-warp)  # compute-sanitizer's four tools on the warp-per-row Verlet build (not a default: make sanitize does not reach it)
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios
p = scenarios.make('lj_liquid', 2048, seed=1)
for b in ('warp',):
    r = strategies.create('verlet_thread_padded', build=b, cap=0).evaluate(p)
    print(b, r.pairs)" 2>&1 | tail -3
      echo "$t: exit ${PIPESTATUS[0]}"
    done ;;
  tune-s6)  # harness tune on the inputs the sweep has points for: LJ medium, the Gaussian medium and 1M, a file
    mkdir -p "$out/tune"
    $PY -m harness tune --scenario lj_liquid --n medium --budget 60s --no-cache --json "$out/tune/lj-medium.json" --quiet
    $PY -m harness tune --scenario gaussian --n medium --budget 60s --no-cache --json "$out/tune/gauss-medium.json" --quiet
    $PY -m harness export --scenario uniform --n 64000 --out /tmp/uniform-64k.xyz
    $PY -m harness tune --input /tmp/uniform-64k.xyz --budget 45s --no-cache --json "$out/tune/file-uniform-64k.json" \
      --quiet ;;
  s9)  # the ninth session's Verlet force kernel (rows in groups of 4, image entries apart, a branch-free pair body)
    # before and after in one call: three columns at LJ 4,000 (tpp 1 and 8) and 1M (PEERS=openmm: OpenMM's step
    # beside); tpp at 4,000; batch and minb at 1M with a built list
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
      ${PEERS:+--peers $PEERS} --name after-s9 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces,all \
      --sweep tpp=4:8:16 --name after-s9-tpp "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --sweep batch=8:16 --sweep minb=0:10:12 --amortised 0 --name s9-knobs "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces \
      --sweep build=strip:cell --name s9-build "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
        --name before-s9 "${common[@]}"
       HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --launch tpp=8 --scenario lj_liquid --n 4000 --outputs forces,all \
        --name before-s9-tpp8 "${common[@]}")
    fi ;;
  s9b)  # the ninth session's final Verlet kernels: three columns at LJ 4,000 (tpp 1, 8, 16) and 1M beside OpenMM's
    # step, and the builds at 1M
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
      --peers openmm --name after-s9b "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces,all \
      --sweep tpp=8:16 --name after-s9b-tpp "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces \
      --sweep build=strip:cell --name s9b-build "${common[@]}" ;;
  md-s9)  # the MD loop with the Verlet list (fp32, CUDA graph): ms per whole step at LJ 4,000 (tpp 1, 8, 16) and 1M
    for t in 1 8 16; do
      $PY -m harness md --strategy verlet_thread_padded --launch tpp=$t --n 4000 --precision fp32 --steps 2000 \
        --sample 500 --quiet --json "$out/bench/md-verlet-4000-tpp$t-s9.json"
    done
    $PY -m harness md --strategy verlet_thread_padded --n large --precision fp32 --steps 1000 --sample 250 --quiet \
      --json "$out/bench/md-verlet-large-s9.json" ;;
  tpp-s9)  # the Verlet force kernel's threads per row against the size (tpp 'auto'): LJ 4,000 to 1M, both flavours
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,32000,256000,large \
      --outputs forces,all --sweep tpp=1:2:4:8:16 --amortised 0 --name tpp-s9 "${common[@]}" ;;
  auto-s9)  # the Verlet list at its defaults (tpp from the size): three columns at LJ 4,000, 32,000 and 1M beside
    # OpenMM's step; the MD loop at 4,000
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,32000,large \
      --outputs forces,all --peers openmm --name auto-s9 "${common[@]}"
    $PY -m harness md --strategy verlet_thread_padded --n 4000 --precision fp32 --steps 2000 --sample 500 --quiet \
      --json "$out/bench/md-verlet-4000-auto-s9.json" ;;
  large)  # the 'large' suite (every cell and list strategy at 1M, LJ and the sigma-12 Gaussian) with the three columns,
    # forces only and all: the headline points before and after a kernel change (name it with LARGE_NAME)
    $PY -m harness bench --suite large --outputs forces,all --name ${LARGE_NAME:-large} "${common[@]}" ;;
  tune-s8)  # harness tune on three inputs the full sweep has points for, timed as the sweep (from scratch, all outputs)
    mkdir -p "$out/tune"
    $PY -m harness tune --scenario lj_liquid --n medium --metric scratch --outputs all --budget 60s --no-cache \
      --json "$out/tune/s8-lj-medium.json" --quiet
    $PY -m harness tune --scenario gaussian --n medium --outputs all --budget 60s --no-cache \
      --json "$out/tune/s8-gauss-medium.json" --quiet
    $PY -m harness export --scenario lj_liquid --n 2048 --out /tmp/lj-2048.xyz
    $PY -m harness tune --input /tmp/lj-2048.xyz --metric scratch --outputs all --budget 45s --no-cache \
      --json "$out/tune/s8-file-lj-2048.json" --quiet ;;
  cluster-defaults)  # the cluster pairs at their defaults, LJ 4,000 and 1M, forces only, three columns
    $PY -m harness bench --strategies clusterpair_warp_padded --scenario lj_liquid --n 4000,large --outputs forces \
      --name cluster-defaults "${common[@]}" ;;
  coord)  # rankings with a cheap pair body: PLUMED's coordination against LJ, the main strategies at 1M, forces only
    for pot in "" coordination:r0=1,n=6,dmax=2.5; do
      $PY -m harness bench --strategies fullshell_thread_csr,c08_warp_csr,parity_block_csr,parity_warpblock_shared_atomic,verlet_thread_padded,clusterpair_warp_padded \
        --scenario lj_liquid --n large --outputs forces --amortised 0 ${pot:+--potential $pot} \
        --name "coord-$(p=${pot:-lj}; echo ${p%%:*})" "${common[@]}"
    done ;;
  build)  # the Verlet build: per strip (with and without z-windows) against per cell, and the amortised step
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces \
      --sweep build=strip:cell --name build "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n large --outputs forces \
      --sweep build=strip:cell --amortised 0 --name build-gauss "${common[@]}" ;;
  nve)  # the NVE drift report: the CSR full shell and the Verlet list in three precisions, and OpenMM
    for n in 4000 32000; do
      $PY -m harness md --nve-report --n $n --steps 10000 --sample 100 --json "$out/bench/nve-$n.json"
    done ;;
  nve-long)  # 200,000 steps (1000 tau) of NVE at 4,000 particles, each precision, three strategies and OpenMM
    $PY -m harness md --nve-report --n 4000 --steps 200000 --sample 2000 \
      --strategies fullshell_thread_csr,verlet_thread_padded,clusterpair_warp_newton3 --json "$out/bench/nve-long-4000.json" ;;
  replay)  # verify of the list strategies along a recorded trajectory at three sizes, and the negative control
    v=(--scenarios lj_liquid --quiet --replay 200)
    $PY -m harness verify --strategies verlet_thread_padded,verlet_thread_cpu,clusterpair_warp_padded,clusterpair_warp_newton3 --size small "${v[@]}" \
      --out "$out/replay-small"
    $PY -m harness verify --strategies verlet_thread_padded,clusterpair_warp_padded,clusterpair_warp_newton3 --size medium "${v[@]}" --replay-every 10 \
      --out "$out/replay-medium"
    $PY -m harness verify --strategies verlet_thread_padded,clusterpair_warp_padded,clusterpair_warp_newton3 --size large --precision fp32,mixed "${v[@]}" \
      --replay-every 50 --out "$out/replay-large"
    $PY -m harness verify --strategies verlet_thread_padded --launch rebuild=never --size small --precision fp32 \
      "${v[@]}" --out "$out/replay-never"
    echo "negative control exit status: $? (1 expected: a stale list fails)" ;;
  fullshell)  # the CSR full shell's launch parameters
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n large --outputs all,forces \
      --sweep tpp=1:2 --sweep cell_factor=1.0:0.5 --name fs-large "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n large --outputs forces \
      --sweep regs=32:48:56:64 --name fs-regs "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n 4000 --outputs all,forces \
      --sweep tpp=1:4:8:16:32 --name fs-4000 "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario gaussian --n large --outputs all,forces \
      --sweep cell_factor=1.0:0.5 --name fs-gauss "${common[@]}" ;;
  ab-all)  # every GPU strategy at LJ 1M, fp32, the current tree and the earlier one (its names) in one call
    $PY -m harness bench --strategies cuda --scenario lj_liquid --n large --outputs all,forces --name after-all \
      "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies cuda --scenario lj_liquid --n large --name before-all "${common[@]}")
    fi ;;
  fs1m)  # the CSR full shell at its defaults, LJ 1M, both flavours; 4,000 with threads per particle
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n large --outputs all,forces \
      --name fs1m "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n 4000 --outputs all,forces \
      --sweep tpp=0:8:16:32 --min-time 0.2 --repeat 40 --quiet --out "$out/bench" --name fs4k ;;
  window)  # z-windows against whole strips, cells of rc and rc/2, LJ 1M and 4,000, Gaussian sigma 12
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n large,4000 --outputs all,forces \
      --sweep window=0:1 --sweep cell_factor=1.0:0.5 --name fs-window "${common[@]}"
    $PY -m harness bench --strategies fullshell_thread_csr --scenario gaussian --n large --outputs all,forces \
      --sweep window=0:1 --sweep cell_factor=1.0:0.5 --name fs-window-gauss "${common[@]}" ;;
  diag-s10)  # where the time goes: the parts of one Verlet MD step (4,000, 32,000, 1M), ncu's full set on the Verlet
    # forces kernel and the CSR full shell's (LJ 1M: raw metrics as CSV), the full shell at its defaults
    $PY tools/step_parts.py --strategy verlet_thread_padded --n 4000,32000,large --json "$out/parts-verlet.json"
    for s in verlet_thread_padded fullshell_thread_csr; do
      ncu --nvtx --nvtx-include "force/$s/" --clock-control none --set full --launch-count 1 -f -o "$out/ncu-$s" \
        $PY -m harness profile --inner --strategy $s --scenario lj_liquid --n large --precision fp32 --outputs forces \
        >"$out/ncu-$s.log" 2>&1
      ncu -i "$out/ncu-$s.ncu-rep" --page raw --csv >"$out/ncu-$s-raw.csv" 2>&1
      ncu -i "$out/ncu-$s.ncu-rep" --page details >"$out/ncu-$s-details.txt" 2>&1
      rm -f "$out/ncu-$s.ncu-rep"
    done
    $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid --n 4000,large --outputs all,forces \
      --name fs-s10 "${common[@]}" ;;
  md-s10)  # the MD loop with the Verlet list at its defaults (fp32): ms per whole step at LJ 4,000, 32,000 and 1M,
    # the current tree and (.before/) an earlier one in the same call; the step's parts after
    mkdir -p "$out/md"
    for n in 4000 32000 large; do
      steps=2000; [ $n = large ] && steps=1000
      $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 --steps $steps --sample 500 --quiet \
        --json "$out/md/md-verlet-$n-${MD_NAME:-s10}.json"
      if [ -d .before ]; then
        (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness md \
          --strategy verlet_thread_padded --n $n --precision fp32 --steps $steps --sample 500 --quiet \
          --json "$out/md/md-verlet-$n-before-${MD_NAME:-s10}.json")
      fi
    done
    $PY tools/step_parts.py --strategy verlet_thread_padded --n 4000,large --json "$out/parts-verlet-${MD_NAME:-s10}.json" ;;
  md-s23)  # the fused MD steps (strategies/verlet.py, VerletSteps) against the plain ones, same call, ABAB:
    # ms per whole step with the Verlet list at its defaults (fp32), LJ 4,000, 32,000 and 1M
    mkdir -p "$out/md"
    for n in 4000 32000 large; do
      steps=2000; [ $n = large ] && steps=1000
      for rep in 1 2; do
        for mode in fused plain; do
          flag=""; [ $mode = plain ] && flag="--no-fuse"
          $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 --steps $steps --sample 500 --quiet \
            $flag --json "$out/md/md-verlet-$n-$mode-$rep-${MD_NAME:-s23}.json"
        done
      done
    done ;;
  peers-s23)  # the Verlet list's columns beside OpenMM's whole step in the same run (LJ 1M, fp32), and the parts
    # of an MD step, plain and fused (tools/step_parts.py)
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --peers openmm --name peers-s23 "${common[@]}"
    $PY tools/step_parts.py --strategy verlet_thread_padded --n 4000,32000,large --json "$out/parts-verlet-s23.json" ;;
  packed-s24)  # layout=packed (the near entries' positions in 8 bytes) against aos4 at LJ 1M, fp32: verify, the
    # force with a built list (ABAB), harness md
    # where the grid is no coarser than a float's spacing at the box's half-length: medium one_per_cell
    # (side 100), large lj_liquid (side 107.5); the other scenarios and sizes are n/a
    $PY -m harness verify --strategies verlet_thread_padded --launch layout=packed --size medium \
      --scenarios one_per_cell --precision fp32,mixed,fixed --quiet --out "$out/verify-packed-medium" | tail -n 3
    $PY -m harness verify --strategies verlet_thread_padded --launch layout=packed --size large --scenarios lj_liquid \
      --precision fp32,mixed,fixed --quiet --out "$out/verify-packed-large" | tail -n 3
    for rep in 1 2; do
      for lay in aos4 packed; do
        $PY -m harness bench --strategies verlet_thread_padded --launch layout=$lay --scenario lj_liquid --n large \
          --outputs forces,all --amortised 0 --name s24-$lay-$rep "${common[@]}"
      done
    done
    mkdir -p "$out/md"
    for rep in 1 2; do
      for lay in aos4 packed; do
        $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay --n large --precision fp32 --steps 1000 \
          --sample 500 --quiet --json "$out/md/md-verlet-large-$lay-$rep-s24.json"
      done
    done ;;
  packed-knobs-s24)  # layout=packed's register cap and entries in flight (LJ 1M, fp32, with a built list)
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed,tpp=1 --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --sweep minb=0:8:10:12:16 --sweep batch=8:16 --name s24-packed-knobs \
      "${common[@]}" ;;
  packed-parts-s24)  # the parts of an MD step (tools/step_parts.py), aos4 against packed, LJ 1M, fp32, ABAB
    for rep in 1 2; do
      for lay in aos4 packed; do
        $PY tools/step_parts.py --strategy verlet_thread_padded --launch layout=$lay --n large \
          --json "$out/parts-verlet-$lay-$rep-s24.json"
      done
    done ;;
  san-s24)  # compute-sanitizer on layout=packed: an evaluation (both flavours), the plain and the fused MD loop
    # (the packed copies written by verlet_refresh, the fused update and verlet_pack after a rebuild)
    for t in memcheck racecheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
p = scenarios.make('lj_liquid:density=0.1', 30000, precision='fp32')
for out in ('forces', 'all'):
    s = strategies.create('verlet_thread_padded', layout='packed', tpp=1)
    print(out, s.evaluate(p, out).pairs)
for fuse in (False, 'always'):
    r = md.run(strategies.create('verlet_thread_padded', layout='packed'), p, steps=40, dt=0.005, sample=20, fuse=fuse)
    print('md', r.fused, r.graph, r.rebuilds, r.samples[-1].total)" || echo "sanitizer $t: FAILED"
    done ;;
  packed-ncu-s24)  # both force kernels of layout=packed and aos4 under ncu (LJ 1M, fp32), OpenMM's first
    $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile"
    ncu_points s24 force:forces:layout=aos4 force:forces:layout=packed force:all:layout=aos4 force:all:layout=packed
    for lay in aos4 packed; do  # the fused MD step's force kernel (MD 2), four launches after the first 24
      stem="$out/profile/ncu-s24-md-$lay"
      ncu -k regex:verlet_force --launch-skip 24 --launch-count 4 --clock-control none --metrics $L1_METRICS -f \
        -o "$stem" $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay --n large --precision fp32 \
        --steps 60 --sample 30 --quiet > "$stem.log" 2>&1
      ncu --import "$stem.ncu-rep" --csv --page raw > "$stem.csv" 2>>"$stem.log"
      $PY tools/ncu_metrics.py "$stem.csv" | tail -n +2 | sed "s|^|md $lay: |"
    done ;;
  san-s23)  # compute-sanitizer on the fused MD steps (the force kernel's MD epilogue, verlet_open, the guarded
    # permutations around a rebuild) with graphs, fp32 and mixed
    for t in memcheck racecheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for prec in ('fp32', 'mixed'):
    r = md.run(strategies.create('verlet_thread_padded'), scenarios.make('lj_liquid', 5000, precision=prec), steps=40, dt=0.005, sample=20)
    print('md', prec, r.fused, r.graph, r.rebuilds, r.samples[-1].total)" || echo "sanitizer $t: FAILED"
    done ;;
  san-s10)  # compute-sanitizer's four tools on the tenth session's kernels: the counting sort (warp-aggregated
    # atomics, the warp look-back; 20,000 particles take the counting path), the MD loop's multi-step graphs
    # (kick_kick_drift) with the Verlet list
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
p = scenarios.make('uniform', 20000, seed=1)
for s in ('fullshell_thread_csr', 'verlet_thread_padded'):
    print(s, strategies.create(s).evaluate(p).pairs)
r = md.run(strategies.create('verlet_thread_padded'), scenarios.make('lj_liquid', 5000), steps=40, dt=0.005, sample=20)
print('md', r.graph, r.samples[-1].total)" || echo "sanitizer $t: FAILED"
    done ;;
  bounds)  # issue 12's 3x rule: ncu of the strategies the s11 report lists beyond 3x without a profile (LJ 1M, all
    # outputs; the mutex schedulers at their fastest launch), OpenMM's kernels in the same call
    mkdir -p "$out/profile"
    # BOUNDS: a subset (e.g. the rest after a call ran out of time); PEER=0: without OpenMM
    for s in ${BOUNDS:-c08_warp_nested parity_warpblock_twopass_atomic parity_thread_csr c08_thread_2d c08_thread_csr \
             c08_thread_nested parity_warpblock_shared_mutex:warps=16 parity_warpblock_twopass_mutex:warps=16}; do
      name=${s%%:*}
      launch=()
      [ "$name" != "$s" ] && launch=(--launch "${s#*:}")
      $PY -m harness profile --strategy "$name" "${launch[@]}" --scenario lj_liquid --n large --out "$out/profile" \
        >"$out/profile-$name.log" 2>&1 || echo "profile $name failed"
    done
    [ "${PEER:-1}" = 0 ] || $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" \
      >"$out/profile-openmm.log" 2>&1 ;;
  verlet-gauss)  # the Verlet list on the Gaussian at 64,000 from scratch by build (the s11 sweep found it 20% slower than
    # the s8 sweep): the current tree and (.before/, e.g. 67fdadb) an earlier one in the same call
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n 64000 --sweep build=strip:cell:warp \
      --amortised 0 --name verlet-gauss64k "${common[@]}"
    if [ -d .before ]; then
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario gaussian --n 64000 --sweep build=strip:cell:warp --amortised 0 \
        --name verlet-gauss64k-before "${common[@]}")
    fi ;;
  build-s13)  # the strip build's z-window bounded by bisection at both ends (no exit in the candidate loop): the
    # build and the whole MD step at LJ 1M, and the Gaussian at 64,000 (where 'auto' takes the strip build), with
    # the tree in .before/ (BEFORE_COMMIT) in the same call
    for tree in after before; do
      commit=${HARNESS_COMMIT:-}
      if [ $tree = before ]; then [ -d .before ] || continue; cd .before; commit=${BEFORE_COMMIT:-before}; fi
      export HARNESS_COMMIT=$commit PYTHONPATH=/tmp/site:$PWD
      $PY -m harness bench --strategies verlet_thread_padded --launch build=strip --scenario lj_liquid --n large \
        --outputs forces --amortised 0 --name build-s13-lj-$tree "${common[@]}"
      $PY -m harness bench --strategies verlet_thread_padded --launch build=strip --scenario gaussian --n 64000 \
        --outputs forces --amortised 0 --name build-s13-gauss-$tree "${common[@]}"
      $PY -m harness md --strategy verlet_thread_padded --n large --precision fp32 --steps 2000 --sample 500 --quiet \
        --json "$out/bench/md-verlet-large-s13-$tree.json"
      if [ $tree = before ]; then cd ..; fi
    done ;;
  force-s14)  # the Verlet force kernel's rows split by entries among tpp lanes, against split by groups and tpp 1
    # (LJ, with a built list), and its register cap and batch at 1M
    for n in large 256000 32000 4000; do
      outs=forces; [ $n = large ] && outs=forces,all
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n $n --outputs $outs \
        --amortised 0 --sweep tpp=1:2:4:8:16 --launch split=entries --name force-s14-entries-$n "${common[@]}"
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces \
      --amortised 0 --sweep tpp=2:4 --launch split=groups --name force-s14-groups-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces \
      --amortised 0 --launch tpp=4,split=entries --sweep minb=0:8:12 --sweep batch=8:16 --name force-s14-knobs \
      "${common[@]}" ;;
  build-s14)  # the tile build (a warp per 32 rows, union z-windows) against the strip, cell and warp builds
    for n in large 256000 32000 4000; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n $n --outputs forces \
        --amortised 0 --sweep build=strip:cell:warp --name build-s14-$n "${common[@]}"
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n $n --outputs forces \
        --amortised 0 --launch build=tile --sweep row_groups=1:2:4 --name build-s14-tile-$n "${common[@]}"
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n 64000 --outputs forces \
      --amortised 0 --sweep build=strip:tile --name build-s14-gauss64k "${common[@]}" ;;
  ncu-s14)  # L1 requests, sectors and wavefronts of the force kernel's gathers (tpp 1; tpp 4 split by groups, by
    # entries with 16-bit loads, by entries with int4 loads) and of the strip and tile builds, LJ 1M, forces only
    mkdir -p "$out/profile"
    for v in force:default force:tpp=4,split=groups force:tpp=4,split=entries force:tpp=4,split=entries4 \
             build:build=strip build:build=tile,row_groups=4; do
      phase=${v%%:*}; launch=${v#*:}; [ "$launch" = default ] && launch=
      stem="$out/profile/ncu-s14-$phase-${launch:-default}"; stem=${stem//[=,]/-}
      ncu_verlet "$stem" "$phase" forces "$launch" | sed "s|^|$phase ${launch:-default}: |"
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large,32000 --outputs forces \
      --amortised 0 --launch tpp=4 --sweep split=groups:entries:entries4 --name force-s14-split "${common[@]}" ;;
  tune-s14)  # after the tile build's staging fix: builds on the LJ liquid, the Gaussian and the clump; the force
    # kernel's split (groups or entries) at the sizes where tpp 'auto' takes several lanes per row
    for spec in lj_liquid:large lj_liquid:256000 lj_liquid:32000 gaussian:64000 clump:medium clump:large; do
      sc=${spec%%:*}; n=${spec#*:}
      $PY -m harness bench --strategies verlet_thread_padded --scenario $sc --n $n --outputs forces --amortised 0 \
        --sweep build=strip:cell --name tune-s14-build-$sc-$n "${common[@]}"
      $PY -m harness bench --strategies verlet_thread_padded --scenario $sc --n $n --outputs forces --amortised 0 \
        --launch build=tile --sweep row_groups=1:2:4 --name tune-s14-tile-$sc-$n "${common[@]}"
    done
    for nt in 4000:8:16 32000:2:4:8 256000:2:4; do
      n=${nt%%:*}
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n $n --outputs forces,all \
        --amortised 0 --sweep tpp=${nt#*:} --sweep split=groups:entries --name tune-s14-split-$n "${common[@]}"
    done ;;
  check-s14)  # the new 'auto' rules against the alternatives, the sanitizer on the new kernels, the MD step at the
    # sizes whose defaults changed, OpenMM's step in the same run
    for n in 64000 128000; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n $n --outputs forces --amortised 0 \
        --sweep build=strip:cell --name check-s14-build-$n "${common[@]}"
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n large --outputs forces \
      --amortised 0 --sweep build=strip:tile --name check-s14-gauss-1m "${common[@]}"
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for spec, n in (('uniform', 2048), ('clump', 3000), ('lj_liquid', 864)):
    p = scenarios.make(spec, n, seed=1)
    for g in (1, 2, 4):
        print(spec, 'tile', g, strategies.create('verlet_thread_padded', build='tile', row_groups=g).evaluate(p).pairs)
    for t in (2, 4, 8, 16, 32):
        print(spec, 'entries', t, strategies.create('verlet_thread_padded', tpp=t, split='entries').evaluate(p).pairs)
r = md.run(strategies.create('verlet_thread_padded', build='tile', tpp=4), scenarios.make('lj_liquid', 5000), steps=40,
           dt=0.005, sample=20)
print('md', r.graph, r.rebuilds, r.samples[-1].total)" > "$out/bench/san-s14-$t.log" 2>&1 || echo "sanitizer $t: FAILED"
      tail -n 2 "$out/bench/san-s14-$t.log"
    done
    for n in 4000 32000; do
      for split in auto groups; do
        $PY -m harness md --strategy verlet_thread_padded --launch split=$split --n $n --precision fp32 --steps 2000 \
          --sample 500 --quiet --json "$out/bench/md-s14-$n-$split.json"
      done
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,32000 --outputs forces \
      --sweep split=groups:auto --peers openmm --name check-s14-peers "${common[@]}" ;;
  gauss-s14)  # where the tile build stops winning on the Gaussian (64,000: tile, 1M: strip)
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n 256000 --outputs forces \
      --amortised 0 --sweep build=strip:tile --name gauss-s14-256k "${common[@]}" ;;
  final-s14)  # the issue's figures at the session's last kernels, with OpenMM in the same run: the three columns
    # (LJ 4,000 and 1M, forces and all), the MD loop, and both force kernels under ncu (PROFILE=0 skips those)
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,large --outputs forces,all \
      --peers openmm --name final-s14-three "${common[@]}"
    for n in 4000 large; do
      $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 --steps 2000 --sample 500 --quiet \
        --json "$out/bench/md-final-s14-$n.json"
    done
    if [ "${PROFILE:-1}" = 1 ]; then
      $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile"
      for o in forces all; do
        $PY -m harness profile --strategy verlet_thread_padded --scenario lj_liquid --n large --outputs $o \
          --out "$out/profile"
      done
    fi ;;
  refactor-s14)  # the builds after column_neighbour (one helper for the 3 x 3 column walk): same instruction counts,
    # another schedule; the builds against bench/s14-call3 and -call1 (LJ 1M, 256,000, 4,000; clump 24,000)
    for spec in lj_liquid:large lj_liquid:256000 clump:medium; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario ${spec%%:*} --n ${spec#*:} --outputs forces \
        --amortised 0 --sweep build=strip:tile --name refactor-s14-${spec%%:*}-${spec#*:} "${common[@]}"
    done
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces \
      --amortised 0 --sweep build=warp:strip --name refactor-s14-lj_liquid-4000 "${common[@]}" ;;
  ncu32k-s14)  # where the defaults changed (32,000: tpp 4, rows split by entries): both splits and OpenMM's kernels
    # under ncu in one call (LJ, fp32, forces only)
    $PY -m harness profile --peer openmm --scenario lj_liquid --n 32000 --out "$out/profile"
    for split in groups auto; do
      $PY -m harness profile --strategy verlet_thread_padded --scenario lj_liquid --n 32000 --outputs forces \
        --launch split=$split --out "$out/profile"
    done ;;
  md-s14)  # the whole MD step at LJ 1M and 4,000: the defaults against the tile build with tpp 4 split by entries
    for launch in "" "build=tile,tpp=4,split=entries" "build=tile,row_groups=4,tpp=4,split=entries"; do
      tag=${launch:-default}; tag=${tag//[=,]/-}
      $PY -m harness md --strategy verlet_thread_padded ${launch:+--launch $launch} --n large --precision fp32 \
        --steps 1000 --sample 500 --quiet --json "$out/bench/md-s14-large-$tag.json"
    done
    $PY tools/step_parts.py --strategy verlet_thread_padded --n large --json "$out/bench/parts-s14-default.json"
    $PY tools/step_parts.py --strategy verlet_thread_padded --n large --launch build=tile,tpp=4,split=entries \
      --json "$out/bench/parts-s14-tile-tpp4.json" ;;
  banks-s15)  # the near groups reordered by L1 bank group (banks=1) against strip order: the force kernel under
    # ncu at LJ 1M (forces, all), the three columns at 1M, and with a built list at 256,000, 32,000 and 4,000
    ncu_points s15 force:forces:banks=0 force:forces:banks=1 force:all:banks=0 force:all:banks=1 build:forces:banks=1
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --sweep banks=0:1 --name banks-s15-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000,32000,4000 \
      --outputs forces,all --amortised 0 --sweep banks=0:1 --name banks-s15-small "${common[@]}" ;;
  san-s15)  # compute-sanitizer on the bank-group pass (banks=1) at every tpp and split, and through MD steps
    mkdir -p "$out/bench"
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for spec, n in (('uniform', 2048), ('clump', 3000), ('lj_liquid', 864)):
    p = scenarios.make(spec, n, seed=1)
    for t, split in ((1, 'auto'), (2, 'groups'), (4, 'entries'), (8, 'groups'), (32, 'entries')):
        print(spec, t, split, strategies.create('verlet_thread_padded', tpp=t, split=split, banks=1).evaluate(p).pairs)
r = md.run(strategies.create('verlet_thread_padded', tpp=1, banks=1), scenarios.make('lj_liquid', 5000), steps=40,
           dt=0.005, sample=20)
print('md', r.graph, r.rebuilds, r.samples[-1].total)" > "$out/bench/san-s15-$t.log" 2>&1 || echo "sanitizer $t: FAILED"
      tail -n 2 "$out/bench/san-s15-$t.log"
    done ;;
  final-s15)  # the last commit's force kernel under ncu at LJ 1M (forces: plain order and banks=1; all outputs)
    # beside OpenMM's kernels in the same call
    profile_points forces: forces:banks=1 all: ;;
  rotate-s16)  # each row permuted by L1 bank group (banks=2) against strip order and banks=1: the force kernel
    # and the build phase (with the pass) under ncu at LJ 1M, the three columns at 1M, and with a built list at
    # 256,000 (tpp 1)
    mkdir -p "$out/profile" "$out/bench"
    ncu_points s16 force:forces:banks=0 force:forces:banks=2 force:all:banks=0 force:all:banks=2 build:forces:banks=2
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --sweep banks=0:1:2 --name rotate-s16-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000 --launch tpp=1 \
      --outputs forces,all --amortised 0 --sweep banks=0:2 --name rotate-s16-256k "${common[@]}" ;;
  knobs-s16)  # the force kernel's register cap and entries in flight on rows permuted by bank group (banks=2),
    # LJ 1M, with a built list
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --launch banks=2 --amortised 0 --sweep minb=0:8:12:16 --sweep batch=8:16 --name knobs-s16 "${common[@]}" ;;
  knobs2-s16)  # the register cap and entries in flight with the row virial (both orders), LJ 1M, with a built list
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --amortised 0 --sweep banks=0:2 --sweep minb=0:8:10 --sweep batch=8:16 --name knobs2-s16 "${common[@]}" ;;
  final-s16)  # the last commit's force kernel (plain and banks=2; forces and all outputs) and OpenMM's under ncu
    # in one call; the energy flavour's register cap (minb auto = 8 against 0) at the smaller sizes; the MD loop at 1M
    mkdir -p "$out/profile" "$out/bench"
    profile_points forces: forces:banks=2 all: all:banks=2
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000,32000,256000 --outputs all \
      --amortised 0 --sweep minb=0:auto --name final-s16-minb "${common[@]}"
    for launch in banks=0 banks=2; do
      $PY -m harness md --strategy verlet_thread_padded --launch $launch --n large --steps 2000 --sample 500 --quiet \
        --json "$out/bench/final-s16-md-$launch.json"
    done ;;
  san-s16)  # compute-sanitizer on the row permutation (banks=2), through the builds and MD steps
    mkdir -p "$out/bench"
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for spec, n in (('uniform', 2048), ('clump', 3000), ('lj_liquid', 864), ('gaussian', 4000)):
    p = scenarios.make(spec, n, seed=1)
    print(spec, strategies.create('verlet_thread_padded', tpp=1, banks=2).evaluate(p).pairs)
r = md.run(strategies.create('verlet_thread_padded', tpp=1, banks=2), scenarios.make('lj_liquid', 5000), steps=40,
           dt=0.005, sample=20)
print('md', r.graph, r.rebuilds, r.samples[-1].total)" > "$out/bench/san-s16-$t.log" 2>&1 || echo "sanitizer $t: FAILED"
      tail -n 2 "$out/bench/san-s16-$t.log"
    done ;;
  buildsrc-s17)  # the strip build under ncu's source counters (LJ 1M): instructions executed and threads active
    # per SASS instruction, exported as CSV beside the report
    mkdir -p "$out/profile"
    stem="$out/profile/ncu-s17-build-source"
    ncu --nvtx --nvtx-include "build/verlet_thread_padded/" -k regex:verlet_build --clock-control none \
      --section SourceCounters --section WarpStateStats -f -o "$stem" $PY -m harness profile --inner \
      --strategy verlet_thread_padded --scenario lj_liquid --n large --precision fp32 --outputs forces \
      > "$stem.log" 2>&1
    ncu --import "$stem.ncu-rep" --page source --csv --print-source sass > "$stem-sass.csv" 2>>"$stem.log"
    ncu --import "$stem.ncu-rep" --page details --csv > "$stem-details.csv" 2>>"$stem.log"
    tail -n 3 "$stem.log"; wc -l "$stem-sass.csv" ;;
  state-s17|state-s18)  # the issue's figures on this GPU with OpenMM in the same run: the three columns of both
    # list strategies (LJ 4,000 and 1M, forces and all), the MD loop, and the force kernels under ncu beside OpenMM's
    $PY -m harness bench --strategies verlet_thread_padded,clusterpair_warp_padded,clusterpair_warp_newton3 \
      --scenario lj_liquid --n 4000,large --outputs forces,all --peers openmm --name $name-three "${common[@]}"
    for n in 4000 large; do
      $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 --steps 2000 --sample 500 --quiet \
        --json "$out/bench/$name-md-$n.json"
    done
    mkdir -p "$out/profile"
    profile_points forces: all: ;;
  hits-s17|pair-s17)  # the strip build's hits stored without per-hit tests where a whole round is near and fits,
    # and a running group pointer (pair-s17: the same points after bisect_z_window): the build phase under ncu at
    # LJ 1M, the three columns at 1M, the build at 256,000 and 32,000, the crowded Gaussian (the 'before' stage
    # times the previous tree's build in the same call)
    mkdir -p "$out/profile" "$out/bench"
    ncu_points ${name%-s17} build:forces:
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces \
      --name $name-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000,32000 --outputs forces \
      --amortised 0 --sweep build=strip:cell --name $name-small "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario gaussian --n 64000 --outputs forces \
      --amortised 0 --sweep build=strip:tile --name $name-gauss "${common[@]}" ;;
  auto-s18)  # build 'auto' on the crowded inputs after the sweep (strip wherever a cell is crowded): auto against
    # strip and tile, fp32, the build from scratch
    for spec in gaussian:64000 clump:24000 clump:48000; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario ${spec%%:*} --n ${spec#*:} --outputs forces \
        --amortised 0 --sweep build=auto:strip:tile --name $name-${spec%%:*}-${spec#*:} "${common[@]}"
    done ;;
  block-s18)  # the force kernel's block size (rows of consecutive slots per block: 128 to 512) at LJ 1M, both
    # flavours with a built list, and its L1 under ncu: do larger slabs of rows per block share more of their
    # neighbourhood in the L1 (fewer first touches per row)?
    mkdir -p "$out/profile" "$out/bench"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --amortised 0 --sweep block=128:256:512 --name $name "${common[@]}"
    ncu_points s18 force:forces:block=256 force:forces:block=512 force:all:block=512 ;;
  banks-s18)  # rows permuted by bank group (banks=2) on the fused functor, where both force flavours are L1-bound:
    # the three columns at LJ 1M against plain order, and the force kernel's L1 under ncu
    mkdir -p "$out/profile" "$out/bench"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --sweep banks=0:2 --name $name "${common[@]}"
    ncu_points s18 force:all:banks=2 ;;
  ab-s18)  # the session's last tree at LJ 1M (both flavours, the three columns) with OpenMM's step in the same run,
    # then OpenMM's kernels and both Verlet force kernels under ncu (the 'before' stage times 8b3b9d1 in the call)
    mkdir -p "$out/profile" "$out/bench"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --peers openmm --name $name-after "${common[@]}"
    profile_points forces: all: ;;
  ab-s19)  # the session's last tree at LJ 1M, rows of one and of two (both flavours, the three columns), OpenMM's step
    # in the same run, then OpenMM's kernels and the force kernels under `harness profile` (the 'before' stage
    # times bc9f75d, the session's start, in the call)
    mkdir -p "$out/profile" "$out/bench"
    $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid --n large \
      --outputs forces,all --peers openmm --name $name-after "${common[@]}"
    profile_points forces: all:
    for o in forces all; do
      $PY -m harness profile --strategy verlet_thread_pairrows --scenario lj_liquid --n large --outputs $o \
        --out "$out/profile"
    done ;;
  pairs-s19)  # rows of two particles (verlet_thread_pairrows) against rows of one at LJ 1M: the three columns for
    # both flavours, the register cap and batch per flavour, 256,000 and 4,000; the force kernels and builds under ncu
    mkdir -p "$out/profile" "$out/bench"
    $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid --n large \
      --outputs forces,all --name $name-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_pairrows --scenario lj_liquid --n large --outputs forces,all \
      --sweep minb=0:8:10 --sweep batch=8:16 --name $name-knobs "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid \
      --n 256000,4000 --outputs forces,all --name $name-sizes "${common[@]}"
    ncu_points s19-one force:forces: force:all: build:forces:
    VS=verlet_thread_pairrows ncu_points s19-two force:forces: force:all: build:forces: ;;
  pairs2-s19)  # rows of two after their fixes, as the replay set verifies the other lists: 200 replayed frames at
    # small, medium (every 10th checked) and large (fp32, mixed, every 50th), the negative control at small; then
    # the three columns at LJ 1M beside the rows of one
    mkdir -p "$out/bench"
    v=(--strategies verlet_thread_pairrows --scenarios lj_liquid --quiet --replay 200)
    $PY -m harness verify --size small "${v[@]}" --out "$out/replay-small" | tail -2
    $PY -m harness verify --size medium "${v[@]}" --replay-every 10 --out "$out/replay-medium" | tail -2
    $PY -m harness verify --size large --precision fp32,mixed "${v[@]}" --replay-every 50 --out "$out/replay-large" | tail -2
    $PY -m harness verify --launch rebuild=never --size small --precision fp32 "${v[@]}" --out "$out/replay-never" | tail -2
    echo "negative control exit status: ${PIPESTATUS[0]} (1 expected: a stale list fails)"
    $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid --n large \
      --outputs forces,all --name $name-large "${common[@]}" ;;
  pair2-s18)  # the LJ functor's brackets as fused multiply-adds and the strip build's hits two a step: the build
    # and both force flavours under ncu at LJ 1M, the three columns at 1M, the build at 256,000 and 32,000, and
    # the crowded inputs where build 'auto' took the tile build (strip, tile and auto; the 'before' stage times
    # the previous tree in the same call)
    mkdir -p "$out/profile" "$out/bench"
    ncu_points s18 build:forces: force:forces: force:all:
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --name $name-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000,32000 --outputs forces \
      --amortised 0 --sweep build=strip:cell --name $name-small "${common[@]}"
    for spec in gaussian:64000 gaussian:256000 clump:24000 clump:48000; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario ${spec%%:*} --n ${spec#*:} --outputs forces \
        --amortised 0 --sweep build=strip:tile:auto --name $name-crowded-${spec%%:*}-${spec#*:} "${common[@]}"
    done ;;
  stage-s20|stage-s21)  # a build change against the tree in .before, in one call (twentieth session: the strip
    # build's hits staged in shared memory, cf0c996, measured slower and reverted; twenty-first: the strip build's hit
    # bits shifted in and its hits stored two at a time): the build under ncu in both trees at LJ 1M; the
    # three columns at 1M in both flavours (OpenMM's step beside the current tree's: --peers openmm where its wheels
    # travel); the build at 256,000 and 32,000 and on the uniform input at 1M; harness md at 1M (2,000 steps)
    mkdir -p "$out/profile" "$out/bench" "$out/md"
    build_points() {  # TAG [PEERS...]: the points for the tree in the working directory, named TAG
      local tag=$1
      shift
      ncu_points ${name#stage-}-$tag build:forces: &&
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
        "$@" --name $name-$tag-large "${common[@]}" &&
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000,32000 --outputs forces \
        --amortised 0 --name $name-$tag-sizes "${common[@]}" &&
      $PY -m harness bench --strategies verlet_thread_padded --scenario uniform --n large --outputs forces \
        --amortised 0 --name $name-$tag-uniform "${common[@]}" &&
      $PY -m harness md --strategy verlet_thread_padded --n large --steps 2000 --sample 500 --quiet \
        --json "$out/md/$name-$tag-md.json" | tail -3
    }
    peers=(); $PY -c "import openmm" 2>/dev/null && peers=(--peers openmm)
    build_points after "${peers[@]}"
    if [ -d .before ]; then
      (cd .before && export PYTHONPATH=/tmp/site:$PWD HARNESS_COMMIT=before && build_points before)
    fi ;;
  pairs-s21)  # the rows of two's build after the twenty-first session's changes to the strip build (bit shift-in, two-hit
    # stores, branch-free windows), against the tree in .before: its build under ncu and its three columns at LJ 1M, both
    # trees in one call
    mkdir -p "$out/profile" "$out/bench"
    VS=verlet_thread_pairrows ncu_points s21-pairs-after build:forces:
    $PY -m harness bench --strategies verlet_thread_pairrows --scenario lj_liquid --n large --outputs forces \
      --name $name-after "${common[@]}"
    if [ -d .before ]; then
      (cd .before && export PYTHONPATH=/tmp/site:$PWD HARNESS_COMMIT=before &&
       VS=verlet_thread_pairrows ncu_points s21-pairs-before build:forces: &&
       $PY -m harness bench --strategies verlet_thread_pairrows --scenario lj_liquid --n large --outputs forces \
         --name $name-before "${common[@]}")
    fi ;;
  rotate-s20)  # banks=2's pass against the tree in .before (twentieth session: the pass without its table of free
    # positions, 92b3cf2, measured slower and reverted): the pass under ncu in both trees, then banks 0 and 2 at LJ 1M
    # (the three columns, both flavours, OpenMM's step beside them where its wheels travel) and 256,000, and
    # harness md at 1M with each
    mkdir -p "$out/profile" "$out/bench" "$out/md"
    peers=(); $PY -c "import openmm" 2>/dev/null && peers=(--peers openmm)
    ncu_points s20-rot-after build:forces:banks=2
    if [ -d .before ]; then
      (cd .before && export PYTHONPATH=/tmp/site:$PWD HARNESS_COMMIT=before && ncu_points s20-rot-before build:forces:banks=2)
    fi
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n large --outputs forces,all \
      --sweep banks=0:2 "${peers[@]}" --name $name-large "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 256000 --outputs forces,all \
      --sweep banks=0:2 --name $name-256k "${common[@]}"
    for b in 0 2; do
      $PY -m harness md --strategy verlet_thread_padded --launch banks=$b --n large --steps 2000 --sample 500 --quiet \
        --json "$out/md/$name-banks-$b.json" | tail -1
    done ;;
  groups-s20)  # one near-group loop for both force kernels (near_groups): both Verlet strategies at LJ 1M in both
    # flavours in this tree (OpenMM's step beside them) and in .before, the rows of two's force kernels under ncu in
    # both trees, and OpenMM's kernels under ncu in the same call
    mkdir -p "$out/profile" "$out/bench"
    peers=(); $PY -c "import openmm" 2>/dev/null && peers=(--peers openmm)
    $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid --n large \
      --outputs forces,all "${peers[@]}" --name $name-after "${common[@]}"
    VS=verlet_thread_pairrows ncu_points s20-groups-after force:forces: force:all:
    if [ -d .before ]; then
      (cd .before && export PYTHONPATH=/tmp/site:$PWD HARNESS_COMMIT=before &&
       $PY -m harness bench --strategies verlet_thread_padded,verlet_thread_pairrows --scenario lj_liquid --n large \
         --outputs forces,all --name $name-before "${common[@]}" &&
       VS=verlet_thread_pairrows ncu_points s20-groups-before force:forces: force:all:)
    fi
    [ ${#peers[@]} -gt 0 ] && $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" ;;
  rounds-s25)  # the near groups in warp-uniform rounds (this tree) against the tree in .before, aos4 and packed,
    # LJ 1M, fp32: the force with a built list and harness md, alternating
    mkdir -p "$out/md"
    for rep in 1 2; do
      for lay in aos4 packed; do
        $PY -m harness bench --strategies verlet_thread_padded --launch layout=$lay --scenario lj_liquid --n large \
          --outputs forces,all --amortised 0 --name s25-after-$lay-$rep "${common[@]}"
        (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
          --strategies verlet_thread_padded --launch layout=$lay --scenario lj_liquid --n large --outputs forces,all \
          --amortised 0 --name s25-before-$lay-$rep "${common[@]}")
      done
    done
    for rep in 1 2; do
      for lay in aos4 packed; do
        $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay --n large --precision fp32 --steps 1000 \
          --sample 500 --quiet --json "$out/md/md-after-$lay-$rep-s25.json"
        (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness md \
          --strategy verlet_thread_padded --launch layout=$lay --n large --precision fp32 --steps 1000 --sample 500 \
          --quiet --json "$out/md/md-before-$lay-$rep-s25.json")
      done
    done ;;
  rounds-sizes-s25)  # rounds-s25 at the sizes between (32,000 and 256,000; tpp auto), aos4, against .before, ABAB
    for rep in 1 2; do
      $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 32000,256000 --outputs forces,all \
        --amortised 0 --name s25-sizes-after-$rep "${common[@]}"
      (cd .before && HARNESS_COMMIT=${BEFORE_COMMIT:-before} PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
        --strategies verlet_thread_padded --scenario lj_liquid --n 32000,256000 --outputs forces,all --amortised 0 \
        --name s25-sizes-before-$rep "${common[@]}")
    done ;;
  rounds3-s25)  # this tree against each tree in $BEFORE_DIRS (space-separated), alternating: verlet_thread_padded
    # aos4 and packed at LJ 256,000 and 1M, forces and all outputs with a built list; harness md at 1M (R3_MD=0: not)
    mkdir -p "$out/md"
    for rep in 1 2; do
      for tree in . ${BEFORE_DIRS:-.before}; do
        tag=after hc=${HARNESS_COMMIT:-}
        [ "$tree" != . ] && tag=$(basename "$tree") && hc=$tag
        for lay in aos4 packed; do
          (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
            --strategies verlet_thread_padded --launch layout=$lay --scenario lj_liquid --n 256000,large \
            --outputs forces,all --amortised 0 --name s25-r3-$tag-$lay-$rep "${common[@]}")
          if [ "${R3_MD:-1}" = 1 ]; then
            (cd "$tree" && PYTHONPATH=/tmp/site:$PWD $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay \
              --n large --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/md-r3-$tag-$lay-$rep-s25.json")
          fi
        done
      done
    done ;;
  rounds-ncu-s25)  # rounds-s25's force kernels under ncu, both trees, and OpenMM's in the same call
    $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile"
    mkdir -p "$out/profile"
    for lay in aos4 packed; do
      for outs in forces all; do
        ncu_verlet "$out/profile/ncu-s25-after-$lay-$outs" force $outs layout=$lay | sed "s|^|after $lay $outs: |"
        (cd .before && PYTHONPATH=/tmp/site:$PWD ncu_verlet "$out/profile/ncu-s25-before-$lay-$outs" force $outs \
          layout=$lay | sed "s|^|before $lay $outs: |")
      done
    done ;;
  cond-s26)  # the list upkeep in conditional graph nodes against the guarded launches (MDFORCE_CONDITIONAL=0),
    # alternating, one tree: harness md at LJ 1M (packed and aos4) and 4,000; the amortised column at 1M
    mkdir -p "$out/md"
    for rep in 1 2; do
      for cond in 1 0; do
        for lay in packed aos4; do
          MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay --n large \
            --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/md-cond$cond-$lay-1m-$rep-s26.json" | tail -1 \
            | sed "s|^|cond=$cond $lay 1M rep $rep: |"
        done
        MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --n 4000 --precision fp32 \
          --steps 20000 --sample 10000 --quiet --json "$out/md/md-cond$cond-4k-$rep-s26.json" | tail -1 \
          | sed "s|^|cond=$cond 4,000 rep $rep: |"
        MDFORCE_CONDITIONAL=$cond $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed \
          --scenario lj_liquid --n large --outputs forces --name s26-cond$cond-$rep "${common[@]}"
      done
    done ;;
  cond2-s26)  # cond-s26's harness md between 4,000 and 1M: where the conditional nodes start to pay
    mkdir -p "$out/md"
    for rep in 1 2; do
      for n in 16000 32000 64000 131072 256000; do
        for cond in 1 0; do
          MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 \
            --steps 4000 --sample 2000 --quiet --json "$out/md/md-cond$cond-$n-$rep-s26.json" | tail -1 \
            | sed "s|^|cond=$cond n=$n rep $rep: |"
        done
      done
    done ;;
  cond3-s26)  # the rule (a body of fewer than 4 launches stays in line): tools/conditional_probe.py, then harness md
    # cond 1 / 0 alternating at 4,000 to 16,000 (plain steps) and LJ 1M (fused, packed and aos4), and the amortised column
    mkdir -p "$out/md"
    $PY tools/conditional_probe.py --json "$out/conditional-probe-s26.json"
    for rep in 1 2; do
      for cond in 1 0; do
        for n in 4000 8000 16000; do
          MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --n $n --precision fp32 \
            --steps 10000 --sample 5000 --quiet --json "$out/md/md3-cond$cond-$n-$rep-s26.json" | tail -1 \
            | sed "s|^|cond=$cond n=$n rep $rep: |"
        done
        for lay in packed aos4; do
          MDFORCE_CONDITIONAL=$cond $PY -m harness md --strategy verlet_thread_padded --launch layout=$lay --n large \
            --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/md3-cond$cond-$lay-1m-$rep-s26.json" \
            | tail -1 | sed "s|^|cond=$cond $lay 1M rep $rep: |"
        done
      done
    done
    for cond in 1 0; do
      MDFORCE_CONDITIONAL=$cond $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed \
        --scenario lj_liquid --n large --outputs forces,all --name s26-cond3-$cond "${common[@]}"
    done ;;
  san-s26)  # compute-sanitizer on the upkeep in conditional nodes: the self-test, the fused and the plain MD loop
    # with graphs (the gate, bodies taken on rebuild steps), aos4 and packed, and the amortised replay's graph
    for t in memcheck racecheck initcheck synccheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
from strategies import graphs
print('self-test', graphs.conditional_status())
for n, lay, fuse in ((16000, 'aos4', 'always'), (16000, 'aos4', False), (30000, 'packed', 'always')):
    p = scenarios.make('lj_liquid' + (':density=0.1' if lay == 'packed' else ''), n, precision='fp32')
    r = md.run(strategies.create('verlet_thread_padded', layout=lay), p, steps=48, dt=0.005, sample=24, fuse=fuse)
    print('md', n, lay, r.fused, r.graph, r.upkeep, r.rebuilds, r.samples[-1].total)
    assert r.upkeep == 'conditional nodes', r.upkeep" || echo "sanitizer $t: FAILED"
    done ;;
  san2-s26)  # whose are san-s26's racecheck and synccheck errors: the same runs with the guarded launches
    # (MDFORCE_CONDITIONAL=0), and a correct one-barrier kernel alone in a conditional body
    for t in racecheck synccheck; do
      MDFORCE_CONDITIONAL=0 compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for n, lay, fuse in ((16000, 'aos4', 'always'), (16000, 'aos4', False), (30000, 'packed', 'always')):
    p = scenarios.make('lj_liquid' + (':density=0.1' if lay == 'packed' else ''), n, precision='fp32')
    r = md.run(strategies.create('verlet_thread_padded', layout=lay), p, steps=48, dt=0.005, sample=24, fuse=fuse)
    print('md guarded', n, lay, r.fused, r.graph, r.upkeep, r.rebuilds, r.samples[-1].total)" || echo "guarded $t: FAILED"
      compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import cupy, numpy as np
from strategies import graphs
from strategies.cuda import kernel
print('self-test', graphs.conditional_status())
tick = kernel('graph.cu', 'graph_tick<int>')
flag, count = cupy.ones(1, np.int32), cupy.zeros(1, np.int32)
s = cupy.cuda.Stream(non_blocking=True)
with s:
    tick((1,), (256,), (count, flag)); s.synchronize()
    for body in ('plain', 'conditional'):
        s.begin_capture()
        if body == 'plain':
            tick((1,), (256,), (count, flag))
        else:
            with graphs.upkeep_if(flag, least=1):
                tick((1,), (256,), (count, flag))
        g = s.end_capture(); g.launch(s); s.synchronize()
        print(body, 'count', int(count.get()[0]))" || echo "one-barrier kernel $t: FAILED"
    done
    for t in racecheck synccheck; do
      MDFORCE_CONDITIONAL=0 $PY -m harness sanitize --strategies clusterpair_warp_padded --tools $t 2>&1 | tail -3 | sed "s|^|guarded: |"
    done ;;
  san3-s26)  # test_graphs' ordering test under each tool (does the tool keep what follows an IF node after its body?)
    for t in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $t --error-exitcode 9 $PY -m pytest -q -p no:cacheprovider tests/test_graphs.py \
        -k "waits_for_its_body or in_line or each_body" 2>&1 | grep -v "Host Frame\|^=========     " | tail -12 \
        | sed "s|^|$t: |"
    done ;;
  san4-s26)  # synccheck's scan_counts report: the fused MD steps at 16,000 with the upkeep conditional (least 4)
    # and in line (least 99); then the binning alone (4 kernels, nothing else in the graph writes the flag) in a
    # conditional body and in line, replayed with the flag set
    for least in 4 99; do
      compute-sanitizer --tool synccheck --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
from strategies import graphs
graphs.MIN_NODES = $least
p = scenarios.make('lj_liquid', 16000, precision='fp32')
r = md.run(strategies.create('verlet_thread_padded'), p, steps=48, dt=0.005, sample=24, fuse='always')
print('md least $least', r.fused, r.graph, r.upkeep, r.rebuilds, r.samples[-1].total)" 2>&1 \
        | grep -v "Host Frame\|^=========     " | sort | uniq -c | sort -rn | head -6 | sed "s|^|md least $least: |"
    done
    for least in 1 99; do
      compute-sanitizer --tool synccheck --error-exitcode 9 $PY -c "import cupy, numpy as np, strategies
from harness import scenarios
from strategies import graphs
p = scenarios.make('lj_liquid', 16000, precision='fp32')
s = strategies.create('verlet_thread_padded'); plan = s.prepare(p); s.compute(plan)
b = plan.binning
print('method', b.method, 'self-test', graphs.conditional_status())
flag = cupy.ones(1, np.int32)
st = cupy.cuda.Stream(non_blocking=True)
with st:
    b.run(guard=flag); st.synchronize()
    st.begin_capture()
    with graphs.upkeep_if(flag, least=$least):
        b.run(guard=flag)
    g = st.end_capture()
    for _ in range(3):
        g.launch(st)
    st.synchronize()
print('binning least $least', graphs.NODES, int(b.start[-1].get()))" 2>&1 \
        | grep -v "Host Frame\|^=========     " | sort | uniq -c | sort -rn | head -6 | sed "s|^|binning least $least: |"
    done ;;
  h200-s26)  # the issue's figures on this GPU with the upkeep in conditional nodes (issue_figures; OpenMM's kernel
    # under ncu, not the packed kernel's)
    NCU_OURS=0 issue_figures h200-s26 ;;
  skin-s27)  # how the Verlet list's three columns move with the skin (LJ 1M, fp32, packed): the force with a
    # built list against the list radius (what an inner, pruned list would buy), and the rebuild's share per step
    skin_sweep s27 ;;
  prune-s27)  # the inner list (prune) against none at LJ 1M (packed, fp32): the three columns at skins 0.3 and 0.5,
    # then harness md per step (fused steps) with and without it
    mkdir -p "$out/md"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --sweep skin=0.3:0.5 --sweep prune=off:0.05:0.1 --name prune-s27 "${common[@]}"
    for v in skin=0.3 skin=0.3,prune=0.1 skin=0.4,prune=0.1 skin=0.5,prune=0.1 skin=0.5,prune=0.05; do
      $PY -m harness md --strategy verlet_thread_padded --launch layout=packed,$v --n large \
        --precision fp32 --steps 2000 --sample 1000 --quiet --json "$out/md/md-${v//[=,]/-}-1m-s27.json" | tail -1 \
        | sed "s|^|$v packed 1M: |"
    done ;;
  prune2-s27)  # the inner list's prune kernel under ncu (the build phase at LJ 1M, packed), then the three columns
    # (skin 0.3, prune off, 0.1, 0.05) and harness md with and without it
    mkdir -p "$out/md"
    ncu_points prune2-s27 build:forces:layout=packed,prune=0.1
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --sweep prune=off:0.1:0.05 --name prune2-s27 "${common[@]}"
    for v in skin=0.3 skin=0.3,prune=0.1 skin=0.5,prune=0.1; do
      $PY -m harness md --strategy verlet_thread_padded --launch layout=packed,$v --n large \
        --precision fp32 --steps 2000 --sample 1000 --quiet --json "$out/md/md2-${v//[=,]/-}-1m-s27.json" | tail -1 \
        | sed "s|^|$v packed 1M: |"
    done ;;
  san-prune-s27)  # compute-sanitizer on the inner list (prune): evaluations (aos4 at 4,000, packed on the gas), the plain
    # and the fused MD loop with prunes and rebuilds; racecheck and synccheck with the guarded launches (graphs.py)
    for t in memcheck racecheck initcheck synccheck; do
      cond=1; [ $t = racecheck ] || [ $t = synccheck ] && cond=0
      MDFORCE_CONDITIONAL=$cond compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
for spec, n, lay in (('lj_liquid', 4000, 'aos4'), ('lj_liquid:density=0.1', 30000, 'packed')):
    p = scenarios.make(spec, n, precision='fp32')
    for out in ('forces', 'all'):
        s = strategies.create('verlet_thread_padded', layout=lay, tpp=1, prune=0.1)
        print(spec, out, s.evaluate(p, out).pairs)
    for fuse in (False, 'always'):
        r = md.run(strategies.create('verlet_thread_padded', layout=lay, tpp=1, prune=0.1), p, steps=30, dt=0.005,
                   sample=15, fuse=fuse)
        print('md', r.fused, r.graph, r.rebuilds, r.prunes, r.samples[-1].total)" || echo "sanitizer $t: FAILED"
    done ;;
  verify-prune-s27)  # verify with the inner list (prune 0.1) at small, medium and large (LJ liquid), and the negative
    # control with it (rebuild=never must fail); REPLAY=K: K replayed frames checked (call 5 ran without: 0)
    for sz in small medium; do
      $PY -m harness verify --strategies verlet_thread_padded --launch prune=0.1 --size $sz --replay ${REPLAY:-0} \
        --replay-every $([ $sz = medium ] && echo ${REPLAY_EVERY:-1} || echo 1) \
        --quiet --out "$out/verify-prune-$sz" | tail -5 | sed "s|^|prune $sz: |"
    done
    $PY -m harness verify --strategies verlet_thread_padded --launch prune=0.1,layout=packed --scenarios lj_liquid \
      --precision fp32 --size large --quiet --out "$out/verify-prune-large" | tail -3 | sed "s|^|prune large packed: |"
    $PY -m harness verify --strategies verlet_thread_padded --launch prune=0.1,rebuild=never --scenarios lj_liquid \
      --size small --replay ${REPLAY:-0} --quiet --out "$out/verify-prune-never" | grep "pass:\|FAIL" | head -8 \
      | sed "s|^|prune rebuild=never: |" ;;
  check-s27)  # this tree against .before (the session's start), alternating, two runs each: verlet_thread_padded
    # packed at LJ 1M, forces and all outputs with a built list, and harness md (the default kernels took the
    # inner list's flags: consume_flags, md_flags)
    mkdir -p "$out/md"
    for rep in 1 2; do
      for tree in . .before; do
        tag=after hc=${HARNESS_COMMIT:-}
        [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
        (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
          --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
          --outputs forces,all --amortised 0 --name s27-check-$tag-$rep "${common[@]}" | grep packed | sed "s|^|$tag $rep: |")
        (cd "$tree" && PYTHONPATH=/tmp/site:$PWD $PY -m harness md --strategy verlet_thread_padded --launch layout=packed \
          --n large --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/md-check-$tag-$rep-s27.json" \
          | tail -1 | sed "s|^|$tag $rep md: |")
      done
    done ;;
  mix-s28)  # launch parameter mix (layout=packed: the last k of a near group's 8 gathers from the Vec4 positions; ran
    # at f72300a, reverted after its measurement: reports/2026-11-26-h100, twenty-eighth session) at LJ 1M, fp32:
    # the SASS loops of the forces kernel at mix 0 and 4 (and the default kernels' SASS against .before), the with-list columns over MIXES with OpenMM beside, ncu at mix 0 and MIXNCU, harness md at both
    mkdir -p "$out/md" "$out/sass"
    for x in "false, true, 1, 128, 3, 10, 16" "false, true, 1, 128, 20, 10, 16" "true, true, 1, 128, 3, 8, 8" \
             "true, true, 1, 128, 20, 8, 8"; do
      $PY tools/sass.py verlet.cu "verlet_force<float, float, LennardJones, $x, false>" > "$out/sass/f-${x//[, ]/}.txt" 2>&1
      grep -i "loop\|instructions" "$out/sass/f-${x//[, ]/}.txt" | tail -4 | sed "s|^|sass $x: |"
    done
    if [ -d .before ]; then
      for x in "false, true, 1, 128, 3, 10, 16" "true, true, 1, 128, 3, 8, 8" "false, true, 1, 128, 0, 10, 16" \
               "true, true, 1, 128, 0, 8, 8"; do
        e="verlet_force<float, float, LennardJones, $x, false>"
        $PY tools/sass.py verlet.cu "$e" | grep -v "^\s*$" > "$out/sass/after.txt" 2>&1
        (cd .before && PYTHONPATH=$PWD $PY tools/sass.py verlet.cu "$e") | grep -v "^\s*$" > "$out/sass/before.txt" 2>&1
        cmp -s "$out/sass/after.txt" "$out/sass/before.txt" && echo "sass same as .before: $e" \
          || echo "sass DIFFERS from .before: $e ($(diff "$out/sass/after.txt" "$out/sass/before.txt" | wc -l) lines)"
      done
    fi
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --sweep mix=${MIXES:-0:2:4:6} --peers openmm --name mix-s28 "${common[@]}"
    ncu_points mix-s28 force:forces:layout=packed force:forces:layout=packed,mix=${MIXNCU:-4} \
      force:all:layout=packed force:all:layout=packed,mix=${MIXNCU:-4}
    for v in layout=packed layout=packed,mix=${MIXNCU:-4}; do
      $PY -m harness md --strategy verlet_thread_padded --launch $v --n large \
        --precision fp32 --steps 2000 --sample 1000 --quiet --json "$out/md/md-${v//[=,]/-}-1m-s28.json" | tail -1 \
        | sed "s|^|$v 1M: |"
    done ;;
  cprune-s28)  # the cluster pairs' inner list (prune, rolling) at LJ 1M, fp32: the three columns without it, with
    # prune 0.1 and 0.05 on displacement, and rolling 2 and 4; harness md with each; the default cluster kernels
    # (which took the inner list's flags) against .before, alternating
    mkdir -p "$out/md"
    cps=clusterpair_warp_padded,clusterpair_warp_newton3
    $PY -m harness bench --strategies $cps --scenario lj_liquid --n large --outputs forces,all \
      --sweep prune=off:0.1:0.05 --name cprune-s28 "${common[@]}"
    $PY -m harness bench --strategies $cps --launch prune=0.1 --scenario lj_liquid --n large --outputs forces \
      --sweep rolling=2:4 --name cprune-rolling-s28 "${common[@]}"
    cprune_md_check md ;;  # call 2 ran out of time in it: cprune2-s28 ran it again
  cprune2-s28)  # the rest of cprune-s28 (its call ran out of time): harness md with rolling 2 and 4 (and without,
    # and prune 0.1 on displacement, again), and the default cluster kernels against .before, alternating
    cprune_md_check md2 ;;
  verify-cprune-s28)  # verify with the cluster pairs' inner list (prune 0.1, rolling 2) at small, medium and large
    # (LJ liquid, REPLAY frames), and the negative control (rebuild=never must fail)
    cps=clusterpair_warp_padded,clusterpair_warp_newton3
    for sz in small medium; do
      $PY -m harness verify --strategies $cps --launch prune=0.1,rolling=2 --size $sz --replay ${REPLAY:-100} \
        --replay-every $([ $sz = medium ] && echo 10 || echo 1) --quiet --out "$out/verify-cprune-$sz" | tail -5 \
        | sed "s|^|cprune $sz: |"
    done
    $PY -m harness verify --strategies $cps --launch prune=0.1,rolling=2 --scenarios lj_liquid --precision fp32 \
      --size large --quiet --out "$out/verify-cprune-large" | tail -3 | sed "s|^|cprune large: |"
    $PY -m harness verify --strategies $cps --launch prune=0.1,rolling=2,rebuild=never --scenarios lj_liquid \
      --size small --replay ${REPLAY:-100} --quiet --out "$out/verify-cprune-never" | grep "pass:\|FAIL" | head -8 \
      | sed "s|^|cprune rebuild=never: |" ;;
  san-cprune-s28)  # compute-sanitizer on the cluster pairs' inner list: evaluations and MD runs (plain steps, graphs)
    # with rebuilds and prunes, both strategies, rolling 1 and 2
    for t in memcheck racecheck initcheck synccheck; do
      cond=1; [ $t = racecheck ] || [ $t = synccheck ] && cond=0
      MDFORCE_CONDITIONAL=$cond compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies; from harness import scenarios, md
p = scenarios.make('lj_liquid', 4000, precision='fp32')
for name in ('clusterpair_warp_padded', 'clusterpair_warp_newton3'):
    for rolling in (1, 2):
        s = strategies.create(name, prune=0.1, rolling=rolling)
        print(name, rolling, [s.evaluate(p, out).pairs for out in ('forces', 'all')])
        r = md.run(strategies.create(name, prune=0.1, rolling=rolling), p, steps=40, dt=0.005, sample=20)
        print('md', r.graph, r.rebuilds, r.prunes, r.samples[-1].total)" || echo "sanitizer $t: FAILED"
    done ;;
  functor-s28)  # the LJ functor in r^-6 (float modes) against .before (the sigma^2 form): SASS loop counts of the
    # Verlet force kernels, the bits of several strategies in every precision (sigma = 1: the same operations), and
    # the packed and aos4 kernels at LJ 1M with harness md, alternating, two runs each
    mkdir -p "$out/md" "$out/sass"
    for x in "false, true, 1, 128, 3, 10, 16" "true, true, 1, 128, 3, 8, 8" "false, true, 1, 128, 0, 10, 16" \
             "true, true, 1, 128, 0, 8, 8"; do
      e="verlet_force<float, float, LennardJones, $x, false>"
      a=$($PY tools/sass.py verlet.cu "$e" | grep "^loop _Z12verlet_force" | head -1)
      b=$(cd .before && PYTHONPATH=$PWD $PY tools/sass.py verlet.cu "$e" | grep "^loop _Z12verlet_force" | head -1)
      echo "sass $x: after ${a##*:} / before ${b##*:}"
    done
    bits_check
    for rep in 1 2; do
      for tree in . .before; do
        tag=after hc=${HARNESS_COMMIT:-}
        [ "$tree" != . ] && tag=before && hc=${BEFORE_COMMIT:-before}
        for lay in packed aos4; do
          (cd "$tree" && HARNESS_COMMIT=$hc PYTHONPATH=/tmp/site:$PWD $PY -m harness bench \
            --strategies verlet_thread_padded --launch layout=$lay --scenario lj_liquid --n large \
            --outputs forces,all --amortised 0 --name s28-functor-$tag-$lay-$rep "${common[@]}" | grep "verlet.*ok" \
            | sed "s|^|$tag $rep: |")
        done
        (cd "$tree" && PYTHONPATH=/tmp/site:$PWD $PY -m harness md --strategy verlet_thread_padded --launch layout=packed \
          --n large --precision fp32 --steps 1000 --sample 500 --quiet --json "$out/md/md-functor-$tag-$rep-s28.json" \
          | tail -1 | sed "s|^|$tag $rep md: |")
      done
    done ;;
  functor-ncu-s28)  # the LJ functor in r^-6 under ncu: the packed Verlet force kernel (LJ 1M, fp32, both flavours)
    # in this tree and in .before (the sigma^2 form), and OpenMM's kernels, in one call
    mkdir -p "$out/profile"
    $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" 2>&1 | tail -4
    for outs in forces all; do
      ncu_verlet "$out/profile/ncu-functor-after-$outs" force $outs layout=packed | sed "s|^|after $outs: |"
      (cd .before && PYTHONPATH=/tmp/site:$PWD ncu_verlet "$out/profile/ncu-functor-before-$outs" force $outs \
        layout=packed | sed "s|^|before $outs: |")
    done ;;
  reduce-s29)  # the final reduction's loads issued ahead (d6d549c, reduce.cu and sum_partials): the bits of seven
    # strategies in every precision and at LJ 1M against .before; the with-list column and its reduce phase at LJ 1M
    # (packed Verlet list, cluster pairs), alternating, two runs each; then issue 13's figures on this GPU
    bits_check 1
    with_list_ab s29-reduce
    issue_figures s29 ;;
  reduce2-s29)  # the final reduction in two levels (a block per 256 partials, the last one sums the blocks'): the
    # bits against .before (forces the same; energy and virial summed in another order), the with-list columns
    bits_check 1
    with_list_ab s29-reduce2 ;;
  fold-s29)  # the Verlet force kernels fold the final reduction in groups (ff53d2a, common.cuh fold_in_groups; no
    # reduction launched after them; reverted: no faster than reduce2-s29's kernel): the bits against .before, the
    # with-list columns (the cluster pairs keep the reduction kernel)
    bits_check 1
    with_list_ab s29-fold ;;
  final-s29)  # issue 13's figures on this GPU at the session's last tree (the two-level reduction kernel)
    issue_figures s29-final ;;
  skin-s29)  # skin_sweep on the H200 at the session's last tree: where the whole step is fastest
    skin_sweep s29 ;;
  foldcells-s29)  # the CSR full shell's in-kernel reduction in two levels (fold_in_last_block: groups of a block's
    # count of slots, then the groups'): the bits against .before, its with-list columns at LJ 1M
    bits_check
    with_list_ab s29-foldcells fullshell_thread_csr: ;;
  bitsonly-s29)  # a refactor's check: the bits of seven strategies in every precision against .before (must be the same)
    bits_check ;;
  explore-s30)  # where the packed Verlet list's time goes at LJ 1M (fp32): the force kernel's rounds pipelined
    # (ahead=1; minb 8, where the forces flavour fits it without spilling) against not; the strip build walking each
    # strip's z-window against whole strips (window=0); ncu's warp states (stall reasons) of the force kernel and of
    # the build; the parts of a step and harness md
    mkdir -p "$out/profile" "$out/md"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --sweep ahead=0:1 --name s30-ahead "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed,minb=8 --scenario lj_liquid \
      --n large --outputs forces --amortised 0 --sweep ahead=0:1 --name s30-ahead-m8 "${common[@]}"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces --amortised 0 --sweep window=0:1 --name s30-window "${common[@]}"
    $PY tools/step_parts.py --strategy verlet_thread_padded --launch layout=packed --n large \
      --json "$out/md/parts-s30-1m.json" 2>&1 | tail -12
    $PY -m harness md --strategy verlet_thread_padded --launch layout=packed --n large --precision fp32 --steps 2000 \
      --sample 1000 --quiet --json "$out/md/md-s30-1m.json" | tail -1
    for v in force:forces:layout=packed force:forces:layout=packed,minb=8,ahead=1 force:all:layout=packed \
             build:forces:layout=packed build:forces:layout=packed,window=0; do
      IFS=: read -r phase outs launch <<<"$v"
      stem="$out/profile/s30-warps-$phase-$outs-${launch//[=,]/-}"
      ncu --nvtx --nvtx-include "$phase/verlet_thread_padded/" --clock-control none --section WarpStateStats \
        --section SchedulerStats --section Occupancy --section LaunchStats --section SpeedOfLight \
        --metrics smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum -f -o "$stem" \
        $PY -m harness profile --inner --strategy verlet_thread_padded --scenario lj_liquid --n large \
        --precision fp32 --outputs $outs --launch $launch > "$stem.log" 2>&1
      ncu --import "$stem.ncu-rep" --csv --page raw > "$stem.csv" 2>>"$stem.log"
      ncu --import "$stem.ncu-rep" --page details > "$stem.txt" 2>>"$stem.log"
      echo "== $v"; grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Achieved Occupancy|Registers Per" "$stem.txt" | head -12
      $PY - "$stem.csv" <<'PYEOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, data = rows[0], rows[2:]
for r in data:  # one line per kernel: its stall reasons per issued instruction, largest first
    stalls = {h.split('stalled_')[1].split('_per_issue_active')[0]: float(v.replace(',', '') or 0)
              for h, v in zip(head, r) if 'issue_stalled' in h and h.endswith('per_issue_active.ratio')}
    name = r[head.index('Kernel Name')][:60]
    top = sorted(stalls.items(), key=lambda kv: -kv[1])[:8]
    print(name, ' '.join(f'{k}={v:.2f}' for k, v in top))
PYEOF
    done ;;
  masked-s30)  # the Verlet force kernels' pairs through the functor's masked form (Accumulator::add_masked: the
    # inverse square selected instead of the force and the energy, the energy's shift once per pair counted): the
    # bits against .before (forces and pair counts the same, Verlet energies within rounding), the with-list columns
    # at LJ 1M (packed; aos4), the parts of a step with the fused rebuild's own parts, the GPU tests of the Verlet list
    bits_check 1
    with_list_ab s30-masked verlet_thread_padded:--launch=layout=packed verlet_thread_padded:
    mkdir -p "$out/md"
    $PY tools/step_parts.py --strategy verlet_thread_padded --launch layout=packed --n large \
      --json "$out/md/parts-s30-masked-1m.json" 2>&1 | tail -3
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_verlet_packed.py tests/test_md_fused.py \
      tests/test_gpu.py tests/test_layouts.py -k "verlet or reduce or layout" 2>&1 | tail -3 ;;
  stage-s30)  # the fused loop's rebuild through verlet_stage and verlet_resort (one scattered store of 16 bytes and
    # one of 4 a particle) instead of verlet_unsort and verlet_sort (nine of 4): the fused-loop GPU tests (the plain
    # loop's bits), the parts of a step, then harness md at LJ 1M (packed, fp32) against .before, alternating
    mkdir -p "$out/md"
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_md_fused.py tests/test_md.py tests/test_graphs.py 2>&1 | tail -3
    $PY tools/step_parts.py --strategy verlet_thread_padded --launch layout=packed --n large \
      --json "$out/md/parts-s30-stage-1m.json" 2>&1 | tail -2
    md_ab s30-stage ;;
  final-s30)  # issue 13's figures at the session's last tree (OpenMM in the same run), then the whole MD step against
    # .before (the session's start): LJ 1M (packed) and 4,000 (the defaults)
    md_ab s30-final-1m
    md_ab s30-final-4k 4000 20000 ""
    issue_figures s30-final ;;
  san-s30)  # compute-sanitizer on the fused MD loop's rebuild through verlet_stage and verlet_resort (aos4 and packed,
    # graphs of 64, 8 and 1 steps), each tool; racecheck and synccheck with the guarded upkeep launches, as harness
    # sanitize runs them (they do not follow conditional bodies: harness/sanitize.py, GUARDED_TOOLS); then harness
    # sanitize on the Verlet list (its self-test first)
    for t in memcheck racecheck initcheck synccheck; do
      cond=1
      case $t in racecheck|synccheck) cond=0 ;; esac
      log=$(MDFORCE_CONDITIONAL=$cond compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import strategies
from harness import scenarios, md
for n, lay in ((16000, 'aos4'), (30000, 'packed')):
    p = scenarios.make('lj_liquid' + (':density=0.1' if lay == 'packed' else ''), n, precision='fp32')
    r = md.run(strategies.create('verlet_thread_padded', layout=lay), p, steps=80, dt=0.005, sample=80, fuse='always')
    print('$t md', n, lay, r.fused, r.graph, r.upkeep, r.rebuilds, r.samples[-1].total)
    assert r.fused == 'on' and r.rebuilds > 1, (r.fused, r.rebuilds)" 2>&1)
      rc=$?
      echo "$log" | grep -E "md |SUMMARY"
      [ $rc = 0 ] || { echo "sanitizer $t: FAILED (exit $rc)"; echo "$log" | tail -5; }
    done
    $PY -m harness sanitize --self-test --tools memcheck,racecheck && \
      $PY -m harness sanitize --size small --strategies verlet_thread_padded ;;
  pred-s31)  # the pairs kept by predicated adds instead of a select (Accumulator::add_where): the bits against .before,
    # the with-list columns at LJ 1M (packed; aos4), harness md against .before; then the packed kernel at blocks of
    # 64 and 256 (the last wave's share), and ncu's SM-active and issue figures of the force kernel (both flavours)
    bits_check 1
    with_list_ab s31-pred verlet_thread_padded:--launch=layout=packed verlet_thread_padded:
    md_ab s31-pred
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --sweep block=64:128:256 --name s31-block "${common[@]}" | grep " ok"
    mkdir -p "$out/profile"
    for outs in forces all; do
      stem="$out/profile/s31-active-$outs"
      ncu --nvtx --nvtx-include "force/verlet_thread_padded/" --clock-control none --metrics \
        gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__waves_per_multiprocessor,launch__registers_per_thread,smsp__thread_inst_executed_per_inst_executed.ratio \
        -f -o "$stem" $PY -m harness profile --inner --strategy verlet_thread_padded --scenario lj_liquid --n large \
        --precision fp32 --outputs $outs --launch layout=packed > "$stem.log" 2>&1
      ncu --import "$stem.ncu-rep" --csv --page raw > "$stem.csv" 2>>"$stem.log"
      $PY - "$stem.csv" "$outs" <<'PYEOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, data = rows[0], rows[2:]
for r in data:
    if 'verlet_force' not in r[head.index('Kernel Name')]:
        continue
    print(sys.argv[2], ' '.join(f"{h}={v}" for h, v in zip(head, r) if h.startswith(('gpu__', 'sm__', 'smsp__', 'launch__w', 'launch__r'))))
PYEOF
    done
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_verlet_packed.py tests/test_md_fused.py \
      tests/test_gpu.py -k "verlet or reduce" 2>&1 | tail -3 ;;
  tune-s31)  # the predicated pairs only where they pay (packed, energy flavours): the bits against .before, the with-list
    # columns (packed; aos4) against .before; then the register cap and the entries in flight again on the packed
    # kernel (both flavours), which the predicated adds change
    bits_check 1
    with_list_ab s31-tune verlet_thread_padded:--launch=layout=packed verlet_thread_padded:
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces --amortised 0 --sweep minb=10:12:16 --sweep batch=8:16 --name s31-tune-forces "${common[@]}" \
      | grep " ok"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs all --amortised 0 --sweep minb=0:8:10 --sweep batch=8:16 --name s31-tune-all "${common[@]}" \
      | grep " ok" ;;
  auto-s31)  # layout=packed's own 'auto' (forces: minb 12, 16 in flight; all outputs: minb 8, 16 in flight): the with-list
    # columns and harness md against .before, alternating; the Verlet GPU tests; then ncu's per-instruction counts
    # (SourceCounters) of the strip build and the packed force kernel, exported as SASS with counts
    with_list_ab s31-auto verlet_thread_padded:--launch=layout=packed
    md_ab s31-auto
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_verlet_packed.py tests/test_md_fused.py \
      2>&1 | tail -2
    mkdir -p "$out/profile"
    for phase in build force; do
      stem="$out/profile/s31-source-$phase"
      ncu --nvtx --nvtx-include "$phase/verlet_thread_padded/" --clock-control none --section SourceCounters \
        --import-source no -f -o "$stem" $PY -m harness profile --inner --strategy verlet_thread_padded \
        --scenario lj_liquid --n large --precision fp32 --outputs forces --launch layout=packed > "$stem.log" 2>&1
      ncu --import "$stem.ncu-rep" --page source --csv --print-source sass > "$stem-sass.csv" 2>>"$stem.log"
      echo "$phase: $(wc -l < "$stem-sass.csv") lines of SASS with counts"; tail -2 "$stem.log"
    done ;;
  final-s31)  # the session's last tree: harness md against .before (the session's start) at LJ 1M (packed) and 4,000 (the
    # defaults), then issue 13's figures with OpenMM in the same call (issue_figures)
    md_ab s31-final-1m
    md_ab s31-final-4k 4000 20000 ""
    issue_figures s31-final ;;
  split-s31)  # the energy split (LennardJones::force_over_r_split: one fma a pair into the energy sum, the shift taken off
    # once per row): the with-list columns at LJ 1M (packed) against .before, then the GPU tests of the Verlet list,
    # the MD loop and the potentials
    with_list_ab s31-split verlet_thread_padded:--launch=layout=packed
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_verlet_packed.py tests/test_md_fused.py \
      tests/test_md.py tests/test_potentials.py 2>&1 | tail -2 ;;
  s32-a)  # the y coordinate's LEA.HI (.mid, 7c809ae) and the first groups loaded ahead (this tree) against the session's
    # start (.before): the Verlet list's bits (this tree against .before), then the with-list columns and harness md of
    # the three trees
    verlet_bits
    trees_ab s32-a .before=${BEFORE_COMMIT:-before} .mid=${MID_COMMIT:-mid} .=${HARNESS_COMMIT:-this} ;;
  s32-b)  # the strip build walking each column with its opposite (this tree) against .before: the build's ms (bench,
    # forces, the build_ms column) at LJ 1M and 256,000 (packed), Gaussian 64,000 and clump 48,000, alternating, two runs
    # each; harness md at 1M against .before; then the build kernel under ncu in both trees (LJ 1M, packed)
    points_ab s32-b lj_liquid:large,256000:layout=packed gaussian:64000 clump:48000
    md_ab s32-b
    build_ncu s32-build ;;
  s32-c)  # build=opposite as a choice ('auto' on crowded inputs), the strip build in the new column order: the build's
    # ms at LJ 1M (packed; strip) and on the crowded inputs ('auto': opposite here, strip in .before), alternating, two
    # runs each; harness md at 1M against .before
    points_ab s32-c lj_liquid:large:layout=packed gaussian:64000 clump:48000 clump:24000
    md_ab s32-c ;;
  s32-d)  # compute-sanitizer (each tool) on build=opposite (LJ 4,000 with its periodic images, Gaussian 4,000, clump 6,000,
    # and the MD loop's rebuilds at LJ 4,000, T 3); then layout=packed's register cap and entries in flight again after the
    # y coordinate's LEA.HI (with-list columns, LJ 1M), and harness md at 1M under the packed table's minb 12
    for t in memcheck racecheck initcheck synccheck; do
      log=$(MDFORCE_CONDITIONAL=0 compute-sanitizer --tool $t --error-exitcode 9 $PY -c "import numpy as np, strategies
from harness import scenarios, md
for spec, n in (('lj_liquid', 4000), ('gaussian', 4000), ('clump', 6000)):
    p = scenarios.make(spec, n, precision='fp32')
    f = strategies.create('verlet_thread_padded', build='opposite').evaluate(p)
    print('$t', spec, n, f.pairs)
p = scenarios.make('lj_liquid', 4000, precision='fp32')
r = md.run(strategies.create('verlet_thread_padded', build='opposite', tpp=1), p, steps=60, dt=0.005, sample=60,
           temperature=3.0)
print('$t md lj', r.rebuilds, r.samples[-1].total)" 2>&1)
      rc=$?
      echo "$log" | grep -E "^$t |md lj|ERROR SUMMARY"
      [ $rc = 0 ] || { echo "sanitizer $t: FAILED (exit $rc)"; echo "$log" | tail -5; }
    done
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces --amortised 0 --sweep minb=10:12 --sweep batch=8:16 --name s32-tune-forces "${common[@]}" \
      | grep " ok"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs all --amortised 0 --sweep minb=0:8:10 --sweep batch=8:16 --name s32-tune-all "${common[@]}" \
      | grep " ok"
    mkdir -p "$out/md"
    for rep in 1 2; do
      for launch in layout=packed layout=packed,minb=12 layout=packed,minb=12,batch=8; do
        $PY -m harness md --strategy verlet_thread_padded --launch $launch --n large --precision fp32 --steps 2000 \
          --sample 1000 --quiet --json "$out/md/s32-d-$(echo $launch | tr ',=' '--')-$rep.json" | tail -1 \
          | sed "s|^|$launch $rep: |"
      done
    done ;;
  final-s32)  # the session's last tree: issue 13's figures with OpenMM in the same call (issue_figures)
    issue_figures s32-final ;;
  s32-e)  # the strip build under a cap of 10 blocks (verlet_build_capped, this tree) against .before: the build's ms at LJ
    # 1M (packed) and 256,000, alternating, two runs each; harness md at 1M; the GPU tests of the Verlet list
    points_ab s32-e lj_liquid:large,256000:layout=packed
    md_ab s32-e
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_md_fused.py 2>&1 | tail -2 ;;
  s33-a)  # the strip build's near entries through a shared-memory ring (this tree) against .before: the Verlet list's
    # bits and GPU tests; the build's ms at LJ 1M and 256,000 (packed) and Gaussian 64,000 (the opposite walk),
    # alternating, two runs each; harness md at 1M; the build kernel under ncu in both trees
    verlet_bits
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py tests/test_md_fused.py 2>&1 | tail -2
    points_ab s33-a lj_liquid:large,256000:layout=packed gaussian:64000
    md_ab s33-a
    build_ncu s33-build ;;
  s33-b)  # why persistent warps lost (thirty-second session): the forces flavour at LJ 1M (packed) under ncu in
    # b2fcd52 (unpacked in .persist) with persist=0 and persist=1, the L1 and warp-state figures, two runs each
    mkdir -p "$out/profile"
    for rep in 1 2; do
      for p in 0 1; do
        ncu_tree .persist "persist=$p $rep" "$out/profile/s33-persist-$p-$rep" layout=packed,persist=$p
      done
    done ;;
  s33-e)  # cache hints on the packed Verlet force kernel: the rows read past L1 (.a: L1::no_allocate), and besides the
    # partners' positions gathered with L1::evict_last (this tree), against .before: the with-list columns and harness
    # md at LJ 1M (trees_ab), then the force kernel (forces) under ncu in the three trees
    trees_ab s33-e .before=${BEFORE_COMMIT:-before} .a=${A_COMMIT:-a} .=${HARNESS_COMMIT:-this}
    mkdir -p "$out/profile"
    for tree in .before .a .; do
      tag=$( [ "$tree" = . ] && echo this || echo "${tree#.}")
      ncu_tree "$tree" "ncu $tag" "$out/profile/s33-e-$tag" layout=packed
    done ;;
  final-s33)  # the session's last tree (the kernels of 050a295): the force kernel (forces, all outputs) and the build
    # (LJ 1M, packed) under ncu with every warp-stall reason (WarpStateStats), for the report's bounds
    mkdir -p "$out/profile"
    for v in force:forces build:forces force:all; do
      SECTION=WarpStateStats ncu_verlet "$out/profile/final-s33-${v/:/-}" ${v%%:*} ${v#*:} layout=packed > /dev/null
      $PY tools/ncu_metrics.py "$out/profile/final-s33-${v/:/-}.csv" --match "verlet_(force|build)" --stalls \
        | tail -n +2 | sed "s|^|$v: |"
    done ;;
  trigger-s33)  # how often the Verlet list would be rebuilt under the exact per-cell trigger against skin/2
    # (tools/trigger_model.py) on 200 recorded steps at LJ 1M and 256,000, skins 0.3 and 0.4
    for n in 1048576 256000; do
      for sk in 0.3 0.4; do
        $PY tools/trigger_model.py --n $n --frames 200 --skin $sk
      done
    done ;;
  trigger2-s33)  # the per-cell trigger with cells wider than r_list (tools/trigger_model.py --side) at LJ 1M, skin 0.3
    # (and 0.4 on the list's own cells)
    $PY tools/trigger_model.py --n 1048576 --frames 200 --skin 0.3
    $PY tools/trigger_model.py --n 1048576 --frames 200 --skin 0.4
    for side in 3.1 3.4 4.0 5.0; do
      $PY tools/trigger_model.py --n 1048576 --frames 200 --skin 0.3 --side $side
    done ;;
  colsetup-s33)  # the strip build's column set-up in one helper (column_runs, this tree) against .before: the builds
    # give the same lists (GPU test), then the build's ms at LJ 1M (packed) and Gaussian 64,000 (opposite), alternating
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet.py -k builds_give_the_same_list 2>&1 | tail -1
    points_ab s33-colsetup lj_liquid:large:layout=packed gaussian:64000 ;;
  tail-s34)  # how much the force kernel's last, partly filled wave costs: the with-list columns (forces, all outputs)
    # and the build of the packed Verlet list at LJ sizes 4 m^3 for m = 63..68 (4.93 to 6.2 waves of the forces
    # kernel's 1,584 resident blocks of 128 on 132 SMs), alternating up and down; then ncu's SM-active cycles
    # against the elapsed ones (sm_act%) and the clock for the three kernels at 1M
    for order in "1000188 1048576 1098500 1149984 1203052 1257728" "1257728 1203052 1149984 1098500 1048576 1000188"; do
      for n in $order; do
        $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n $n \
          --outputs forces,all --amortised 0 --name s34-tail-$n "${common[@]}" | grep " ok"
      done
    done
    mkdir -p "$out/profile"
    for v in force:forces build:forces force:all; do
      METRICS=$L1_METRICS,$CYCLE_METRICS ncu_verlet "$out/profile/tail-s34-${v/:/-}" ${v%%:*} ${v#*:} layout=packed \
        | sed "s|^|$v: |"
    done ;;
  minb-s34)  # register caps between the measured ones (minb 9: 56 registers, 11), packed, LJ 1M: the all-outputs
    # with-list column at minb 8 / 9 with 8 and 16 entries in flight, then harness md's whole step at minb 8 to 11
    # (the fused MD 2 kernel's cap; auto: 10), alternating, two runs each
    for rep in 1 2; do
      $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
        --outputs all --amortised 0 --sweep minb=8:9 --sweep batch=8:16 --name s34-minb-all-$rep "${common[@]}" \
        | grep " ok"
    done
    mkdir -p "$out/md"
    for rep in 1 2; do
      for m in 8 9 10 11; do
        $PY -m harness md --strategy verlet_thread_padded --launch layout=packed,minb=$m --n large --precision fp32 \
          --steps 2000 --sample 1000 --quiet --json "$out/md/s34-minb$m-$rep.json" | tail -1 | sed "s|^|minb $m $rep: |"
      done
    done ;;
  skin-s34)  # per-particle skins against one skin (tools/skin_model.py) on 200 recorded steps at LJ 1M and 256,000:
    # rebuilds and row lengths for uniform skins 0.2 / 0.3 / 0.4 and margins m with K steps of each particle's last move
    for n in 1048576 256000; do
      $PY tools/skin_model.py --n $n --frames 200 \
        --policy 0.1:u,0.15:u,0.2:u,0.04:8,0.05:8,0.06:8,0.07:8,0.04:10,0.05:10,0.06:6,0.08:6,0.1:4,0.03:12
    done ;;
  adapt2-s34)  # the adapt GPU tests alone, verbose on failure
    $PY -m pytest -q -p no:cacheprovider tests/test_verlet_adapt.py 2>&1 | tail -40 ;;
  final3-s34)  # harness md at LJ 1M: adapt at skin 0.35 (cells 2.85) against 0.4 with 0.11:6, alternating, two runs
    md_launches s34-final3 layout=packed,skin=0.4,adapt=0.11:6 layout=packed,skin=0.35,adapt=0.11:6 \
      layout=packed,skin=0.35,adapt=0.1:6 ;;
  openmm-s34)  # issue 13's figures at LJ 1M beside OpenMM in the same call: the with-list columns (packed) with
    # --peers openmm (OpenMM's whole step in the json), harness md for the default list and adapt 0.11:6 at skin 0.4
    # (alternating, two runs), OpenMM's kernels under ncu (computeNonbonded)
    mkdir -p "$out/profile"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --peers openmm --name s34-openmm-1m "${common[@]}" | grep -E " ok|openmm"
    md_launches s34-openmm layout=packed layout=packed,skin=0.4,adapt=0.11:6
    $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" 2>&1 | tail -4 ;;
  accel-s34)  # adapt with the acceleration term (each particle's ballistic move over K steps; 9d1bcf5, reverted: on
    # other trees this times the velocity-only form): the adapt and fused GPU tests, then harness md at LJ 1M
    # (skin 0.4) for margins 0.05-0.11 at K 6 and 8, alternating, two runs
    $PY -m pytest -q -p no:cacheprovider tests/test_verlet_adapt.py tests/test_md_fused.py 2>&1 | tail -3
    md_launches s34-accel layout=packed layout=packed,skin=0.4,adapt=0.11:6 layout=packed,skin=0.4,adapt=0.09:6 \
      layout=packed,skin=0.4,adapt=0.07:6 layout=packed,skin=0.4,adapt=0.05:6 layout=packed,skin=0.4,adapt=0.07:8 ;;
  final2-s34)  # harness md at LJ 1M around the best adapted list of final-s34 (skin 0.4, 0.11:6), alternating, two runs
    md_launches s34-final2 layout=packed layout=packed,skin=0.4,adapt=0.11:6 layout=packed,skin=0.4,adapt=0.11:7 \
      layout=packed,skin=0.4,adapt=0.11:5 layout=packed,skin=0.4,adapt=0.13:6 layout=packed,skin=0.45,adapt=0.12:6 ;;
  final-s34)  # harness md at LJ 1M: the uniform skin 0.3 against adapted lists of skin 0.4 (margins 0.09 to 0.12) and
    # 0.45, alternating, two runs; then compute-sanitizer (each tool) on fused runs with adapt (aos4 and packed)
    md_launches s34-final layout=packed layout=packed,skin=0.4,adapt=0.09:6 layout=packed,skin=0.4,adapt=0.1:6 \
      layout=packed,skin=0.4,adapt=0.11:6 layout=packed,skin=0.4,adapt=0.12:6 layout=packed,skin=0.45,adapt=0.1:6
    sanitize_each "md adapt" split "import os, strategies
from harness import scenarios, md
for n, lay in ((16000, 'aos4'), (30000, 'packed')):
    p = scenarios.make('lj_liquid' + (':density=0.1' if lay == 'packed' else ''), n, precision='fp32')
    s = strategies.create('verlet_thread_padded', layout=lay, skin=0.4, adapt='0.05:6', tpp=1)
    r = md.run(s, p, steps=80, dt=0.005, sample=80, fuse='always')
    print(os.environ['SAN_TOOL'], 'md adapt', n, lay, r.fused, r.graph, r.upkeep, r.rebuilds, r.samples[-1].total)
    assert r.fused == 'on' and r.rebuilds > 1, (r.fused, r.rebuilds)" ;;
  adapt3-s34)  # the adapt GPU tests (with the last list checked entry by entry), then harness md at LJ 1M for the
    # uniform skin 0.3 and adapted lists of skins 0.35 and 0.4, alternating, two runs
    $PY -m pytest -q -p no:cacheprovider tests/test_verlet_adapt.py 2>&1 | tail -3
    md_launches s34-adapt3 layout=packed layout=packed,skin=0.35,adapt=0.08:6 layout=packed,skin=0.35,adapt=0.1:4 \
      layout=packed,skin=0.4,adapt=0.09:6 layout=packed,skin=0.4,adapt=0.08:5 layout=packed,skin=0.4,adapt=0.08:6 ;;
  adapt-s34)  # per-particle skins (launch parameter adapt): the GPU tests of the Verlet list and the fused steps, then
    # harness md at LJ 1M (packed, fp32, 2,000 steps) for the uniform skin 0.3 and adapted lists, alternating, two runs
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet_adapt.py tests/test_md_fused.py tests/test_verlet.py \
      tests/test_verlet_packed.py 2>&1 | tail -3
    md_launches s34-adapt layout=packed layout=packed,skin=0.4,adapt=0.08:6 layout=packed,skin=0.4,adapt=0.06:6 \
      layout=packed,skin=0.4,adapt=0.1:4 layout=packed,skin=0.5,adapt=0.08:6 layout=packed,skin=0.5,adapt=0.07:8 ;;
  pf-s35)  # the end-of-row reads asked of L2 at the row's start (prefetch.global.L2: order; the fused update's x, v,
    # ref; this tree) against .before: the with-list columns and harness md (default launch) at LJ 1M, then harness md
    # with skin 0.4 and adapt 0.11:6, the trees alternating, two runs each; then the adapted build under ncu
    trees_ab s35-pf .before=${BEFORE_COMMIT:-before} .=${HARNESS_COMMIT:-this}
    md_ab s35-pf-adapt large 2000 layout=packed,skin=0.4,adapt=0.11:6
    adapt_build_ncu s35-build ;;
  lb-s35)  # the strip builds under __launch_bounds__(128, 9) (56 registers: ADAPT took 58, eight blocks an SM; this
    # tree) against .before: the build's ms at LJ 1M (packed, skin 0.3 and 0.4), then harness md at 1M, default and
    # adapted (skin 0.4, 0.11:6), the trees alternating, two runs each
    points_ab s35-lb lj_liquid:large:layout=packed lj_liquid:large:layout=packed,skin=0.4
    md_ab s35-lb large 2000 layout=packed
    md_ab s35-lb-adapt large 2000 layout=packed,skin=0.4,adapt=0.11:6 ;;
  tune-s35)  # the fused MD steps' force kernel under adapt (skin 0.4, 0.11:6): its register cap and entries in flight,
    # harness md at LJ 1M, alternating, two runs (minb 10 and batch 16 are 'auto''s for MD 2)
    md_launches s35-tune layout=packed,skin=0.4,adapt=0.11:6 layout=packed,skin=0.4,adapt=0.11:6,minb=12 \
      layout=packed,skin=0.4,adapt=0.11:6,minb=11 layout=packed,skin=0.4,adapt=0.11:6,batch=8 ;;
  openmm-s35)  # issue 13's figures at LJ 1M beside OpenMM in the same call (as openmm-s34, after the build's register
    # cap): the with-list columns (packed) with --peers openmm, harness md for the default list and adapt 0.11:6 at
    # skin 0.4 (alternating, two runs), OpenMM's kernels under ncu (computeNonbonded)
    mkdir -p "$out/profile"
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --amortised 0 --peers openmm --name s35-openmm-1m "${common[@]}" | grep -E " ok|openmm"
    md_launches s35-openmm layout=packed layout=packed,skin=0.4,adapt=0.11:6
    $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$out/profile" 2>&1 | tail -4 ;;
  plainadapt-s35)  # adapt in the plain MD steps (verlet_half_skins from the integrator's velocities): the GPU tests of
    # adapt and the fused steps (the plain and fused adapted loops bit for bit), compute-sanitizer (memcheck, initcheck,
    # racecheck, synccheck) on plain adapted runs, then harness md --no-fuse at LJ 1M, uniform against adapted,
    # alternating, two runs
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet_adapt.py tests/test_md_fused.py 2>&1 | tail -3
    sanitize_each "plain adapt" 0 "import os, strategies
from harness import scenarios, md
for lay, n in (('aos4', 8000), ('packed', 230000)):
    p = scenarios.make('lj_liquid', n, precision='fp32')
    r = md.run(strategies.create('verlet_thread_padded', adapt='0.02:4', layout=lay), p, steps=30, dt=0.005,
               sample=30, temperature=3.0, fuse=False)
    print(os.environ['SAN_TOOL'], 'plain adapt', lay, n, r.fused, r.rebuilds)
    assert r.rebuilds > 1, r.rebuilds"
    for rep in 1 2; do
      for l in layout=packed layout=packed,skin=0.4,adapt=0.11:6; do
        $PY -m harness md --strategy verlet_thread_padded --launch $l --n large --precision fp32 --steps 1000 \
          --sample 500 --no-fuse --quiet --json "$out/md/s35-plain-$(echo $l | tr ',=:' '___')-$rep.json" | tail -1 \
          | sed "s|^|plain $l $rep: |" | cut -c1-200
      done
    done ;;
  replayadapt-s35)  # adapt in the replays (md.FrameVelocities: each frame's velocities from the recorded steps): the GPU
    # tests of adapt, the MD loop, the graphs and the Verlet replays; then bench's three columns at LJ 1M (packed) for
    # the default list and the adapted one (skin 0.4, 0.11:6), alternating, two runs
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet_adapt.py tests/test_md.py tests/test_graphs.py \
      tests/test_verlet.py -k "adapt or replay or amortised or md" 2>&1 | tail -3
    for rep in 1 2; do
      for l in layout=packed layout=packed,skin=0.4,adapt=0.11:6; do
        $PY -m harness bench --strategies verlet_thread_padded --launch $l --scenario lj_liquid --n large \
          --outputs forces --name s35-replay-$(echo $l | tr ',=:' '___')-$rep "${common[@]}" | grep " ok"
      done
    done ;;
  final-s35)  # the session's last tree: harness sanitize on the Verlet lists (its self-test first), and the
    # 4,000-particle targets (with-list columns with graph replay; harness md, fused)
    $PY -m harness sanitize --self-test 2>&1 | tail -3
    $PY -m harness sanitize --strategies verlet_thread_padded,verlet_thread_pairrows 2>&1 | tail -6
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces,all \
      --amortised 0 --name s35-final-4k "${common[@]}" | grep " ok"
    mkdir -p "$out/md"
    $PY -m harness md --strategy verlet_thread_padded --n 4000 --precision fp32 --steps 20000 --sample 10000 --quiet \
      --json "$out/md/s35-final-4k.json" | tail -1 | sed "s|^|4,000: |" | cut -c1-200 ;;
  adapttests-s35)  # the GPU tests of adapt (the replays in fp32, mixed and fixed point) and of the fused steps
    $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_verlet_adapt.py tests/test_md_fused.py 2>&1 | tail -3 ;;
  final-s36a)  # issue 13's closing evidence at the final tree, 1: the NVE drift table (200,000 steps, 1000 tau, of
    # 4,000 particles: the CSR full shell, the Verlet list and the Newton3 cluster pairs in fp32, mixed and fp64, and
    # OpenMM in single, mixed and double on the same start; 10,000 steps of 32,000 with the report's default strategies)
    mkdir -p "$out/md"
    $PY -m harness md --nve-report --n 4000 --steps 200000 --sample 2000 \
      --strategies fullshell_thread_csr,verlet_thread_padded,clusterpair_warp_newton3 --json "$out/md/s36-nve-long-4000.json"
    $PY -m harness md --nve-report --n 32000 --steps 10000 --sample 100 --json "$out/md/s36-nve-32000.json" ;;
  final-s36b)  # 2: verify of the list strategies along a recorded NVE trajectory (200 frames, each frame's list kept
    # or rebuilt by its own trigger) at small (every frame), medium (every 10th) and large (every 100th, fp32; the
    # Verlet list also with layout=packed, skin 0.4 and adapt 0.11:6), the negative control (rebuild=never must fail),
    # then compute-sanitizer's self-test and the four tools on every list strategy. Run as one stage it outlasts a
    # call's 600 s: in the thirty-sixth session small and medium took most of call 2, and each large command took
    # 140-200 s on its own (calls 4 and 5, run directly): give it LIMIT=1500 on a machine without that limit
    v=(--scenarios lj_liquid --quiet --replay 200)
    lists=verlet_thread_padded,verlet_thread_pairrows,clusterpair_warp_padded,clusterpair_warp_newton3
    $PY -m harness verify --strategies $lists,verlet_thread_cpu,clusterpair_thread_cpu --size small "${v[@]}" \
      --out "$out/verify/s36-replay-small" | tail -2
    $PY -m harness verify --strategies $lists --size medium "${v[@]}" --replay-every 10 \
      --out "$out/verify/s36-replay-medium" | tail -2
    $PY -m harness verify --strategies verlet_thread_padded,clusterpair_warp_newton3 --size large --precision fp32 \
      "${v[@]}" --replay-every 100 --out "$out/verify/s36-replay-large" | tail -2
    $PY -m harness verify --strategies verlet_thread_padded --launch layout=packed,skin=0.4,adapt=0.11:6 --size large \
      --precision fp32 "${v[@]}" --replay-every 100 --out "$out/verify/s36-replay-large-packed-adapt" | tail -2
    $PY -m harness verify --strategies verlet_thread_padded --launch rebuild=never --size small --precision fp32 \
      "${v[@]}" --out "$out/verify/s36-replay-never" | grep -E "FAIL|pass:" | cut -c1-240
    echo "negative control exit status: ${PIPESTATUS[0]} (1 expected: a stale list fails)"
    $PY -m harness sanitize --self-test 2>&1 | tail -2
    $PY -m harness sanitize --strategies $lists 2>&1 | tail -18 ;;
  final-s36c)  # 3: issue 13's figures at the final tree, LJ 1M, fp32, OpenMM in the same call: bench's three columns
    # (forces, all outputs) of the packed Verlet list, the default one and the Newton3 cluster pairs with --peers openmm;
    # harness md (packed; packed with skin 0.4 and adapt 0.11:6), alternating, two runs; the 4,000-particle targets;
    # the adapted list's three columns. (The kernels' ncu figures: the thirty-second and thirty-fifth sessions', whose
    # force kernels and build are this tree's.)
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed --scenario lj_liquid --n large \
      --outputs forces,all --peers openmm --name s36-final-1m-packed "${common[@]}" | grep -E " ok|openmm"
    $PY -m harness bench --strategies verlet_thread_padded,clusterpair_warp_newton3 --scenario lj_liquid --n large \
      --outputs forces,all --name s36-final-1m "${common[@]}" | grep " ok"
    md_launches s36-final layout=packed layout=packed,skin=0.4,adapt=0.11:6
    $PY -m harness bench --strategies verlet_thread_padded --scenario lj_liquid --n 4000 --outputs forces,all \
      --amortised 0 --name s36-final-4k "${common[@]}" | grep " ok"
    $PY -m harness md --strategy verlet_thread_padded --n 4000 --precision fp32 --steps 20000 --sample 10000 --quiet \
      --json "$out/md/s36-final-4k.json" | tail -1 | sed "s|^|4,000: |" | cut -c1-200
    $PY -m harness bench --strategies verlet_thread_padded --launch layout=packed,skin=0.4,adapt=0.11:6 --scenario lj_liquid \
      --n large --outputs forces --name s36-final-1m-adapt "${common[@]}" | grep " ok" ;;
  *)
    echo "unknown bench set $name" >&2
    exit 2 ;;
esac
