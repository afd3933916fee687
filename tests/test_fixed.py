"""The fixed-point precision mode: integer sums, so every strategy gives the
same bits for the same input, whatever its traversal, colouring or atomics; the grid that makes
each pair's terms the same bits in every traversal; the range check; where the mode is refused."""
import subprocess
import sys

import numpy as np
import pytest

import reference
import strategies
from harness import bench, scenarios, verify
from mdcore import FIXED_SCALE, MODES, InputError, LennardJones, Problem
from mdcore import fixed
from strategies.cpu import to_fixed

CPU = strategies.select(backend="cpu")
GPU = strategies.select(backend="cuda")
# scenarios that reach every traversal's corner: periodic, open, mixed boundaries, cells of few
# particles, and a second potential (a cheap pair body of its own)
CASES = [("lj_liquid", "small", None), ("uniform_slab", "small", None), ("lj_liquid_open", "small", None),
         ("k_per_cell", "tiny", None), ("lj_liquid", "tiny", "coordination:r0=1,n=6,dmax=2.5")]


def _problem(spec, size, potential, precision="fixed", seed=5):
    return scenarios.with_potential(scenarios.make(spec, size, seed=seed, precision=precision), potential)


def _bits(out):
    """Everything an evaluation returns, as comparable bits."""
    f = np.ascontiguousarray(out.forces, dtype=np.float64).view(np.int64)
    if out.energy is None:
        return f.tobytes(), None
    return f.tobytes(), (np.float64(out.energy).tobytes(), np.ascontiguousarray(out.virial).tobytes(), out.pairs)


def _same_bits(names, problem, outputs):
    got = {}
    for name in names:
        s = strategies.create(name)
        ok, why = s.supports(problem)
        if ok:
            got[name] = _bits(s.evaluate(problem, outputs))
    first = next(iter(got))
    differ = [n for n in got if got[n] != got[first]]
    return got, first, differ


@pytest.mark.parametrize("spec, size, potential", CASES)
@pytest.mark.parametrize("outputs", ["all", "forces"])
@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_every_strategy_of_a_backend_gives_the_same_bits(backend, spec, size, potential, outputs):
    """Every strategy, its atomics and colourings included (the GPU's reciprocal is not the
    CPU's division: each backend agrees with itself)."""
    problem = _problem(spec, size, potential)
    got, first, differ = _same_bits(CPU if backend == "cpu" else GPU, problem, outputs)
    assert len(got) >= (2 if backend == "cpu" else 8)
    assert not differ, f"{differ} differ from {first} in fixed point"


def test_float_sums_are_not_the_same_bits_the_control():
    """The test above can fail: in fp32 the strategies' different summation orders show."""
    problem = _problem("lj_liquid", "small", None, precision="fp32")
    got, first, differ = _same_bits(CPU, problem, "all")
    assert differ, "fp32 sums agreed bitwise across strategies: the fixed-point test would prove nothing"


@pytest.mark.parametrize("spec, size, potential", CASES[:3])
def test_fixed_point_matches_the_reference(spec, size, potential):
    case = verify.Case(spec, _problem(spec, size, potential, precision="fp64"))
    case.ref = reference.compute(case.problem)
    rows = verify.run_matrix([strategies.create(n) for n in CPU], [case], ["fixed"])
    assert all(r["status"] == "pass" for r in rows if r["status"] != "n/a"), verify.table(rows)
    assert sum(r["status"] == "pass" for r in rows) >= 2


def test_snapping_makes_every_displacement_exact_in_float(rng):
    """Centred, shifted and minimum-image displacements formed in float on the snapped grid equal
    the float64 ones, and the same pair seen from j gives exactly minus them (the premise of the
    same bits in every traversal)."""
    for lengths in ([33.59192382765015] * 3, [8.0, 10.0773, 15.999999], [1023.9999, 7.5, 64.0]):
        box_len = np.array(lengths)
        p = Problem.make(rng.uniform(0, 1, (400, 3)) * box_len, box_len, precision="fp64")
        s = fixed.snapped(p)
        L = s.box.array
        q = fixed.grid_step(L)
        assert np.all(L >= box_len) and np.all(L - box_len < 2 * q) and np.all(np.mod(L, 2 * q) == 0)
        moved = s.positions - p.positions
        moved -= L * np.rint(moved / L)  # a position near L wraps to 0
        assert np.all(np.abs(moved) <= 0.5 * q)
        c64 = s.positions - 0.5 * L
        c32 = c64.astype(np.float32)
        L32 = L.astype(np.float32)
        assert np.array_equal(c32.astype(np.float64), c64) and np.array_equal(L32.astype(np.float64), L)
        i, j = rng.integers(0, p.n, 4000), rng.integers(0, p.n, 4000)
        for shift in (np.float32(-1), np.float32(0), np.float32(1)):
            s32 = shift * L32
            d_ij = (c32[i] - s32) - c32[j]  # i shifted to j's image
            d_ji = (c32[j] + s32) - c32[i]  # the same pair seen from j
            assert np.array_equal(d_ij.astype(np.float64), (c64[i] - shift * L) - c64[j])
            assert np.array_equal(d_ji, -d_ij)
        d = c32[i] - c32[j]
        k = np.rint(d * (np.float32(1) / L32))
        mi = d - L32 * k
        assert np.array_equal(mi.astype(np.float64), (c64[i] - c64[j]) - L * k.astype(np.float64))
        d_rev = c32[j] - c32[i]
        assert np.array_equal(d_rev - L32 * np.rint(d_rev * (np.float32(1) / L32)), -mi)


def test_the_conversion_rounds_to_nearest_even_and_is_odd():
    unit = np.float32(1.0 / FIXED_SCALE)
    for k, want in ((0.5, 0), (1.5, 2), (2.5, 2), (-0.5, 0), (-1.5, -2), (3.25, 3)):
        assert to_fixed(np.float32(k) * unit) == want
    x = np.float32(-12.345678)
    assert to_fixed(x) == -to_fixed(-x) and to_fixed(x) == np.int64(np.rint(np.float64(x) * FIXED_SCALE))


def test_the_mode_record():
    m = MODES["fixed"]
    assert m.fixed and m.cxx_accumulate == "Fixed" and m.accumulate is np.int64 and m.compute is np.float32
    assert m.eps_accumulate == 2.0 ** -32 and m.eps_compute == 8 * float(np.finfo(np.float32).eps)
    assert not any(MODES[p].fixed for p in ("fp32", "mixed", "fp64"))


def test_a_force_beyond_the_range_is_refused_naming_the_particle():
    pos = np.array([[5.0, 5.0, 5.0], [5.25, 5.0, 5.0], [1.0, 1.0, 1.0]])
    Problem.make(pos, [10.0] * 3, precision="fp32")  # float holds it
    with pytest.raises(InputError, match=r"particle 0's pair forces add up to 3\.22e\+09 .*; 2 particle\(s\) affected"):
        Problem.make(pos, [10.0] * 3, precision="fixed")
    p = Problem.make(pos, [10.0] * 3, precision="fp32")
    with pytest.raises(InputError, match="beyond fixed point's range"):
        p.with_precision("fixed")


def test_energy_beyond_the_range_is_refused():
    """Each particle's force within range, the energy not: a compressed simple cubic lattice
    (spacing 0.5 sigma, 32^3 particles), every particle at the repulsive wall."""
    side, a = 32, 0.5
    g = (np.arange(side) + 0.5) * a
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    f, e, w = fixed.magnitudes(Problem.make(pos, [side * a] * 3, precision="fp64"))
    assert f.max() < 2.0 ** 30 <= e
    with pytest.raises(InputError, match="the pair energies add up to"):
        Problem.make(pos, [side * a] * 3, precision="fixed")


def test_verify_marks_an_out_of_range_input_na_and_runs_the_rest():
    clump = verify.Case("clump", scenarios.make("clump", "small", seed=1, precision="fp64"))
    clump.ref = reference.compute(clump.problem)
    rows = verify.run_matrix([strategies.create("c08_thread_cpu")], [clump], ["fixed", "fp64"])
    by = {r["precision"]: r for r in rows}
    assert by["fixed"]["status"] == "n/a" and "outside precision fixed" in by["fixed"]["detail"]
    assert by["fp64"]["status"] == "pass"


def test_bench_marks_an_out_of_range_input_na():
    rows = bench.run(["c08_thread_cpu"], "clump", ["small"], "fixed", warmup=0, repeat=1, min_time=0.0)
    assert [r["status"] for r in rows] == ["n/a"] and "outside precision fixed" in rows[0]["detail"]


@pytest.mark.parametrize("argv", [["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "3"],
                                  ["md", "--nve-report", "--strategies", "fullshell_thread_cpu", "--n", "tiny",
                                   "--steps", "3"]])
def test_the_md_loop_refuses_fixed_in_one_line(argv):
    r = subprocess.run([sys.executable, "-m", "harness", *argv, "--precision", "fixed"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == "" and r.stderr.count("\n") == 1 and "force evaluations" in r.stderr


def test_poisoned_fixed_outputs_cannot_pass():
    problem = _problem("lj_liquid", "tiny", None)
    s = strategies.create("fullshell_thread_cpu")
    plan = s.prepare(problem)
    plan.poison()
    assert plan.forces.dtype == np.int64 and np.all(plan.forces == np.iinfo(np.int64).min)


# --- the GPU: every strategy, its atomics and colourings included -------------------------------

@pytest.mark.gpu
def test_nondeterministic_strategies_repeat_bitwise_in_fixed_point():
    """The strategies that sum with float atomics (not bitwise repeatable in the float modes)
    repeat every bit in fixed point."""
    problem = _problem("lj_liquid", "small", None)
    for name in strategies.select(backend="cuda", deterministic=False):
        s = strategies.create(name)
        plan = s.prepare(problem)
        plan.upload()
        first = _bits(s.compute(plan).to_host())
        for _ in range(3):
            plan.poison()
            assert _bits(s.compute(plan).to_host()) == first, name


@pytest.mark.gpu
def test_gpu_fixed_point_matches_the_reference():
    case = verify.Case("lj_liquid", _problem("lj_liquid", "small", None, precision="fp64"))
    case.ref = reference.compute(case.problem)
    rows = verify.run_matrix([strategies.create(n) for n in GPU], [case], ["fixed"])
    assert all(r["status"] == "pass" for r in rows), verify.table([r for r in rows if r["status"] != "pass"])


def test_verify_checks_the_same_bits_and_fails_a_strategy_that_differs():
    case = verify.Case("lj_liquid", _problem("lj_liquid", "small", None, precision="fp64"))
    case.ref = reference.compute(case.problem)
    rows = verify.run_matrix([strategies.create(n) for n in CPU], [case], ["fixed", "fp32"])
    fixed_rows = [r for r in rows if r["precision"] == "fixed"]
    assert len(fixed_rows) == len(CPU) >= 4
    assert len({r["digest"] for r in fixed_rows}) == 1 and all(r["status"] == "pass" for r in fixed_rows)
    assert all("digest" not in r for r in rows if r["precision"] == "fp32")
    agree = verify.summary(rows)["fixed_same_bits"]
    assert agree == {"cpu": {"cases": 1, "strategies": sorted(r["strategy"] for r in fixed_rows)}}
    # one strategy's bits changed: it alone fails, named against the others
    odd = fixed_rows[2]
    odd["digest"] = "0" * 16
    failed = verify.same_bits(rows)
    assert failed == [odd] and odd["status"] == "FAIL" and "not the same bits as" in odd["detail"]
    assert all(r["status"] == "pass" for r in fixed_rows if r is not odd)
    # two against two: no majority, all four fail
    rows2 = [dict(r, status="pass", digest="a" if k < 2 else "b") for k, r in enumerate(fixed_rows[:4])]
    assert len(verify.same_bits(rows2)) == 4
