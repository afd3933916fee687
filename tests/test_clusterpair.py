"""Cluster pairs on the CPU: the clusters, the bounding-box search against a brute-force count, the
masks, and the strategy along a trajectory."""
import numpy as np
import pytest

import strategies
from harness import cli, md, scenarios
from mdcore import Box, LennardJones, Problem
from strategies import clusterpair as C


def _random(n, L, periodic, seed):
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 3)) * L
    return Problem.make(pos, Box.make(L, periodic), LennardJones(cutoff=2.5), precision="fp64", label="random")


@pytest.mark.parametrize("periodic", [(True, True, True), (False, False, False), (True, True, False)])
@pytest.mark.parametrize("m", [4, 8])
def test_search_finds_exactly_the_bounding_box_pairs(periodic, m):
    p = _random(400, [9.0, 10.0, 11.0], periodic, seed=3)
    L = p.box.array
    pos = p.positions - 0.5 * L
    members, ccol, grid = C.clusters(pos, L, periodic, m, p.n / p.box.volume)
    box = np.concatenate([L, np.where(periodic, 1.0 / L, 0.0)])
    istart, jlist, masks = C.search(pos, members, ccol, grid, L, periodic, 2.8, box)
    got = {(a, int(jlist[e])) for a in range(len(members)) for e in range(istart[a], istart[a + 1])}
    assert got == C.brute_force_pairs(pos, members, L, periodic, 2.8)
    assert len(got) == len(jlist)  # no pair twice


def test_clusters_hold_every_particle_once_sorted_by_z_in_their_column():
    p = _random(500, [8.0, 8.0, 8.0], (True,) * 3, seed=5)
    L = p.box.array
    pos = p.positions - 0.5 * L
    members, ccol, _ = C.clusters(pos, L, (True,) * 3, 8, p.n / p.box.volume)
    real = members[members >= 0]
    assert sorted(real.tolist()) == list(range(p.n))
    for col in np.unique(ccol):
        z = [pos[i, 2] for c in np.nonzero(ccol == col)[0] for i in members[c] if i >= 0]
        assert z == sorted(z)


def test_masks_are_the_pairs_within_the_list_radius():
    p = _random(300, [8.0, 8.0, 8.0], (True,) * 3, seed=7)
    L = p.box.array
    pos = p.positions - 0.5 * L
    members, ccol, grid = C.clusters(pos, L, (True,) * 3, 8, p.n / p.box.volume)
    box = np.concatenate([L, 1.0 / L])
    istart, jlist, masks = C.search(pos, members, ccol, grid, L, (True,) * 3, 2.8, box)
    within = set()
    for a in range(len(members)):
        for e in range(istart[a], istart[a + 1]):
            for x in range(8):
                for y in range(8):
                    if (int(masks[e]) >> (x * 8 + y)) & 1:
                        within.add((int(members[a, x]), int(members[jlist[e], y])))
    d = pos[:, None, :] - pos[None, :, :]
    d -= L * np.rint(d / L)
    r2 = (d ** 2).sum(-1)
    want = {(i, j) for i, j in zip(*np.nonzero(r2 < 2.8 ** 2)) if i != j}
    assert within == want


def test_the_strategy_follows_the_reference_trajectory_and_rebuilds():
    p = scenarios.make("lj_liquid", 500, seed=2, precision="fp64")
    from dataclasses import replace

    p = replace(p, potential=replace(p.potential, shift=True))
    ref = md.run(strategies.create("fullshell_thread_cpu"), p, steps=200, dt=0.005, sample=50, seed=3)
    got = md.run(strategies.create("clusterpair_thread_cpu"), p, steps=200, dt=0.005, sample=50, seed=3)
    for a, b in zip(ref.samples, got.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)
    assert 1 < got.rebuilds < 200


def test_replay_passes_and_the_negative_control_fails(tmp_path, capsys):
    base = ["verify", "--strategies", "clusterpair_thread_cpu", "--scenarios", "lj_liquid", "--size", "tiny",
            "--precision", "fp32", "--replay", "100", "--quiet"]
    assert cli.main(base + ["--out", str(tmp_path / "a")]) == 0
    assert cli.main(base + ["--launch", "rebuild=never", "--out", str(tmp_path / "b")]) == 1
    assert "FAIL: frame" in capsys.readouterr().out


# --- the CUDA strategy (marked gpu) --------------------------------------------------------------

def test_pair_density_is_the_mean_for_a_liquid_and_the_blob_s_for_a_gaussian():
    liquid = scenarios.make("uniform", 20000, seed=1)
    assert C.pair_density(liquid) == pytest.approx(liquid.n / liquid.box.volume, rel=0.05)
    blob = scenarios.make("gaussian", 20000, seed=1)
    assert C.pair_density(blob) > 5 * blob.n / blob.box.volume
    nx, ny, nz = C.column_grid(liquid)
    side = liquid.box.array[0] / nx
    assert side == pytest.approx((8 / (liquid.n / liquid.box.volume)) ** (1 / 3), rel=0.1)
    assert liquid.n / (nx * ny * nz) == pytest.approx(C.PER_LAYER, rel=0.2)


def _gpu_list(plan):
    """The GPU's clusters and entries on the host: members (ncl, 8), build positions, the set of
    (i-cluster, j-cluster, image code)."""
    ncl = int(plan.cstart.get()[-1])
    members = plan.member.get()[: ncl * 8].reshape(ncl, 8)
    xb = plan.xbuild.get()[: ncl * 8, :3].astype(np.float64).reshape(ncl, 8, 3)
    assert np.isnan(xb[members < 0]).all() and np.isfinite(xb[members >= 0]).all()  # padding is NaN
    ent = plan.ent.get().reshape(plan.ncap, plan.cap)
    length = plan.len.get()
    got = [(a, int(e) >> 5, int(e) & 31) for a in range(ncl) for e in ent[a, : length[a]]]
    assert len(got) == len(set(got))  # no entry twice
    return members, xb, set(got)


def _expected_entries(members, xb, L, periodic, rl):
    """Every (i-cluster, j-cluster, image) whose bounding boxes come closer than rl and that has a
    particle pair within rl, less each cluster with itself without an image: all pairs of clusters
    and images tested."""
    real = members >= 0
    lo = np.where(real[..., None], xb, np.inf).min(axis=1)
    hi = np.where(real[..., None], xb, -np.inf).max(axis=1)
    want = set()
    for code in range(27):
        im = np.array([code // 9 - 1, (code // 3) % 3 - 1, code % 3 - 1])
        if any(im[a] != 0 and not periodic[a] for a in range(3)):
            continue
        sh = im * L
        g = np.maximum(0.0, np.maximum(lo[None, :, :] + sh - hi[:, None, :], lo[:, None, :] - hi[None, :, :] - sh))
        for a, b in zip(*np.nonzero((g ** 2).sum(-1) < rl * rl)):
            d = xb[a][:, None, :] - (xb[b][None, :, :] + sh)
            within = ((d ** 2).sum(-1) < rl * rl) & real[a][:, None] & real[b][None, :]
            if within.any() and not (a == b and code == 13):
                want.add((int(a), int(b), code))
    return want


GPU_CLUSTER_PAIRS = ("clusterpair_warp_padded", "clusterpair_warp_newton3")


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
@pytest.mark.parametrize("spec, n", [("lj_liquid", 2000), ("uniform_slab", 1500), ("lj_liquid_open", 1000),
                                     ("gaussian", 1500)])
def test_gpu_search_finds_exactly_the_bounding_box_pairs(spec, n, name):
    p = scenarios.make(spec, n, seed=4, precision="fp64")
    s = strategies.create(name)
    plan = s.prepare(p)
    plan.upload()
    s.compute(plan)
    members, xb, got = _gpu_list(plan)
    real = members[members >= 0]
    assert sorted(real.tolist()) == list(range(p.n))  # every particle in one cluster
    want = _expected_entries(members, xb, p.box.array, p.box.periodic, s.rlist(p))
    if s.newton3:  # the half list: each cluster pair once, j above i or the upper code of i with itself
        half = {(a, b, c) for a, b, c in want if b > a or (a == b and c > 13)}
        assert len(want) == 2 * len(half) and {(b, a, 26 - c) for a, b, c in half} | half == want
        want = half
    assert got == want


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
@pytest.mark.parametrize("launch", [{"block": 32}, {"block": 64, "split": 1}, {"block": 128, "split": 4},
                                    {"block": 256, "split": 8}, {}])
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_gpu_cluster_pairs_match_the_reference(launch, precision, name):
    import reference

    p = scenarios.make("lj_liquid", 4000, seed=2, precision=precision)
    got = strategies.create(name, **launch).evaluate(p)
    ref = reference.compute(p)
    assert got.pairs == ref.pairs
    tol = 1e-12 if precision == "fp64" else 2e-5
    assert np.abs(got.forces - ref.forces).max() <= tol * np.abs(ref.forces).max()
    assert got.energy == pytest.approx(ref.energy, rel=1e-12 if precision == "fp64" else 1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_gpu_trigger_and_rebuilds_follow_the_cpu(name):
    from dataclasses import replace

    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp64")
    p = replace(p, potential=replace(p.potential, shift=True))
    cpu = md.run(strategies.create("clusterpair_thread_cpu"), p, steps=300, dt=0.005, sample=100, seed=3)
    gpu = md.run(strategies.create(name), p, steps=300, dt=0.005, sample=100, seed=3)
    assert gpu.graph == "on"
    assert abs(gpu.rebuilds - cpu.rebuilds) <= 1 and gpu.rebuilds > 3
    for a, b in zip(cpu.samples, gpu.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)


@pytest.mark.gpu
def test_gpu_split_rows_give_the_same_bits_run_to_run():
    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp32")
    s = strategies.create("clusterpair_warp_padded", block=128, split=4)
    a, b = s.evaluate(p), s.evaluate(p)
    assert np.array_equal(a.forces, b.forces) and a.energy == b.energy


@pytest.mark.gpu
def test_gpu_newton3_sums_agree_run_to_run_within_rounding():
    """Float atomics add the j-forces in scheduling order: runs may differ in the last bits, never
    by more (fp64: an order change moves a sum by a few ulp of its terms)."""
    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp64")
    s = strategies.create("clusterpair_warp_newton3", block=128, split=4)
    a, b = s.evaluate(p), s.evaluate(p)
    assert a.pairs == b.pairs
    assert np.abs(a.forces - b.forces).max() <= 1e-12 * np.abs(a.forces).max()


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_gpu_overflow_is_reported(name):
    from mdcore import StrategyError

    p = scenarios.make("lj_liquid", 4000, seed=2)
    with pytest.raises(StrategyError, match="more than the list's capacity 3"):
        strategies.create(name, cap=3).evaluate(p)


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_gpu_replay_passes_and_the_negative_control_fails(name):
    from harness import verify

    case = verify.Case("lj_liquid", scenarios.make("lj_liquid", "small", seed=1))
    frames = md.record(case.problem, 101)
    for precision in ("fp32", "mixed", "fp64"):
        good = verify.replay_cell(strategies.create(name), case, precision, frames)
        assert good["status"] == "pass", good["detail"]
    bad = verify.replay_cell(strategies.create(name, rebuild="never"), case, "fp32", frames)
    assert bad["status"] == "FAIL" and "frame" in bad["detail"]  # pairs missed: the count or the forces


# --- the inner list: dynamic and rolling prune (launch parameters prune and rolling) ------------

@pytest.mark.parametrize("launch, says", [
    ({"prune": 0.3}, "launch parameter prune (the inner list's buffer) must be 'off' or a number between 0 and the "
                     "skin (0.3), got 0.3"),
    ({"prune": "x"}, "must be 'off' or a number between 0 and the skin (0.3), got 'x'"),
    ({"rolling": 2}, "rolling=2 prunes the inner list in parts; there is none with prune=off: give prune"),
    ({"prune": 0.1, "rolling": 3}, "launch parameter rolling=3 not in (1, 2, 4, 8)"),
])
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_bad_prune_parameters_of_the_gpu_cluster_pairs(name, launch, says):
    from mdcore import InputError

    with pytest.raises(InputError) as e:
        strategies.create(name, **launch)
    assert says in str(e.value)


def test_prune_kernels_are_listed_for_every_real_type_as_experimental():
    assert not any("prune" in e for e in strategies.create("clusterpair_warp_padded").data_expressions()["clusterpair.cu"])
    ex = strategies.create("clusterpair_warp_padded").data_expressions(experimental=True)["clusterpair.cu"]
    for r in ("float", "double"):
        assert f"cp_prune_check<{r}>" in ex and f"cp_prune<{r}, {C.PRUNE_BLOCK}>" in ex


def _inner_rows(plan):
    """The inner rows on the host, and the outer rows' entries with a particle pair within the
    inner radius at the positions of now (xc), in the outer order."""
    ncl = int(plan.cstart.get()[-1])
    xc = plan.xc.get()[: ncl * 8, :3].astype(np.float64).reshape(ncl, 8, 3)
    L = plan.problem.box.array
    ent, length = plan.ent.get().reshape(plan.ncap, plan.cap), plan.len.get()
    ient, ilen = plan.ient.get().reshape(plan.ncap, plan.cap), plan.ilen.get()
    rin2 = float(plan.rin2)
    got, want = [], []
    for a in range(ncl):
        got.append(ient[a, : ilen[a]].tolist())
        keep = []
        for e in ent[a, : length[a]]:
            code = int(e) & 31
            sh = np.array([code // 9 - 1, (code // 3) % 3 - 1, code % 3 - 1]) * L
            d = (xc[a][:, None, :] - sh) - xc[int(e) >> 5][None, :, :]
            if np.nan_to_num((d ** 2).sum(-1), nan=np.inf).min() < rin2:
                keep.append(int(e))
        want.append(keep)
    return got, want


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_gpu_inner_rows_are_the_outer_rows_within_the_inner_radius(name):
    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp64")
    s = strategies.create(name, prune=0.1)
    plan = s.prepare(p)
    plan.upload()
    s.compute(plan)
    got, want = _inner_rows(plan)
    assert got == want
    assert sum(map(len, got)) < 0.95 * int(plan.len.get().sum())  # the inner list is shorter
    assert plan.listed_pairs() < (int(plan.len.get().sum()) + len(got)) * 64


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
@pytest.mark.parametrize("rolling", [1, 2, 4])
def test_gpu_prune_keeps_the_sums_of_the_full_cluster_list(precision, rolling):
    """clusterpair_warp_padded with and without the inner list, one warp per i-cluster (split 1):
    the same bits in one evaluation of each output flavour and in every sample of an MD run with
    its rebuilds (an entry the prune drops adds nothing); the run prunes several times. Where
    warps share a row (split > 1, 4,000 particles' default) each takes a share of its entries by
    count, so a shorter row moves the shares' bounds: the sums within rounding."""
    from dataclasses import replace

    p = scenarios.make("lj_liquid", 4000, seed=2, precision=precision)
    p = replace(p, potential=replace(p.potential, shift=True))
    for outputs in ("all", "forces"):
        a, b = (strategies.create("clusterpair_warp_padded", split=1, **launch).evaluate(p, outputs)
                for launch in ({}, {"prune": 0.1, "rolling": rolling}))
        assert np.array_equal(a.forces, b.forces) and a.energy == b.energy and a.pairs == b.pairs, outputs
        assert np.array_equal(a.virial, b.virial), outputs
        c, d = (strategies.create("clusterpair_warp_padded", **launch).evaluate(p, outputs)
                for launch in ({}, {"prune": 0.1, "rolling": rolling}))
        tol = 1e-12 if precision == "fp64" else 1e-5
        assert c.pairs == d.pairs and np.abs(c.forces - d.forces).max() <= tol * np.abs(c.forces).max(), outputs
    runs = [md.run(strategies.create("clusterpair_warp_padded", split=1, **launch), p, steps=200, dt=0.005,
                   sample=25, seed=3) for launch in ({}, {"prune": 0.1, "rolling": rolling})]
    assert [vars(s) for s in runs[0].samples] == [vars(s) for s in runs[1].samples]
    assert runs[0].rebuilds == runs[1].rebuilds >= 3
    assert runs[0].prunes is None and runs[1].prunes > 2 * runs[1].rebuilds
    if rolling > 1:  # a part every step at least
        assert runs[1].prunes >= 200


@pytest.mark.gpu
def test_gpu_newton3_with_the_inner_list_matches_the_reference():
    import reference
    from dataclasses import replace

    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp32")
    got = strategies.create("clusterpair_warp_newton3", prune=0.1, rolling=2).evaluate(p)
    ref = reference.compute(p)
    assert got.pairs == ref.pairs
    assert np.abs(got.forces - ref.forces).max() <= 2e-5 * np.abs(ref.forces).max()
    p = replace(p, potential=replace(p.potential, shift=True))
    plain = md.run(strategies.create("clusterpair_warp_newton3"), p, steps=150, dt=0.005, sample=50, seed=3)
    inner = md.run(strategies.create("clusterpair_warp_newton3", prune=0.1, rolling=2), p, steps=150, dt=0.005,
                   sample=50, seed=3)
    assert inner.prunes >= 150
    for a, b in zip(plain.samples, inner.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("rolling", [1, 2])
def test_gpu_cluster_prune_trigger_and_schedule(rolling):
    """One particle moved 0.049 (inner 0.1): no prune by displacement; 0.051: the parts pruned
    before the move pruned again, no rebuild (skin/2 is 0.15); a rebuild prunes every part.
    rolling=2 prunes one part a step besides."""
    p = scenarios.make("lj_liquid", 4000, seed=2, precision="fp32")
    s = strategies.create("clusterpair_warp_padded", prune=0.1, rolling=rolling)
    plan = s.prepare(p)
    plan.upload()
    s.compute(plan)
    x0 = plan.pos.copy()
    counts = [(plan.rebuild_count(), plan.prune_count())]
    for shift in (0.049, 0.051, 0.0, 0.2):
        plan.pos[:] = x0
        plan.pos[17, 0] += plan.real(shift)
        s.step(plan)
        counts.append((plan.rebuild_count(), plan.prune_count()))
    if rolling == 1:  # back at x0, 0.051 from the prune's positions: a prune again
        assert counts == [(1, 1), (1, 1), (1, 2), (1, 3), (2, 4)]
    else:
        # the build: both parts; then the step's part (0, 1, 0, ...) and any part whose snapshot
        # lies 0.051 from the positions: part 1 (pruned before the move) at 0.051, at x0 part 1
        # (pruned at 0.051) besides the step's part 0; the rebuild both
        assert counts == [(1, 2), (1, 3), (1, 4), (1, 6), (2, 8)]
    got, want = _inner_rows(plan)
    assert got == want


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CLUSTER_PAIRS)
def test_gpu_replay_with_the_inner_list_passes_and_the_negative_control_fails(name):
    from harness import verify

    case = verify.Case("lj_liquid", scenarios.make("lj_liquid", "small", seed=1))
    frames = md.record(case.problem, 101)
    for precision in ("fp32", "fp64"):
        good = verify.replay_cell(strategies.create(name, prune=0.1, rolling=2), case, precision, frames)
        assert good["status"] == "pass", good["detail"]
    bad = verify.replay_cell(strategies.create(name, prune=0.1, rebuild="never"), case, "fp32", frames)
    assert bad["status"] == "FAIL" and "frame" in bad["detail"]
