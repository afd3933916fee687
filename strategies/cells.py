"""Linked-cell strategies (thesis chapters 2.3, 7, 8; MarDyn's flattened cell storage).

Traversals: cells_fullshell (one thread per particle, 27 neighbour cells, no Newton3),
c08_thread (one thread per c08 base step, 8+ colours, Newton3: the thesis's algorithm 2) and
c08_warp (one warp per base step). Each on three cell storages (the layout axis):

  csr     one array sorted by cell plus cell start offsets (MarDyn's cellStartIndices)
  2d      (cells, capacity) arrays, capacity = the fullest cell (thesis 7.2, "2D views")
  nested  one allocation per cell and a device table of pointers to them (thesis 7.1)

Phases: bin (cell of every particle, stable sort by cell, counts, exclusive scan, copy into
the layout), force (traversal, then forces back to input order), reduce. The 2D and nested
capacities are sized at prepare() from the device's own binning; a cell that outgrows them
later raises StrategyError when the result is read, never a silent overrun.
CPU counterparts (numba): cells_fullshell_cpu and c08_cpu (prange over the bases of a colour).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from numba import njit, prange

from harness.problem import Forces, InputError, Problem, StrategyError

from . import schedules as S
from .base import Plan, Strategy
from .cpu import CpuPlan, pair_sums, separation, store_sums
from .cuda import CTYPES, CudaPlan, CudaStrategy, kernel, sm_count

LAYOUTS = {"csr": 0, "2d": 1, "nested": 2}
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])
CELLS_DTYPE = np.dtype([("pos", np.uint64), ("force", np.uint64), ("start", np.uint64), ("cap", np.int64)])
POOL_GRANULE = 512  # CuPy's memory pool rounds every allocation up to this


def _pmask(problem: Problem) -> int:
    return sum(1 << a for a in range(3) if problem.box.periodic[a])


def grid_of(problem: Problem, factor: float) -> np.ndarray:
    return S.grid_dims(problem.box.array, problem.potential.cutoff, factor)


_COUNTS: dict = {}  # (id of positions, box, cutoff, factor) -> (positions, counts): a small cache


def _host_counts(problem: Problem, factor: float) -> np.ndarray:
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


class _CellStrategy(Strategy):
    """What the GPU and CPU cell strategies share: cutoff required, grid, c08 applicability,
    the cell-size factor, work counts."""

    traversal: ClassVar[str] = "fullshell"  # fullshell | thread | warp
    launch_defaults = {"cell_factor": 1.0}
    launch_choices: ClassVar[dict] = {}

    def __init__(self, **launch):
        super().__init__(**launch)
        f = self.launch["cell_factor"]
        if not isinstance(f, (int, float)) or not f >= 1.0:
            raise InputError(f"{self.name}: launch parameter cell_factor must be a number >= 1.0, got {f!r}")
        self.launch["cell_factor"] = float(f)

    @property
    def newton3(self) -> bool:  # type: ignore[override]
        return self.traversal != "fullshell"

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        if problem.potential.cutoff is None:
            return False, "linked cells need a cutoff (this problem has none)"
        if self.newton3:
            return S.c08_applicable(grid_of(problem, self.launch["cell_factor"]), problem.box.periodic)
        return True, ""

    def work(self, problem: Problem) -> dict:
        if problem.potential.cutoff is None or not problem.n:
            return {"distance_checks": 0 if problem.n == 0 else None}
        n = grid_of(problem, self.launch["cell_factor"])
        counts = _host_counts(problem, self.launch["cell_factor"])
        count = S.c08_checks if self.newton3 else S.fullshell_checks
        return {"distance_checks": count(counts, n, problem.box.periodic), "cells": int(np.prod(n)),
                "max_per_cell": int(counts.max())}


# --- CUDA -------------------------------------------------------------------------------

class _CellsCuda(_CellStrategy, CudaStrategy):
    source_file = "cells.cu"
    layout: ClassVar[str] = "csr"
    launch_defaults = {"block": 128, "cell_factor": 1.0}
    launch_choices = {"block": (32, 64, 128, 256, 512)}

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok or self.layout != "2d" or not check_device:
            return ok, why
        need = self.padded_bytes(problem)
        free = self._free_bytes()
        if need > free:
            n = grid_of(problem, self.launch["cell_factor"])
            cap = int(_host_counts(problem, self.launch["cell_factor"]).max())
            return False, (f"2D views need {need / 2**30:.1f} GiB ({int(np.prod(n))} cells x capacity {cap}, the fullest "
                           f"cell) but the GPU has {free / 2**30:.1f} GiB free; use the csr or nested layout")
        return True, ""

    @staticmethod
    def _free_bytes() -> int:
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free + cupy.get_default_memory_pool().free_bytes())

    def padded_bytes(self, problem: Problem) -> int:
        real_t, acc_t = CTYPES[problem.precision]
        per_slot = 4 * (4 if real_t == "float" else 8) + 3 * (4 if acc_t == "float" else 8)
        counts = _host_counts(problem, self.launch["cell_factor"])
        return int(len(counts) * max(1, int(counts.max()) + 1) * per_slot)

    def expression(self, kind: str, precision: str, pbc: bool = False) -> str:
        real, acc = CTYPES[precision]
        lay = LAYOUTS[self.layout]
        block = self.launch.get("block")  # the traversal kernels only
        pbc_s = "true" if pbc else "false"
        if kind == "bin":
            return f"bin_cells<{real}>"
        if kind in ("scatter", "zero", "gather"):
            name = {"scatter": "scatter_cells", "zero": "zero_forces", "gather": "gather_forces"}[kind]
            return f"{name}<{real}, {acc}, {lay}>"
        if kind == "fullshell":
            return f"cells_fullshell<{real}, {acc}, LennardJones, {lay}, {block}, {pbc_s}>"
        warp = "true" if kind == "warp" else "false"
        return f"c08_colour<{real}, {acc}, LennardJones, {lay}, {block}, {pbc_s}, {warp}>"

    def kernel_file(self, kind: str) -> str:
        """Source file of the kernel `kind` (binning and layouts live in cells.cu)."""
        return self.source_file

    def kinds(self) -> list[str]:
        return ["bin", "scatter", "gather"] + ([self.traversal] if self.traversal == "fullshell"
                                               else ["zero", self.traversal])

    def expressions(self) -> list[str]:
        return sorted({self.expression(k, p, pbc) for k in self.kinds() for p in CTYPES for pbc in (False, True)})

    def default_expressions(self) -> list[str]:
        return self.expressions()

    def _prepare(self, problem: Problem) -> Plan:
        return _CellsPlan(self, problem)


class _CellsPlan(CudaPlan):
    def __init__(self, strategy: _CellsCuda, problem: Problem):
        self.n3 = strategy.newton3
        self.visits_per_pair = 1 if self.n3 else 2
        n = problem.n
        self.dims = grid_of(problem, strategy.launch["cell_factor"])
        self.ncells = int(np.prod(self.dims))
        self.grid_struct = np.array([(*self.dims, _pmask(problem))], dtype=GRID_DTYPE)
        pbc = any(problem.box.periodic)
        nparts = self._schedule(strategy, problem)
        super().__init__(strategy, problem, nparts=nparts)
        if n == 0:
            self.nparts = 0  # no kernel writes a slot; the reduction must read none
        cp = self.cp
        self.inv_side = [self.real(self.dims[a] / problem.box.array[a]) for a in range(3)]
        self.k = {kind: kernel(strategy.kernel_file(kind), strategy.expression(kind, problem.precision, pbc))
                  for kind in strategy.kinds()}
        self.cell = cp.empty(max(n, 1), np.int32)
        self.order = cp.empty(max(n, 1), np.int32)
        self.cell_sorted = cp.empty(max(n, 1), np.int32)
        self.start = cp.zeros(self.ncells + 1, np.int32)
        self.counts = cp.zeros(self.ncells, np.int32)
        self.overflow = cp.zeros(1, np.int32)
        self.schedule_arrays: list = self._upload_schedule()
        self.layout = strategy.layout
        counts = self._device_counts()
        self.max_count = int(counts.max()) if n else 0
        self._allocate_layout(counts)
        self.launch_info = {"cells": self.dims.tolist(), "layout": self.layout, "max_per_cell": self.max_count,
                            "block": self.block, **self.schedule_info}

    # -- schedule (the traversal's own set-up) ---------------------------------------------
    def _schedule(self, strategy: "_CellsCuda", problem: Problem) -> int:
        """Host side of the traversal; returns the number of partial-sum slots."""
        self.block = strategy.launch["block"]
        self.schedule_info: dict = {}
        if not self.n3:
            return max(1, -(-problem.n // self.block))
        self.colours = S.c08_colours(self.dims, problem.box.periodic)
        per_block = self.block // 32 if strategy.traversal == "warp" else self.block
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

    def _allocate_layout(self, counts: np.ndarray) -> None:
        cp, n = self.cp, self.problem.n
        self.capacity = None
        self.cell_buffers: list = []
        if self.layout == "csr":
            self.lpos = cp.empty((max(n, 1), 4), self.real)
            self.lforce = cp.empty((max(n, 1), 3), self.acc)
            ptrs, cap = (self.lpos.data.ptr, self.lforce.data.ptr), 0
        elif self.layout == "2d":
            cap = max(1, self.max_count)
            try:
                self.lpos = cp.empty((self.ncells, cap, 4), self.real)
                self.lforce = cp.empty((self.ncells, cap, 3), self.acc)
            except cp.cuda.memory.OutOfMemoryError:
                need = self.ncells * cap * (16 * np.dtype(self.real).itemsize // 4 + 3 * np.dtype(self.acc).itemsize)
                raise StrategyError(f"{self.strategy.name}: 2D views need {need / 2**30:.1f} GiB ({self.ncells} cells x "
                                    f"capacity {cap}); use the csr or nested layout") from None
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
        if self.layout in ("csr", "2d"):
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

    def bin(self) -> None:
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
            self.k["fullshell"]((self.nparts,), (self.block,), (self.cells_struct, self.cell_sorted, np.int32(n),
                                                                 self.grid_struct, *args_tail))
        else:
            self.k["zero"]((self._blocks(n),), (256,), (self.cells_struct, self.cell_sorted, np.int32(n)))
            slot = 0
            fn = self.k[self.strategy.traversal]
            for bases, grid in zip(self.bases, self.colour_grid):
                fn((grid,), (self.block,), (self.cells_struct, bases, np.int32(len(bases)), self.pairs,
                                            self.grid_struct, *args_tail, np.int32(slot)))
                slot += grid
        self.k["gather"]((self._blocks(n),), (256,), (self.cells_struct, self.order, self.cell_sorted, np.int32(n),
                                                       self.forces))

    def output(self) -> Forces:
        out = super().output()
        if self.layout != "csr":
            out.checks = ((self.overflow, f"{self.strategy.name}: a cell holds {{value}} particles, more than the "
                                          f"{self.layout} layout's capacity sized at prepare(); prepare again"),)
        return out

    def poison(self) -> None:
        super().poison()
        self.overflow.fill(0)
        if self.layout != "nested":
            self.lforce.fill(np.nan)
        for buf in self.cell_buffers[1::2]:
            buf.memset(0xFF, buf.mem.size)  # all-ones bits: NaN in float and double


def _cuda_strategy(traversal: str, layout: str) -> type[_CellsCuda]:
    prefix = "cells_fullshell" if traversal == "fullshell" else f"c08_{traversal}"
    what = {"fullshell": "one thread per particle over its 27 neighbour cells, no Newton3",
            "thread": "c08 base steps with Newton3, one thread per base step (thesis algorithm 2), 8+ colours",
            "warp": "c08 base steps with Newton3, one warp per base step, 8+ colours"}[traversal]
    where = {"csr": "flat array sorted by cell with start offsets",
             "2d": "(cells, capacity) 2D views", "nested": "one allocation per cell (nested views)"}[layout]
    return type(f"{prefix}_{layout}", (_CellsCuda,), {
        "name": f"{prefix}_{layout}", "traversal": traversal, "layout": layout,
        "description": f"CUDA, {what}; storage: {where}"})


CUDA_STRATEGIES = [_cuda_strategy(t, lay) for t in ("fullshell", "thread", "warp") for lay in LAYOUTS]


# --- CPU (numba) ------------------------------------------------------------------------

@njit(inline="always")
def _axis_range(c, n, periodic):
    if periodic:
        return (-1 if n >= 3 else 0), (1 if n >= 2 else 0)
    return (-1 if c > 0 else 0), (1 if c < n - 1 else 0)


@njit(inline="always")
def _wrapi(x, n):
    if x < 0:
        return x + n
    if x >= n:
        return x - n
    return x


@njit(parallel=True, cache=True)
def _fullshell_cpu(pos, cell_sorted, start, dims, per, box, prm, zero, forces, sums, counts):
    """Sorted positions pos (n, 3); forces, sums and counts per sorted particle."""
    n = pos.shape[0]
    rc2 = prm[3]
    for k in prange(n):
        c = cell_sorted[k]
        cz = c % dims[2]
        cy = (c // dims[2]) % dims[1]
        cx = c // (dims[2] * dims[1])
        xlo, xhi = _axis_range(cx, dims[0], per[0])
        ylo, yhi = _axis_range(cy, dims[1], per[1])
        zlo, zhi = _axis_range(cz, dims[2], per[2])
        s = (zero, zero, zero, zero, zero, zero, zero)
        fx = fy = fz = zero
        m = 0
        for ox in range(xlo, xhi + 1):
            x = _wrapi(cx + ox, dims[0])
            for oy in range(ylo, yhi + 1):
                y = _wrapi(cy + oy, dims[1])
                for oz in range(zlo, zhi + 1):
                    nb = (x * dims[1] + y) * dims[2] + _wrapi(cz + oz, dims[2])
                    for j in range(start[nb], start[nb + 1]):
                        if j == k:
                            continue
                        dx, dy, dz, r2 = separation(pos, k, j, box)
                        if r2 < rc2:
                            ax, ay, az, s = pair_sums(s, dx, dy, dz, r2, prm)
                            fx += ax
                            fy += ay
                            fz += az
                            m += 1
        forces[k, 0], forces[k, 1], forces[k, 2] = fx, fy, fz
        store_sums(sums[k], s)
        counts[k] = m


@njit(inline="always")
def _block_cell(b, o, dims, per):
    c = 0
    for a in range(3):
        x = b[a] + o[a]
        if x >= dims[a]:
            if not per[a]:
                return -1
            x -= dims[a]
        if x < 0:
            return -1
        c = c * dims[a] + x
    return c


@njit(parallel=True, cache=True)
def _c08_colour_cpu(pos, start, bases, pairs, dims, per, box, prm, zero, forces, sums, counts):
    """One colour: bases (m, 3), pairs (14, 2, 3); forces of sorted particles updated with
    Newton3 (bases of one colour touch disjoint cells); sums and counts per base."""
    rc2 = prm[3]
    for t in prange(bases.shape[0]):
        s = (zero, zero, zero, zero, zero, zero, zero)
        m = 0
        for p in range(pairs.shape[0]):
            a = _block_cell(bases[t], pairs[p, 0], dims, per)
            b = _block_cell(bases[t], pairs[p, 1], dims, per)
            if a < 0 or b < 0:
                continue
            for i in range(start[a], start[a + 1]):
                fx = fy = fz = zero
                j0 = i + 1 if a == b else start[b]
                for j in range(j0, start[b + 1]):
                    dx, dy, dz, r2 = separation(pos, i, j, box)
                    if r2 < rc2:
                        ax, ay, az, s = pair_sums(s, dx, dy, dz, r2, prm)
                        fx += ax
                        fy += ay
                        fz += az
                        forces[j, 0] -= ax
                        forces[j, 1] -= ay
                        forces[j, 2] -= az
                        m += 1
                forces[i, 0] += fx
                forces[i, 1] += fy
                forces[i, 2] += fz
        store_sums(sums[t], s)
        counts[t] = m


class _CellsCpuPlan(CpuPlan):
    def __init__(self, strategy: _CellStrategy, problem: Problem):
        self.dims = grid_of(problem, strategy.launch["cell_factor"])
        self.per = np.array(problem.box.periodic, dtype=np.bool_)
        self.n3 = strategy.newton3
        self.colours = [c.astype(np.int64) for c in S.c08_colours(self.dims, problem.box.periodic)] if self.n3 else []
        rows = sum(len(c) for c in self.colours) if self.n3 else None
        super().__init__(strategy, problem, rows=rows)
        self.visits_per_pair = 1 if self.n3 else 2
        self.side = (problem.box.array / self.dims).astype(self.real)
        self.sorted_forces = np.empty((problem.n, 3), self.acc)
        self.pairs = S.C08_PAIRS.astype(np.int64)

    def bin(self) -> None:
        """Cells from the centred compute-dtype positions, as the GPU bins them."""
        half = (0.5 * self.problem.box.array).astype(self.real)
        idx = np.floor((self.pos + half) / self.side).astype(np.int64)
        idx = np.clip(idx, 0, self.dims - 1)
        cell = (idx[:, 0] * self.dims[1] + idx[:, 1]) * self.dims[2] + idx[:, 2]
        self.order = np.argsort(cell, kind="stable")
        self.cell_sorted = cell[self.order]
        self.start = np.zeros(int(np.prod(self.dims)) + 1, np.int64)
        np.cumsum(np.bincount(cell, minlength=int(np.prod(self.dims))), out=self.start[1:])
        self.sorted_pos = np.ascontiguousarray(self.pos[self.order])

    def force(self) -> None:
        zero = self.acc(0)
        dims = self.dims.astype(np.int64)
        if not self.n3:
            _fullshell_cpu(self.sorted_pos, self.cell_sorted, self.start, dims, self.per, self.box, self.prm, zero,
                           self.sorted_forces, self.sums, self.counts)
        else:
            self.sorted_forces.fill(0)
            row = 0
            for bases in self.colours:
                m = len(bases)
                _c08_colour_cpu(self.sorted_pos, self.start, bases, self.pairs, dims, self.per,
                                self.box, self.prm, zero, self.sorted_forces, self.sums[row:row + m],
                                self.counts[row:row + m])
                row += m
        self.forces[self.order] = self.sorted_forces


class CellsFullshellCpu(_CellStrategy):
    name = "cells_fullshell_cpu"
    backend = "cpu"
    traversal = "fullshell"
    description = "numba prange over particles in cell order, 27 neighbour cells, no Newton3"

    def _prepare(self, problem: Problem) -> Plan:
        return _CellsCpuPlan(self, problem)


class C08Cpu(_CellStrategy):
    name = "c08_cpu"
    backend = "cpu"
    traversal = "thread"
    description = "numba prange over the c08 base steps of one colour at a time, Newton3 (the thesis's OpenMP run)"

    def _prepare(self, problem: Problem) -> Plan:
        return _CellsCpuPlan(self, problem)


CPU_STRATEGIES = [CellsFullshellCpu, C08Cpu]
