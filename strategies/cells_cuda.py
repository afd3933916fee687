"""Linked-cell strategies on the GPU: the full shell and c08 (one thread or one warp per base
step), each on three cell storages:

  csr     one array sorted by cell plus cell start offsets (MarDyn's cellStartIndices)
  2d      (cells, capacity) arrays, capacity = the fullest cell (thesis 7.2, "2D views")
  nested  one allocation per cell and a device table of pointers to them (thesis 7.1)

  fullshell_thread_<storage>  one thread per particle over its 27 neighbour cells, no Newton3
  c08_thread_<storage>        one thread per c08 base step, 8+ colours, Newton3 (thesis algorithm 2)
  c08_warp_<storage>          one warp per base step

Phases: build (cell of every particle, stable sort by cell, counts, exclusive scan, copy into
the storage: binning.cu), force (traversal, then forces back to input order), reduce. The 2D
and nested capacities are sized at prepare() from the device's own binning; a cell that
outgrows them later raises StrategyError when the result is read, never a silent overrun.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from mdcore import PRECISIONS, Forces, Potential, Problem, StrategyError

from . import schedules as S
from .base import Plan
from .cells import CellStrategy, grid_of, host_counts, pmask
from .cuda import CudaPlan, CudaStrategy, ctypes, kernel, sm_count
from .registry import register

STORAGES = {"csr": 0, "2d": 1, "nested": 2}
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])
CELLS_DTYPE = np.dtype([("pos", np.uint64), ("force", np.uint64), ("start", np.uint64), ("cap", np.int64)])
POOL_GRANULE = 512  # CuPy's memory pool rounds every allocation up to this


class CellsCuda(CellStrategy, CudaStrategy):
    """Base of the GPU cell strategies: binning and storage (binning.cu), the traversal
    kernel(s) of traversal_specs()."""

    storage: ClassVar[str] = "csr"
    launch_defaults = {"block": 128, "cell_factor": 1.0}
    launch_choices = {"block": (32, 64, 128, 256, 512)}

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
        from mdcore import MODES

        m = MODES[problem.precision]
        per_slot = 4 * m.bytes_compute + 3 * m.bytes_accumulate
        counts = host_counts(problem, self.launch["cell_factor"])
        return int(len(counts) * max(1, int(counts.max()) + 1) * per_slot)

    # -- kernels --------------------------------------------------------------------------
    def data_specs(self, precision: str) -> dict[str, tuple[str, str]]:
        """Binning and storage kernels: kind -> (file, expression)."""
        real, acc = ctypes(precision)
        lay = STORAGES[self.storage]
        out = {"bin": ("binning.cu", f"bin_cells<{real}>"),
               "scatter": ("binning.cu", f"scatter_cells<{real}, {acc}, {lay}>"),
               "gather": ("binning.cu", f"gather_forces<{real}, {acc}, {lay}>")}
        if self.accumulates:
            out["zero"] = ("binning.cu", f"zero_forces<{real}, {acc}, {lay}>")
        return out

    @property
    def accumulates(self) -> bool:
        """Whether the traversal adds into forces (which are zeroed first) instead of writing them."""
        return self.newton3

    def traversal_specs(self, precision: str, pbc: bool, potential: Potential) -> dict[str, tuple[str, str]]:
        """The traversal's kernels (templates on the pair functor): kind -> (file, expression)."""
        real, acc = ctypes(precision)
        head = f"{real}, {acc}, {potential.functor}, {STORAGES[self.storage]}, {self.launch['block']}, " \
               f"{'true' if pbc else 'false'}"
        kernel_name = "fullshell_thread" if self.traversal == "fullshell" else f"c08_{self.processor}"
        return {"force": ("cells.cu", f"{kernel_name}<{head}>")}

    def kernels(self, problem: Problem) -> dict:
        """Every kernel of a plan for `problem`, compiled: kind -> function."""
        pbc = any(problem.box.periodic)
        out = {k: kernel(f, e) for k, (f, e) in self.data_specs(problem.precision).items()}
        out.update({k: kernel(f, e, problem.potential)
                    for k, (f, e) in self.traversal_specs(problem.precision, pbc, problem.potential).items()})
        return out

    def expressions(self, potential: Potential) -> list[str]:
        return sorted({e for p in PRECISIONS for pbc in (False, True)
                       for _, e in self.traversal_specs(p, pbc, potential).values()})

    def default_expressions(self, potential: Potential) -> list[str]:
        return self.expressions(potential)

    def data_expressions(self) -> dict[str, list[str]]:
        out: dict[str, set] = {}
        for p in PRECISIONS:
            for f, e in self.data_specs(p).values():
                out.setdefault(f, set()).add(e)
        return {f: sorted(v) for f, v in out.items()}

    def _prepare(self, problem: Problem) -> Plan:
        return CellsPlan(self, problem)


class CellsPlan(CudaPlan):
    def __init__(self, strategy: CellsCuda, problem: Problem):
        self.n3 = strategy.newton3
        self.visits_per_pair = 1 if self.n3 else 2
        n = problem.n
        self.dims = grid_of(problem, strategy.launch["cell_factor"])
        self.ncells = int(np.prod(self.dims))
        self.grid_struct = np.array([(*self.dims, pmask(problem))], dtype=GRID_DTYPE)
        nparts = self._schedule(strategy, problem)
        super().__init__(strategy, problem, nparts=nparts)
        if n == 0:
            self.nparts = 0  # no kernel writes a slot; the reduction must read none
        cp = self.cp
        self.inv_side = [self.real(self.dims[a] / problem.box.array[a]) for a in range(3)]
        self.k = strategy.kernels(problem)
        self.cell = cp.empty(max(n, 1), np.int32)
        self.order = cp.empty(max(n, 1), np.int32)
        self.cell_sorted = cp.empty(max(n, 1), np.int32)
        self.start = cp.zeros(self.ncells + 1, np.int32)
        self.counts = cp.zeros(self.ncells, np.int32)
        self.overflow = cp.zeros(1, np.int32)
        self.schedule_arrays: list = self._upload_schedule()
        self.storage = strategy.storage
        counts = self._device_counts()
        self.max_count = int(counts.max()) if n else 0
        self._allocate_storage(counts)
        self.launch_info = {"cells": self.dims.tolist(), "storage": self.storage, "max_per_cell": self.max_count,
                            "block": self.block, **self.schedule_info}

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
        """Bin once on the device (the binning the traversals will see) to size capacities."""
        if not self.problem.n:
            return np.zeros(self.ncells, np.int64)
        self.upload()
        self._bin_cells()
        return self.counts.get()

    def _allocate_storage(self, counts: np.ndarray) -> None:
        cp, n = self.cp, self.problem.n
        self.capacity = None
        self.cell_buffers: list = []
        if self.storage == "csr":
            self.lpos = cp.empty((max(n, 1), 4), self.real)
            self.lforce = cp.empty((max(n, 1), 3), self.acc)
            ptrs, cap = (self.lpos.data.ptr, self.lforce.data.ptr), 0
        elif self.storage == "2d":
            cap = max(1, self.max_count)
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
        own = [self.cell, self.order, self.cell_sorted, self.start, self.counts, self.overflow]
        if self.storage in ("csr", "2d"):
            own += [self.lpos, self.lforce]
        else:
            own += [self.pos_table, self.force_table, self.capacity]
        own += self.schedule_arrays
        nested = sum(-(-b.mem.size // POOL_GRANULE) * POOL_GRANULE for b in self.cell_buffers)
        return super().device_bytes + int(sum(a.nbytes for a in own)) + int(nested)

    # -- phases -------------------------------------------------------------------------
    def _blocks(self, work: int) -> int:
        return max(1, min(-(-work // 256), 8 * sm_count()))

    def _bin_cells(self) -> None:
        """Cell per particle into self.cell, particles per cell into self.counts[:ncells]."""
        n = self.problem.n
        self.counts.fill(0)
        self.k["bin"]((self._blocks(n),), (256,), (self.pos, np.int32(n), self.box, self.grid_struct,
                                                   *self.inv_side, self.cell, self.counts))

    def build(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        cp = self.cp
        self._bin_cells()
        cell = self.cell[:n]
        self.order[:n] = cp.argsort(cell)  # stable: particles keep input order inside a cell
        cp.take(cell, self.order[:n], out=self.cell_sorted[:n])
        cp.cumsum(self.counts, dtype=np.int32, out=self.start[1:])  # no host round trip (bincount reads the max)
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
                                          f"{self.storage} storage's capacity sized at prepare(); prepare again"),)
        return out

    def poison(self) -> None:
        super().poison()
        self.overflow.fill(0)
        if self.storage != "nested":
            self.lforce.fill(np.nan)
        for buf in self.cell_buffers[1::2]:
            buf.memset(0xFF, buf.mem.size)  # all-ones bits: NaN in float and double


def _cuda_strategy(traversal: str, processor: str, storage: str) -> type[CellsCuda]:
    name = f"{traversal}_{processor}_{storage}"
    what = {"fullshell": "one thread per particle over its 27 neighbour cells, no Newton3",
            "thread": "c08 base steps with Newton3, one thread per base step (thesis algorithm 2), 8+ colours",
            "warp": "c08 base steps with Newton3, one warp per base step, 8+ colours"}[
        "fullshell" if traversal == "fullshell" else processor]
    where = {"csr": "flat array sorted by cell with start offsets",
             "2d": "(cells, capacity) 2D views", "nested": "one allocation per cell (nested views)"}[storage]
    return register(type(name, (CellsCuda,), {
        "name": name, "traversal": traversal, "processor": processor, "storage": storage,
        "newton3": traversal == "c08", "description": f"CUDA, {what}; storage: {where}"}))


for _t, _p in (("fullshell", "thread"), ("c08", "thread"), ("c08", "warp")):
    for _s in STORAGES:
        _cuda_strategy(_t, _p, _s)
