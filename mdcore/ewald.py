"""Ewald summation's reciprocal part: the parameters, the wave vectors and the terms beside it.

For point charges q_j at r_j in a periodic orthorhombic box of volume V, with the real-space term
k q_i q_j erfc(alpha r) / r of the pair kernels (k the file's coulomb_constant):

  k-vectors     k = 2 pi (n_x / L_x, n_y / L_y, n_z / L_z), |n_a| <= kmax_a, k != 0, one of each pair
                {k, -k}: the half space n_x > 0, or n_x = 0 and n_y > 0, or n_x = n_y = 0 and n_z > 0
  structure     S(k) = sum_j q_j exp(i k . r_j)
  energy        E_rec = k (4 pi / V) sum_half A(k) |S(k)|^2,   A(k) = exp(-k^2 / (4 alpha^2)) / k^2
  forces        F_j = 2 k (4 pi / V) q_j sum_half A(k) (Re S sin(k . r_j) - Im S cos(k . r_j)) k
  virial        W_ab = k (4 pi / V) sum_half A(k) |S|^2 (delta_ab - 2 k_a k_b (1 / k^2 + 1 / (4 alpha^2)))
                (the pair kernels' convention: W = -dE/d(strain), positive for repulsion)
  self          E_self = -k alpha / sqrt(pi) sum_j q_j^2
  net charge    E_net = -k pi Q^2 / (2 V alpha^2),  Q = sum_j q_j  (zero for a neutral system)

The total Ewald energy is the real-space pair sum + E_rec + E_self + E_net; forces and virial take
no part of E_self, and E_net adds W = E_net delta (it scales as 1 / V).

alpha and kmax come from the force-field file (`alpha` and `kmax`, an integer or three), or from
its `tolerance` delta as OpenMM chooses them (NonbondedForceImpl::calcEwaldParameters): alpha =
sqrt(-ln(2 delta)) / r_c and, per axis of length L, the smallest K with 0.05 sqrt(L alpha) K
exp(-(pi K / (L alpha))^2) <= delta, made odd; OpenMM's K counts |n| < K, so kmax = K - 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError

# the wave vectors' arrays on a device: n (3 int32), k (3 reals) and A (1 real) per vector, double
BYTES_PER_KVECTOR = 3 * 4 + 4 * 8
MAX_KVECTOR_BYTES = 4 << 30  # a k-space larger than this is refused before any work


def openmm_kmax(length: float, alpha: float, tolerance: float) -> int:
    """OpenMM's K for one axis (findZero of its EwaldErrorFunction from 10, then made odd), as |n| < K."""
    def error(k: int) -> float:
        t = k * math.pi / (length * alpha)
        return tolerance - 0.05 * math.sqrt(length * alpha) * k * math.exp(-t * t)

    k = 10
    if error(k) > 0.0:
        while error(k) > 0.0 and k > 0:
            k -= 1
        k += 1
    else:
        while error(k) < 0.0:
            k += 1
    return k + 1 if k % 2 == 0 else k


def count_half_space(kmax) -> int:
    """Wave vectors of the half space for kmax (three |n| bounds): ((2 kx + 1)(2 ky + 1)(2 kz + 1) - 1) / 2."""
    kx, ky, kz = (int(v) for v in kmax)
    return ((2 * kx + 1) * (2 * ky + 1) * (2 * kz + 1) - 1) // 2


@dataclass(frozen=True)
class Ewald:
    """The reciprocal part's parameters for one box: alpha (1 / length), kmax (|n| bound per axis),
    the Coulomb constant and the box lengths."""

    alpha: float
    kmax: tuple[int, int, int]
    coulomb_constant: float
    lengths: tuple[float, float, float]

    @staticmethod
    def make(ff, lengths, periodic) -> "Ewald":
        """From a force field whose electrostatics method is ewald and the box it is used in."""
        where = ff.where()
        if ff.method != "ewald":
            raise InputError(f"{where}: the reciprocal part needs electrostatics.method ewald, not {ff.method}")
        if not all(bool(p) for p in periodic):
            open_axes = ", ".join(a for a, p in zip("xyz", periodic) if not p)
            raise InputError(f"{where}: Ewald needs a box periodic in all three axes (open along {open_axes})")
        L = tuple(float(v) for v in lengths)
        if ff.kmax is not None:
            kmax = tuple(int(v) for v in ff.kmax)
        else:
            kmax = tuple(openmm_kmax(v, ff.alpha, ff.tolerance) - 1 for v in L)
        out = Ewald(float(ff.alpha), kmax, float(ff.coulomb_constant), L)
        need = count_half_space(kmax) * BYTES_PER_KVECTOR
        if need > MAX_KVECTOR_BYTES:
            raise InputError(f"{where}: kmax {list(kmax)} gives {count_half_space(kmax):,} wave vectors, {need:,} bytes "
                             f"of k-space arrays (at most {MAX_KVECTOR_BYTES:,}); take a smaller kmax or a larger "
                             "tolerance")
        return out

    @property
    def volume(self) -> float:
        return float(np.prod(self.lengths))

    @property
    def count(self) -> int:
        return count_half_space(self.kmax)

    @property
    def prefactor(self) -> float:
        """k 4 pi / V: E_rec = prefactor sum_half A |S|^2."""
        return self.coulomb_constant * 4.0 * math.pi / self.volume

    def vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The half space's n (M, 3) int32, k (M, 3) float64 and prefactor x A(k) (M,) float64, in
        the order n_x, then n_y, then n_z (each ascending)."""
        kx, ky, kz = self.kmax
        nx, ny, nz = np.meshgrid(np.arange(0, kx + 1), np.arange(-ky, ky + 1), np.arange(-kz, kz + 1), indexing="ij")
        n = np.stack([nx.ravel(), ny.ravel(), nz.ravel()], axis=1)
        half = (n[:, 0] > 0) | ((n[:, 0] == 0) & (n[:, 1] > 0)) | ((n[:, 0] == 0) & (n[:, 1] == 0) & (n[:, 2] > 0))
        n = np.ascontiguousarray(n[half], dtype=np.int32)
        k = n * (2.0 * math.pi / np.asarray(self.lengths))
        k2 = np.sum(k * k, axis=1)
        a = self.prefactor * np.exp(-k2 / (4.0 * self.alpha * self.alpha)) / k2
        return n, k, a

    def self_energy(self, charges) -> float:
        q = np.asarray(charges, np.float64)
        return -self.coulomb_constant * self.alpha / math.sqrt(math.pi) * float(np.dot(q, q))

    def net_charge_energy(self, charges) -> float:
        total = float(np.sum(np.asarray(charges, np.float64)))
        return -self.coulomb_constant * math.pi * total * total / (2.0 * self.volume * self.alpha * self.alpha)

    def describe(self) -> str:
        return (f"Ewald alpha {self.alpha:.6g}, kmax {'x'.join(map(str, self.kmax))} ({self.count:,} wave vectors in a "
                "half space)")
