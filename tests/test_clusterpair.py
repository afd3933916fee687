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
    base = ["verify", "--strategies", "clusterpair_thread_cpu", "--scenarios", "lj_liquid", "--size", "small",
            "--precision", "fp32", "--replay", "100", "--quiet"]
    assert cli.main(base + ["--out", str(tmp_path / "a")]) == 0
    assert cli.main(base + ["--launch", "rebuild=never", "--out", str(tmp_path / "b")]) == 1
    assert "FAIL: frame" in capsys.readouterr().out
