"""GPU strategies against the float64 reference (skipped, with the reason, without a device)."""
import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from mdcore import LennardJones, Problem

pytestmark = pytest.mark.gpu
GPU = strategies.select(backend="cuda")
CELLS = [n for n in GPU if strategies.REGISTRY[n].traversal != "allpairs"]
NEWTON3_CELLS = strategies.select(backend="cuda", newton3=True)
WARPBLOCK = strategies.select(backend="cuda", traversal="parity", processor="warpblock")
PRECISIONS = ["fp32", "mixed", "fp64"]


@pytest.fixture(scope="module")
def cases():
    cs = verify.build_cases(scenarios.DEFAULT_MATRIX, "tiny", seed=11)
    for c in cs:
        c.ref = reference.compute(c.problem)
    return cs


@pytest.mark.parametrize("name", GPU)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_matrix_tiny(name, precision, cases):
    rows = verify.run_matrix([strategies.create(name)], cases, [precision])
    bad = [r for r in rows if r["status"] not in ("pass", "n/a")]
    assert not bad, verify.table(bad)
    assert sum(r["status"] == "pass" for r in rows) >= 2


def _size_axis(name):
    """The launch parameter that sizes a strategy's blocks: block (threads) or warps."""
    choices = strategies.REGISTRY[name].launch_choices
    return "block" if "block" in choices else "warps"


@pytest.mark.parametrize("name", GPU)
def test_every_block_size(name):
    """Each launch choice of block size (or warps per block), on a system every GPU strategy
    applies to."""
    case = verify.Case("uniform", scenarios.make("uniform", "small", seed=5))
    key = _size_axis(name)
    for value in strategies.REGISTRY[name].launch_choices[key]:
        rows = verify.run_matrix([strategies.create(name, **{key: value})], [case], ["fp32"])
        assert all(r["status"] == "pass" for r in rows), (key, value, verify.table(rows))


@pytest.mark.parametrize("slices", [1, 2, 8, 64])
def test_tiled_j_slices(slices, cases):
    """Explicit j splits (64 exceeds the tiles of a small system and is clamped)."""
    s = strategies.create("allpairs_thread_tiled", block=64, slices=slices)
    rows = verify.run_matrix([s], cases, ["fp32", "fp64"])
    assert all(r["status"] == "pass" for r in rows), verify.table(rows)
    plan = s.prepare(cases[0].problem)
    assert plan.slices == min(slices, -(-cases[0].problem.n // 64)) and plan.jchunk % 64 == 0


@pytest.mark.parametrize("name", GPU)
@pytest.mark.parametrize("n", [0, 1, 2, 257])
def test_small_counts(name, n, rng):
    L = 8.0
    pos = rng.random((n, 3)) * L
    p = Problem.make(pos, [L] * 3, LennardJones(cutoff=2.5), precision="fp64")
    out = strategies.create(name).evaluate(p)
    ref = reference.compute(p)
    assert out.forces.shape == (n, 3) and out.pairs == ref.pairs
    np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-9, atol=1e-9 * np.abs(ref.forces).max(initial=1.0))
    assert out.energy == pytest.approx(ref.energy, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("name", GPU)
def test_repeatable_bits(name):
    """Same input, same bits; strategies that add in scheduling order (deterministic = False)
    agree to rounding and in the pair count."""
    p = scenarios.make("uniform", "small", precision="fp32")
    s = strategies.create(name)
    plan = s.prepare(p)
    plan.upload()
    a = s.compute(plan).to_host()
    plan.poison()
    b = s.compute(plan).to_host()
    if getattr(s, "deterministic", True):
        assert np.array_equal(a.forces, b.forces) and a.energy == b.energy and np.array_equal(a.virial, b.virial)
    else:
        assert a.pairs == b.pairs
        np.testing.assert_allclose(a.forces, b.forces, rtol=0, atol=1e-4 * np.abs(a.forces).max())
        assert a.energy == pytest.approx(b.energy, rel=1e-5)


@pytest.mark.parametrize("name", GPU)
def test_poison_is_overwritten(name):
    p = scenarios.make("uniform", "small", precision="mixed")
    s = strategies.create(name)
    plan = s.prepare(p)
    plan.upload()
    plan.poison()
    assert np.isnan(plan.forces.get()).all()
    out = s.compute(plan).to_host()
    assert np.isfinite(out.forces).all() and np.isfinite(out.energy)


def test_nvtx_backend_active_on_gpu():
    from mdcore import ranges
    assert ranges.backend() in ("nvtx", "cupy")


@pytest.mark.parametrize("layout", ["2d", "nested"])
def test_capacity_overflow_is_reported_not_overrun(layout):
    """Capacities are sized at prepare(); crowd one cell afterwards and the result must
    refuse to download, naming the storage."""
    from mdcore import StrategyError

    p = scenarios.make("uniform", "small", precision="fp32")
    s = strategies.create(f"fullshell_thread_{layout}")
    plan = s.prepare(p)
    crowded = plan.host_pos.copy()
    crowded[:40, :3] = crowded[0, :3] + np.linspace(0.0, 0.2, 40)[:, None]  # 40 particles in one cell
    plan.host_pos = crowded
    plan.upload()
    with pytest.raises(StrategyError, match=f"more than the {layout} storage.s capacity"):
        s.compute(plan).to_host()


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", CELLS)
def test_cells_bin_particles_at_the_box_edges(name, periodic):
    from test_cells import _edge_problem

    p = _edge_problem(periodic, "fp64")
    ref = reference.compute(p)
    out = strategies.create(name).evaluate(p)
    assert out.pairs == ref.pairs
    np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-10, atol=1e-10 * np.abs(ref.forces).max())


@pytest.mark.parametrize("name", sorted(set(NEWTON3_CELLS) | set(strategies.select(backend="cuda", traversal="parity"))))
def test_newton3_gaussian_dense_cells(name):
    """Dense cells (hundreds of particles) in every precision: the warp processor's
    chunks of 32 and the Newton3 updates of large cells."""
    case = verify.Case("gaussian", scenarios.make("gaussian", "small", seed=2))
    rows = verify.run_matrix([strategies.create(name)], [case], PRECISIONS)
    assert all(r["status"] == "pass" for r in rows), verify.table(rows)


# --- MarDyn strategies: variants, big cells, lost locks ------------------------------------

@pytest.mark.parametrize("name", WARPBLOCK)
@pytest.mark.parametrize("commit", ["lock", "atomic"])
def test_warpblock_commit_variants(name, commit, cases):
    rows = verify.run_matrix([strategies.create(name, commit=commit)], cases, ["fp32", "fp64"])
    assert all(r["status"] in ("pass", "n/a") for r in rows), verify.table(rows)
    ran = [r for r in rows if r["status"] == "pass"]
    assert len(ran) >= 4, "the commit variant must actually run on some scenarios: " + verify.table(rows)


@pytest.mark.parametrize("name", strategies.select(backend="cuda", traversal="parity"))
def test_cells_larger_than_a_block_or_job(name):
    """Cells of ~1000 particles: more than the thread block (512), a warp block (32) or a
    job's shared-memory chunk (32) holds; split, never overrun."""
    rng = np.random.default_rng(3)
    L = 7.5  # 3 x 3 x 3 cells of side 2.5
    pos = np.concatenate([rng.random((1000, 3)) * 2.4 + 0.05, rng.random((300, 3)) * L])
    p = Problem.make(pos, [L] * 3, LennardJones(cutoff=2.5), precision="fp64")
    ref = reference.compute(p)
    key = _size_axis(name)
    for value in (strategies.REGISTRY[name].launch_choices[key][0], strategies.REGISTRY[name].launch_choices[key][-1]):
        out = strategies.create(name, **{key: value}).evaluate(p)
        assert out.pairs == ref.pairs
        np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-9, atol=1e-9 * np.abs(ref.forces).max())


@pytest.mark.parametrize("name", [n for n in WARPBLOCK if strategies.REGISTRY[n].scheduler == "mutex"]
                         + ["parity_warpblock_twopass_atomic"])
def test_wbp_lost_lock_times_out_and_reports(name):
    """A lock whose holder died (fault=1: the mutex and every cell lock start held) must not
    hang: the kernel gives up after lock_timeout_ms and the result raises. commit=lock, so
    that the atomic scheduler has locks to lose too."""
    import time
    from mdcore import StrategyError

    p = scenarios.make("uniform", "small", precision="fp32")
    s = strategies.create(name, fault=1, lock_timeout_ms=100, commit="lock")
    t0 = time.perf_counter()
    with pytest.raises(StrategyError, match="not acquired within 100 ms"):
        s.evaluate(p)
    assert time.perf_counter() - t0 < 30.0
    assert strategies.create(name).evaluate(p).pairs > 0  # a fresh plan is unaffected


# --- the shared binning and the CSR full shell ------------------------------------------------

@pytest.mark.parametrize("spec", ["lj_liquid", "gaussian", "uniform_slab"])
def test_binning_methods_give_the_same_order(spec):
    """The one-block, the counting and the radix builds: the same cells, particles sorted by z
    (ties by index) inside each cell, bit for bit."""
    from strategies.binning import METHODS

    p = scenarios.make(spec, "small", precision="fp32")
    plan = strategies.create("fullshell_thread_csr").prepare(p)
    plan.upload()
    b = plan.binning
    got = {}
    for m in METHODS:
        b.method = m
        b.run()
        got[m] = [a.get().copy() for a in (b.order, b.start, b.cell_sorted, b.sorted)]
    for m in METHODS[1:]:
        for a, c in zip(got[METHODS[0]], got[m]):
            assert np.array_equal(a, c), m
    order, start, zs = got["radix"][0][: p.n], got["radix"][1], got["radix"][3][: p.n, 2].astype(np.float32)
    for c in range(len(start) - 1):  # inside every cell: z as a float, ties by index
        seg = slice(start[c], start[c + 1])
        key = list(zip(zs[seg].tolist(), order[seg].tolist()))
        assert key == sorted(key), c


def test_binning_is_graph_capturable_and_repeatable():
    import cupy

    p = scenarios.make("lj_liquid", "small", precision="fp32")
    s = strategies.create("fullshell_thread_csr")
    plan = s.prepare(p)
    plan.upload()
    eager = s.compute(plan).to_host()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        s.compute(plan)
        graph = stream.end_capture()
        plan.poison()
        graph.launch(stream)
        stream.synchronize()
    replay = plan.output().to_host()
    assert np.array_equal(eager.forces, replay.forces) and eager.energy == replay.energy
    assert eager.pairs == replay.pairs and np.array_equal(eager.virial, replay.virial)


@pytest.mark.parametrize("launch", [{"tpp": 1}, {"tpp": 4}, {"tpp": 32}, {"cell_factor": 0.5},
                                    {"cell_factor": 0.34}, {"regs": 32}, {"block": 512, "tpp": 2}, {"window": 0},
                                    {"window": 0, "cell_factor": 0.5}, {"tpp": 8, "cell_factor": 0.5}])
def test_fullshell_csr_launch_variants(launch):
    cs = [verify.Case(spec, scenarios.make(spec, "small", seed=4)) for spec in ("lj_liquid", "gaussian", "uniform_slab")]
    rows = verify.run_matrix([strategies.create("fullshell_thread_csr", **launch)], cs, PRECISIONS)
    assert all(r["status"] == "pass" for r in rows), verify.table(rows)


def test_a_dense_clump_takes_the_radix_build_and_stays_correct():
    """A cell of 3,000 particles (more than the counting sort's rank step is for): set-up picks
    the radix build, and the result is right."""
    from strategies.binning import RANK_MAX

    rng = np.random.default_rng(8)
    L = 12.0  # 3 x 3 x 3 cells of side 4: the clump fills the inside of cell 0
    pos = np.concatenate([0.2 + rng.random((3000, 3)) * 3.6, rng.random((500, 3)) * L])
    p = Problem.make(pos, [L] * 3, LennardJones(cutoff=4.0), precision="fp64")
    s = strategies.create("fullshell_thread_csr")
    plan = s.prepare(p)
    assert plan.max_count > RANK_MAX and plan.binning.method == "radix"
    plan.upload()
    out = s.compute(plan).to_host()
    ref = reference.compute(p)
    assert out.pairs == ref.pairs
    np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-9, atol=1e-9 * np.abs(ref.forces).max())


@pytest.mark.parametrize("name", GPU)
def test_forces_only_flavour(name):
    """No energy, virial or pair count, and the forces of the full flavour to rounding."""
    p = scenarios.make("uniform", "small", precision="fp64")
    s = strategies.create(name)
    plan = s.prepare(p)
    plan.upload()
    full = s.compute(plan).to_host()
    plan.set_outputs("forces")
    plan.poison()
    only = s.compute(plan).to_host()
    assert only.energy is None and only.virial is None and only.pairs is None
    np.testing.assert_allclose(only.forces, full.forces, rtol=1e-12, atol=1e-12 * np.abs(full.forces).max())


@pytest.fixture(scope="module")
def clump():
    case = verify.Case("clump", scenarios.make("clump", "medium", seed=4))
    case.ref = reference.compute(case.problem)
    return case


@pytest.mark.parametrize("name", GPU)
def test_dense_clump_passes_in_every_precision(name, clump):
    """The dense clump: 24,000 particles, sigma 5, box 60; mixed's limits derived from fp32's model."""
    rows = verify.run_matrix([strategies.create(name)], [clump], PRECISIONS)
    assert all(r["status"] in ("pass", "n/a") for r in rows), verify.table(rows)
    assert any(r["status"] == "pass" for r in rows)


@pytest.mark.parametrize("acc", ["float", "double", "Fixed"])
@pytest.mark.parametrize("nparts", [0, 1, 255, 256, 257, 8192, 65536 + 300])
def test_reduce_partials_two_levels(acc, nparts):
    """The final reduction (kernels/reduce.cu): every partial counted once, at whatever grid
    (one block; up to 256 blocks of a partial a thread; 256 blocks looping), the virial laid out
    symmetric, the totals halved with shift 1, the same bits on a second launch (its ticket reset)."""
    import cupy as cp

    from strategies.cuda import REDUCE_BLOCK, kernel, reduce_blocks, reduce_expression

    rng = np.random.default_rng(nparts)
    dtype = {"float": np.float32, "double": np.float64, "Fixed": np.int64}[acc]
    if acc == "Fixed":  # even raw sums, so that halving is exact as on the device
        parts = 2 * rng.integers(-2**20, 2**20, size=(max(nparts, 1), 7), dtype=np.int64)
    else:
        parts = rng.standard_normal((max(nparts, 1), 7)).astype(dtype)
    counts = 2 * rng.integers(0, 1000, size=max(nparts, 1)).astype(np.uint64)
    fn = kernel("reduce.cu", reduce_expression(acc))
    level = cp.empty((REDUCE_BLOCK, 7), dtype)
    lcount = cp.empty(REDUCE_BLOCK, np.uint64)
    ticket = cp.zeros(1, np.uint32)
    d_parts, d_counts = cp.asarray(parts), cp.asarray(counts)
    results = []
    for _ in range(2):
        sums, out, count = cp.full(7, 7, dtype), cp.full(10, 7, dtype), cp.zeros(1, np.uint64)
        fn((reduce_blocks(nparts),), (REDUCE_BLOCK,), (d_parts, d_counts, np.int32(nparts), np.int32(1), level, lcount,
                                                       ticket, sums, out, count))
        results.append((sums.get(), out.get(), int(count.get()[0])))
        assert int(ticket.get()[0]) == 0
    (s1, o1, c1), (s2, o2, c2) = results
    assert s1.tobytes() == s2.tobytes() and o1.tobytes() == o2.tobytes() and c1 == c2
    want = parts[:nparts].astype(np.float64 if acc != "Fixed" else np.int64).sum(axis=0)
    assert c1 == int(counts[:nparts].sum()) // 2
    tol = {"float": 1e-5, "double": 1e-12, "Fixed": 0}[acc] * max(1.0, np.sqrt(nparts) * 4)
    if acc == "Fixed":
        np.testing.assert_array_equal(s1, want)
    else:
        np.testing.assert_allclose(s1, want, rtol=0, atol=tol)
    half = want // 2 if acc == "Fixed" else want * 0.5
    xx, xy, xz, yy, yz, zz = half[1:]
    np.testing.assert_allclose(o1.astype(np.float64), np.array([half[0], xx, xy, xz, xy, yy, yz, xz, yz, zz], np.float64),
                               rtol=0, atol=tol / 2)
