"""Precision modes: one record per mode, read by every other module.

A mode fixes the compute type (coordinates, pair terms) and the accumulation type (force,
energy and virial sums), in numpy and in C++, with their machine epsilons and sizes. Nothing
else in the project spells out what "mixed" means.

`fixed` (OpenMM's approach, the GROMOS GPU notes' "quantization"): float compute, sums as 64-bit integers
in units of 2^-32 (FIXED_SCALE), converted to float64 once at the end. Integer addition is
associative, so the sums do not depend on their order: every strategy gives the same bits for
the same input, whatever its traversal, colouring or atomics. For that the pair terms must be
the same bits in every traversal too: the positions and box are snapped to a grid on which
every displacement a kernel forms is exact in float (mdcore.fixed), and the kernels are
compiled without fused multiply-adds. The range: a particle's force, the energy and each virial
component must stay below 2^30 in magnitude (Problem.make refuses inputs that could leave it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class Precision:
    name: str
    compute: type          # numpy scalar type of coordinates and pair terms
    accumulate: type       # numpy scalar type of the sums
    help: str
    fixed_scale: float = 0.0  # sums are integers in units of 1 / fixed_scale (0: float sums)

    @property
    def fixed(self) -> bool:
        return self.fixed_scale > 0.0

    @property
    def cxx_compute(self) -> str:
        return _CXX[self.compute]

    @property
    def cxx_accumulate(self) -> str:
        return "Fixed" if self.fixed else _CXX[self.accumulate]

    @property
    def eps_compute(self) -> float:
        """Relative coordinate resolution. fixed: 8 float epsilons, since snapping to the grid
        moves a position by up to 2^-23 L and the box length by up to 2^-22 L (mdcore.fixed)."""
        eps = float(np.finfo(self.compute).eps)
        return 8.0 * eps if self.fixed else eps

    @property
    def eps_accumulate(self) -> float:
        """Relative resolution of a sum. fixed: one unit, 1 / scale, an absolute resolution that
        is this relative to terms of order 1 (forces and energies of order 1 and above)."""
        return 1.0 / self.fixed_scale if self.fixed else float(np.finfo(self.accumulate).eps)

    @property
    def bytes_compute(self) -> int:
        return np.dtype(self.compute).itemsize

    @property
    def bytes_accumulate(self) -> int:
        return np.dtype(self.accumulate).itemsize

    @property
    def rounding(self) -> str:
        """The compute type's name for per-precision tables that only depend on it ('fp32'
        for fp32 and mixed, 'fp64' for fp64): e.g. pairs within rounding of the cutoff."""
        return "fp64" if self.compute is np.float64 else "fp32"


_CXX = {np.float32: "float", np.float64: "double"}

FIXED_SCALE = 2.0 ** 32  # OpenMM's scale: 32 fractional bits, |sum| < 2^31 in an int64
FIXED_LIMIT = 2.0 ** 30  # what Problem.make lets a fixed-point sum reach: half the range

MODES: dict[str, Precision] = {p.name: p for p in (
    Precision("fp32", np.float32, np.float32, "float compute, float accumulation"),
    Precision("mixed", np.float32, np.float64, "float compute, double accumulation"),
    Precision("fp64", np.float64, np.float64, "double compute, double accumulation"),
    Precision("fixed", np.float32, np.int64, "float compute, 64-bit fixed-point accumulation (2^-32 units): the "
              "same bits in every strategy", FIXED_SCALE),
)}
PRECISIONS = tuple(MODES)
# The modes with float sums: the MD loop integrates in them (fixed is for force evaluations).
FLOAT_PRECISIONS = tuple(p for p, m in MODES.items() if not m.fixed)


def get(name: str) -> Precision:
    if name not in MODES:
        raise InputError(f"unknown precision {name!r}; known: {', '.join(MODES)}")
    return MODES[name]


def check_precision(name: str) -> str:
    return get(name).name


def poison_value(dtype) -> float | int:
    """What an unwritten output holds: NaN in a float array, the most negative integer in a
    fixed-point one (-2^31 after conversion: no correct result is near it)."""
    dt = np.dtype(dtype)
    return np.nan if dt.kind == "f" else int(np.iinfo(dt).min)
