"""Experimental: verlet_thread_pairrows, the Verlet list in rows of two particles of one cell (the
union of their lists: one gather for two pairs, GROMACS's i-clusters two wide). It lost to rows of
one on the H200 at every size measured: docs/decisions/verlet-rows-of-two.md.
"""
from __future__ import annotations

import numpy as np

from mdcore import MODES, Potential, Problem

from ..base import Plan
from ..binning import SCAN_TILE, Binning
from ..cuda import LAYOUTS, cbool, ctypes, kernel, layout_expressions
from ..registry import register
from . import tuning
from .common import VerletStrategy
from .padded import BATCH_CHOICES, MINB_CHOICES, VerletThreadPadded
from .plan import VerletPlan


PAIR_AUTO_MINB = {False: 8, True: 8}
PAIR_AUTO_BATCH = {False: 8, True: 8}


@register
class VerletThreadPairrows(VerletThreadPadded):
    name = "verlet_thread_pairrows"
    experimental = True
    source_file = "verlet_pairrows.cu"
    description = ("CUDA Verlet list (cutoff + skin) in rows of two particles of one cell (the union of their "
                   "neighbours: one gather for two pairs), padded rows of 16-bit near and 32-bit far entries, a thread "
                   "per row; the displacement check and rebuild decided on the device every step")
    launch_defaults = {**VerletStrategy.launch_defaults, "block": 128, "layout": "aos4"}
    launch_internal = {"minb": "auto", "batch": "auto"}
    launch_choices = {**VerletStrategy.launch_choices, "block": (64, 128, 256, 512), "layout": tuple(LAYOUTS),
                      "minb": MINB_CHOICES, "batch": BATCH_CHOICES}
    # two particles' sums per thread: 8 entries in flight under a cap of 8 blocks of 128 in both flavours

    def register_cap(self, energy: bool, acc: str = "float", md: int = 0, packed: bool | None = None,
                     tpp: int = 1) -> int:
        m = self.launch["minb"]
        if m != "auto":
            return m
        return PAIR_AUTO_MINB[energy] * tuning.MINB_BLOCK // self.launch["block"] if acc == "float" else 0

    def batch(self, energy: bool, entries: bool = False, md: int = 0, packed: bool | None = None,
              tpp: int = 1) -> int:
        return PAIR_AUTO_BATCH[energy] if self.launch["batch"] == "auto" else self.launch["batch"]

    def layout_for(self, problem: Problem) -> str:
        return self.launch["layout"]

    def kernel_layouts(self, precision: str, potential: Potential | None = None) -> tuple[str, ...]:
        if potential is not None and potential.per_particle and self.launch["layout"] in self.NO_WORDS["layout"]:
            return ()
        return (self.launch["layout"],)

    def entries(self, tpp: int) -> bool:
        return False

    def tpps(self) -> tuple[int, ...]:
        return (1,)

    def md_expressions(self, potential: Potential) -> list[str]:
        return []  # the MD loop runs its plain steps on rows of two (VerletPairPlan.md_steps)

    def force_expression(self, precision: str, potential: Potential, energy: bool, pbc: bool, tpp: int = 1,
                         md: int = 0, layout: str | None = None) -> str:
        real, acc = ctypes(precision)
        return (f"verlet_force_pairs<{real}, {acc}, {potential.functor}, {cbool(energy)}, {cbool(pbc)}, "
                f"{self.launch['block']}, {LAYOUTS[self.launch['layout']]}, {self.register_cap(energy, acc)}, "
                f"{self.batch(energy)}>")

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        """Every block, layout, minb and batch, each flavour and precision."""
        variants = [{"block": b} for b in self.launch_choices["block"]] + [{"layout": lay} for lay in LAYOUTS] + \
            [{"minb": m} for m in MINB_CHOICES] + [{"batch": b} for b in BATCH_CHOICES]
        out: list[str] = []
        for v in variants:
            out += [e for e in VerletThreadPairrows(**v).default_expressions(potential) if e not in out]
        return out

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        reals = sorted({m.cxx_compute for m in MODES.values()})
        return {"verlet_build.cu": [f"verlet_refresh<{r}>" for r in reals],
                "verlet_pairrows.cu": [f"verlet_build_pairs<{r}, {m}>" for r in reals for m in ("false", "true")] +
                                      ["pair_rows_count", "pair_rows_place"],
                "binning.cu": sorted({e for r in reals for e in Binning.expressions(r)}),
                "layout.cu": layout_expressions()}

    def _prepare(self, problem: Problem) -> Plan:
        return VerletPairPlan(self, problem)


class VerletPairPlan(VerletPlan):
    """Rows of two (kernels/verlet_pairrows.cu, verlet_build_pairs and verlet_force_pairs): the cells' rows
    numbered at each build on the device (pair_rows_count, the binning's scan, pair_rows_place)."""

    def __init__(self, strategy: VerletThreadPairrows, problem: Problem):
        super().__init__(strategy, problem)
        self.launch_info["rows"] = self.rows
        self.launch_info["list_bytes"] += int(self.row_slot.nbytes + self.row_of.nbytes)

    def md_steps(self, integ, forces, always: bool = False):
        return None, "rows of two have no fused step"

    @staticmethod
    def row_count(strategy, problem: Problem) -> int:
        """The most rows a build can make: (count + 1) / 2 per cell."""
        return (problem.n + int(np.prod(strategy.grid(problem)))) // 2 if problem.n else 0

    def _build_kernel(self, fullest: int, minimage: bool) -> None:
        """The rows of two's own build and the kernels that number the rows, with their tables."""
        cp, n = self.cp, self.problem.n
        self.ncells = int(np.prod(self.dims))
        self.pcounts = cp.zeros(self.ncells, np.int32)
        self.rfirst = cp.zeros(self.ncells + 1, np.int32)
        self.ntiles = -(-self.ncells // SCAN_TILE)
        self.tiles = cp.zeros(self.ntiles, np.uint64)
        self.tickets = cp.zeros(2, np.uint32)
        self.row_slot = cp.zeros(max(self.rows, 1), np.int32)
        self.row_of = cp.zeros(max(n, 1), np.int32)
        self.build_kind = "pairs"
        self.k_build = kernel("verlet_pairrows.cu", f"verlet_build_pairs<{self.real_t}, {cbool(minimage)}>")
        self.k_count = kernel("verlet_pairrows.cu", "pair_rows_count")
        self.k_scan = kernel("binning.cu", "scan_counts")
        self.k_place = kernel("verlet_pairrows.cu", "pair_rows_place")

    def _tables(self) -> list:
        return [self.pcounts, self.rfirst, self.tiles, self.tickets, self.row_slot, self.row_of]

    @property
    def device_bytes(self) -> int:
        return VerletPlan.device_bytes.fget(self) + int(sum(a.nbytes for a in self._tables()))

    def _build_rows(self, cap: int, guard=None) -> None:
        n = self.problem.n
        g = guard if guard is not None else np.uint64(0)
        b = self.binning
        self.k_count((-(-self.ncells // 256),), (256,), (b.start, np.int32(self.ncells), self.pcounts, g))
        self.k_scan((self.ntiles,), (256,), (self.pcounts, np.int32(self.ncells), self.rfirst, self.tiles, self.tickets,
                                             np.int32(self.ntiles), g))
        self.k_place((-(-n // 256),), (256,), (b.cell_sorted, b.start, self.rfirst, np.int32(n), self.row_slot,
                                               self.row_of, g))
        self.k_build((-(-self.rows // 128),), (128,), (b.sorted, b.cell_sorted, b.start, self.rfirst, self.row_slot,
                                                       self.row_of, np.int32(n), np.int32(self.rows), self.grid_struct,
                                                       self.box, self.rlist2, self.margin, np.int32(cap), self.nbr,
                                                       self.len, self.ref, self.cur, self.overflow, g))

    def listed_pairs(self) -> int:
        """Distance checks of the force phase: each entry against the row's one or two particles,
        and a row's own pair once."""
        if not self.problem.n:
            return 0
        rows = int(self.rfirst[self.ncells].get())
        two = (self.row_slot[:rows] & 1).astype(np.int64)
        entries = self.len[:rows].sum(axis=1, dtype=np.int64)
        return int((entries * (1 + two) + two).sum())

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        fn = self._force_kernel()
        self.layout.fill(self.cur, n + 1)
        fn((self.blocks,), (self.block,), (*self.layout.args(self.cur), self.binning.order, self.row_slot,
                                           self.rfirst[self.ncells:], self.nbr, self.len, np.int32(n),
                                           np.int32(self.rows), np.int32(self.cap), self.box, self.fparams, self.forces,
                                           self.partial, self.pcount, self.flag, self.rebuilds))
