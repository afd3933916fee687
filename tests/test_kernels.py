"""Every kernel specialisation compiles with nvcc, and the precision modes mean what they say."""
import functools
import os
import re

import pytest

import strategies
from mdcore import LennardJones
from strategies import cuda, nvcc

pytestmark = [pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH"), pytest.mark.slow]

LJ = LennardJones()
# every specialisation of the non-experimental strategies and launch values; MDFORCE_EXPERIMENTAL=1 adds
# the experimental ones (test_experimental_kernels_compile below compiles their default launches always)
SPECS = nvcc.specialisations(LJ, experimental=os.environ.get("MDFORCE_EXPERIMENTAL") == "1")
_DEFAULTS = nvcc.specialisations(LJ, defaults=True)
# the launch variants beyond the defaults (which defaults_compiled below compiles): every pair of two
# template arguments' values that occurs, not the cross product (nvcc.covering); MDFORCE_COMPILE_ALL=1
# compiles every one
ALL = os.environ.get("MDFORCE_COMPILE_ALL") == "1"
VARIANTS = {f: (e if ALL else [x for x in nvcc.covering(e, keep=_DEFAULTS.get(f, ([], False))[0])
                               if x not in set(_DEFAULTS.get(f, ([], False))[0])], needs)
            for f, (e, needs) in SPECS.items()}
VARIANTS = {f: v for f, v in VARIANTS.items() if v[0]}


@pytest.mark.parametrize("file", sorted(VARIANTS))
def test_every_specialisation_compiles_without_warnings(file):
    exprs, needs_functor = VARIANTS[file]
    code, out, _ = nvcc.compile_unit(file, exprs, potential=LJ if needs_functor else None)
    assert code == 0, out
    reports = nvcc.resources(out)
    assert len(reports) == len(exprs)
    for r in reports:
        assert r.registers > 0


def test_experimental_kernels_compile():
    """The experimental strategies' and launch values' kernels at their default launches (rows of two,
    the inner lists) still compile: kept for comparison, they must not rot."""
    base = nvcc.specialisations(LJ, defaults=True)
    more = nvcc.specialisations(LJ, defaults=True, experimental=True)
    extra = {f: [e for e in exprs if e not in base.get(f, ([], False))[0]] for f, (exprs, _) in more.items()}
    extra = {f: e for f, e in extra.items() if e}
    assert {"verlet_pairrows.cu", "verlet_prune.cu"} <= set(extra)
    for file, (code, out, _) in nvcc.compile_units(extra, potential=LJ).items():
        assert code == 0, (file, out[:2000])


# ptxas spills a few loop-invariant values of the deep cell loops (fp64 and mixed) at its
# occupancy-driven register targets (64, 80): measured at most 24 bytes since the cell
# traversals keep an image shift per neighbour cell (16 before). Register pressure in an inner
# loop spills far more, and that is what this bound catches.
MAX_SPILL_BYTES = 24


def test_default_launches_do_not_spill(defaults_compiled):
    """Each strategy's default specialisations (every precision, periodic or not) keep their
    working set in registers: a real spill to local memory would show in every timing."""
    for file, (code, out, _) in defaults_compiled.items():
        assert code == 0, out
        for r in nvcc.resources(out):
            assert r.spill_stores <= MAX_SPILL_BYTES and r.spill_loads <= MAX_SPILL_BYTES, r


def _precision_of(expression):
    """The precision mode of a specialisation; None for kernels without a floating-point type
    (the integer steps of the binning: place, scan_counts)."""
    m = re.search(r"<(float|double), (float|double|Fixed)\b", expression)
    if m is None:  # a data-movement kernel templated on one type (e.g. bin_cells<float>)
        one = re.search(r"<(float|double|Fixed)\b", expression)
        return None if one is None else {"float": "fp32", "double": "fp64", "Fixed": "fixed"}[one.group(1)]
    return {("float", "float"): "fp32", ("float", "double"): "mixed", ("double", "double"): "fp64",
            ("float", "Fixed"): "fixed"}[m.groups()]


def _defaults():
    """(source file, expression) for every GPU strategy's default launch, all precisions: the
    traversal kernels (with Lennard-Jones) and the kernels without a functor."""
    out = []
    for name in strategies.select(backend="cuda"):
        s = strategies.create(name)
        out += [(s.source_file, e) for e in s.default_expressions(LJ) if (s.source_file, e) not in out]
        out += [(f, e) for f, es in s.data_expressions().items() for e in es if (f, e) not in out]
    return out


EXPRS = _defaults()
DATA_MOVEMENT = ("bin_cells", "bin_count", "bin_small", "rank_in_cell", "scatter_cells", "gather_forces",
                 "zero_forces", "fold_slices", "warpblock_job_sizes", "warpblock_job_table", "cp_fill", "cp_scatter",
                 "relayout", "verlet_unsort", "verlet_stage", "verlet_resort", "verlet_half_skins")
# kernels that fold the final reduction themselves: their double sums are scaled once at the end
# (energy and virial halved where every pair was visited from both sides)
FOLDS_REDUCTION = ("fullshell_thread_csr",)


def _integrates(expression: str) -> bool:
    """The Verlet list's fused MD steps (strategies/integrate_fused.py, FusedSteps): kernels that also run
    the integrator, which keeps its state in the accumulation type (double in mixed)."""
    return expression.startswith("verlet_open<") or bool(re.match(r"verlet_force<.*, [12]>$", expression))


@functools.cache
def _integrator_f64_ops() -> frozenset:
    """The float64 operations of the mixed mode's integrator (integrate.cu), predicates dropped."""
    code, out, ptx = nvcc.compile_unit("integrate.cu", ["kick_kick_drift<float, double>", "kick<double>"], ptx=True)
    assert code == 0, out
    return frozenset(re.sub(r"^@%p\d+\s+", "", op) for op in nvcc.f64_instructions(ptx))


PTX_CASES = [(f, e) for f, e in EXPRS if _precision_of(e) is not None
             and not (e.startswith(DATA_MOVEMENT) and _precision_of(e) == "fp64")]


@pytest.fixture(scope="module")
def defaults_compiled():
    """file -> (returncode, compiler output, PTX) of every default specialisation (EXPRS), compiled
    once: the cubin gives ptxas's resource report, the PTX it was made from the precision checks.
    make test runs a module's tests in one pytest-xdist process (--dist loadscope): once per run."""
    units: dict[str, list[str]] = {}
    for f, e in EXPRS:
        units.setdefault(f, []).append(e)
    return nvcc.compile_units(units, potential=LJ, keep_ptx=True)


@pytest.fixture(scope="module")
def ptx_of(defaults_compiled):
    """(file, expression) -> (returncode, output, PTX of that kernel and the functions it calls)."""
    out = {}
    for file, (code, text, ptx) in defaults_compiled.items():
        kernels = nvcc.entries(ptx) if code == 0 else {}
        listed = {e for f, e in EXPRS if f == file}
        for f, e in PTX_CASES:
            if f != file:
                continue
            if e not in kernels:  # the compiler names defaulted template arguments too
                more = [k for k in kernels if k.startswith(e[:-1] + ", ") and k not in listed]
                e_in = more[0] if len(more) == 1 else e
            else:
                e_in = e
            out[(f, e)] = (code if e_in in kernels else 1, text if code else f"no entry {e} in the PTX",
                           kernels.get(e_in, ""))
    return out


@pytest.mark.parametrize("file, expr", PTX_CASES)
def test_precision_modes_in_ptx(file, expr, ptx_of):
    """fp32: no float64 arithmetic at all (an untyped literal would show up here); mixed: float64
    only in additions (the accumulators); fp64: float64 arithmetic present; fixed: no float64
    and no fused multiply-add (every kernel must round a pair's terms one way)."""
    code, out, ptx = ptx_of[(file, expr)]
    assert code == 0, out
    f64 = nvcc.f64_instructions(ptx)
    mode = _precision_of(expr)
    moves_data = expr.startswith(DATA_MOVEMENT)
    if mode == "fp32":
        assert f64 == [], f64[:5]
    elif mode == "fixed":
        assert f64 == [], f64[:5]
        assert not re.search(r"\bfma\.\w+\.f32\b", ptx), "a fused multiply-add in a fixed-point kernel"
    elif moves_data and mode == "mixed":  # float positions, double forces: copies and sums only
        assert all(op.startswith(("add.", "setp.")) for op in f64), sorted(set(f64))
    elif mode == "mixed":  # Newton3 kernels also subtract (F_j -= f): an accumulation too
        # atomics are adds too; selp picks an accumulator (a warp's partial sum or zero): a move
        accumulate = ("add.", "sub.", "neg.", "atom.global.add.", "red.global.add.", "selp.")
        if expr.startswith(FOLDS_REDUCTION):
            accumulate += ("mul.f64",)
        if _integrates(expr):  # the integrator's double arithmetic too, and nothing else (the same
            # force body without MD is checked above as every other mixed kernel)
            ops = _integrator_f64_ops()
            assert all(op.startswith(accumulate) or re.sub(r"^@%p\d+\s+", "", op) in ops for op in f64), \
                sorted(set(f64) - ops)
            return
        assert f64 and all(op.startswith(accumulate) for op in f64), sorted(set(f64))
    else:
        assert any(op.startswith(("mul.", "fma.")) for op in f64)


def test_the_fp32_integrator_has_no_float64():
    from strategies.integrate import EXPRESSIONS

    fp32 = [e for e in EXPRESSIONS if e in ("kick_drift<float, float>", "kick<float>")]
    assert len(fp32) == 2
    code, out, ptx = nvcc.compile_unit("integrate.cu", fp32, ptx=True)
    assert code == 0, out
    assert nvcc.f64_instructions(ptx) == []


def test_f64_detector_itself():
    ptx = "\tadd.f64 %fd1, %fd2, %fd3;\n\tcvt.f64.f32 %fd4, %f1;\n@%p1 fma.rn.f64 %fd5, %fd1, %fd2, %fd3;\n\tld.global.f64 %fd6, [%rd1];\n"
    assert nvcc.f64_instructions(ptx) == ["add.f64", "@%p1 fma.rn.f64"]


def test_header_is_inlined_for_the_cupy_cache_key():
    text = cuda.module_code("cells.cu", LJ)
    assert '#include "common.cuh"' not in text and "struct LennardJones" in text
    assert text.count("struct LennardJones") == 1 and text.count("struct Accumulator") == 1  # each header once
    assert "struct LennardJones" not in cuda.module_code("binning.cu")  # data kernels carry no functor


def test_the_pair_table_kernels_compile_in_every_layout():
    """Typed and charged particles (PairTable) through the kernels whose launch takes a layout: the
    word read from the Vec4 (aos4) or from its own array (aos3, soa), each pair of two template
    arguments' values once (nvcc.covering)."""
    from harness import scenarios

    for spec in ("charged_lj", "kob_andersen"):
        pot = scenarios.make(spec, "tiny").potential
        units: dict[str, set] = {}
        for name in ("allpairs_thread_naive", "allpairs_thread_tiled", "fullshell_thread_csr", "verlet_thread_padded"):
            s = strategies.create(name)
            units.setdefault(s.source_file, set()).update(s.expressions(pot))
        # the layouts that read the word from an array of its own (aos3 1, soa 2; aos4 is what the GPU
        # tests and every default launch compile): the LAYOUT argument's place in each kernel file
        at = {"allpairs.cu": 6, "cells.cu": 10, "verlet_force.cu": 7}
        units = {f: nvcc.covering(sorted(x for x in e if len(nvcc._template_args(x)[1]) > at[f]
                                         and nvcc._template_args(x)[1][at[f]] in ("1", "2")))
                 for f, e in units.items()}
        assert all(units.values()), {f: len(e) for f, e in units.items()}
        for file, (code, out, _) in nvcc.compile_units(units, potential=pot).items():
            assert code == 0, (spec, file, out[:2000])


def test_the_fp32_kspace_kernels_have_no_float64():
    """The reciprocal strategies' fp32 kernels take the box's 2 pi / L as doubles and convert them once;
    no float64 arithmetic (an untyped literal would show up here)."""
    from strategies.kspace import expressions

    fp32 = [e for e in expressions() if ("<float, float" in e or e == "kspace_fold<float>")]
    assert len(fp32) >= 9
    code, out, ptx = nvcc.compile_unit("kspace.cu", fp32, ptx=True)
    assert code == 0, out
    assert nvcc.f64_instructions(ptx) == []


@pytest.mark.parametrize("file", ["kspace.cu", "kspace_mc.cu"])
def test_every_reciprocal_specialisation_compiles(file):
    """The reciprocal strategies' and the MC moves' kernels, every launch variant in every precision
    (their own registry: not among the force strategies' defaults above); the reciprocal strategies'
    without spills (the MC loop in double keeps a small stack frame)."""
    from strategies import kspace, kspace_mc

    exprs = kspace.expressions() if file == "kspace.cu" else kspace_mc.expressions()
    code, out, _ = nvcc.compile_unit(file, exprs)
    assert code == 0, out
    assert "warning" not in out.lower(), out
    reports = nvcc.resources(out)
    assert len(reports) == len(exprs)
    for r in reports if file == "kspace.cu" else ():
        assert r.spill_stores <= MAX_SPILL_BYTES and r.spill_loads <= MAX_SPILL_BYTES, r
