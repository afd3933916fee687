"""Verification tolerances: one table per precision mode.

Error model. Two effects set the error of a correct kernel:

1. Coordinate rounding. A float kernel rounds each coordinate to a relative eps of
   |x| <= L/2 (positions are centred on the box), so a pair distance r carries an absolute
   error of about eps L / 2, which LJ's steepness turns into a relative force error of order
   13 eps (L/2) / r at the closest pair:  kappa = eps_compute * (L_max / 2) / r_min.
2. Accumulation. A sum of m terms in a type of machine epsilon eps_acc carries a relative
   error of order eps_acc * sqrt(m) (random rounding), m being the number of partners per
   particle (about 55 in the LJ liquid, N - 1 without a cutoff):  accum = eps_acc * sqrt(m).

Each tolerance is max(floor, c_kappa * kappa + c_accum * accum), with floor and coefficients
chosen from measurement (comments below) with margin. The verify report prints kappa and
accum beside every row.

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


TOLERANCES: dict[str, Tolerance] = {
    # fp32: float compute, float accumulation. Measured on an NVIDIA H200 (allpairs_*,
    # fullshell_thread_*, c08_*) and with the numba CPU strategies, every scenario at small,
    # medium and large sizes (up to 1,048,576 particles), 2026-11-22: force_rms <= 4 kappa with
    # a cutoff and <= 9 kappa in the no-cutoff cube (m = N - 1 partners); force_max <= 55
    # kappa; energy <= 7.2 accum and virial <= 4.3 accum (fullshell_thread_cpu on the 64,000
    # particle Gaussian: numba does not fuse multiply-adds, so every float term is rounded
    # twice). Every bound leaves >= 2.8x margin over the worst cell.
    "fp32": Tolerance(force_rms=Bound(1e-6, kappa=20.0, accum=1.0),
                      force_max=Bound(1e-5, kappa=400.0, accum=10.0),
                      energy=Bound(1e-5, accum=25.0), virial=Bound(1e-5, accum=25.0)),
    # mixed: float compute, double accumulation. Coordinate rounding is unchanged, so the
    # kappa terms equal fp32's; the accumulation term becomes eps64 sqrt(m), negligible, and
    # what remains in energy and virial is per-pair float rounding (measured <= 5.4e-7).
    "mixed": Tolerance(force_rms=Bound(1e-6, kappa=20.0, accum=1.0),
                       force_max=Bound(1e-5, kappa=400.0, accum=10.0),
                       energy=Bound(5e-6, accum=10.0), virial=Bound(5e-6, accum=4.0)),
    # fp64: measured up to 1,048,576 particles: force_rms <= 3.0e-14, force_max <= 5.7e-13,
    # energy <= 3.5e-14, virial <= 2.9e-14 (AutoPas compares its traversals at 1e-10 in
    # double). The floors leave >= 25x margin.
    "fp64": Tolerance(force_rms=Bound(1e-12, kappa=20.0, accum=1.0),
                      force_max=Bound(2e-11, kappa=400.0, accum=10.0),
                      energy=Bound(1e-12, accum=10.0), virial=Bound(1e-12, accum=4.0)),
}


def kappa(precision: str, lengths, r_min: float) -> float:
    """Coordinate-rounding conditioning of a problem for a precision mode."""
    if not np.isfinite(r_min) or r_min <= 0.0:
        return 0.0
    return MODES[precision].eps_compute * 0.5 * float(np.max(lengths)) / r_min


def accumulation(precision: str, partners: float) -> float:
    """Accumulation conditioning: eps of the accumulation type times sqrt(partners)."""
    return MODES[precision].eps_accumulate * math.sqrt(max(partners, 1.0))
