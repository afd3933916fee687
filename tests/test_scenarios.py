"""Scenarios are reproducible, have the promised shapes and respect their constraints."""
import math

import numpy as np
import pytest

import reference
from harness import scenarios
from mdcore import InputError


@pytest.mark.parametrize("name", list(scenarios.SCENARIOS))
def test_same_seed_same_bits_other_seed_differs(name):
    a = scenarios.make(name, "tiny", seed=7)
    b = scenarios.make(name, "tiny", seed=7)
    c = scenarios.make(name, "tiny", seed=8)
    assert np.array_equal(a.positions, b.positions)
    assert not np.array_equal(a.positions, c.positions)
    assert a.label == f"{name} N={a.n} seed=7"


@pytest.mark.parametrize("name", list(scenarios.SCENARIOS))
def test_sizes_and_bounds(name):
    sc = scenarios.SCENARIOS[name]
    p = scenarios.make(name, "tiny")
    assert abs(p.n - sc.sizes["tiny"]) <= 0.1 * sc.sizes["tiny"]
    assert np.all(p.positions >= 0) and np.all(p.positions <= p.box.array)
    assert list(sc.sizes) == list(scenarios.SIZES)
    assert sc.sizes["small"] < sc.sizes["medium"] < sc.sizes["large"]


def test_lj_liquid_density_and_count():
    p = scenarios.make("lj_liquid", 4000)
    assert p.n == 4 * 10 ** 3
    assert p.n / p.box.volume == pytest.approx(scenarios.DENSITY, rel=1e-12)
    assert scenarios.make("lj_liquid", "large").n == 1048576


@pytest.mark.parametrize("name, dmin", [("uniform", 0.8), ("uniform_slab", 0.8), ("k_per_cell", 0.8), ("gaussian", 0.2)])
def test_minimum_distance(name, dmin):
    p = scenarios.make(name, "small")
    ref = reference.compute(p)
    assert ref.r_min >= dmin


def test_k_per_cell_counts_exact():
    p = scenarios.make("k_per_cell:k=5", 5 * 4 ** 3)
    side = p.box.array / 4
    idx = np.minimum((p.positions // side).astype(int), 3)
    counts = np.bincount((idx[:, 0] * 4 + idx[:, 1]) * 4 + idx[:, 2], minlength=64)
    assert np.all(counts == 5)


def test_one_per_cell_one_in_each_cell_centre_half():
    p = scenarios.make("one_per_cell", 6 ** 3)
    frac = (p.positions / 2.5) % 1.0
    assert np.all((frac >= 0.25) & (frac <= 0.75))
    cells = np.floor(p.positions / 2.5).astype(int)
    assert len({tuple(c) for c in cells}) == p.n


def test_gaussian_matches_thesis_geometry_and_sigma():
    p = scenarios.make("gaussian:sigma=30", 20000, seed=2)
    scale = (20000 / 1e6) ** (1 / 3)
    assert p.box.array[0] == pytest.approx(120 * scale)
    assert not any(p.box.periodic) and p.potential.cutoff == 3.0
    spread = p.positions.std(axis=0) / scale
    # the box truncates the Gaussian at +-60 = 2 sigma: std = sigma sqrt(1 - 2a phi(a) / (2 Phi(a) - 1))
    a = 2.0
    phi = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    Phi2m1 = math.erf(a / math.sqrt(2))
    expected = 30 * math.sqrt(1 - 2 * a * phi / Phi2m1)
    np.testing.assert_allclose(spread, expected, rtol=0.03)
    narrow = scenarios.make("gaussian:sigma=12", 20000, seed=2).positions.std(axis=0).mean()
    assert narrow < spread.mean() * scale


def test_allpairs_cube_has_no_cutoff_and_open_box():
    p = scenarios.make("allpairs_cube", "tiny")
    assert p.potential.cutoff is None and not any(p.box.periodic) and p.n == 125


def test_slab_is_periodic_in_x_y_only():
    assert scenarios.make("uniform_slab", "tiny").box.periodic == (True, True, False)


@pytest.mark.parametrize("spec, msg", [
    ("nope", "unknown scenario 'nope'"),
    ("gaussian:sigma", "is not key=value"),
    ("gaussian:sigma=abc", "must be a number"),
    ("gaussian:width=3", "unknown parameter 'width'; it takes sigma, dmin, cutoff"),
    ("gaussian:sigma=-4", r"sigma \(width .*\) must be > 0, got '-4'"),
    ("k_per_cell:k=0", r"k \(particles per cell\) must be >= 1, got '0'"),
    ("k_per_cell:k=2.5", "k must be a whole number"),
    ("lj_liquid:density=-1", "density .* must be > 0"),
    ("lj_liquid:jitter=0.3", "must be >= 0 and < 0.25"),
    ("one_per_cell:k=3", "unknown parameter 'k'; it takes cutoff"),
    ("clump:box=inf", "box .* must be > 0"),
])
def test_bad_specs(spec, msg):
    with pytest.raises(InputError, match=msg):
        scenarios.make(spec, "tiny")


@pytest.mark.parametrize("size, msg", [
    ("huge", "n: expected a particle count or a size name"), (-3, "at least 2 particles .*got -3"),
    ("-5", "at least 2 particles"), (0, "got 0"), (1, "got 1"), ("1.5", "whole number"), ("nan", "whole number"),
])
def test_bad_sizes(size, msg):
    with pytest.raises(InputError, match=msg):
        scenarios.make("uniform", size)


def test_sizes_as_typed():
    assert scenarios.parse_size("1e6") == 1000000 and scenarios.parse_size("1_000") == 1000
    assert scenarios.parse_size("small") == "small" and scenarios.parse_size(12) == 12


def test_too_small_for_the_cutoff_names_the_smallest_n():
    with pytest.raises(InputError, match=r"N=8 gives a periodic box of side 1.68, shorter than twice the cutoff "
                                         r"\(5\); the smallest N it takes is about (\d+)") as e:
        scenarios.make("lj_liquid", 8)
    n = int(str(e.value).rsplit(" ", 1)[1])
    assert scenarios.make("lj_liquid", n).n >= n // 2  # it does build
    # a cutoff no size fits: said so, not a made-up count
    with pytest.raises(InputError, match=r"\(2e\+09\); no N up to 16,777,216 fits it$"):
        scenarios.make("lj_liquid:cutoff=1e9", 100)


def test_size_beyond_host_memory_is_refused_before_allocating(monkeypatch):
    from harness import device

    monkeypatch.setattr(device, "host_memory_available", lambda: 2 ** 30)
    with pytest.raises(InputError, match=r"N=10,000,000 needs about 3.7 GiB of host memory .* has 1.0 GiB free"):
        scenarios.make("uniform", 10 ** 7)
    with pytest.raises(InputError, match="needs about"):
        scenarios.make("lj_liquid", 10 ** 12)  # a numpy allocation error before the check existed


def test_negative_seed_is_refused():
    with pytest.raises(InputError, match="seed must be a whole number >= 0, got -1"):
        scenarios.make("uniform", "tiny", seed=-1)


def test_clump_is_dense_and_unscaled():
    p = scenarios.make("clump", "small")
    assert p.box.lengths == (60.0, 60.0, 60.0) and not any(p.box.periodic)
    centre = np.linalg.norm(p.positions - 30.0, axis=1) < 5.0
    assert centre.sum() / (4 / 3 * math.pi * 125) > 1.0  # particles per unit volume at the centre


def test_impossible_packing_is_reported():
    with pytest.raises(InputError, match="could not place"):
        scenarios.make("uniform:dmin=1.5", 500)
