"""Lennard-Jones 12-6, truncated at the cutoff and optionally shifted to zero there.

    U(r) = 4 eps [(sigma/r)^12 - (sigma/r)^6] - U_shift   for r < cutoff, else 0

Functor: `LennardJones` in strategies/kernels/lennard_jones.cuh.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numba import njit

from ..errors import InputError
from . import Potential, positive, register


@njit(inline="always")
def lj_pair(r2, prm):
    """CPU strategies (the twin of the C++ functor): (|F| / r, u) for r2 inside the cutoff in the
    compute dtype; prm = params() (sigma^2, 24 eps, 4 eps, cutoff^2, U_shift, 48 eps sigma^12,
    24 eps sigma^6, 4 eps sigma^12, 4 eps sigma^6), then 1, in that dtype."""
    inv = prm[9] / r2
    r6 = inv * inv * inv
    # the functor's brackets (its float form), in r^-6 with the sigma powers in the constants
    return r6 * (prm[5] * r6 - prm[6]) * inv, r6 * (prm[7] * r6 - prm[8]) - prm[4]


@njit(inline="always")
def lj_reference(r2, c):
    """Float64 reference, from the formula: c = sigma^2, epsilon, U_shift.
    F(r) / r = -U'(r) / r = 24 eps (sigma/r)^6 [2 (sigma/r)^6 - 1] / r^2."""
    sig2, eps, ushift = c[0], c[1], c[2]
    sr2 = sig2 / r2
    sr6 = sr2 * sr2 * sr2
    u = 4.0 * eps * sr6 * (sr6 - 1.0) - ushift
    fr = 24.0 * eps * sr6 * (2.0 * sr6 - 1.0) / r2
    return fr, u


@register
@dataclass(frozen=True)
class LennardJones(Potential):
    """cutoff None means no cutoff (every pair interacts; open boundaries only). shift subtracts
    U(cutoff) so the pair energy is zero at the cutoff (forces unchanged)."""

    epsilon: float = 1.0
    sigma: float = 1.0
    cutoff: float | None = 2.5
    shift: bool = False

    name: ClassVar[str] = "lj"
    functor: ClassVar[str] = "LennardJones"
    cuda_header: ClassVar[str] = "lennard_jones.cuh"
    pair: ClassVar = staticmethod(lj_pair)
    reference_pair: ClassVar = staticmethod(lj_reference)

    def __post_init__(self) -> None:
        positive("epsilon", self.epsilon)
        positive("sigma", self.sigma)
        positive("cutoff", self.cutoff, allow_none=True)
        if self.shift not in (True, False, 0, 1):
            raise InputError(f"shift must be true or false, got {self.shift!r}")
        object.__setattr__(self, "shift", bool(self.shift))
        if self.cutoff is None and self.shift:
            raise InputError("shift needs a cutoff: with no cutoff there is nothing to shift to")

    @property
    def energy_shift(self) -> float:
        """U(cutoff) when shifting, else 0."""
        if not self.shift or self.cutoff is None:
            return 0.0
        s6 = (self.sigma / self.cutoff) ** 6
        return 4.0 * self.epsilon * s6 * (s6 - 1.0)

    def params(self) -> np.ndarray:
        """Functor constants: sigma^2, 24 eps, 4 eps, cutoff^2 (inf = no cutoff), U_shift (the
        sigma^2 form, fp64), then 48 eps sigma^12, 24 eps sigma^6, 4 eps sigma^12, 4 eps sigma^6
        (the r^-6 form, float)."""
        rc2 = math.inf if self.cutoff is None else self.cutoff ** 2
        eps, s6 = self.epsilon, self.sigma ** 6
        return np.array([self.sigma ** 2, 24.0 * eps, 4.0 * eps, rc2, self.energy_shift,
                         48.0 * eps * s6 * s6, 24.0 * eps * s6, 4.0 * eps * s6 * s6, 4.0 * eps * s6])

    def pair_params(self, dtype) -> np.ndarray:
        return np.concatenate([self.params(), [1.0]]).astype(dtype)

    def reference_constants(self) -> np.ndarray:
        return np.array([self.sigma * self.sigma, float(self.epsilon), self.energy_shift])
