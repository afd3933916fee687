"""The float64 reference, checked against itself, against formulas and against calculus."""
import math

import numpy as np
import pytest

import reference
from harness import scenarios
from mdcore import LennardJones, Problem

EPS, SIG = 1.3, 0.9


def lj_u(r, eps=EPS, sig=SIG):
    s6 = (sig / r) ** 6
    return 4 * eps * (s6 * s6 - s6)


def lj_f(r, eps=EPS, sig=SIG):
    """-dU/dr, positive = repulsive."""
    s6 = (sig / r) ** 6
    return 24 * eps * (2 * s6 * s6 - s6) / r


def two(r, direction=(1.0, 0.0, 0.0), L=20.0, periodic=True, **lj):
    d = np.asarray(direction) / np.linalg.norm(direction)
    pos = np.array([[5.0, 5.0, 5.0], [5.0, 5.0, 5.0] + r * d])
    lj.setdefault("epsilon", EPS), lj.setdefault("sigma", SIG)
    return Problem.make(pos, [L] * 3, LennardJones(**lj), periodic=periodic)


@pytest.mark.parametrize("method", ["direct", "cells"])
@pytest.mark.parametrize("r", [0.8, SIG, 2 ** (1 / 6) * SIG, 1.7, 2.4])
def test_two_particles_analytic(method, r):
    d = np.array([1.0, 2.0, -2.0]) / 3.0
    ref = reference.compute(two(r, d, cutoff=2.5), method)
    assert ref.pairs == 1
    assert ref.energy == pytest.approx(lj_u(r), rel=1e-13, abs=1e-13)
    # particle 1 sits at r_0 + r d: the force on 0 points along -d when repulsive
    np.testing.assert_allclose(ref.forces[0], -lj_f(r) * d, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref.forces[1], lj_f(r) * d, rtol=1e-12, atol=1e-12)
    # W = r_01 f_01^T with r_01 = -r d and f_01 = -F d: positive for repulsion
    np.testing.assert_allclose(ref.virial, r * lj_f(r) * np.outer(d, d), rtol=1e-12, atol=1e-12)


def test_special_points():
    rmin = 2 ** (1 / 6) * SIG
    at_min = reference.compute(two(rmin, cutoff=2.5))
    assert at_min.energy == pytest.approx(-EPS, rel=1e-14)
    assert np.abs(at_min.forces).max() < 1e-12
    at_sigma = reference.compute(two(SIG, cutoff=2.5))
    assert at_sigma.energy == pytest.approx(0.0, abs=1e-13)  # 5.0 + 0.9 is not exact
    assert at_sigma.forces[1, 0] == pytest.approx(24 * EPS / SIG, rel=1e-13)


def test_cutoff_and_shift():
    assert reference.compute(two(2.6, cutoff=2.5)).pairs == 0
    ref = reference.compute(two(2.0, cutoff=2.5, shift=True))
    assert ref.energy == pytest.approx(lj_u(2.0) - lj_u(2.5), rel=1e-13)
    np.testing.assert_allclose(ref.forces[1, 0], lj_f(2.0), rtol=1e-13)


def test_minimum_image_across_the_boundary():
    pos = np.array([[0.2, 5.0, 5.0], [9.6, 5.0, 5.0]])  # 0.6 apart through x = 0
    ref = reference.compute(Problem.make(pos, [10.0] * 3, LennardJones(epsilon=EPS, sigma=SIG)))
    assert ref.pairs == 1
    assert ref.forces[0, 0] == pytest.approx(lj_f(0.6), rel=1e-12)  # pushed to +x, away from the image
    open_box = reference.compute(Problem.make(pos, [10.0] * 3, LennardJones(), periodic=False))
    assert open_box.pairs == 0


def test_no_cutoff_counts_every_pair():
    p = scenarios.make("allpairs_cube", 64)
    ref = reference.compute(p)
    assert ref.pairs == 64 * 63 // 2 and ref.near_cutoff == {"fp32": 0, "fp64": 0}


@pytest.mark.parametrize("spec", ["lj_liquid", "lj_liquid_open", "uniform_slab", "gaussian", "k_per_cell",
                                  "one_per_cell"])
def test_direct_and_cells_agree(spec):
    p = scenarios.make(spec, "tiny", seed=3)
    a, b = reference.compute(p, "direct"), reference.compute(p, "cells")
    assert a.pairs == b.pairs > 0
    scale = np.abs(a.forces).max()
    np.testing.assert_allclose(b.forces, a.forces, rtol=0, atol=1e-12 * scale)
    assert b.energy == pytest.approx(a.energy, rel=1e-12)
    np.testing.assert_allclose(b.virial, a.virial, rtol=0, atol=1e-12 * np.abs(a.virial).max())
    assert a.near_cutoff == b.near_cutoff and a.r_min == b.r_min


@pytest.mark.parametrize("L, periodic", [((5.0, 5.0, 5.0), True), ((5.0, 7.5, 12.0), True),
                                          ((5.0, 5.0, 9.0), (True, False, True))])
def test_cells_with_one_or_two_cells_per_axis(rng, L, periodic):
    pos = rng.random((120, 3)) * L
    p = Problem.make(pos, L, LennardJones(cutoff=2.5), periodic=periodic)
    a, b = reference.compute(p, "direct"), reference.compute(p, "cells")
    assert a.pairs == b.pairs
    np.testing.assert_allclose(b.forces, a.forces, rtol=1e-12, atol=1e-9 * np.abs(a.forces).max())


def test_newton_third_law_and_symmetric_virial():
    ref = reference.compute(scenarios.make("uniform", "tiny"))
    assert np.abs(ref.forces.sum(axis=0)).max() < 1e-10 * np.abs(ref.forces).max()
    np.testing.assert_allclose(ref.virial, ref.virial.T, rtol=1e-13, atol=1e-13 * np.abs(ref.virial).max())


def test_finite_differences(rng):
    """F_i = -dU/dr_i, central differences with a shifted potential (smooth at the cutoff)."""
    p0 = scenarios.make("uniform", "tiny", seed=5)
    lj = LennardJones(cutoff=2.5, shift=True)
    pos = p0.positions.copy()
    box = p0.box
    ref = reference.compute(Problem.make(pos, box, lj))
    h = 1e-6
    for i in rng.choice(len(pos), 6, replace=False):
        for a in range(3):
            up, dn = pos.copy(), pos.copy()
            up[i, a] += h
            dn[i, a] -= h
            eu = reference.compute(Problem.make(up, box, lj)).energy
            ed = reference.compute(Problem.make(dn, box, lj)).energy
            fd = -(eu - ed) / (2 * h)
            assert fd == pytest.approx(ref.forces[i, a], rel=1e-5, abs=1e-6 * np.abs(ref.forces).max())


def test_virial_is_strain_derivative():
    """W_aa = -L_a dU/dL_a for a uniform scaling of one axis (periodic, shifted potential)."""
    p0 = scenarios.make("lj_liquid", "tiny", seed=2)
    lj = LennardJones(cutoff=2.5, shift=True)
    ref = reference.compute(Problem.make(p0.positions, p0.box, lj))
    h = 1e-6
    for a in range(3):
        s = np.ones(3)
        s[a] = 1 + h
        up = reference.compute(Problem.make(p0.positions * s, p0.box.array * s, lj)).energy
        s[a] = 1 - h
        dn = reference.compute(Problem.make(p0.positions * s, p0.box.array * s, lj)).energy
        assert ref.virial[a, a] == pytest.approx(-(up - dn) / (2 * h), rel=1e-5)


def test_translation_invariance(rng):
    p = scenarios.make("lj_liquid", "tiny")
    shift = rng.random(3) * p.box.array * 3 - p.box.array
    q = Problem.make(p.positions + shift, p.box, p.potential)
    a, b = reference.compute(p), reference.compute(q)
    assert a.pairs == b.pairs
    assert b.energy == pytest.approx(a.energy, rel=1e-12)
    np.testing.assert_allclose(b.forces, a.forces, atol=1e-10 * np.abs(a.forces).max())


def test_near_cutoff_band_counts_ambiguous_pairs():
    rc = 2.5
    eps32 = np.finfo(np.float32).eps
    band = reference.cutoff_band(eps32, np.array([20.0] * 3), rc * rc)
    # a pair exactly at the cutoff is out (r < rc) but ambiguous in both precisions
    at = reference.compute(two(rc, L=20.0, cutoff=rc, epsilon=1.0, sigma=1.0))
    assert at.pairs == 0 and at.near_cutoff == {"fp32": 1, "fp64": 1}
    # a pair inside the float32 band but far outside the float64 one
    r = math.sqrt(rc * rc - 0.5 * band)
    inside = reference.compute(two(r, L=20.0, cutoff=rc, epsilon=1.0, sigma=1.0))
    assert inside.pairs == 1 and inside.near_cutoff == {"fp32": 1, "fp64": 0}
    far = reference.compute(two(2.0, L=20.0, cutoff=rc, epsilon=1.0, sigma=1.0))
    assert far.near_cutoff == {"fp32": 0, "fp64": 0}


def test_r_min_and_scales():
    ref = reference.compute(two(1.1, cutoff=2.5))
    assert ref.r_min == pytest.approx(1.1)
    assert ref.energy_abs == pytest.approx(abs(lj_u(1.1)))
    assert ref.virial_abs == pytest.approx(abs(lj_f(1.1)) * 1.1)


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown reference method"):
        reference.compute(two(1.0), "magic")
