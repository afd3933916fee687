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
    """Cells per axis (int64, >= 1) with side L / n >= cutoff * factor (factor < 1: cells smaller
    than the cutoff, for traversals that reach more than one cell)."""
    if not factor > 0.0 or not math.isfinite(factor):
        raise ValueError(f"cell-size factor must be a positive number, got {factor}")
    L = np.asarray(lengths, dtype=np.float64)
    want = cutoff * factor
    n = np.maximum(1, np.floor(L / want)).astype(np.int64)
    for a in range(3):
        while n[a] > 1 and L[a] / n[a] < want:  # floor() may round up at L = k * want
            n[a] -= 1
    return n


def linear(c, n) -> int:
    return int((c[0] * n[1] + c[1]) * n[2] + c[2])


def axis_offsets(n_axis: int, periodic: bool, reach: int = 1) -> tuple[int, ...]:
    """Full-shell offsets along one axis, without naming one cell twice (reach 1: -1, 0, 1;
    cells smaller than the cutoff reach further, on periodic axes of at least 2 reach + 1 cells)."""
    if reach > 1:
        return tuple(range(-reach, reach + 1))
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
                           "(a base step would meet its own image); enlarge the box or use a full-shell strategy")
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
            edge[axis] = slice(-o, None) if o > 0 else slice(0, -o)
            out[tuple(edge)] = 0  # np.roll returned a copy
    return out


def fullshell_checks(counts: np.ndarray, n, periodic, reach: int = 1) -> int:
    """Distance checks of the full-shell traversal: each particle against every particle of its
    (deduplicated) neighbour cells, itself excluded."""
    c3 = counts.reshape(tuple(int(v) for v in n)).astype(np.int64)
    offs = itertools.product(*[axis_offsets(int(n[a]), bool(periodic[a]), reach) for a in range(3)])
    return int(sum((c3 * _shift(c3, o, periodic)).sum() for o in offs) - c3.sum())


def c08_checks(counts: np.ndarray, n, periodic) -> int:
    """Distance checks of c08: each neighbouring cell pair once (na * nb), each cell with
    itself na (na - 1) / 2."""
    c3 = counts.reshape(tuple(int(v) for v in n)).astype(np.int64)
    total = int((c3 * (c3 - 1) // 2).sum())
    for off_a, off_b in C08_PAIRS[1:]:
        total += int((c3 * _shift(c3, off_b - off_a, periodic)).sum())
    return total


# --- parity-plane domain traverser (ls1-MarDyn CUDA port) ------------------------------
#
# The 13 directions d of one half space (first non-zero component +1): every unordered pair
# of neighbouring cells is {c, c + d} for exactly one of them. For a direction, its layer axis
# l is the first axis with d[l] != 0; the cells A of one launch lie in the layers of one
# parity along l, and B = A + d lies in the next layer, so no cell is in two pairs of a launch.
# Along a periodic layer axis with an odd number of cells the last layer meets layer 0 through
# the boundary: it gets a launch of its own. One more launch (d = 0) is the intra-cell pass.
#
# As in the port, the host gives each launch the first cell A (start), the 2D grid of a layer
# (du x dv), the number of layers, the offsets of one step along u, v and to the next layer of
# the same parity (grid offsets) and the direction; the kernel wraps B on periodic axes.

PARITY_DIRECTIONS = np.array([d for d in itertools.product((-1, 0, 1), repeat=3)
                              if any(d) and d[next(a for a in range(3) if d[a])] == 1], dtype=np.int32)

LAYER_DTYPE = np.dtype([(f, np.int32) for f in ("start", "du", "dv", "nl", "gu", "gv", "gl", "dx", "dy", "dz")])


def parity_applicable(n, periodic) -> tuple[bool, str]:
    for a, axis in enumerate("xyz"):
        if periodic[a] and n[a] < 3:
            return False, (f"the parity traverser needs at least 3 cells along a periodic axis, {axis} has "
                           f"{int(n[a])} (a cell would pair with its own image twice); enlarge the box or use "
                           "a full-shell strategy")
    return True, ""


def _strides(n) -> tuple[int, int, int]:
    return int(n[1]) * int(n[2]), int(n[2]), 1


def _axis_extent(n_axis: int, periodic: bool, d: int) -> tuple[int, int]:
    """First coordinate and count of cells A along a non-layer axis with B = A + d inside."""
    if periodic or d == 0:
        return 0, n_axis
    return (0, n_axis - 1) if d > 0 else (1, n_axis - 1)


def _layers(n_axis: int, periodic: bool) -> list[tuple[int, int]]:
    """(first layer, number of layers) per launch along the layer axis, stride 2."""
    if periodic:
        if n_axis % 2 == 0:
            return [(0, n_axis // 2), (1, n_axis // 2)]
        return [(0, (n_axis - 1) // 2), (1, (n_axis - 1) // 2), (n_axis - 1, 1)]
    last = n_axis - 2  # the last layer whose neighbour layer exists
    return [(p, (last - p) // 2 + 1) for p in (0, 1) if p <= last]


def parity_launches(n, periodic) -> np.ndarray:
    """The launches of one traversal (LAYER_DTYPE records): the intra-cell pass first, then per
    direction the even, odd (and, on an odd periodic layer axis, boundary) layers. Launches
    without cells are left out."""
    ok, why = parity_applicable(n, periodic)
    if not ok:
        raise ValueError(why)
    n = [int(v) for v in n]
    st = _strides(n)
    out = [(0, n[2], n[1], n[0], st[2], st[1], st[0], 0, 0, 0)]
    for d in PARITY_DIRECTIONS:
        l = next(a for a in range(3) if d[a])
        u, v = [a for a in range(3) if a != l]
        u0, du = _axis_extent(n[u], bool(periodic[u]), int(d[u]))
        v0, dv = _axis_extent(n[v], bool(periodic[v]), int(d[v]))
        if du <= 0 or dv <= 0:
            continue
        for first, nl in _layers(n[l], bool(periodic[l])):
            if nl <= 0:
                continue
            origin = [0, 0, 0]
            origin[l], origin[u], origin[v] = first, u0, v0
            out.append((linear(origin, n), du, dv, nl, st[u], st[v], 2 * st[l], *map(int, d)))
    return np.array(out, dtype=LAYER_DTYPE)


def layer_pairs(layer, n, periodic) -> list[tuple[int, int]]:
    """The (A, B) cell pairs of one launch, decoded as the kernels decode them (block or job
    index -> grid position -> A; B = A + d wrapped). A == B: the intra-cell pass."""
    n = [int(v) for v in n]
    out = []
    for idx in range(int(layer["du"]) * int(layer["dv"]) * int(layer["nl"])):
        iu, iv, il = idx % layer["du"], (idx // layer["du"]) % layer["dv"], idx // (layer["du"] * layer["dv"])
        a = int(layer["start"] + iu * layer["gu"] + iv * layer["gv"] + il * layer["gl"])
        c = [a // (n[1] * n[2]), (a // n[2]) % n[1], a % n[2]]
        e = []
        for ax, dd in enumerate((layer["dx"], layer["dy"], layer["dz"])):
            k = c[ax] + int(dd)
            if periodic[ax]:
                k %= n[ax]
            assert 0 <= k < n[ax], "the host clipped A so that B lies inside open axes"
            e.append(k)
        out.append((a, linear(e, n)))
    return out
