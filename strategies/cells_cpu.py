"""Linked-cell strategies on the CPU (numba, the thesis's OpenMP runs):

  fullshell_thread_cpu  prange over particles in cell order, 27 neighbour cells, no Newton3
  c08_thread_cpu        prange over the c08 base steps of one colour at a time, Newton3
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mdcore import Problem, poison

from . import schedules as S
from .base import Plan
from .cells import CellStrategy, grid_of
from .cpu import CpuPlan, pair_step, separation, store_sums
from .registry import register


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


@njit(parallel=True)
def _fullshell_cpu(pair, conv, with_sums, pos, w, cell_sorted, start, dims, per, box, prm, rc2, zero, forces, sums,
                   counts):
    """Sorted positions pos (n, 3) and what they carry, w (n,); forces, sums and counts per sorted particle; pair, prm, rc2:
    the potential (strategies.cpu)."""
    n = pos.shape[0]
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
                            ax, ay, az, s, hit = pair_step(pair, conv, with_sums, s, dx, dy, dz, r2, prm, w[k],
                                                           w[j])
                            fx += ax
                            fy += ay
                            fz += az
                            m += hit
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


@njit(parallel=True)
def _c08_colour_cpu(pair, conv, with_sums, pos, w, start, bases, pairs, dims, per, box, prm, rc2, zero, forces, sums,
                    counts):
    """One colour: bases (m, 3), pairs (14, 2, 3); forces of sorted particles updated with
    Newton3 (bases of one colour touch disjoint cells); sums and counts per base."""
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
                        ax, ay, az, s, hit = pair_step(pair, conv, with_sums, s, dx, dy, dz, r2, prm, w[i], w[j])
                        fx += ax
                        fy += ay
                        fz += az
                        forces[j, 0] -= ax
                        forces[j, 1] -= ay
                        forces[j, 2] -= az
                        m += hit
                forces[i, 0] += fx
                forces[i, 1] += fy
                forces[i, 2] += fz
        store_sums(sums[t], s)
        counts[t] = m


def bin_cells(pos: np.ndarray, lengths: np.ndarray, side: np.ndarray, dims: np.ndarray):
    """Cells from centred positions in the compute dtype, as the GPU bins them: (order, cell of
    each sorted particle, CSR starts, positions in cell order)."""
    half = (0.5 * lengths).astype(pos.dtype)
    idx = np.clip(np.floor((pos + half) / side).astype(np.int64), 0, dims - 1)
    cell = (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    order = np.argsort(cell, kind="stable")
    start = np.zeros(int(np.prod(dims)) + 1, np.int64)
    np.cumsum(np.bincount(cell, minlength=int(np.prod(dims))), out=start[1:])
    return order, cell[order], start, np.ascontiguousarray(pos[order])


class _CellsCpuPlan(CpuPlan):
    def __init__(self, strategy: CellStrategy, problem: Problem):
        self.dims = grid_of(problem, strategy.launch["cell_factor"])
        self.per = np.array(problem.box.periodic, dtype=np.bool_)
        self.n3 = strategy.newton3
        self.colours = [c.astype(np.int64) for c in S.c08_colours(self.dims, problem.box.periodic)] if self.n3 else []
        rows = sum(len(c) for c in self.colours) if self.n3 else None
        super().__init__(strategy, problem, rows=rows)
        self.visits_per_pair = 1 if self.n3 else 2
        self.side = (problem.box.array / self.dims).astype(self.real)
        self.sorted_forces = poison.empty((problem.n, 3), self.acc)
        self.pairs = S.C08_PAIRS.astype(np.int64)

    def build(self) -> None:
        self.order, self.cell_sorted, self.start, self.sorted_pos = bin_cells(self.pos, self.problem.box.array,
                                                                              self.side, self.dims)
        self.sorted_w = self.w[self.order]

    def force(self) -> None:
        zero = self.acc(0)
        dims = self.dims.astype(np.int64)
        if not self.n3:
            _fullshell_cpu(self.pair, self.conv, self.energy, self.sorted_pos, self.sorted_w, self.cell_sorted, self.start, dims, self.per, self.box,
                           self.prm, self.rc2, zero, self.sorted_forces, self.sums, self.counts)
        else:
            self.sorted_forces.fill(0)
            row = 0
            for bases in self.colours:
                m = len(bases)
                _c08_colour_cpu(self.pair, self.conv, self.energy, self.sorted_pos, self.sorted_w, self.start, bases, self.pairs, dims, self.per,
                                self.box, self.prm, self.rc2, zero, self.sorted_forces, self.sums[row:row + m],
                                self.counts[row:row + m])
                row += m
        self.forces[self.order] = self.sorted_forces


@register
class FullshellThreadCpu(CellStrategy):
    name = "fullshell_thread_cpu"
    backend = "cpu"
    traversal = "fullshell"
    processor = "thread"
    storage = "csr"
    description = "numba prange over particles in cell order, 27 neighbour cells, no Newton3"

    def _prepare(self, problem: Problem) -> Plan:
        return _CellsCpuPlan(self, problem)


@register
class C08ThreadCpu(CellStrategy):
    name = "c08_thread_cpu"
    backend = "cpu"
    traversal = "c08"
    processor = "thread"
    storage = "csr"
    newton3 = True
    description = "numba prange over the c08 base steps of one colour at a time, Newton3 (the thesis's OpenMP run)"

    def _prepare(self, problem: Problem) -> Plan:
        return _CellsCpuPlan(self, problem)
