"""What every Verlet list shares: the list radius and applicability, the row capacity, the
per-particle buffers of launch parameter adapt, and the work estimate."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mdcore import InputError, Problem

from .. import schedules as S
from ..cells import max_cells
from ..lists import SKIN, ListStrategy

PHANTOM = 1e30  # the padding slot's coordinates: beyond any cutoff from any particle (|x| << 1e30)
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])


def groups_of(cap: int) -> int:
    """Groups of 4 entries a row of capacity cap is stored in (kernels/verlet_rows.cuh, row_groups):
    one more than cap needs, so that plain and image entries, each padded to whole groups, fit."""
    return -(-cap // 4) + 1


def cap_of(longest: int) -> int:
    """Row capacity from the longest row of a build: room for the rows to grow as particles move."""
    return int(math.ceil(1.2 * longest)) + 8


def parse_adapt(name: str, value) -> tuple[float, float] | None:
    """The launch parameter adapt: 'off' (None) or 'm:K' -> (m, K), m > 0 and K >= 0 finite.

    adapt gives each particle its own half-skin h_i = m + K dt |v_i| (at most skin / 2) from its
    velocity at a rebuild of the MD loop, lists a pair where r < cutoff + h_i + h_j, and triggers a
    rebuild where a particle moved beyond its own h_i: the fastest particles no longer set every
    pair's buffer. Exact either way; where no velocity is known (the first list, the with-list and
    from-scratch columns) h = skin / 2, the uniform list. docs/decisions/verlet-adaptive-skin.md."""
    if value == "off":
        return None
    m, sep, k = str(value).partition(":")
    try:
        mv, kv = float(m), float(k)
    except ValueError:
        mv = kv = math.nan
    if not sep or not (0.0 < mv < math.inf) or not (0.0 <= kv < math.inf):
        raise InputError(f"{name}: launch parameter adapt must be 'off' or m:K (a margin m > 0 and K >= 0 steps of "
                         f"each particle's speed, e.g. 0.08:6), got {value!r}")
    return mv, kv


def adapt_text(adapt) -> str:
    """parse_adapt's value as the plans' launch_info says it."""
    return "off" if adapt is None else f"{adapt[0]:g}:{adapt[1]:g}"


class VerletStrategy(ListStrategy):
    traversal: ClassVar[str] = "verlet"
    processor: ClassVar[str] = "thread"
    list_kind: ClassVar[str] = "a Verlet list"
    launch_defaults: ClassVar[dict] = {"skin": SKIN, "cap": 0, "rebuild": "auto"}

    def grid(self, problem: Problem) -> np.ndarray:
        return S.grid_dims(problem.box.array, self.rlist(problem), 1.0)

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        dims = self.grid(problem)
        if int(np.prod(dims)) > max_cells(problem.n):
            return False, f"a grid of {int(np.prod(dims)):,} cells for {problem.n:,} particles is too sparse for cells"
        return True, ""

    def work(self, problem: Problem) -> dict:
        """The build's distance checks (cells of side r_list); the force phase checks each listed
        pair: about (cutoff + skin)^3 / cutoff^3 times the interactions."""
        if not problem.n or problem.potential.cutoff is None:
            return {"distance_checks": 0 if not problem.n else None}
        dims = self.grid(problem)
        counts = cell_counts(problem, dims)
        build = S.fullshell_checks(counts, dims, problem.box.periodic)
        rl, rc = self.rlist(problem), float(problem.potential.cutoff)
        cell = float(np.prod(problem.box.array / dims))
        listed = int(build * (4.0 / 3.0 * math.pi * rl ** 3) / (27.0 * cell))  # uniform density
        return {"distance_checks": listed, "build_checks": build, "skin": self.launch["skin"], "cells": int(np.prod(dims)),
                "list_to_cutoff_volume": (rl / rc) ** 3}


def cell_counts(problem: Problem, dims) -> np.ndarray:
    """Particles per cell of a grid `dims` over the problem's box."""
    idx = np.minimum((problem.positions / (problem.box.array / dims)).astype(np.int64), dims - 1)
    return np.bincount((idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2], minlength=int(np.prod(dims)))
