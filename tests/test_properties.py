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


@st.composite
def configurations(draw, max_n=48):
    periodic = tuple(draw(st.booleans()) for _ in range(3))
    lengths = [draw(st.floats(2 * RC if p else 1.0, 13.0)) for p in periodic]
    n = draw(st.integers(2, max_n))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 3)) * lengths
    d = pos[:, None, :] - pos[None, :, :]
    for a in range(3):
        if periodic[a]:
            d[..., a] -= lengths[a] * np.rint(d[..., a] / lengths[a])
    r2 = (d * d).sum(-1) + np.eye(n) * 1e9
    assume(r2.min() > 0.6 ** 2)  # LJ at r -> 0 is not a property of the traversal
    shift = draw(st.booleans())
    return Problem.make(pos, lengths, LennardJones(cutoff=RC, shift=shift), periodic=periodic, precision="fp64")


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
@given(p=configurations())
def test_cpu_strategy_matches_the_reference(name, p):
    s = strategies.create(name)
    ok, _ = s.supports(p)
    assume(ok)  # c08 needs 3 cells along a periodic axis
    out = s.evaluate(p)
    ref = reference.compute(p)
    assert out.pairs == ref.pairs
    scale = max(np.abs(ref.forces).max(), 1e-300)
    np.testing.assert_allclose(out.forces, ref.forces, rtol=0, atol=1e-10 * scale)
    assert out.energy == pytest.approx(ref.energy, rel=1e-10, abs=1e-10 * max(ref.energy_abs, 1e-300))
    np.testing.assert_allclose(out.virial, ref.virial, rtol=0, atol=1e-10 * max(ref.virial_abs, 1e-300))
