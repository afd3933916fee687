"""Float64 CPU reference (numba), independent of the strategies' code: any registered
potential, from its own float64 formula (mdcore.Potential.reference_pair). Imports only mdcore."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdcore.precision import MODES

from .pairsum import cell_grid, cutoff_band, pair_sums

__all__ = ["Reference", "compute", "cell_grid", "cutoff_band", "pair_sums"]


@dataclass(frozen=True)
class Reference:
    """Float64 result plus what verification needs to judge a strategy against it.

    forces (N, 3); energy; virial (3, 3), W = sum_{i<j} r_ij f_ij^T; pairs (i<j, r < rc);
    near_cutoff: pairs within rounding of the cutoff, per precision ('fp32' also serves
    'mixed'), and near_per_particle: (N,) ambiguous partners of each particle; cutoff_jump:
    force, energy and virial change of one pair crossing the cutoff; energy_abs = sum |u_ij|
    and virial_abs = sum |r_ij . f_ij| (scales of the sums); r_min: closest interacting pair.
    """

    forces: np.ndarray
    energy: float
    virial: np.ndarray
    pairs: int
    near_cutoff: dict
    near_per_particle: dict
    cutoff_jump: dict
    energy_abs: float
    virial_abs: float
    r_min: float
    method: str

    def near(self, precision: str) -> int:
        return self.near_cutoff[MODES[precision].rounding]

    def near_each(self, precision: str) -> np.ndarray:
        return self.near_per_particle[MODES[precision].rounding]

    @property
    def interactions_per_particle(self) -> float:
        """Mean number of partners inside the cutoff: the length of a particle's force sum."""
        return 2.0 * self.pairs / len(self.forces) if len(self.forces) else 0.0


def compute(problem, method: str = "auto") -> Reference:
    """Reference for an mdcore.Problem (its precision is ignored: always float64)."""
    pot = problem.potential
    if pot.per_particle:  # typed particles and charges: their own formulas (reference.forcefield)
        from .forcefield import reference

        out = reference(problem.positions, problem.box.array, problem.box.periodic, pot.types, pot.charges,
                        pot.forcefield, method=method)
        return Reference(**out)
    out = pair_sums(problem.positions, problem.box.array, problem.box.periodic, pot.reference_pair,
                    pot.reference_constants(), pot.cutoff, method=method)
    return Reference(**out)
