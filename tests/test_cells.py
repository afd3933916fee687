"""Cell strategies on the CPU, and the applicability rules every cell strategy shares."""
import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from mdcore import InputError, LennardJones, Problem
from strategies import cells

CPU = ["fullshell_thread_cpu", "c08_thread_cpu"]


@pytest.mark.parametrize("name", CPU)
def test_cpu_cell_strategies_pass_the_matrix(name):
    # typed and charged particles (numba compiles each kind anew: about 14 s a strategy) with c08
    # here, with every CPU strategy in fp64 in test_forcefield
    specs = [s for s in scenarios.DEFAULT_MATRIX
             if name == "c08_thread_cpu" or not scenarios.make(s, "tiny").potential.per_particle]
    cases = verify.build_cases(specs, "tiny", seed=6)
    rows = verify.run_matrix([strategies.create(name)], cases, ["fp32", "mixed", "fp64"])
    bad = [r for r in rows if r["status"] not in ("pass", "n/a")]
    assert not bad, verify.table(bad)
    na = {r["scenario"] for r in rows if r["status"] == "n/a"}
    assert "allpairs_cube" in na  # no cutoff
    assert {r["scenario"] for r in rows if r["status"] == "pass"} >= {"lj_liquid_open", "gaussian"}


def _edge_problem(periodic, precision):
    """Particles exactly at 0, just below L and (open axes) exactly at L, on every axis (no two
    closer than float64 can separate: Problem.make refuses those)."""
    L = 10.0
    below = np.nextafter(L, 0.0)
    rng = np.random.default_rng(3)
    pos = rng.random((300, 3)) * L
    if periodic:  # 0 and just below L are images of each other: one corner, and faces at each
        extra = np.array([[0.0, 0.0, 0.0], [below, 5.0, 5.0], [5.0, below, 5.0], [5.0, 5.0, below],
                          [below, below, 5.0], [below, 5.0, below], [5.0, below, below]])
    else:  # every corner (0 or exactly L), and a face point just below L on each axis
        extra = np.array([[a, b, c] for a in (0.0, L) for b in (0.0, L) for c in (0.0, L)]
                         + [[below, 5.0, 5.0], [5.0, below, 5.0], [5.0, 5.0, below]])
    # keep the edge particles apart from each other's images and from the random ones
    pos = pos[np.all(np.abs(pos[:, None, :] - extra[None, :, :]).min(axis=1) > 0.9, axis=1)]
    keep = [pos[0]]
    for p in pos[1:]:
        if np.min(np.linalg.norm(np.array(keep) - p, axis=1)) > 0.9:
            keep.append(p)
    pos = np.vstack([extra[:1], np.array(keep)[:60], extra[1:]])
    return Problem.make(pos, [L] * 3, LennardJones(cutoff=2.5), precision=precision, periodic=periodic)


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", CPU)
def test_particles_at_the_box_edges_are_binned(name, periodic):
    p = _edge_problem(periodic, "fp64")
    ref = reference.compute(p)
    out = strategies.create(name).evaluate(p)
    assert out.pairs == ref.pairs
    np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-10, atol=1e-10 * np.abs(ref.forces).max())


def test_c08_not_applicable_with_two_periodic_cells():
    p = scenarios.make("lj_liquid", "tiny")  # box 6.7 with rc 2.5: 2 cells per axis
    ok, why = strategies.create("c08_thread_cpu").supports(p)
    assert not ok and "at least 3 cells along a periodic axis, x has 2" in why
    assert strategies.create("fullshell_thread_cpu").supports(p) == (True, "")
    open_box = scenarios.make("lj_liquid_open", "tiny")
    assert strategies.create("c08_thread_cpu").supports(open_box) == (True, "")


@pytest.mark.parametrize("name", CPU)
def test_cell_factor_changes_the_grid_not_the_result(name):
    p = scenarios.make("uniform", "small", precision="fp64")
    ref = reference.compute(p)
    for factor in (1.0, 1.3, 2.0):
        s = strategies.create(name, cell_factor=factor)
        plan = s.prepare(p)
        side = p.box.array / plan.dims
        assert np.all(side >= 2.5 * factor)
        out = s.evaluate(p)
        assert out.pairs == ref.pairs
        np.testing.assert_allclose(out.forces, ref.forces, rtol=1e-10, atol=1e-10 * np.abs(ref.forces).max())


@pytest.mark.parametrize("bad", [0.5, "x", float("nan"), float("inf"), True])
def test_bad_cell_factor(bad):
    with pytest.raises(InputError, match="cell_factor must be a number >= 1"):
        strategies.create("c08_thread_cpu", cell_factor=bad)


def test_cell_factor_below_one_only_where_the_traversal_reaches_further():
    """The CSR full shell takes cells down to a quarter of the cutoff (reach 4); c08 needs
    cells of at least the cutoff."""
    assert strategies.create("fullshell_thread_csr", cell_factor=0.5).launch["cell_factor"] == 0.5
    with pytest.raises(InputError, match=">= 0.25"):
        strategies.create("fullshell_thread_csr", cell_factor=0.2)
    from strategies.cells_cuda import reach_of

    p = scenarios.make("lj_liquid", "medium")
    s = strategies.create("fullshell_thread_csr", cell_factor=0.5)
    assert reach_of(p, s.grid(p)) == 2
    ok, why = s.supports(scenarios.make("lj_liquid", "tiny"), check_device=False)  # 6.7 box: 5 cells of 1.34
    assert ok, why
    small = Problem.make(np.random.default_rng(2).random((40, 3)) * 5.2, [5.2] * 3, LennardJones(cutoff=2.5))
    ok, why = s.supports(small, check_device=False)  # 4 cells of 1.3: reach 2 would need 5
    assert not ok and "needs at least 5 cells along a periodic axis" in why


def test_work_counts_are_cell_checks():
    p = scenarios.make("k_per_cell", "small")
    full = strategies.create("fullshell_thread_cpu").work(p)
    c08 = strategies.create("c08_thread_cpu").work(p)
    assert full["cells"] == c08["cells"] == 6 ** 3 and full["max_per_cell"] == 9
    # full shell sees every pair from both sides, c08 once: exactly twice as many checks
    assert full["distance_checks"] == 2 * c08["distance_checks"]
    assert full["distance_checks"] == p.n * (27 * 9 - 1)


def test_2d_views_refuse_what_does_not_fit(monkeypatch):
    s = strategies.create("fullshell_thread_2d")
    p = scenarios.make("gaussian", "small")
    monkeypatch.setattr(type(s), "available", lambda self: (True, ""))
    monkeypatch.setattr(type(s), "_free_bytes", staticmethod(lambda: 1 << 20))
    ok, why = s.supports(p)
    need = s.padded_bytes(p)
    assert not ok and "2D views need" in why and "GiB" in why and "use the csr or nested storage" in why
    assert need > 1 << 20
    counts = cells.host_counts(p, 1.0)
    assert need == len(counts) * (counts.max() + 1) * (16 + 12)  # fp32: float4 positions, 3 float forces


def test_registry_has_every_traversal_on_every_storage():
    for trav, proc in (("fullshell", "thread"), ("c08", "thread"), ("c08", "warp")):
        got = {strategies.REGISTRY[n].storage for n in strategies.select(traversal=trav, processor=proc, backend="cuda")}
        assert got == {"csr", "2d", "nested"}, (trav, proc, got)
    assert set(strategies.select(backend="cpu", storage="csr")) == {"fullshell_thread_cpu", "c08_thread_cpu"}


def test_host_counts_shared_across_precisions():
    p = scenarios.make("uniform", "small", precision="fp32")
    a = cells.host_counts(p, 1.0)
    assert cells.host_counts(p.with_precision("fp64"), 1.0) is a
    assert cells.host_counts(p, 1.5) is not a and a.sum() == p.n


@pytest.mark.parametrize("spec", ["uniform", "gaussian"])
def test_parity_distance_checks_follow_what_each_processor_computes(spec):
    """parity_thread_csr and parity_block_csr compute each pair once (c08's count); two-pass computes
    every pair from both sides (the full shell's count); shared-cache computes inter-cell pairs
    once and intra-cell pairs from both sides."""
    import strategies
    from harness import scenarios

    p = scenarios.make(spec, "small")
    work = {n: strategies.create(n).work(p)["distance_checks"] for n in
            ("c08_warp_csr", "parity_thread_csr", "parity_block_csr", "parity_warpblock_twopass_atomic",
             "parity_warpblock_shared_mutex")}
    work["fullshell_thread_csr"] = strategies.create("fullshell_thread_csr", window=0).work(p)["distance_checks"]
    windowed = strategies.create("fullshell_thread_csr", window=1).work(p)  # data-dependent: the strips bound it
    assert windowed["distance_checks"] is None and windowed["strip_checks"] == work["fullshell_thread_csr"]
    assert work["parity_thread_csr"] == work["parity_block_csr"] == work["c08_warp_csr"]
    assert work["parity_warpblock_twopass_atomic"] == work["fullshell_thread_csr"]
    assert work["c08_warp_csr"] < work["parity_warpblock_shared_mutex"] < work["fullshell_thread_csr"]
