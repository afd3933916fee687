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
from .cuda import CudaPlan
from .graphs import conditional_status, upkeep_if

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
        cap = self.launch.get("cap", 0)  # the row capacity, where the strategy's rows have one
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InputError(f"{self.name}: launch parameter cap must be a whole number >= 0 (0: sized at the first "
                             f"build), got {cap!r}")
        prune = self.launch.get("prune", "off")  # the inner list's buffer, where the strategy keeps one
        if prune != "off":
            if isinstance(prune, bool) or not isinstance(prune, (int, float)) or not (0.0 < prune < skin):
                raise InputError(f"{self.name}: launch parameter prune (the inner list's buffer) must be 'off' or a "
                                 f"number between 0 and the skin ({skin:g}), got {prune!r}")
            self.launch["prune"] = float(prune)

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


def moved_beyond(pos: np.ndarray, ref: np.ndarray, lengths: np.ndarray, periodic, distance) -> bool:
    """Whether some particle is further than `distance` (one for all, or an array: each particle's
    own) from its reference position (minimum image on periodic axes; a non-finite position counts
    as moved)."""
    d = (pos - ref).astype(np.float64)
    per = np.asarray(periodic, dtype=bool)
    d[:, per] -= lengths[per] * np.rint(d[:, per] / lengths[per])
    limit = np.asarray(distance, dtype=np.float64)
    return bool(not np.all(np.einsum("ij,ij->i", d, d) <= limit * limit))


class DeviceListPlan(CudaPlan):
    """What the GPU list plans share: the displacement check on the device (verlet_check on ref,
    setting flag), the guarded binning and rows, the rebuild count and the free-memory probe.
    Subclasses set binning, ref, flag, rebuilds, overflow, k_check and half_skin2, and implement
    _rows(guard): the list from the binning's order (guard: the device flag, or None: always).
    Under stream capture the guarded upkeep is the body of a conditional node (strategies/graphs.py):
    a replayed step launches it only where the flag is set."""

    overflow_words = ("a row", "entries")  # what a row is and holds, in the overflow's message

    def __init__(self, strategy, problem: Problem, nparts: int):
        super().__init__(strategy, problem, nparts)
        conditional_status()  # self-tested once, here: a step may be captured later

    def _rows(self, guard) -> None:
        raise NotImplementedError

    def _free_bytes(self) -> int:
        free, _ = self.cp.cuda.runtime.memGetInfo()
        return int(free + self.cp.get_default_memory_pool().free_bytes())

    def build(self) -> None:
        """From scratch: bin and build the list whatever the displacement."""
        if not self.problem.n:
            return
        self.flag.fill(1)
        self._before_binning(None)
        self.binning.run()
        self._rows(None)

    def _check(self) -> None:
        n = self.problem.n
        self.k_check((-(-n // 256),), (256,), (self.pos, self.ref, np.int32(n), self.box, self.half_skin2, self.flag))

    def needs_rebuild(self, positions=None) -> bool:
        """The displacement check, read on the host (a synchronisation: for tests; update() leaves
        the decision on the device)."""
        if not self.problem.n or self.strategy.launch["rebuild"] == "never":
            return False
        self._check()
        return bool(int(self.flag.get()[0]))

    def _refresh(self) -> None:
        """What the force phase needs from the positions of this step when the list is kept whatever
        the displacement (rebuild=never); nothing for lists that read the positions as they are."""

    def update(self) -> None:
        if not self.problem.n:
            return
        if self.strategy.launch["rebuild"] == "never":
            self._refresh()
            return
        self._check()
        if self.binning.guardable:
            with upkeep_if(self.flag):
                self._before_binning(self.flag)
                self.binning.run(guard=self.flag)
                self._rows(self.flag)
            return
        if int(self.flag.get()[0]):  # the radix binning cannot be skipped on the device: ask the host
            self._before_binning(None)
            self.binning.run()
        self._rows(self.flag)

    def _before_binning(self, guard) -> None:
        """What a rebuild writes into the positions before the binning copies them (guard: the device
        flag, or None: always); nothing for most lists."""

    def rebuild_count(self) -> int:
        """Builds the force phase has used since prepare (the first one included)."""
        return int(self.rebuilds.get()[0])

    def poison(self) -> None:
        super().poison()
        self.overflow.fill(0)

    def output(self):
        """The result, with the rows' overflow check: a row longer than its capacity is an error
        naming the capacity needed, never a silently shorter list."""
        out = super().output()
        who, what = self.overflow_words
        out.checks = ((self.overflow, f"{self.strategy.name}: {who} has {{value}} {what} within "
                                      f"{self.rl:g} (cutoff + skin), more than the list's capacity {self.cap}; the "
                                      f"list was not complete: give the launch parameter cap (>= {{value}}) or prepare "
                                      "again"),)
        return out
