"""The potential is a parameter end to end: a second potential, defined and registered here in
the test file, runs through every CPU strategy and the reference, and compiles into every GPU
traversal kernel, without a change to any strategy file."""
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from numba import njit

import reference
import strategies
from harness import scenarios, verify
from mdcore import InputError, Problem, potentials
from mdcore.potentials import Potential, positive


@njit(inline="always")
def _soft_pair(r2, prm):
    """Compute dtype: prm = sigma^2, eps, cutoff^2, 12."""
    s2 = prm[0] / r2
    s6 = s2 * s2 * s2
    u = prm[1] * s6 * s6
    return prm[3] * u / r2, u


@njit(inline="always")
def _soft_reference(r2, c):
    """From U(r) = eps (sigma / r)^12, F(r) = -U'(r) = 12 eps sigma^12 / r^13: |F| / r."""
    r = math.sqrt(r2)
    u = c[1] * (c[0] / r) ** 12
    return 12.0 * c[1] * c[0] ** 12 / r ** 14, u


SOFT_CUDA = r"""
#pragma once
#include "common.cuh"
// Purely repulsive soft sphere U = eps (sigma / r)^12 (registered by tests/test_potentials.py).
template <typename Real>
struct SoftSphere {
  Real sigma2, eps, cutoff2;
  __device__ __forceinline__ explicit SoftSphere(const Real* __restrict__ p) : sigma2(p[0]), eps(p[1]), cutoff2(p[2]) {}
  __device__ __forceinline__ bool inside(Real r2) const { return r2 < cutoff2; }
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real inv = Math<Real>::rcp(r2);
    const Real s2 = sigma2 * inv;
    const Real s6 = s2 * s2 * s2;
    u = eps * s6 * s6;
    return Real(12) * u * inv;
  }
};
"""


@dataclass(frozen=True)
class SoftSphere(Potential):
    epsilon: float = 1.0
    sigma: float = 1.0
    cutoff: float | None = 2.5

    name: ClassVar[str] = "soft_sphere_test"
    functor: ClassVar[str] = "SoftSphere"
    cuda_source: ClassVar[str] = SOFT_CUDA
    pair: ClassVar = staticmethod(_soft_pair)
    reference_pair: ClassVar = staticmethod(_soft_reference)

    def __post_init__(self):
        positive("epsilon", self.epsilon)
        positive("sigma", self.sigma)
        positive("cutoff", self.cutoff, allow_none=True)

    def params(self):
        rc2 = math.inf if self.cutoff is None else self.cutoff ** 2
        return np.array([self.sigma ** 2, self.epsilon, rc2])

    def pair_params(self, dtype):
        return np.concatenate([self.params(), [12.0]]).astype(dtype)

    def reference_constants(self):
        return np.array([self.sigma, self.epsilon])


@pytest.fixture(scope="module", autouse=True)
def soft_registered():
    potentials.register(SoftSphere)
    yield
    potentials.REGISTRY.pop(SoftSphere.name)


def _with_soft(spec, size=None, seed=3, **kw):
    size = size or ("small" if spec == "uniform" else "tiny")  # tiny uniform has 2 cells per axis: no c08
    p = scenarios.make(spec, size, seed=seed)
    pot = SoftSphere(cutoff=p.potential.cutoff, **kw)
    return Problem.make(p.positions, p.box, pot, label=p.label)


def test_spec_parses_the_registered_potential():
    pot = potentials.parse("soft_sphere_test:epsilon=2,cutoff=3")
    assert pot == SoftSphere(epsilon=2, cutoff=3)
    with pytest.raises(InputError, match="unknown parameter 'shift'"):
        potentials.parse("soft_sphere_test:shift=1")
    with pytest.raises(InputError, match="sigma must be finite and > 0"):
        potentials.parse("soft_sphere_test:sigma=-1")


@pytest.mark.parametrize("r", [0.7, 1.0, 1.6, 2.4])
def test_reference_two_particles_analytic(r):
    d = np.array([2.0, -1.0, 2.0]) / 3.0
    pos = np.array([[4.0, 4.0, 4.0], [4.0, 4.0, 4.0] + r * d])
    ref = reference.compute(Problem.make(pos, [12.0] * 3, SoftSphere(epsilon=1.5, sigma=0.9)))
    u, f = 1.5 * (0.9 / r) ** 12, 12 * 1.5 * 0.9 ** 12 / r ** 13
    assert ref.pairs == 1 and ref.energy == pytest.approx(u, rel=1e-13)
    np.testing.assert_allclose(ref.forces[1], f * d, rtol=1e-12)
    np.testing.assert_allclose(ref.virial, r * f * np.outer(d, d), rtol=1e-12, atol=1e-14)


def test_reference_forces_are_minus_the_energy_gradient():
    p = _with_soft("uniform", seed=7)
    ref = reference.compute(p)
    h = 1e-6
    for i in (0, 17, 101):
        for a in range(3):
            up, dn = p.positions.copy(), p.positions.copy()
            up[i, a] += h
            dn[i, a] -= h
            eu = reference.compute(Problem.make(up, p.box, p.potential)).energy
            ed = reference.compute(Problem.make(dn, p.box, p.potential)).energy
            # the truncated potential jumps at the cutoff by at most U(rc): tiny for r^-12
            assert -(eu - ed) / (2 * h) == pytest.approx(ref.forces[i, a], rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("name", strategies.select(backend="cpu"))
@pytest.mark.parametrize("spec", ["lj_liquid_open", "uniform", "gaussian"])
def test_every_cpu_strategy_computes_the_new_potential(name, spec):
    # fp32 and fp64: the potential's two compute types (mixed adds a float64 sum, which the LJ matrix covers)
    case = verify.Case(spec, _with_soft(spec))
    rows = verify.run_matrix([strategies.create(name)], [case], ["fp32", "fp64"])
    ran = [r for r in rows if r["status"] != "n/a"]
    assert ran and all(r["status"] == "pass" for r in ran), verify.table(rows)
    assert all(r["potential"].startswith("soft_sphere_test:") for r in rows)


def test_the_new_potential_differs_from_lj():
    """Not a relabelled LJ: the strategies really called the soft sphere's pair function."""
    p = _with_soft("uniform")
    lj_problem = scenarios.make("uniform", "small", seed=3)
    soft = strategies.create("fullshell_thread_cpu").evaluate(p.with_precision("fp64"))
    lj = strategies.create("fullshell_thread_cpu").evaluate(lj_problem.with_precision("fp64"))
    soft_ref, lj_ref = reference.compute(p), reference.compute(lj_problem)
    assert soft.energy == pytest.approx(soft_ref.energy, rel=1e-12)
    assert abs(soft_ref.energy - lj_ref.energy) > 0.1 * abs(lj_ref.energy)
    np.testing.assert_allclose(soft.forces, soft_ref.forces, rtol=1e-9, atol=1e-9 * np.abs(soft_ref.forces).max())


@pytest.mark.gpu
@pytest.mark.parametrize("name", strategies.select(backend="cuda"))
def test_every_gpu_strategy_computes_the_new_potential(name):
    cases = [verify.Case(s, _with_soft(s)) for s in ("lj_liquid_open", "uniform", "gaussian")]
    rows = verify.run_matrix([strategies.create(name)], cases, ["fp32", "fp64"])
    ran = [r for r in rows if r["status"] != "n/a"]
    assert ran and all(r["status"] == "pass" for r in ran), verify.table(rows)


@pytest.mark.slow
def test_every_traversal_kernel_compiles_with_the_new_potential():
    from strategies import nvcc

    if nvcc.nvcc() is None:
        pytest.skip("nvcc not found on PATH")
    soft = SoftSphere()
    specs = nvcc.specialisations(soft, defaults=True)  # every launch variant: test_kernels, with LJ
    traversal = {f: e for f, (e, needs) in specs.items() if needs}
    assert set(traversal) >= {"allpairs.cu", "cells.cu", "parity.cu"}
    # every pair of two template arguments' values of the all-pairs kernels (nvcc.covering), with the new
    # functor, float and double compute (mixed and fixed call the functor as fp32 does, with another
    # accumulator): what a new potential needs; every other traversal file compiles with a second functor
    # in test_coordination
    mine = {file: nvcc.covering([e for e in exprs if "SoftSphere" in e and "<float, double," not in e
                                 and "<float, Fixed," not in e]) for file, exprs in traversal.items()
            if file == "allpairs.cu"}
    assert all(mine.values()), mine
    for file, (code, out, _) in nvcc.compile_units(mine, potential=soft).items():
        assert code == 0, out
        assert sum("SoftSphere" in r.expression for r in nvcc.resources(out)) == len(mine[file])


# --- Lennard-Jones with sigma and epsilon other than 1 (the functor's float form holds the sigma
# powers in its constants: lennard_jones.cuh, kPowers) ----------------------------------------

def _lj_scaled(spec="lj_liquid", precision="fp64"):
    from dataclasses import replace

    from mdcore import LennardJones

    p = scenarios.make(spec, "small", seed=4, precision=precision)
    return replace(p, potential=LennardJones(epsilon=0.7, sigma=0.9, cutoff=2.3, shift=True))


def test_lj_params_hold_the_sigma_powers():
    from mdcore import LennardJones

    prm = LennardJones(epsilon=0.7, sigma=0.9, cutoff=2.3).params()
    s6 = 0.9 ** 6
    assert prm[:4] == pytest.approx([0.81, 16.8, 2.8, 2.3 ** 2])
    assert prm[5:] == pytest.approx([48 * 0.7 * s6 * s6, 24 * 0.7 * s6, 4 * 0.7 * s6 * s6, 4 * 0.7 * s6], rel=1e-15)
    one = LennardJones().params()
    assert one[5:].tolist() == [48.0, 24.0, 4.0, 4.0]  # sigma = 1: the constants of the sigma^2 form


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_the_cpu_twin_follows_the_reference_with_sigma_and_epsilon(precision):
    p = _lj_scaled(precision=precision)
    got = strategies.create("fullshell_thread_cpu").evaluate(p)
    ref = reference.compute(p)
    m = verify.compare(got, ref, p)
    assert m["failures"] == [], m["failures"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["allpairs_thread_tiled", "fullshell_thread_csr", "verlet_thread_padded",
                                  "parity_warpblock_twopass_atomic", "clusterpair_warp_padded"])
def test_gpu_lj_with_sigma_and_epsilon_passes(name):
    cases = [verify.Case("lj_liquid", _lj_scaled())]
    rows = verify.run_matrix([strategies.create(name)], cases, ["fp32", "mixed", "fixed", "fp64"])
    ran = [r for r in rows if r["status"] != "n/a"]
    assert ran and all(r["status"] == "pass" for r in ran), verify.table(rows)
