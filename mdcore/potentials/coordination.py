"""PLUMED's coordination number (the PLUMED CUDA coordination tutorial) as a pair potential: the "energy" is

    CN = sum over pairs i<j of S(r_ij),   S(r) = stretch * s(r) + shift  for r < dmax, else 0

with the rational switching function s(r) = (1 - x^n) / (1 - x^m), x = (r - d0) / r0 (s = 1 for
r <= d0), m = 2n by default, and stretch = 1 / (s(0) - s(dmax)), shift = -stretch s(dmax), so that
S falls from 1 at r <= d0 to 0 at dmax. The special cases the seed names: 2n = m, where s =
1 / (1 + x^n); x within 100 ulps of 1, where numerator and denominator both vanish and s = n / m,
ds/dx = n (n - m) / (2 m). Forces are -dCN/dr along the pair (the per-atom derivatives of the
coordination number, with the sign of a force), the virial sum r (x) f as for any potential.

Functor: `Coordination` in strategies/kernels/coordination.cuh.
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
def _ipow(x, k, one):
    """x^k for an integer k >= 0, by squaring (k is small)."""
    out = one
    base = x
    while k > 0:
        if k & 1:
            out *= base
        base *= base
        k >>= 1
    return out


@njit(inline="always")
def coordination_pair(r2, prm):
    """CPU strategies (the twin of the C++ functor), in the compute dtype: (|F| / r, u) for r2
    inside dmax. prm = 1/r0, d0, n, m, stretch, shift, dmax^2, window (100 eps), 1, 0.5."""
    inv_r0, d0, stretch, shift, window, one, half = prm[0], prm[1], prm[4], prm[5], prm[7], prm[8], prm[9]
    n = int(prm[2])
    m = int(prm[3])
    r = np.sqrt(r2)
    if r <= d0:
        return r2 - r2, stretch + shift  # a zero of the compute dtype (r2 * 0 would be float64)
    x = (r - d0) * inv_r0
    if 2 * n == m:
        xn1 = _ipow(x, n - 1, one)
        s = one / (one + xn1 * x)
        ds = -prm[2] * xn1 * s * s
    elif abs(x - one) < window:
        s = prm[2] / prm[3]
        ds = half * prm[2] * (prm[2] - prm[3]) / prm[3]
    else:
        xn1 = _ipow(x, n - 1, one)
        xm1 = _ipow(x, m - 1, one)
        iden = one / (one - xm1 * x)
        s = (one - xn1 * x) * iden
        ds = (-prm[2] * xn1 + s * prm[3] * xm1) * iden
    # dS/dr = stretch ds/dx / r0; the force along d = r_i - r_j is -dS/dr / r per unit d
    return -stretch * ds * inv_r0 / r, stretch * s + shift


def switch64(r: float, r0: float, d0: float, n: int, m: int) -> tuple[float, float]:
    """s(r) and ds/dr in float64 straight from the tutorial's definition (the reference's own
    formula: no shared code with coordination_pair or the functor)."""
    if r <= d0:
        return 1.0, 0.0
    x = (r - d0) / r0
    if 2 * n == m:
        s = 1.0 / (1.0 + x ** n)
        return s, -n * x ** (n - 1) * s * s / r0
    if abs(x - 1.0) < 100.0 * np.finfo(np.float64).eps:
        return n / m, n * (n - m) / (2.0 * m) / r0
    num, den = 1.0 - x ** n, 1.0 - x ** m
    dnum, dden = -n * x ** (n - 1), -m * x ** (m - 1)
    return num / den, (dnum * den - num * dden) / (den * den) / r0


@njit(inline="always")
def coordination_reference(r2, c):
    """Float64 reference from the formula: c = r0, d0, n, m, stretch, shift. (|F| / r, u)."""
    r0, d0, stretch, shift = c[0], c[1], c[4], c[5]
    n = int(c[2])
    m = int(c[3])
    r = math.sqrt(r2)
    if r <= d0:
        return 0.0, stretch + shift
    x = (r - d0) / r0
    if 2 * n == m:
        s = 1.0 / (1.0 + x ** n)
        dsdr = -n * x ** (n - 1) * s * s / r0
    elif abs(x - 1.0) < 100.0 * 2.220446049250313e-16:
        s = n / m
        dsdr = n * (n - m) / (2.0 * m) / r0
    else:
        num = 1.0 - x ** n
        den = 1.0 - x ** m
        s = num / den
        dsdr = ((-n * x ** (n - 1)) * den - num * (-m * x ** (m - 1))) / (den * den) / r0
    return -stretch * dsdr / r, stretch * s + shift


@register
@dataclass(frozen=True)
class Coordination(Potential):
    """PLUMED's COORDINATION with the RATIONAL switching function. dmax is the cutoff; m = 0
    means 2n (PLUMED's default)."""

    r0: float = 1.0
    d0: float = 0.0
    n: int = 6
    m: int = 0
    dmax: float = 2.5

    name: ClassVar[str] = "coordination"
    functor: ClassVar[str] = "Coordination"
    cuda_header: ClassVar[str] = "coordination.cuh"
    pair: ClassVar = staticmethod(coordination_pair)
    reference_pair: ClassVar = staticmethod(coordination_reference)

    def __post_init__(self) -> None:
        positive("r0", self.r0)
        positive("dmax", self.dmax)
        if isinstance(self.d0, bool) or not isinstance(self.d0, (int, float)) or not math.isfinite(self.d0) \
                or self.d0 < 0:
            raise InputError(f"d0 must be a finite number >= 0, got {self.d0!r}")
        for key in ("n", "m"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < (1 if key == "n" else 0) \
                    or v > 64:
                raise InputError(f"{key} must be a whole number in [{1 if key == 'n' else 0}, 64] (m = 0: 2n), "
                                 f"got {v!r}")
            object.__setattr__(self, key, int(v))
        if self.m == 0:
            object.__setattr__(self, "m", 2 * self.n)
        if self.m == self.n:
            raise InputError(f"m must differ from n (both {self.n}): s would be 1 everywhere")
        if self.dmax <= self.d0:
            raise InputError(f"dmax ({self.dmax:g}) must be beyond d0 ({self.d0:g})")
        if not math.isfinite(self.stretch):
            raise InputError(f"s(dmax) = 1 for these parameters: no switching between d0 and dmax")

    @property
    def cutoff(self) -> float:  # type: ignore[override]
        return float(self.dmax)

    @property
    def stretch(self) -> float:
        with np.errstate(all="ignore"):
            s_max, _ = switch64(self.dmax, self.r0, self.d0, self.n, self.m)
        d = 1.0 - s_max  # s(0) = 1: x = 0 (d0 = 0) or r <= d0
        return 1.0 / d if d != 0.0 else math.inf

    @property
    def shift(self) -> float:
        s_max, _ = switch64(self.dmax, self.r0, self.d0, self.n, self.m)
        return -self.stretch * s_max

    def params(self) -> np.ndarray:
        """Functor constants: 1/r0, d0, n, m, stretch, shift, dmax^2."""
        return np.array([1.0 / self.r0, self.d0, float(self.n), float(self.m), self.stretch, self.shift,
                         self.dmax ** 2])

    def pair_params(self, dtype) -> np.ndarray:
        eps = float(np.finfo(dtype).eps)
        return np.concatenate([self.params(), [100.0 * eps, 1.0, 0.5]]).astype(dtype)

    def reference_constants(self) -> np.ndarray:
        return np.array([self.r0, self.d0, float(self.n), float(self.m), self.stretch, self.shift])
