"""Verification tolerances: one table per precision mode.

Error model. A float kernel rounds each coordinate to a relative eps of |x| <= L/2 (positions
are centred on the box), so a pair distance r carries an absolute error of about eps L / 2,
and LJ's steepness turns that into a relative force error of order 13 eps (L/2) / r at the
closest pair. The conditioning number of a problem is therefore

    kappa = eps(precision) * (L_max / 2) / r_min

(r_min: the closest interacting pair, from the reference). Each tolerance is
max(floor, coeff * kappa): the floor covers accumulation and functor rounding, the coefficient
the coordinate rounding. Both were chosen from measurement (see the comments) with margin,
and the verify report prints kappa beside every row.

Metrics (harness.verify.compare):
  force_rms  ||F - F_ref|| / ||F_ref|| over all particles
  force_max  max_i |F_i - F_ref,i| / RMS(|F_ref|)
  energy     |E - E_ref| / sum_pairs |u_ij|           (the scale of the sum; equals the plain
  virial     ||W - W_ref||_F / sum_pairs |r_ij . f_ij|  relative error when terms don't cancel)
  pairs      |pairs - pairs_ref| <= pairs within rounding of the cutoff (counted by the reference)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

EPS = {"fp32": float(np.finfo(np.float32).eps), "mixed": float(np.finfo(np.float32).eps),
       "fp64": float(np.finfo(np.float64).eps)}


@dataclass(frozen=True)
class Bound:
    floor: float
    coeff: float

    def at(self, kappa: float) -> float:
        return max(self.floor, self.coeff * kappa)


@dataclass(frozen=True)
class Tolerance:
    force_rms: Bound
    force_max: Bound
    energy: Bound
    virial: Bound

    def values(self, kappa: float) -> dict:
        return {k: getattr(self, k).at(kappa) for k in ("force_rms", "force_max", "energy", "virial")}

    def as_dict(self) -> dict:
        return asdict(self)


TOLERANCES: dict[str, Tolerance] = {
    # fp32 (float compute, float accumulation).
    # Measured (allpairs_cpu, small sizes of every scenario, 2026-11-22): force_rms / kappa
    # between 0.65 and 3.7; energy <= 9.2e-7, virial <= 3.6e-7 (float sums of ~1e2..1e3 terms
    # per particle). Coefficients leave ~5x margin over the largest ratio seen.
    "fp32": Tolerance(force_rms=Bound(1e-6, 20.0), force_max=Bound(1e-5, 400.0),
                      energy=Bound(1e-5, 0.0), virial=Bound(1e-5, 0.0)),
    # mixed (float compute, double accumulation): the coordinate rounding is unchanged, so the
    # force bounds equal fp32's; the double sums shrink the accumulation part of energy and
    # virial (measured <= 3.2e-7, still dominated by per-pair float rounding).
    "mixed": Tolerance(force_rms=Bound(1e-6, 20.0), force_max=Bound(1e-5, 400.0),
                       energy=Bound(5e-6, 0.0), virial=Bound(5e-6, 0.0)),
    # fp64: measured force_rms <= 4.5e-15, energy and virial <= 5e-16 at small sizes;
    # AutoPas compares its traversals at 1e-10 in double. The floors leave ~1000x margin for
    # sums over 1e6 particles and 1e5-term all-pairs rows.
    "fp64": Tolerance(force_rms=Bound(1e-12, 20.0), force_max=Bound(1e-11, 400.0),
                      energy=Bound(1e-12, 0.0), virial=Bound(1e-12, 0.0)),
}


def kappa(precision: str, lengths, r_min: float) -> float:
    """Conditioning of a problem for a precision mode (see module docstring)."""
    if not np.isfinite(r_min) or r_min <= 0.0:
        return 0.0
    return EPS[precision] * 0.5 * float(np.max(lengths)) / r_min
