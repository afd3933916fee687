"""Verification tolerances: one table per precision mode.

Error model. Two effects set the error of a correct kernel:

1. Coordinate rounding. A float kernel rounds each coordinate to a relative eps of
   |x| <= L/2 (positions are centred on the box), so a pair distance r carries an absolute
   error of about eps L / 2, which LJ's steepness turns into a relative force error of order
   13 eps (L/2) / r at the closest pair:  kappa = eps_compute * (L_max / 2) / r_min.
2. Accumulation. A sum of m terms in a type of machine epsilon eps_acc carries a relative
   error of order eps_acc * sqrt(m) (random rounding), m being the number of partners per
   particle (about 55 in the LJ liquid, N - 1 without a cutoff):  accum = eps_acc * sqrt(m).

Each tolerance is max(floor, c_kappa * kappa + c_accum * accum). The coefficients are one set
for the three precision modes (MODEL), the floors one per compute type (FLOORS), both chosen
from measurement (comments below) with margin: a mode's limits follow from its epsilons alone.
The verify report prints kappa and accum beside every row.

Pairs within rounding of the cutoff (counted by the reference) may be in or out: each such
pair may move a particle's force by |F(rc)|, and each net flip (the pair-count difference)
the totals by |U(rc)| and rc |F(rc)| (the jumps of the truncated potential);
harness.verify.compare excuses exactly that much before it applies these tolerances.

Metrics (harness.verify.compare):
  force_rms  ||F - F_ref|| / ||F_ref|| over all particles
  force_max  max_i |F_i - F_ref,i| / RMS(|F_ref|)
  energy     |E - E_ref| / sum_pairs |u_ij|           (the scale of the sum; equals the plain
  virial     ||W - W_ref||_F / sum_pairs |r_ij . f_ij|  relative error when terms don't cancel)
  pairs      |pairs - pairs_ref| <= pairs within rounding of the cutoff
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from mdcore import MODES


@dataclass(frozen=True)
class Bound:
    floor: float
    kappa: float = 0.0  # coefficient of the coordinate-rounding term
    accum: float = 0.0  # coefficient of the accumulation term

    def at(self, kappa: float, accum: float) -> float:
        return max(self.floor, self.kappa * kappa + self.accum * accum)


@dataclass(frozen=True)
class Tolerance:
    force_rms: Bound
    force_max: Bound
    energy: Bound
    virial: Bound

    def values(self, kappa: float, accum: float) -> dict:
        return {k: getattr(self, k).at(kappa, accum) for k in ("force_rms", "force_max", "energy", "virial")}

    def as_dict(self) -> dict:
        return asdict(self)


# fixed (float compute, int64 sums in 2^-32 units): its epsilons (mdcore.precision) carry the
# snapping of positions and lengths to the fixed-point grid (8 float epsilons) and the unit of its
# sums (2^-32, relative to terms of order one); the coefficients and floors are fp32's.
#
# The model's coefficients, one set for every precision mode: a mode's limits differ only
# through its epsilons in kappa (the compute type's) and accum (the accumulation type's).
# mixed computes coordinates and pair terms in float exactly as fp32 does, so its
# coordinate-rounding term is fp32's; only its accumulation term shrinks (eps64 sqrt(m)).
#
# Measured, fp32: on an NVIDIA H200 (allpairs_*, fullshell_thread_*, c08_*) and with the numba
# CPU strategies, every scenario at small, medium and large sizes (up to 1,048,576 particles),
# 2026-11-22: force_rms <= 4 kappa with a cutoff and <= 9 kappa in the no-cutoff cube (m = N - 1
# partners); force_max <= 55 kappa; energy <= 7.2 accum and virial <= 4.3 accum
# (fullshell_thread_cpu on the 64,000 particle Gaussian: numba does not fuse multiply-adds, so
# every float term is rounded twice). The coordinate-rounding part of the energy and virial
# shows where accumulation is exact (mixed): on the dense clump (24,000 particles, sigma 5, box
# 60) up to 0.013 kappa with the CPU strategies and up to 0.59 kappa on the GPU (an
# H200 run: 1.06e-5 energy error in mixed). Every coefficient leaves >= 2.8x margin.
MODEL = {"force_rms": (20.0, 1.0), "force_max": (400.0, 10.0), "energy": (2.0, 25.0), "virial": (2.0, 25.0)}

# Floors, per compute type: what per-pair rounding leaves when both terms are small (few
# partners, close to the box's origin). float (fp32 and mixed): measured energy and virial in
# mixed <= 5.4e-7, forces <= 2e-7 on small systems. double: measured up to 1,048,576 particles,
# force_rms <= 3.0e-14, force_max <= 5.7e-13, energy <= 3.5e-14, virial <= 2.9e-14 (AutoPas
# compares its traversals at 1e-10 in double); the floors leave >= 25x margin.
FLOORS = {"fp32": {"force_rms": 1e-6, "force_max": 1e-5, "energy": 1e-5, "virial": 1e-5},
          "fp64": {"force_rms": 1e-12, "force_max": 2e-11, "energy": 1e-12, "virial": 1e-12}}


def _table(precision: str) -> Tolerance:
    floors = FLOORS[MODES[precision].rounding]
    return Tolerance(**{k: Bound(floors[k], kappa=c_kappa, accum=c_accum) for k, (c_kappa, c_accum) in MODEL.items()})


TOLERANCES: dict[str, Tolerance] = {p: _table(p) for p in MODES}


def kappa(precision: str, lengths, r_min: float) -> float:
    """Coordinate-rounding conditioning of a problem for a precision mode."""
    if not np.isfinite(r_min) or r_min <= 0.0:
        return 0.0
    return MODES[precision].eps_compute * 0.5 * float(np.max(lengths)) / r_min


def accumulation(precision: str, partners: float) -> float:
    """Accumulation conditioning: eps of the accumulation type times sqrt(partners)."""
    return MODES[precision].eps_accumulate * math.sqrt(max(partners, 1.0))
