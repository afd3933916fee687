#!/usr/bin/env bash
# One call on a GPU machine without network (the device tool's, or any node): set-up, then the
# stages named on the command line, in order; every stage's log and results under $OUT.
#
#   tools/gpu_run.sh info tests verify:small bench:fullshell profile:fullshell_thread_csr
#
# Set-up: wheels in .whl/ are installed to /tmp/site (packages the machine lacks: nvtx, asv,
# the peers), CuPy's kernel cache is restored from .cupy_cache/cache.tgz (carried), so unchanged
# kernels are not compiled again, and the system python3 runs the harness from the checkout. At
# the end, the kernels this call compiled go to $OUT/cupy_cache_new.tgz (only the new ones: the
# whole cache outgrows what a call brings back; merge them into .cupy_cache/cache.tgz with
# `bash tools/gpu_run.sh --merge-cache FILE` on your own machine), and every result file into
# $OUT/results.tgz (few files come back from such a call).
#
# The result headers name the commit: set HARNESS_COMMIT to the sha taken on your own machine
# (HARNESS_COMMIT=abc1234 bash tools/gpu_run.sh ...). The device tool copies the working tree,
# and the GPU machine's own git checkout can be stale, so `git rev-parse` there names an older
# commit.
set -u
if [ "${1:-}" = "--merge-cache" ]; then  # on your machine: add a call's new kernels to the carried cache
  [ -f "${2:-}" ] || { echo "--merge-cache: no such file: ${2:-}" >&2; exit 2; }
  d=$(mktemp -d) && mkdir -p .cupy_cache
  [ -f .cupy_cache/cache.tgz ] && tar -xzf .cupy_cache/cache.tgz -C "$d"
  tar -xzf "$2" -C "$d" && tar -czf .cupy_cache/cache.tgz.tmp -C "$d" kernel_cache && \
    mv .cupy_cache/cache.tgz.tmp .cupy_cache/cache.tgz && \
    echo "$(find "$d/kernel_cache" -type f | wc -l) kernels in .cupy_cache/cache.tgz ($(du -h .cupy_cache/cache.tgz | cut -f1))"
  rm -rf "$d"
  exit 0
fi
OUT=${OUT:-/tmp/gpu_run_out}
mkdir -p "$OUT/results"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${PY:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "wheel install failed" >&2
fi
export PYTHONPATH=/tmp/site:$ROOT PYTHONUNBUFFERED=1
if [ -f .cupy_cache/cache.tgz ]; then mkdir -p ~/.cupy && tar -xzf .cupy_cache/cache.tgz -C ~/.cupy; fi
mkdir -p ~/.cupy/kernel_cache && touch /tmp/gpu_run_cache_mark && sleep 1  # kernels newer than this: compiled here
R=$OUT/results
[ -n "${HARNESS_COMMIT:-}" ] || echo "warning: HARNESS_COMMIT is not set; result headers take this machine's git HEAD" >&2

stage() {  # name, timeout in s, command...
  local name=$1 limit=$2
  shift 2
  echo "=== $name ($(date +%T))"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$R/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0)) s"
  tail -n "${TAIL:-15}" "$R/$name.log"
}

for s in "$@"; do
  case "$s" in
    info)
      stage info 60 bash -c 'nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,memory.total --format=csv;
        python3 -c "import cupy, numpy, numba; print(cupy.__version__, numpy.__version__, numba.__version__)";
        which ncu compute-sanitizer cuobjdump' ;;
    tests)
      stage tests ${LIMIT:-240} $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_gpu.py tests/test_potentials.py \
        -k "not lost_lock" --maxfail=30 ;;
    tests:*)  # tests:a,b,c: the GPU tests whose names contain a, b or c
      stage tests-subset ${LIMIT:-240} $PY -m pytest -q -n 8 -p no:cacheprovider tests/test_gpu.py \
        tests/test_potentials.py -k "$(echo "${s#tests:}" | sed "s/,/ or /g")" --maxfail=30 ;;
    verify:*)
      stage "verify-${s#verify:}" ${LIMIT:-240} $PY -m harness verify --size "${s#verify:}" --quiet --out "$R/verify-${s#verify:}" ;;
    verifyx:*)  # verifyx:SIZE:STRATEGIES:SCENARIOS (comma lists)
      IFS=: read -r _ size strats scens <<<"$s"
      stage "verify-$size-subset" ${LIMIT:-240} $PY -m harness verify --size "$size" --strategies "$strats" \
        --scenarios "$scens" --quiet --out "$R/verify-$size-subset" ;;
    verifypot:*)  # verifypot:SIZE:STRATEGIES:POTENTIAL: every default scenario with that potential
      IFS=: read -r _ size strats pot <<<"$s"
      stage "verify-$size-potential" ${LIMIT:-240} $PY -m harness verify --size "$size" --strategies "$strats" \
        --potential "$pot" --quiet --out "$R/verify-$size-potential" ;;
    sanitize)
      stage sanitize ${LIMIT:-540} bash -c "$PY -m harness sanitize --self-test && $PY -m harness sanitize --size small" ;;
    sanitize:*)  # sanitize:a,b: those strategies, LJ liquid small
      stage sanitize-subset ${LIMIT:-540} bash -c "$PY -m harness sanitize --self-test --tools memcheck,racecheck && \
        $PY -m harness sanitize --size small --strategies ${s#sanitize:}" ;;
    make-sanitize)  # the README's command: self-test, then every GPU strategy under the four tools
      stage make-sanitize ${LIMIT:-540} make sanitize BASE_PYTHON=$PY ;;
    pytest:*)  # pytest:FILE[,FILE...][:K]: those test files (GPU tests included), -k K when given
      IFS=: read -r _ files k <<<"$s"
      stage pytest ${LIMIT:-240} $PY -m pytest -q -n 8 -p no:cacheprovider $(echo "$files" | tr , ' ') ${k:+-k "$k"} ;;
    make-verify)  # the README's command on a fresh checkout: the set-up must run offline
      stage make-verify ${LIMIT:-240} make verify ARGS=--quiet BASE_PYTHON=$PY ;;
    before:*)  # before:DIR:STRATEGY: one point (LJ 1M, fp32) on an earlier tree unpacked in DIR
      IFS=: read -r _ dir strat <<<"$s"
      stage "before-$dir" ${LIMIT:-240} bash -c "cd $dir && HARNESS_COMMIT=$dir PYTHONPATH=/tmp/site:\$PWD $PY -m harness \
        bench --strategies $strat --scenario lj_liquid --n large --min-time 0.1 --repeat 10 --quiet --out $R/bench --name $dir" ;;
    bench:*)  # a named bench from tools/gpu_benches.sh
      stage "bench-${s#bench:}" ${LIMIT:-240} bash tools/gpu_benches.sh "${s#bench:}" "$R" ;;
    profile:*)  # profile:STRATEGY[:OUTPUTS[:LAUNCH[:N[:PHASE]]]], LJ liquid (1M), e.g. profile:fullshell_thread_csr:forces:tpp=1
      IFS=: read -r _ name outputs launch size phase <<<"$s"
      outputs=${outputs:-all}
      stage "profile-$name-$outputs${launch:+-$launch}-${size:-large}-${phase:-force}" ${LIMIT:-240} $PY -m harness \
        profile --strategy "$name" --scenario lj_liquid --n "${size:-large}" --outputs "$outputs" \
        ${launch:+--launch "$launch"} --phase "${phase:-force}" --out "$R/profile" ;;
    peers)  # OpenMM (CUDA) and JAX-MD (GPU) beside the CSR full shell at 4,000, 256,000 and 1,048,576
      stage peers ${LIMIT:-240} $PY -m harness bench --strategies fullshell_thread_csr --scenario lj_liquid \
        --n 4000,256000,large --peers openmm,jaxmd --min-time 0.1 --repeat 10 --out "$R/bench" --name peers ;;
    openmm)
      stage openmm-ncu ${LIMIT:-240} $PY -m harness profile --peer openmm --scenario lj_liquid --n large --out "$R/profile" ;;
    *)
      echo "unknown stage $s" ;;
  esac
done
(cd ~/.cupy && find kernel_cache -type f -newer /tmp/gpu_run_cache_mark) >/tmp/gpu_run_cache_new
[ -s /tmp/gpu_run_cache_new ] && tar -czf "$OUT/cupy_cache_new.tgz" -C ~/.cupy -T /tmp/gpu_run_cache_new
tar -czf "$OUT/results.tgz" -C "$OUT" results
cat "$R"/*.summary 2>/dev/null
exit 0
