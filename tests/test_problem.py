"""Input validation: every bad input gets an InputError naming the field."""
import math
import re

import numpy as np
import pytest

from mdcore import Box, Forces, InputError, LennardJones, Problem

L = [10.0, 10.0, 10.0]


def make(pos, box=L, **kw):
    return Problem.make(pos, box, **kw)


@pytest.mark.parametrize("bad, field", [
    (np.array([[1.0, np.nan, 2.0]]), "particle 0 has a non-finite y"),
    (np.array([[1.0, 2.0, 3.0], [np.inf, 1.0, 1.0]]), "particle 1 has a non-finite x"),
    (np.zeros((4, 2)), "expected shape (N, 3)"),
    (np.zeros(3), "expected shape (N, 3)"),
    (np.array([["a", "b", "c"]]), "real numeric array"),
    (np.zeros((2, 3), dtype=complex), "real numeric array"),
    (np.zeros((2, 3), dtype=bool), "real numeric array"),
])
def test_bad_positions(bad, field):
    with pytest.raises(InputError, match=re.escape(field)):
        make(bad)


def test_outside_open_box_names_axis_and_particle():
    pos = np.array([[1.0, 1.0, 1.0], [2.0, 11.0, 1.0]])
    with pytest.raises(InputError, match="particle 1 lies outside the open box along y"):
        make(pos, periodic=False)


def test_open_box_edges_are_inside():
    p = make(np.array([[0.0, 10.0, 5.0]]), periodic=False)
    assert p.positions[0, 1] == 10.0


def test_periodic_positions_are_wrapped():
    pos = np.array([[-0.5, 10.25, 3.0], [-1e-300, 20.0, -10.0]])
    p = make(pos)
    assert np.all(p.positions >= 0.0) and np.all(p.positions < 10.0)
    np.testing.assert_allclose(p.positions[0], [9.5, 0.25, 3.0])
    assert p.positions[1, 0] == 0.0  # -tiny wraps to L by rounding and must become 0


def test_caller_array_untouched():
    pos = np.array([[-0.5, 1.0, 1.0]])
    make(pos)
    assert pos[0, 0] == -0.5 and pos.flags.writeable


@pytest.mark.parametrize("rc", [0.0, -1.0, math.nan, math.inf])
def test_bad_cutoff(rc):
    with pytest.raises(InputError, match="cutoff must be finite and > 0"):
        LennardJones(cutoff=rc)


@pytest.mark.parametrize("key", ["epsilon", "sigma"])
def test_bad_lj_parameters(key):
    with pytest.raises(InputError, match=key):
        LennardJones(**{key: -1.0})


def test_periodic_box_shorter_than_twice_cutoff():
    with pytest.raises(InputError, match="periodic length along z .* shorter than twice the cutoff"):
        make(np.zeros((1, 3)), box=[6.0, 6.0, 4.9])
    # exactly twice the cutoff is allowed, and open axes are never too short
    make(np.zeros((1, 3)), box=[5.0, 5.0, 5.0])
    make(np.zeros((1, 3)), box=[6.0, 6.0, 1.0], periodic=(True, True, False))


def test_no_cutoff_needs_open_boundaries():
    with pytest.raises(InputError, match="no cutoff needs open boundaries"):
        make(np.zeros((1, 3)), potential=LennardJones(cutoff=None))
    make(np.zeros((1, 3)), potential=LennardJones(cutoff=None), periodic=False)


def test_shift_without_cutoff():
    with pytest.raises(InputError, match="shift needs a cutoff"):
        LennardJones(cutoff=None, shift=True)


@pytest.mark.parametrize("box, msg", [
    ([1.0, 2.0], "expected 3 lengths"),
    ([1.0, -2.0, 3.0], "length along y must be finite and > 0"),
    ([[1, 0, 0], [0.5, 1, 0], [0, 0, 1]], "orthorhombic"),
])
def test_bad_box(box, msg):
    with pytest.raises(InputError, match=msg):
        Box.make(box)


def test_unknown_precision():
    with pytest.raises(InputError, match="unknown precision 'fp16'; known: fp32, mixed, fp64"):
        make(np.zeros((1, 3)), precision="fp16")


@pytest.mark.parametrize("n", [0, 1])
def test_zero_and_one_particle_are_valid(n):
    p = make(np.full((n, 3), 5.0))
    assert p.n == n


def test_energy_shift_value():
    lj = LennardJones(epsilon=2.0, sigma=1.5, cutoff=3.0, shift=True)
    s6 = (1.5 / 3.0) ** 6
    assert lj.energy_shift == pytest.approx(4 * 2.0 * (s6 * s6 - s6))
    assert LennardJones(cutoff=3.0).energy_shift == 0.0


def test_forces_to_host_from_scalars_and_arrays():
    f = Forces(np.ones((2, 3), np.float32), np.float32(1.5), np.arange(9.0), np.uint64(7)).to_host()
    assert f.forces.dtype == np.float64 and f.virial.shape == (3, 3) and f.energy == 1.5 and f.pairs == 7
