"""What the list strategies (Verlet lists, cluster pairs) share: the skin and the list radius,
the trigger (rebuild when a particle has moved more than skin / 2 since the build), and
applicability (a cutoff, and periodic lengths of at least twice the list radius).
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mdcore import InputError, Problem

from .base import Strategy

SKIN = 0.3  # sigma: LAMMPS's bench/in.lj


class ListStrategy(Strategy):
    """Base of the list strategies. list_kind names the list in the n/a reasons."""

    list_reuse: ClassVar[bool] = True
    list_kind: ClassVar[str] = "a list"
    launch_defaults: ClassVar[dict] = {"skin": SKIN, "rebuild": "auto"}
    launch_choices: ClassVar[dict] = {"rebuild": ("auto", "never")}

    def __init__(self, **launch):
        super().__init__(**launch)
        skin = self.launch["skin"]
        if isinstance(skin, bool) or not isinstance(skin, (int, float)) or not (0.0 <= skin < math.inf):
            raise InputError(f"{self.name}: launch parameter skin must be a finite number >= 0, got {skin!r}")
        self.launch["skin"] = float(skin)

    def rlist(self, problem: Problem) -> float:
        return float(problem.potential.cutoff) + self.launch["skin"]

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        if problem.potential.cutoff is None:
            return False, f"{self.list_kind} needs a cutoff (this problem has none)"
        rl = self.rlist(problem)
        for a, (L, per) in enumerate(zip(problem.box.lengths, problem.box.periodic)):
            if per and L < 2.0 * rl:
                return False, (f"periodic length along {'xyz'[a]} ({L:g}) is shorter than twice the list radius "
                               f"(2 x (cutoff + skin) = {2 * rl:g}); take a smaller skin")
        return True, ""


def moved_beyond(pos: np.ndarray, ref: np.ndarray, lengths: np.ndarray, periodic, distance: float) -> bool:
    """Whether some particle is further than `distance` from its reference position (minimum
    image on periodic axes; a non-finite position counts as moved)."""
    d = (pos - ref).astype(np.float64)
    per = np.asarray(periodic, dtype=bool)
    d[:, per] -= lengths[per] * np.rint(d[:, per] / lengths[per])
    return bool(not np.all(np.einsum("ij,ij->i", d, d) <= distance * distance))
