"""GPU strategies against the float64 reference (skipped, with the reason, without a device)."""
import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from harness.problem import LennardJones, Problem

pytestmark = pytest.mark.gpu
GPU = strategies.names("cuda")
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


@pytest.mark.parametrize("name", GPU)
def test_every_block_size(name):
    """Each launch choice of block size, on a system every GPU strategy applies to."""
    case = verify.Case("uniform", scenarios.make("uniform", "small", seed=5))
    for block in strategies.REGISTRY[name].launch_choices["block"]:
        rows = verify.run_matrix([strategies.create(name, block=block)], [case], ["fp32"])
        assert all(r["status"] == "pass" for r in rows), verify.table(rows)


@pytest.mark.parametrize("slices", [1, 2, 8, 64])
def test_tiled_j_slices(slices, cases):
    """Explicit j splits (64 exceeds the tiles of a small system and is clamped)."""
    s = strategies.create("allpairs_tiled", block=64, slices=slices)
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
    p = scenarios.make("uniform", "small", precision="fp32")
    s = strategies.create(name)
    plan = s.prepare(p)
    plan.upload()
    a = s.compute(plan).to_host()
    plan.poison()
    b = s.compute(plan).to_host()
    assert np.array_equal(a.forces, b.forces) and a.energy == b.energy and np.array_equal(a.virial, b.virial)


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
    from harness import ranges
    assert ranges.backend() in ("nvtx", "cupy")


@pytest.mark.parametrize("layout", ["2d", "nested"])
def test_capacity_overflow_is_reported_not_overrun(layout):
    """Capacities are sized at prepare(); crowd one cell afterwards and the result must
    refuse to download, naming the layout."""
    from harness.problem import StrategyError

    p = scenarios.make("uniform", "small", precision="fp32")
    s = strategies.create(f"cells_fullshell_{layout}")
    plan = s.prepare(p)
    crowded = plan.host_pos.copy()
    crowded[:40, :3] = crowded[0, :3] + np.linspace(0.0, 0.2, 40)[:, None]  # 40 particles in one cell
    plan.host_pos = crowded
    plan.upload()
    with pytest.raises(StrategyError, match=f"more than the {layout} layout's capacity"):
        s.compute(plan).to_host()


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", [n for n in GPU if not n.startswith("allpairs")])
def test_cells_bin_particles_at_the_box_edges(name, periodic):
    from test_cells import _edge_problem

    p = _edge_problem(periodic, "fp64")
    ref = reference.compute(p)
    out = strategies.create(name).evaluate(p)
    assert out.pairs == ref.pairs
    np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-10, atol=1e-10 * np.abs(ref.forces).max())


@pytest.mark.parametrize("name", [n for n in GPU if n.startswith("c08")])
def test_c08_gaussian_dense_cells(name):
    """Dense cells (hundreds of particles) in every precision: the warp processor's
    chunks of 32 and the Newton3 updates of large cells."""
    case = verify.Case("gaussian", scenarios.make("gaussian", "small", seed=2))
    rows = verify.run_matrix([strategies.create(name)], [case], PRECISIONS)
    assert all(r["status"] == "pass" for r in rows), verify.table(rows)
