"""Property tests (hypothesis): random boxes, periodicity and positions. The reference against
itself (direct O(N^2) against its cell list, and under translation), and every CPU strategy
against the reference."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reference
import strategies
from mdcore import LennardJones, Problem

RC = 2.5
pytestmark = pytest.mark.slow
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


MIN_DISTANCE = 0.6  # LJ at r -> 0 is not a property of the traversal


def _placed(rng, n, lengths, periodic):
    """Up to n uniform random points with no pair (minimum image on periodic axes) closer than
    MIN_DISTANCE: each drawn until it keeps the distance (a few tries), so that hypothesis need
    not filter configurations out (a random seed made it discard most of them and fail its
    health check)."""
    lengths, periodic = np.asarray(lengths), np.asarray(periodic)
    pos = np.empty((0, 3))
    for _ in range(n):
        for _ in range(20):
            x = rng.random(3) * lengths
            d = pos - x
            d -= np.where(periodic, lengths * np.rint(d / lengths), 0.0)
            if not len(d) or (d * d).sum(-1).min() > MIN_DISTANCE ** 2:
                pos = np.vstack([pos, x])
                break
    return pos


@st.composite
def configurations(draw, max_n=48, min_periodic=2 * RC):
    periodic = tuple(draw(st.booleans()) for _ in range(3))
    lengths = [draw(st.floats(min_periodic if p else 1.0, max(13.0, min_periodic))) for p in periodic]
    n = draw(st.integers(2, max_n))
    seed = draw(st.integers(0, 2**31 - 1))
    pos = _placed(np.random.default_rng(seed), n, lengths, periodic)
    assume(len(pos) >= 2)  # at least two points fit in every box drawn; kept as a guard
    shift = draw(st.booleans())
    return Problem.make(pos, lengths, LennardJones(cutoff=RC, shift=shift), periodic=periodic, precision="fp64")


def _min_periodic(strategy) -> float:
    """The shortest periodic box side (from 2 rc up) the strategy takes, found by bisection: c08
    needs 3 cells along a periodic axis, the list strategies twice the list radius. Drawing no
    shorter side, its examples need no filtering."""
    def takes(side: float) -> bool:
        box = Problem.make(np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]), [side] * 3, LennardJones(cutoff=RC),
                           periodic=(True, True, True), precision="fp64")
        return strategy.supports(box)[0]

    lo, hi = 2 * RC, 13.0
    if takes(lo):
        return lo
    assert takes(hi), f"{strategy.name} takes no periodic box up to {hi}"
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if takes(mid) else (mid, hi)
    return hi


@SETTINGS
@given(configurations(max_n=80))
def test_reference_direct_and_cells_agree(p):
    a, b = reference.compute(p, "direct"), reference.compute(p, "cells")
    assert a.pairs == b.pairs and a.near_cutoff == b.near_cutoff
    scale = max(np.abs(a.forces).max(), 1e-300)
    np.testing.assert_allclose(b.forces, a.forces, rtol=0, atol=1e-11 * scale)
    assert b.energy == pytest.approx(a.energy, rel=1e-11, abs=1e-11 * max(a.energy_abs, 1e-300))


@SETTINGS
@given(configurations(), st.floats(-20, 20), st.floats(-20, 20), st.floats(-20, 20))
def test_reference_is_translation_invariant_along_periodic_axes(p, tx, ty, tz):
    t = np.array([tx, ty, tz]) * np.array(p.box.periodic)  # open axes keep their walls
    moved = Problem.make(p.positions + t, p.box, p.potential, periodic=p.box.periodic)
    a, b = reference.compute(p), reference.compute(moved)
    assert a.pairs == b.pairs
    scale = max(np.abs(a.forces).max(), 1e-300)
    np.testing.assert_allclose(b.forces, a.forces, rtol=0, atol=1e-9 * scale)
    assert b.energy == pytest.approx(a.energy, rel=1e-9, abs=1e-9 * max(a.energy_abs, 1e-300))


@pytest.mark.parametrize("name", strategies.select(backend="cpu"))
@SETTINGS
@given(data=st.data())
def test_cpu_strategy_matches_the_reference(name, data):
    s = strategies.create(name)
    p = data.draw(configurations(min_periodic=_min_periodic(s)))
    ok, why = s.supports(p)
    assert ok, why
    out = s.evaluate(p)
    ref = reference.compute(p)
    assert out.pairs == ref.pairs
    scale = max(np.abs(ref.forces).max(), 1e-300)
    np.testing.assert_allclose(out.forces, ref.forces, rtol=0, atol=1e-10 * scale)
    assert out.energy == pytest.approx(ref.energy, rel=1e-10, abs=1e-10 * max(ref.energy_abs, 1e-300))
    np.testing.assert_allclose(out.virial, ref.virial, rtol=0, atol=1e-10 * max(ref.virial_abs, 1e-300))
