"""Float64 reference on the CPU (numba), written independently of the strategies: any
registered potential through its own float64 formula (`Potential.reference_pair`).

Two traversals with the same per-pair arithmetic, so that each checks the other:
  direct(...)  every ordered pair i != j, O(N^2);
  cells(...)   a float64 cell list with cell side >= cutoff and deduplicated neighbour cells
               (correct for 1 or 2 cells along a periodic axis as well).

Both return per-particle sums, reduced in float64 by `_finish`. Each ordered pair (i, j) adds
the pair's force to i and half of its energy and virial, so every unordered pair contributes
once in total. Pairs are counted for i < j only.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

# Per-particle accumulator columns.
_E, _EABS, _WABS = 0, 1, 2  # energy, sum |u|, sum |r f|
_W = 3                      # 9 virial components follow, row-major
_NACC = _W + 9
# Per-particle integer counters.
_PAIRS, _NEAR32, _NEAR64 = 0, 1, 2


@njit(inline="always")
def _pair(d0, d1, d2, r2, i, j, formula, consts, rc2, band32, band64, acc, cnt, frc):
    """Accumulate the ordered pair (i, j) into row i; d = r_i - r_j. formula(r2, c) -> (|F|/r, u)."""
    gap = abs(r2 - rc2)
    if gap <= band32:
        cnt[i, _NEAR32] += 1  # per particle: ambiguous partners of i (each pair counted on both sides)
    if gap <= band64:
        cnt[i, _NEAR64] += 1
    if r2 < rc2:
        fr, u = formula(r2, consts)  # |F| / r, positive = repulsive
        frc[i, 0] += fr * d0
        frc[i, 1] += fr * d1
        frc[i, 2] += fr * d2
        acc[i, _E] += 0.5 * u
        acc[i, _EABS] += 0.5 * abs(u)
        acc[i, _WABS] += 0.5 * abs(fr) * r2
        acc[i, _W + 0] += 0.5 * fr * d0 * d0
        acc[i, _W + 1] += 0.5 * fr * d0 * d1
        acc[i, _W + 2] += 0.5 * fr * d0 * d2
        acc[i, _W + 3] += 0.5 * fr * d1 * d0
        acc[i, _W + 4] += 0.5 * fr * d1 * d1
        acc[i, _W + 5] += 0.5 * fr * d1 * d2
        acc[i, _W + 6] += 0.5 * fr * d2 * d0
        acc[i, _W + 7] += 0.5 * fr * d2 * d1
        acc[i, _W + 8] += 0.5 * fr * d2 * d2
        if j > i:
            cnt[i, _PAIRS] += 1
            if r2 < acc[i, _NACC]:
                acc[i, _NACC] = r2


@njit(inline="always")
def _wrap(d, length, periodic):
    if periodic:
        return d - length * np.rint(d / length)
    return d


@njit(inline="always")
def _visit(pos, L, per, i, j, formula, consts, rc2, band32, band64, acc, cnt, frc):
    """The ordered pair (i, j): minimum-image separation, then _pair."""
    d0 = _wrap(pos[i, 0] - pos[j, 0], L[0], per[0])
    d1 = _wrap(pos[i, 1] - pos[j, 1], L[1], per[1])
    d2 = _wrap(pos[i, 2] - pos[j, 2], L[2], per[2])
    _pair(d0, d1, d2, d0 * d0 + d1 * d1 + d2 * d2, i, j, formula, consts, rc2, band32, band64, acc, cnt, frc)


@njit(parallel=True)  # no cache: the formula argument specialises it per potential
def _direct(pos, L, per, formula, consts, rc2, band32, band64):
    n = pos.shape[0]
    frc = np.zeros((n, 3))
    acc = np.zeros((n, _NACC + 1))
    acc[:, _NACC] = np.inf
    cnt = np.zeros((n, 3), dtype=np.int64)
    for i in prange(n):
        for j in range(n):
            if j != i:
                _visit(pos, L, per, i, j, formula, consts, rc2, band32, band64, acc, cnt, frc)
    return frc, acc, cnt


@njit(cache=True)
def neighbour_cells(c, nc, per, out):
    """The cells next to cell c (itself included) of a grid of nc cells per axis into out (27,),
    deduplicated (2 or 1 cells along a periodic axis), none beyond an open axis; returns how many."""
    cz = c % nc[2]
    cy = (c // nc[2]) % nc[1]
    cx = c // (nc[2] * nc[1])
    nb = np.empty((3, 3), dtype=np.int64)
    m = np.zeros(3, dtype=np.int64)
    own = (cx, cy, cz)
    for a in range(3):
        for o in (-1, 0, 1):
            k = own[a] + o
            if per[a]:
                k = k % nc[a]
            elif k < 0 or k >= nc[a]:
                continue
            dup = False
            for t in range(m[a]):
                if nb[a, t] == k:
                    dup = True
            if not dup:
                nb[a, m[a]] = k
                m[a] += 1
    count = 0
    for ax in range(m[0]):
        for ay in range(m[1]):
            for az in range(m[2]):
                out[count] = (nb[0, ax] * nc[1] + nb[1, ay]) * nc[2] + nb[2, az]
                count += 1
    return count


@njit(parallel=True)  # no cache: the formula argument specialises it per potential
def _cells(pos, L, per, nc, cell_of, start, order, formula, consts, rc2, band32, band64):
    n = pos.shape[0]
    frc = np.zeros((n, 3))
    acc = np.zeros((n, _NACC + 1))
    acc[:, _NACC] = np.inf
    cnt = np.zeros((n, 3), dtype=np.int64)
    for si in prange(n):
        i = order[si]  # walk particles cell by cell: neighbours stay in cache
        cells = np.empty(27, dtype=np.int64)
        m = neighbour_cells(cell_of[i], nc, per, cells)
        for c in range(m):
            for s in range(start[cells[c]], start[cells[c] + 1]):
                j = order[s]
                if j != i:
                    _visit(pos, L, per, i, j, formula, consts, rc2, band32, band64, acc, cnt, frc)
    return frc, acc, cnt


def cell_grid(lengths: np.ndarray, cutoff: float) -> np.ndarray:
    """Cells per axis with side >= cutoff (at least one cell per axis)."""
    nc = np.maximum(1, np.floor(lengths / cutoff)).astype(np.int64)
    for a in range(3):
        while nc[a] > 1 and lengths[a] / nc[a] < cutoff:  # floor() may round up at L = k * rc
            nc[a] -= 1
    return nc


def bin_particles(pos: np.ndarray, lengths: np.ndarray, nc: np.ndarray):
    """Cell index of each particle, CSR start offsets, particles sorted by cell."""
    idx = np.floor(pos / (lengths / nc)).astype(np.int64)
    idx = np.clip(idx, 0, nc - 1)  # x == L on an open axis, or rounding at the edge
    cell = (idx[:, 0] * nc[1] + idx[:, 1]) * nc[2] + idx[:, 2]
    order = np.argsort(cell, kind="stable")
    counts = np.bincount(cell, minlength=int(np.prod(nc)))
    start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return cell, start, order


def cutoff_band(eps: float, lengths: np.ndarray, rc2: float) -> float:
    """Half-width in r^2 within which a kernel of machine epsilon `eps` may classify a pair
    either way: coordinates rounded to |x| <= L (relative eps each), a difference of two, the
    minimum-image correction, then r^2 from three squares (generous by a factor of about 2)."""
    if not math.isfinite(rc2):
        return 0.0
    rc = math.sqrt(rc2)
    return 2.0 * rc * math.sqrt(3.0) * 4.0 * eps * float(np.max(lengths)) + 8.0 * eps * rc2


def pair_sums(pos: np.ndarray, lengths: np.ndarray, periodic, formula, constants: np.ndarray,
              cutoff: float | None, method: str = "auto") -> dict:
    """Float64 forces of any pair potential. pos (N, 3) float64 inside the box; lengths (3,);
    periodic 3 bools; formula(r2, constants) -> (|F|/r, u), a numba function in float64.

    Returns dict: forces (N, 3), energy, virial (3, 3) (W = sum r_ij f_ij^T), pairs,
    near_cutoff {'fp32', 'fp64'} (pairs within rounding of the cutoff for that precision) and
    near_per_particle (the same per particle, as ambiguous partners), cutoff_jump (what one
    pair crossing the cutoff changes: |F(rc)|, |U(rc)|, rc |F(rc)|), energy_abs (sum |u|),
    virial_abs (sum |r_ij . f_ij|), r_min (closest interacting pair).
    """
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    L = np.ascontiguousarray(lengths, dtype=np.float64)
    per = np.array(periodic, dtype=np.bool_)
    c = np.ascontiguousarray(constants, dtype=np.float64)
    rc2 = math.inf if cutoff is None else float(cutoff) ** 2
    band32 = cutoff_band(np.finfo(np.float32).eps, L, rc2)
    band64 = cutoff_band(np.finfo(np.float64).eps, L, rc2)
    args = (formula, c, rc2, band32, band64)
    if method == "auto":
        method = "direct" if cutoff is None or len(pos) < 2000 else "cells"
    if method == "direct":
        frc, acc, cnt = _direct(pos, L, per, *args)
    elif method == "cells":
        if cutoff is None:
            raise ValueError("the cell-list reference needs a cutoff")
        # cells of side >= cutoff, and no more cells than twice the particles: a sparse box
        # (a clump in a large box) would otherwise allocate per-cell arrays of gigabytes
        side = max(float(cutoff), (float(np.prod(L)) / (2.0 * max(len(pos), 1))) ** (1.0 / 3.0))
        nc = cell_grid(L, side)
        cell, start, order = bin_particles(pos, L, nc)
        frc, acc, cnt = _cells(pos, L, per, nc, cell, start, order, *args)
    else:
        raise ValueError(f"unknown reference method {method!r}; known: auto, direct, cells")
    sums = acc[:, :_NACC].sum(axis=0) if len(pos) else np.zeros(_NACC)
    totals = cnt.sum(axis=0) if len(pos) else np.zeros(3, dtype=np.int64)
    rmin2 = float(acc[:, _NACC].min()) if len(pos) else math.inf
    # what a pair crossing the cutoff changes: the truncated potential jumps there
    jump = {"force": 0.0, "energy": 0.0, "virial": 0.0}
    if cutoff is not None:
        fr, u = formula(rc2, c)
        f_rc = abs(fr) * cutoff  # |F(rc)|; a pair at the cutoff adds rc |F(rc)| to the virial's trace
        jump = {"force": f_rc, "energy": abs(u), "virial": f_rc * cutoff}
    return {
        "forces": frc,
        "energy": float(sums[_E]),
        "virial": sums[_W:_W + 9].reshape(3, 3).copy(),
        "pairs": int(totals[_PAIRS]),
        "near_cutoff": {"fp32": int(totals[_NEAR32]) // 2, "fp64": int(totals[_NEAR64]) // 2},
        "near_per_particle": {"fp32": cnt[:, _NEAR32].astype(np.int32), "fp64": cnt[:, _NEAR64].astype(np.int32)},
        "cutoff_jump": jump,
        "energy_abs": float(sums[_EABS]),
        "virial_abs": float(sums[_WABS]),
        "r_min": math.sqrt(rmin2),
        "method": method,
    }
