"""Linked cells (thesis chapters 2.3, 7, 8; MarDyn's flattened cell storage): what the GPU
(cells_cuda.py) and CPU (cells_cpu.py) cell strategies and the parity traverser (parity.py)
share: the grid, the cell-size factor, applicability and the work counts.

Cells have side >= cutoff * cell_factor along every axis (strategies/schedules.py).
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mdcore import InputError, Problem

from . import schedules as S
from .base import Strategy


def pmask(problem: Problem) -> int:
    """Bit a set where axis a is periodic."""
    return sum(1 << a for a in range(3) if problem.box.periodic[a])


def grid_of(problem: Problem, factor: float) -> np.ndarray:
    return S.grid_dims(problem.box.array, problem.potential.cutoff, factor)


_COUNTS: dict = {}  # (id of positions, box, cutoff, factor) -> (positions, counts): a small cache


def host_counts(problem: Problem, factor: float) -> np.ndarray:
    """Particles per cell binned on the host in float64 (estimates: work, memory). Cached on
    the positions array, which every precision's Problem of one configuration shares; the
    cache holds the array, so its id cannot be reused while the entry lives."""
    key = (id(problem.positions), problem.box, problem.potential.cutoff, factor)
    hit = _COUNTS.get(key)
    if hit is None:
        n = grid_of(problem, factor)
        idx = np.minimum((problem.positions / (problem.box.array / n)).astype(np.int64), n - 1)
        counts = np.bincount((idx[:, 0] * n[1] + idx[:, 1]) * n[2] + idx[:, 2], minlength=int(np.prod(n)))
        while len(_COUNTS) >= 4:
            _COUNTS.pop(next(iter(_COUNTS)))
        hit = _COUNTS[key] = (problem.positions, counts)
    return hit[1]


def max_cells(n: int) -> int:
    """The largest grid a cell strategy takes for n particles: 1024 cells per particle (at least
    2^24), at most 2^28 (int32 indices and per-cell arrays of gigabytes beyond)."""
    return min(1 << 28, max(1 << 24, 1024 * n))


class CellStrategy(Strategy):
    """What every cell strategy shares: a cutoff required, the grid, c08 applicability for the
    Newton3 traversals, the cell-size factor, work counts."""

    launch_defaults: ClassVar[dict] = {"cell_factor": 1.0}
    launch_choices: ClassVar[dict] = {}
    min_cell_factor: ClassVar[float] = 1.0  # cells smaller than the cutoff: only where the traversal reaches past 1

    def __init__(self, **launch):
        super().__init__(**launch)
        f = self.launch["cell_factor"]
        lo = self.min_cell_factor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or not f >= lo:
            raise InputError(f"{self.name}: launch parameter cell_factor must be a number >= {lo:g}, got {f!r}")
        self.launch["cell_factor"] = float(f)

    def grid(self, problem: Problem) -> np.ndarray:
        return grid_of(problem, self.launch["cell_factor"])

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        if problem.potential.cutoff is None:
            return False, "linked cells need a cutoff (this problem has none)"
        dims = self.grid(problem)
        ncell, limit = int(np.prod(dims)), max_cells(problem.n)
        if ncell > limit:
            return False, (f"a grid of {ncell:,} cells ({'x'.join(map(str, dims))}) for {problem.n:,} particles is "
                           f"beyond {limit:,} cells: in so sparse a box memory and time go with the empty cells "
                           f"(all-pairs, or a larger cell_factor, suits it)")
        ok, why = self.grid_applicable(dims, problem.box.periodic)
        if not ok:  # the rounding rule, with this box's numbers
            w = problem.potential.cutoff * self.launch.get("cell_factor", 1.0)
            a = int(np.argmin(dims))
            why += (f" (cells of side at least the cutoff x cell_factor = {w:g}: {'xyz'[a]} holds "
                    f"floor({problem.box.array[a]:g} / {w:g}) = {int(dims[a])})")
        return ok, why

    def grid_applicable(self, dims, periodic) -> tuple[bool, str]:
        if self.newton3:
            return S.c08_applicable(dims, periodic)
        return True, ""

    def work(self, problem: Problem) -> dict:
        if problem.potential.cutoff is None or not problem.n:
            return {"distance_checks": 0 if problem.n == 0 else None}
        n = self.grid(problem)
        counts = host_counts(problem, self.launch["cell_factor"])
        count = S.c08_checks if self.newton3 else S.fullshell_checks
        return {"distance_checks": count(counts, n, problem.box.periodic), "cells": int(np.prod(n)),
                "max_per_cell": int(counts.max())}
