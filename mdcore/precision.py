"""Precision modes: one record per mode, read by every other module.

A mode fixes the compute type (coordinates, pair terms) and the accumulation type (force,
energy and virial sums), in numpy and in C++, with their machine epsilons and sizes. Nothing
else in the project spells out what "mixed" means.
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

    @property
    def cxx_compute(self) -> str:
        return _CXX[self.compute]

    @property
    def cxx_accumulate(self) -> str:
        return _CXX[self.accumulate]

    @property
    def eps_compute(self) -> float:
        return float(np.finfo(self.compute).eps)

    @property
    def eps_accumulate(self) -> float:
        return float(np.finfo(self.accumulate).eps)

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

MODES: dict[str, Precision] = {p.name: p for p in (
    Precision("fp32", np.float32, np.float32, "float compute, float accumulation"),
    Precision("mixed", np.float32, np.float64, "float compute, double accumulation"),
    Precision("fp64", np.float64, np.float64, "double compute, double accumulation"),
)}
PRECISIONS = tuple(MODES)


def get(name: str) -> Precision:
    if name not in MODES:
        raise InputError(f"unknown precision {name!r}; known: {', '.join(MODES)}")
    return MODES[name]


def check_precision(name: str) -> str:
    return get(name).name
