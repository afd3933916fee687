"""Linked-cell strategies on the GPU: the full shell and c08 (one thread or one warp per base
step), each on three cell storages:

  csr     one array sorted by cell plus cell start offsets (MarDyn's cellStartIndices)
  2d      (cells, capacity) arrays, capacity = the fullest cell (thesis 7.2, "2D views")
  nested  one allocation per cell and a device table of pointers to them (thesis 7.1)

  fullshell_thread_csr        one thread (or tpp threads) per particle over its neighbour cells as
                              contiguous z-strips of the CSR storage, one image shift per strip,
                              forces written in input order, energy and virial folded in the
                              kernel's last block; cell_factor below 1 (side rc/2: 125 cells)
  fullshell_thread_{2d,nested}  one thread per particle over its 27 neighbour cells
  c08_thread_<storage>        one thread per c08 base step, 8+ colours, Newton3 (thesis algorithm 2)
  c08_warp_<storage>          one warp per base step

No Newton3 in the full shell. Phases: build (the shared device binning, strategies/binning.py,
then for 2d and nested the copy into the storage), force (the traversal; forces back to input
order), reduce. The 2D and nested capacities are sized at prepare() from the device's own
binning; a cell that outgrows them later raises StrategyError when the result is read, never a
silent overrun.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mdcore import MODES, PRECISIONS, Forces, InputError, Potential, Problem, StrategyError, poison_value

from . import schedules as S
from .base import Plan
from .binning import Binning
from .cells import CellStrategy, grid_of, host_counts, pmask
from .cuda import LAYOUTS, CudaPlan, CudaStrategy, Layout, auto_tpp, cbool, ctypes, kernel, layout_expressions, sm_count
from .registry import register

STORAGES = {"csr": 0, "2d": 1, "nested": 2}
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])
CELLS_DTYPE = np.dtype([("pos", np.uint64), ("force", np.uint64), ("start", np.uint64), ("cap", np.int64)])
POOL_GRANULE = 512  # CuPy's memory pool rounds every allocation up to this


def fold_groups(blocks: int, block: int) -> int:
    """Groups of `block` blocks whose sums a kernel folding the final reduction adds first
    (kernels/common.cuh, fold_in_last_block): its partial sums and tickets hold that many more."""
    return -(-blocks // block)


def needs_minimage(dims, periodic, reach: int = 1) -> bool:
    """Whether a periodic axis has too few cells for one image shift per neighbour cell."""
    return any(p and int(n) < 2 * reach + 1 for n, p in zip(dims, periodic))


class CellsCuda(CellStrategy, CudaStrategy):
    """Base of the GPU cell strategies: the shared binning, the storage, and the traversal
    kernel(s) of traversal_specs()."""

    storage: ClassVar[str] = "csr"
    source_file = "cells.cu"
    launch_defaults = {"block": 128, "cell_factor": 1.0}
    launch_choices = {"block": (32, 64, 128, 256, 512)}

    def __init__(self, **launch):
        super().__init__(**launch)
        h = self.launch.get("headroom", 0.0)
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not (0.0 <= h <= 100.0):
            raise InputError(f"{self.name}: launch parameter headroom must be a number in [0, 100], got {h!r}")

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok or self.storage != "2d" or not check_device:
            return ok, why
        need = self.padded_bytes(problem)
        free = self._free_bytes()
        if need > free:
            n = self.grid(problem)
            cap = int(host_counts(problem, self.launch["cell_factor"]).max())
            return False, (f"2D views need {need / 2**30:.1f} GiB ({int(np.prod(n))} cells x capacity {cap}, the fullest "
                           f"cell) but the GPU has {free / 2**30:.1f} GiB free; use the csr or nested storage")
        return True, ""

    @staticmethod
    def _free_bytes() -> int:
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free + cupy.get_default_memory_pool().free_bytes())

    def padded_bytes(self, problem: Problem) -> int:
        m = MODES[problem.precision]
        per_slot = 4 * m.bytes_compute + 3 * m.bytes_accumulate
        counts = host_counts(problem, self.launch["cell_factor"])
        cap = max(1, int(counts.max()) + 1)
        h = float(self.launch.get("headroom", 0.0))
        if h > 0.0:
            cap = int(math.ceil((1.0 + h) * cap)) + 4
        return int(len(counts) * cap * per_slot)

    @property
    def accumulates(self) -> bool:
        """Whether the traversal adds into forces (which are zeroed first) instead of writing them."""
        return self.newton3

    # -- kernels --------------------------------------------------------------------------
    def data_specs(self, precision: str) -> dict[str, tuple[str, str]]:
        """Storage kernels: kind -> (file, expression). The binning's own are Binning's."""
        real, acc = ctypes(precision)
        lay = STORAGES[self.storage]
        out = {"gather": ("binning.cu", f"gather_forces<{real}, {acc}, {lay}>")}
        if self.storage != "csr":
            out["scatter"] = ("binning.cu", f"scatter_cells<{real}, {acc}, {lay}>")
        else:  # the binning writes the CSR positions itself
            out["scatter"] = None
        if self.accumulates:
            out["zero"] = ("binning.cu", f"zero_forces<{real}, {acc}, {lay}>")
        return {k: v for k, v in out.items() if v is not None}

    def traversal_specs(self, precision: str, potential: Potential, energy: bool,
                        minimage: bool = False) -> dict[str, tuple[str, str]]:
        """The traversal's kernels (templates on the pair functor): kind -> (file, expression)."""
        real, acc = ctypes(precision)
        head = f"{real}, {acc}, {potential.functor}, {STORAGES[self.storage]}, {self.launch['block']}"
        if self.traversal == "fullshell":
            return {"force": ("cells.cu", f"fullshell_thread<{head}, {cbool(minimage)}, {cbool(energy)}>")}
        return {"force": ("cells.cu", f"c08_{self.processor}<{head}, {cbool(energy)}>")}

    def minimage_choices(self) -> tuple[bool, ...]:
        """The MINIMAGE flags this strategy's kernels come in (only the full shell falls back to
        the per-pair minimum image, on periodic axes of fewer than 3 cells)."""
        return (False, True) if self.traversal == "fullshell" else (False,)

    def kernels(self, problem: Problem, energy: bool, minimage: bool) -> dict:
        """Every kernel of a plan for `problem`, compiled: kind -> function."""
        out = {k: kernel(f, e) for k, (f, e) in self.data_specs(problem.precision).items()}
        out.update({k: kernel(f, e, problem.potential)
                    for k, (f, e) in self.traversal_specs(problem.precision, problem.potential, energy,
                                                          minimage).items()})
        return out

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        return sorted({e for p in PRECISIONS for en in (True, False) for mi in self.minimage_choices()
                       for _, e in self.traversal_specs(p, potential, en, mi).values()})

    def default_expressions(self, potential: Potential) -> list[str]:
        return self.expressions(potential)

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        out: dict[str, set] = {"binning.cu": set()}
        for p in PRECISIONS:
            out["binning.cu"] |= set(Binning.expressions(ctypes(p)[0]))
            for f, e in self.data_specs(p).values():
                out.setdefault(f, set()).add(e)
        return {f: sorted(v) for f, v in out.items()}

    def _prepare(self, problem: Problem) -> Plan:
        return CellsPlan(self, problem)


class CellsPlan(CudaPlan):
    """Binning (shared), storage, and the traversal of a CellsCuda strategy."""

    def __init__(self, strategy: CellsCuda, problem: Problem):
        self.n3 = strategy.newton3
        self.visits_per_pair = 1 if self.n3 else 2
        n = problem.n
        self.dims = grid_of(problem, strategy.launch["cell_factor"])
        self.ncells = int(np.prod(self.dims))
        self.grid_struct = np.array([(*self.dims, pmask(problem))], dtype=GRID_DTYPE)
        self.minimage = needs_minimage(self.dims, problem.box.periodic, self.reach(strategy, problem))
        nparts = self._schedule(strategy, problem)
        super().__init__(strategy, problem, nparts=nparts)
        if n == 0:
            self.nparts = 0  # no kernel writes a slot; the reduction must read none
        cp = self.cp
        self.inv_side = [self.real(self.dims[a] / problem.box.array[a]) for a in range(3)]
        self._kernels: dict[str, dict] = {}
        self.storage = strategy.storage
        self.binning = Binning(cp, self.real_t, n, self.dims, self.pos, self.box, self.grid_struct, self.inv_side,
                               write_pos=self.storage == "csr")
        self.overflow = cp.zeros(1, np.int32)
        self.schedule_arrays: list = self._upload_schedule()
        counts = self._device_counts()
        self.max_count = int(counts.max()) if n else 0
        self._allocate_storage(counts)
        self.launch_info = {"cells": self.dims.tolist(), "storage": self.storage, "max_per_cell": self.max_count,
                            "block": self.block, "build": self.binning.method, **self.schedule_info}

    def reach(self, strategy: CellsCuda, problem: Problem) -> int:
        return 1

    @property
    def k(self) -> dict:
        """The kernels of the current outputs flavour (compiled on first use)."""
        if self.outputs not in self._kernels:
            self._kernels[self.outputs] = self.strategy.kernels(self.problem, self.energy, self.minimage)
        return self._kernels[self.outputs]

    @property
    def order(self):
        return self.binning.order

    @property
    def cell_sorted(self):
        return self.binning.cell_sorted

    @property
    def start(self):
        return self.binning.start

    # -- schedule (the traversal's own set-up) ---------------------------------------------
    def _schedule(self, strategy: CellsCuda, problem: Problem) -> int:
        """Host side of the traversal; returns the number of partial-sum slots."""
        self.block = strategy.launch["block"]
        self.schedule_info: dict = {}
        if not self.n3:
            return max(1, -(-problem.n // self.block))
        self.colours = S.c08_colours(self.dims, problem.box.periodic)
        per_block = self.block // 32 if strategy.processor == "warp" else self.block
        self.colour_grid = [max(1, -(-len(c) // per_block)) for c in self.colours]
        self.schedule_info = {"colours": len(self.colours)}
        return sum(self.colour_grid)

    def _upload_schedule(self) -> list:
        """Device side of the traversal; returns its arrays (for device_bytes)."""
        if not self.n3:
            return []
        cp = self.cp
        self.bases = [cp.asarray(np.concatenate([c, np.zeros((len(c), 1), np.int32)], 1)) for c in self.colours]
        self.pairs = cp.asarray(S.C08_PAIRS.reshape(-1))
        return [*self.bases, self.pairs]

    # -- set-up -------------------------------------------------------------------------
    def _device_counts(self) -> np.ndarray:
        """Bin once on the device (the binning the traversals will see): the capacities, and the
        binning's method for the builds to come."""
        if self.problem.n:
            self.upload()
        return self.binning.choose()

    @property
    def headroom(self) -> float:
        return float(self.strategy.launch.get("headroom", 0.0))

    def _capacity(self, count: int) -> int:
        """Slots of a padded cell: the count at prepare, or with headroom h > 0 (the MD loop's)
        ceil((1 + h) count) + 4, room for the particles that move in before the next prepare."""
        if self.headroom <= 0.0:
            return max(1, count)
        return int(math.ceil((1.0 + self.headroom) * count)) + 4

    def _allocate_storage(self, counts: np.ndarray) -> None:
        cp, n = self.cp, self.problem.n
        self.capacity = None
        self.cell_buffers: list = []
        if self.storage == "csr":
            self.lpos = self.binning.sorted
            self.lforce = cp.empty((max(n, 1), 3), self.acc)
            ptrs, cap = (self.lpos.data.ptr, self.lforce.data.ptr), 0
        elif self.storage == "2d":
            cap = self._capacity(self.max_count)
            try:
                self.lpos = cp.empty((self.ncells, cap, 4), self.real)
                self.lforce = cp.empty((self.ncells, cap, 3), self.acc)
            except cp.cuda.memory.OutOfMemoryError:
                need = self.ncells * cap * (16 * np.dtype(self.real).itemsize // 4 + 3 * np.dtype(self.acc).itemsize)
                raise StrategyError(f"{self.strategy.name}: 2D views need {need / 2**30:.1f} GiB ({self.ncells} cells x "
                                    f"capacity {cap}); use the csr or nested storage") from None
            ptrs = (self.lpos.data.ptr, self.lforce.data.ptr)
        else:  # nested: every cell its own allocations, then tables of their addresses
            pos_ptr = np.zeros(self.ncells, np.uint64)
            force_ptr = np.zeros(self.ncells, np.uint64)
            psize, fsize = 4 * np.dtype(self.real).itemsize, 3 * np.dtype(self.acc).itemsize
            if self.headroom > 0.0:  # every cell room for the fullest one's count, and more
                counts = np.full_like(counts, self._capacity(self.max_count))
            # one pool chunk for every cell, reserved and freed: the pool splits it into the cells'
            # allocations (each cell still its own, in the same 512-byte granules) where it would make a
            # cudaMalloc per cell, 148,000 at 1M particles; Nsight Compute took about 500 s to profile
            # c08 on them, against 18 s on csr storage
            live = counts[counts > 0].astype(np.int64)
            total = int(np.sum(-(-live * psize // POOL_GRANULE) + -(-live * fsize // POOL_GRANULE))) * POOL_GRANULE
            if total:
                reserve = cp.cuda.alloc(total)
                del reserve
            for c in np.nonzero(counts)[0]:
                p = cp.cuda.alloc(int(counts[c]) * psize)
                f = cp.cuda.alloc(int(counts[c]) * fsize)
                self.cell_buffers += [p, f]
                pos_ptr[c], force_ptr[c] = p.ptr, f.ptr
            self.pos_table = cp.asarray(pos_ptr)
            self.force_table = cp.asarray(force_ptr)
            self.capacity = cp.asarray(counts.astype(np.int32))
            ptrs, cap = (self.pos_table.data.ptr, self.force_table.data.ptr), 0
        self.cells_struct = np.array([(ptrs[0], ptrs[1], self.start.data.ptr, cap)], dtype=CELLS_DTYPE)
        self.cap = cap

    @property
    def device_bytes(self) -> int:
        own = [self.overflow]
        if self.storage == "csr":
            own += [self.lforce]  # lpos is the binning's
        elif self.storage == "2d":
            own += [self.lpos, self.lforce]
        else:
            own += [self.pos_table, self.force_table, self.capacity]
        own += self.schedule_arrays
        nested = sum(-(-b.mem.size // POOL_GRANULE) * POOL_GRANULE for b in self.cell_buffers)
        return super().device_bytes + self.binning.device_bytes + int(sum(a.nbytes for a in own)) + int(nested)

    # -- phases -------------------------------------------------------------------------
    def _blocks(self, work: int) -> int:
        return max(1, min(-(-work // 256), 8 * sm_count()))

    def build(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        self.binning.run()
        if self.storage != "csr":
            self.k["scatter"]((self._blocks(n),), (256,), (self.pos, self.order, self.cell_sorted, np.int32(n),
                                                            self.cells_struct, self.capacity if self.capacity is not None
                                                            else self.start, self.overflow))

    def force(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        args_tail = (self.box, self.fparams, self.partial, self.pcount)
        if not self.n3:
            self.k["force"]((self.nparts,), (self.block,), (self.cells_struct, self.cell_sorted, np.int32(n),
                                                             self.grid_struct, *args_tail))
        else:
            self.k["zero"]((self._blocks(n),), (256,), (self.cells_struct, self.cell_sorted, np.int32(n)))
            slot = 0
            fn = self.k["force"]
            for bases, grid in zip(self.bases, self.colour_grid):
                fn((grid,), (self.block,), (self.cells_struct, bases, np.int32(len(bases)), self.pairs,
                                            self.grid_struct, *args_tail, np.int32(slot)))
                slot += grid
        self.k["gather"]((self._blocks(n),), (256,), (self.cells_struct, self.order, self.cell_sorted, np.int32(n),
                                                       self.forces))

    def output(self) -> Forces:
        out = super().output()
        if self.storage != "csr":
            out.checks = ((self.overflow, f"{self.strategy.name}: a cell holds {{value}} particles, more than the "
                                          f"{self.storage} storage's capacity sized at prepare(); prepare again, or give the "
                                          "launch parameter headroom (room per cell, a fraction of the fullest)"),)
        return out

    def poison(self) -> None:
        super().poison()
        self.overflow.fill(0)
        if self.storage != "nested":
            self.lforce.fill(poison_value(self.acc))
        byte = 0x80 if MODES[self.problem.precision].fixed else 0xFF  # 0x8080...: -2^31 in fixed point
        for buf in self.cell_buffers[1::2]:
            buf.memset(byte, buf.mem.size)  # all-ones bits: NaN in float and double


# --- the full shell on the CSR storage --------------------------------------------------------

REG_CHOICES = (0, 32, 40, 48, 56, 64, 72, 80, 96, 128)
# regs=0: per precision and outputs flavour, the fewest registers that compile without spills at
# block 128 (ptxas -v, CUDA 13.0, sm_90; more resident warps), except fp32 forces only, where 56
# measured 5% faster than 40 on the H200 (LJ 1M: 0.404 against 0.423 ms, same run)
AUTO_REGS = {("fp32", False): 56, ("fp32", True): 64, ("mixed", False): 56, ("mixed", True): 72,
             ("fp64", False): 80, ("fp64", True): 96, ("fixed", False): 56, ("fixed", True): 72}
TPP_CHOICES = (0, 1, 2, 4, 8, 16, 32)

MAX_REACH = 4


def reach_of(problem: Problem, dims) -> int:
    """Cells along each axis that the cutoff can span: 1 for side >= cutoff, 2 for side >=
    cutoff / 2 (cell_factor 0.5: the 125-cell stencil), ..."""
    side = problem.box.array / np.asarray(dims, dtype=np.float64)
    return int(max(1, max(math.ceil(problem.potential.cutoff / s * (1 - 1e-12)) for s in side)))


@register
class FullshellThreadCsr(CellsCuda):
    name = "fullshell_thread_csr"
    traversal = "fullshell"
    processor = "thread"
    storage = "csr"
    description = ("CUDA, one thread (tpp threads) per particle over its neighbour cells as contiguous z-strips of the "
                   "CSR storage, one image shift per strip, no Newton3; forces written in input order, energy and "
                   "virial folded in the kernel's last block; cell_factor < 1 for smaller cells (0.5: 125 cells); "
                   "layout aos4 (default), aos3 or soa for the sorted positions")
    # layout: how the sorted positions lie (aos4: the binning's Vec4 array; aos3, soa: a copy made
    # after the binning; kernels/layout.cuh). Internal: tpp, threads per particle (0: enough to give
    # the GPU about half its resident threads, for small systems); regs, a register cap (0: AUTO_REGS);
    # window=1, walking only the z-window of each strip the cutoff reaches, which checks fewer
    # candidates but leaves fewer lanes active and lost (docs/decisions/fullshell-z-windows.md).
    launch_defaults = {"block": 128, "cell_factor": 1.0, "layout": "aos4"}
    launch_internal = {"tpp": 0, "regs": 0, "window": 0}
    launch_choices = {"block": (64, 128, 256, 512), "tpp": TPP_CHOICES, "regs": REG_CHOICES, "window": (0, 1),
                      "layout": tuple(LAYOUTS)}
    min_cell_factor = 0.25

    def grid_applicable(self, dims, periodic) -> tuple[bool, str]:
        return True, ""

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        dims = self.grid(problem)
        reach = reach_of(problem, dims)
        if reach > MAX_REACH:
            return False, f"cells of side cutoff/{reach} need a stencil of reach {reach} (at most {MAX_REACH})"
        if reach > 1 and needs_minimage(dims, problem.box.periodic, reach):
            axis = next("xyz"[a] for a in range(3) if problem.box.periodic[a] and dims[a] < 2 * reach + 1)
            return False, (f"cell_factor {self.launch['cell_factor']:g} needs at least {2 * reach + 1} cells along a "
                           f"periodic axis, {axis} has fewer; use cell_factor 1 for a box this small")
        return True, ""

    def work(self, problem: Problem) -> dict:
        if problem.potential.cutoff is None or not problem.n:
            return {"distance_checks": 0 if problem.n == 0 else None}
        dims = self.grid(problem)
        counts = host_counts(problem, self.launch["cell_factor"])
        checks = S.fullshell_checks(counts, dims, problem.box.periodic, reach_of(problem, dims))
        out = {"distance_checks": checks, "cells": int(np.prod(dims)), "max_per_cell": int(counts.max())}
        if self.launch["window"] and not needs_minimage(dims, problem.box.periodic):
            # the z-windows check a data-dependent part of the strips: the strips' count bounds it
            out.update({"distance_checks": None, "strip_checks": checks})
        return out

    def data_specs(self, precision: str) -> dict[str, tuple[str, str]]:
        return {}  # the binning writes the sorted positions; the kernel writes forces in input order

    def kernel_expression(self, precision: str, potential: Potential, energy: bool, minimage: bool, tpp: int,
                          reach: int, block: int | None = None, regs: int | None = None,
                          window: int | None = None, layout: str | None = None) -> str:
        real, acc = ctypes(precision)
        block = block or self.launch["block"]
        regs = self.launch["regs"] if regs is None else regs
        regs = regs or AUTO_REGS[precision, energy]
        minb = max(1, 65536 // (block * regs))
        window = (self.launch["window"] if window is None else window) and not minimage
        code = LAYOUTS[layout or self.launch["layout"]]
        return (f"fullshell_thread_csr<{real}, {acc}, {potential.functor}, {block}, {tpp}, {reach}, {cbool(minimage)}, "
                f"{cbool(energy)}, {minb}, {cbool(window)}, {code}>")

    def traversal_specs(self, precision: str, potential: Potential, energy: bool,
                        minimage: bool = False) -> dict[str, tuple[str, str]]:
        return {"force": ("cells.cu", self.kernel_expression(precision, potential, energy, minimage, 1, 1))}

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        """The defaults in every precision, flavour and image mode; the tpp, reach and block variants
        in fp32 (with `experimental`, the register caps and z-windows too)."""
        out = {self.kernel_expression(p, potential, en, mi, 1, 1) for p in PRECISIONS for en in (True, False)
               for mi in (False, True)}
        out |= {self.kernel_expression("fp32", potential, en, False, t, r) for en in (True, False)
                for t in TPP_CHOICES[1:] for r in range(1, MAX_REACH + 1)}
        out |= {self.kernel_expression("fp32", potential, True, False, 1, 1, block=b)
                for b in self.launch_choices["block"]}
        out |= {self.kernel_expression(p, potential, en, False, 1, r) for p in PRECISIONS
                for en in (True, False) for r in (1, 2)}
        if experimental:  # the internal values set by name
            out |= {self.kernel_expression("fp32", potential, True, False, 1, 1, block=b, regs=g)
                    for b in self.launch_choices["block"] for g in REG_CHOICES}
            out |= {self.kernel_expression(p, potential, en, False, 1, r, window=1) for p in PRECISIONS
                    for en in (True, False) for r in (1, 2)}
        out |= {self.kernel_expression(p, potential, en, False, 1, 1, layout=lay) for p in PRECISIONS
                for en in (True, False) for lay in LAYOUTS}
        return sorted(out)

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        out = super().data_expressions(experimental)
        return {**out, "layout.cu": layout_expressions()}

    def default_expressions(self, potential: Potential) -> list[str]:
        return sorted({self.kernel_expression(p, potential, en, mi, 1, 1) for p in PRECISIONS
                       for en in (True, False) for mi in (False, True)})

    def _prepare(self, problem: Problem) -> Plan:
        return FullshellCsrPlan(self, problem)


class FullshellCsrPlan(CellsPlan):
    """The binning's sorted positions are the storage; one kernel computes forces (in input
    order) and, with all outputs, energy, virial and pairs (its last block folds them)."""

    def reach(self, strategy: CellsCuda, problem: Problem) -> int:
        self.reach_cells = reach_of(problem, grid_of(problem, strategy.launch["cell_factor"]))
        return self.reach_cells

    def _schedule(self, strategy: FullshellThreadCsr, problem: Problem) -> int:
        self.block = strategy.launch["block"]
        tpp = strategy.launch["tpp"]
        if tpp == 0:  # enough threads for about half the GPU's resident threads, at most a warp per particle
            tpp = auto_tpp(problem.n, 32)
        self.tpp = tpp
        self.grid = max(1, -(-problem.n * tpp // self.block))
        self.groups = fold_groups(self.grid, self.block)
        self.schedule_info = {"tpp": tpp, "reach": self.reach_cells, "minimage": self.minimage,
                              "regs": strategy.launch["regs"], "window": bool(strategy.launch["window"]) and not self.minimage,
                              "layout": strategy.launch["layout"]}
        return self.grid + self.groups  # the blocks' sums, then their groups' (fold_in_last_block)

    def _upload_schedule(self) -> list:
        self.ticket = self.cp.zeros(1 + self.groups, np.uint32)  # the groups done, then each group's blocks done
        p = self.problem
        self.rc2 = self.real(p.potential.cutoff ** 2)
        # z-windows: the strips are sorted by z as a float; a margin of a few float ulps at the
        # box's largest coordinate keeps that rounding from hiding a partner
        self.margin = self.real(8 * np.finfo(np.float32).eps * (0.5 * float(p.box.array.max()) + p.potential.cutoff))
        return [self.ticket]

    @property
    def k(self) -> dict:
        if self.outputs not in self._kernels:
            s, p = self.strategy, self.problem
            expr = s.kernel_expression(p.precision, p.potential, self.energy, self.minimage, self.tpp, self.reach_cells)
            self._kernels[self.outputs] = {"force": kernel("cells.cu", expr, p.potential)}
        return self._kernels[self.outputs]

    def _allocate_storage(self, counts: np.ndarray) -> None:
        self.capacity = None
        self.cell_buffers = []
        self.lpos = self.binning.sorted
        self.layout = Layout(self.cp, self.strategy.launch["layout"], self.real_t, self.real, self.problem.n,
                             words=self.problem.potential.per_particle)

    @property
    def device_bytes(self) -> int:
        return (CudaPlan.device_bytes.fget(self) + self.binning.device_bytes + int(self.ticket.nbytes)
                + self.layout.nbytes)

    def build(self) -> None:
        super().build()
        self.layout.fill(self.lpos, self.problem.n)  # aos3, soa: the sorted positions copied into the layout

    def force(self) -> None:
        n = self.problem.n
        if n == 0:  # no kernel runs: the totals it would fold are zero
            self.out.fill(0)
            self.count.fill(0)
            return
        b = self.binning
        self.k["force"]((self.grid,), (self.block,), (*self.layout.args(self.lpos), b.start, b.cell_sorted, b.order,
                                                      np.int32(n), self.grid_struct, self.box, self.fparams, self.rc2,
                                                      self.margin, self.forces, self.partial, self.pcount, self.ticket,
                                                      self.out, self.count))

    def reduce(self) -> None:
        """Folded into the force kernel's last block."""

    def output(self) -> Forces:
        return CudaPlan.output(self)

    def poison(self) -> None:
        CudaPlan.poison(self)


def _cuda_strategy(traversal: str, processor: str, storage: str) -> type[CellsCuda]:
    name = f"{traversal}_{processor}_{storage}"
    what = {"fullshell": "one thread per particle over its 27 neighbour cells, no Newton3",
            "thread": "c08 base steps with Newton3, one thread per base step (thesis algorithm 2), 8+ colours",
            "warp": "c08 base steps with Newton3, one warp per base step, 8+ colours"}[
        "fullshell" if traversal == "fullshell" else processor]
    where = {"csr": "flat array sorted by cell with start offsets",
             "2d": "(cells, capacity) 2D views", "nested": "one allocation per cell (nested views)"}[storage]
    attrs = {"name": name, "traversal": traversal, "processor": processor, "storage": storage,
             "newton3": traversal == "c08", "description": f"CUDA, {what}; storage: {where}"}
    if storage != "csr":  # capacities fixed at prepare: room for particles that move in later
        attrs["launch_defaults"] = {**CellsCuda.launch_defaults, "headroom": 0.0}
    return register(type(name, (CellsCuda,), attrs))


for _t, _p, _storages in (("fullshell", "thread", ("2d", "nested")), ("c08", "thread", tuple(STORAGES)),
                          ("c08", "warp", tuple(STORAGES))):
    for _s in _storages:
        _cuda_strategy(_t, _p, _s)
