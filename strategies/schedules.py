"""Cell grids and traversal schedules, shared by the GPU and CPU cell strategies and checked
exhaustively on the CPU (tests/test_schedules.py).

Cells: side >= cutoff * factor along every axis, cells indexed c = (cx * ny + cy) * nz + cz.

Full shell: every particle visits the cells at offsets -1, 0, +1 per axis; along a periodic
axis with 2 cells the offsets -1 and +1 name the same cell (kept once), with 1 cell only 0.

c08 (AutoPas; thesis section 2.3.1): the base step at cell b handles its own cell and 13 cell
pairs inside the 2x2x2 block b + {0,1}^3 (C08_PAIRS), so that over all bases every pair of
neighbouring cells is handled exactly once. Bases of one colour touch disjoint cells and run
in parallel; colours run one after another. Along a periodic axis with n cells bases are
0..n-1 (the block wraps) and colours are the parity of the coordinate, with a third colour
for the last base when n is odd (it meets cell 0 through the boundary); periodic axes need
n >= 3 (with 2, a block would hold a cell and its own image). Along an open axis bases are
-1..n-1 (like halo cells; pairs with a cell outside the grid are skipped), coloured by parity.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

# The c08 base step: (offset of cell A, offset of cell B) inside the block b + {0,1}^3.
C08_PAIRS = np.array([
    [(0, 0, 0), (0, 0, 0)],  # the base cell with itself
    [(0, 0, 0), (1, 0, 0)], [(0, 0, 0), (0, 1, 0)], [(0, 0, 0), (0, 0, 1)],
    [(0, 0, 0), (1, 1, 0)], [(0, 0, 0), (1, 0, 1)], [(0, 0, 0), (0, 1, 1)], [(0, 0, 0), (1, 1, 1)],
    [(1, 0, 0), (0, 1, 0)], [(1, 0, 0), (0, 0, 1)], [(0, 1, 0), (0, 0, 1)],
    [(1, 0, 0), (0, 1, 1)], [(0, 1, 0), (1, 0, 1)], [(0, 0, 1), (1, 1, 0)],
], dtype=np.int32)


def grid_dims(lengths, cutoff: float, factor: float = 1.0) -> np.ndarray:
    """Cells per axis (int64, >= 1) with side L / n >= cutoff * factor."""
    if factor < 1.0 or not math.isfinite(factor):
        raise ValueError(f"cell-size factor must be >= 1.0, got {factor}")
    L = np.asarray(lengths, dtype=np.float64)
    want = cutoff * factor
    n = np.maximum(1, np.floor(L / want)).astype(np.int64)
    for a in range(3):
        while n[a] > 1 and L[a] / n[a] < want:  # floor() may round up at L = k * want
            n[a] -= 1
    return n


def linear(c, n) -> int:
    return int((c[0] * n[1] + c[1]) * n[2] + c[2])


def axis_offsets(n_axis: int, periodic: bool) -> tuple[int, ...]:
    """Full-shell offsets along one axis, without naming one cell twice."""
    if periodic and n_axis == 1:
        return (0,)
    if periodic and n_axis == 2:
        return (0, 1)
    return (-1, 0, 1)


def neighbour_cells(c, n, periodic) -> list[int]:
    """Full-shell neighbour cells of cell coordinates c (itself included), deduplicated."""
    per_axis = []
    for a in range(3):
        cells = []
        for o in axis_offsets(int(n[a]), bool(periodic[a])):
            k = c[a] + o
            if periodic[a]:
                k %= n[a]
            elif not 0 <= k < n[a]:
                continue
            cells.append(int(k))
        per_axis.append(cells)
    return [linear(x, n) for x in itertools.product(*per_axis)]


def c08_applicable(n, periodic) -> tuple[bool, str]:
    for a, axis in enumerate("xyz"):
        if periodic[a] and n[a] < 3:
            return False, (f"c08 needs at least 3 cells along a periodic axis, {axis} has {int(n[a])} "
                           "(a base step would meet its own image); enlarge the box or use cells_fullshell")
    return True, ""


def _axis_colours(n_axis: int, periodic: bool) -> list[np.ndarray]:
    """Base coordinates along one axis grouped by colour."""
    if periodic:
        if n_axis % 2 == 0:
            return [np.arange(0, n_axis, 2), np.arange(1, n_axis, 2)]
        return [np.arange(0, n_axis - 1, 2), np.arange(1, n_axis - 1, 2), np.array([n_axis - 1])]
    return [np.arange(-1, n_axis, 2), np.arange(0, n_axis, 2)]


def c08_colours(n, periodic) -> list[np.ndarray]:
    """Per colour: the base cell coordinates, shape (m, 3) int32 (open axes start at -1)."""
    ok, why = c08_applicable(n, periodic)
    if not ok:
        raise ValueError(why)
    per_axis = [_axis_colours(int(n[a]), bool(periodic[a])) for a in range(3)]
    out = []
    for xs, ys, zs in itertools.product(*per_axis):
        if len(xs) and len(ys) and len(zs):
            g = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), -1).reshape(-1, 3)
            out.append(g.astype(np.int32))
    return out


def block_cell(base, offset, n, periodic) -> int:
    """Linear index of cell base + offset, or -1 if it lies outside an open axis."""
    c = []
    for a in range(3):
        k = int(base[a]) + int(offset[a])
        if periodic[a]:
            k %= int(n[a])
        elif not 0 <= k < n[a]:
            return -1
        c.append(k)
    return linear(c, n)


def c08_cell_pairs(base, n, periodic) -> list[tuple[int, int]]:
    """The (A, B) cell pairs of the base step at `base` (A == B: the cell with itself)."""
    out = []
    for off_a, off_b in C08_PAIRS:
        a, b = block_cell(base, off_a, n, periodic), block_cell(base, off_b, n, periodic)
        if a >= 0 and b >= 0:
            out.append((a, b))
    return out


# --- work counts (distance checks) from cell occupancies -----------------------------

def _shift(c3: np.ndarray, offset, periodic) -> np.ndarray:
    """out[c] = c3[c + offset]: wrapped on periodic axes, 0 beyond an open axis."""
    out = c3
    for axis, o in enumerate(int(v) for v in offset):
        if o == 0:
            continue
        out = np.roll(out, -o, axis=axis)
        if not periodic[axis]:
            edge = [slice(None)] * 3
            edge[axis] = slice(-1, None) if o > 0 else slice(0, 1)
            out[tuple(edge)] = 0  # np.roll returned a copy
    return out


def fullshell_checks(counts: np.ndarray, n, periodic) -> int:
    """Distance checks of the full-shell traversal: each particle against every particle of its
    (deduplicated) neighbour cells, itself excluded."""
    c3 = counts.reshape(tuple(int(v) for v in n)).astype(np.int64)
    offs = itertools.product(*[axis_offsets(int(n[a]), bool(periodic[a])) for a in range(3)])
    return int(sum((c3 * _shift(c3, o, periodic)).sum() for o in offs) - c3.sum())


def c08_checks(counts: np.ndarray, n, periodic) -> int:
    """Distance checks of c08: each neighbouring cell pair once (na * nb), each cell with
    itself na (na - 1) / 2."""
    c3 = counts.reshape(tuple(int(v) for v in n)).astype(np.int64)
    total = int((c3 * (c3 - 1) // 2).sum())
    for off_a, off_b in C08_PAIRS[1:]:
        total += int((c3 * _shift(c3, off_b - off_a, periodic)).sum())
    return total
