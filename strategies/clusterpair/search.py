"""The cluster-pair search on the CPU: clusters cut from z-sorted x-y columns, their bounding boxes,
the pairs of clusters within r_list with their interaction masks (and a brute-force count for the tests)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


from ..cpu import separation

CLUSTER_CHOICES = (4, 8)


def clusters(pos: np.ndarray, L: np.ndarray, periodic, m: int, density: float):
    """(members (ncl, m) int64 with -1 padding, column of each cluster) for centred positions pos
    (N, 3): x-y columns of side about (m / density)^(1/3), each column's particles sorted by z
    (ties by index) and cut into runs of m."""
    n = len(pos)
    side = (m / max(density, 1e-300)) ** (1.0 / 3.0)
    nx = max(1, int(L[0] // side))
    ny = max(1, int(L[1] // side))
    fx = np.clip(np.floor((pos[:, 0] + 0.5 * L[0]) * (nx / L[0])).astype(np.int64), 0, nx - 1)
    fy = np.clip(np.floor((pos[:, 1] + 0.5 * L[1]) * (ny / L[1])).astype(np.int64), 0, ny - 1)
    col = fx * ny + fy
    order = np.lexsort((np.arange(n), pos[:, 2], col))  # by column, then z, then index
    counts = np.bincount(col, minlength=nx * ny)
    per_col = -(-counts // m)  # clusters per column
    ncl = int(per_col.sum())
    members = np.full((ncl, m), -1, np.int64)
    ccol = np.repeat(np.arange(nx * ny), per_col)
    start = np.concatenate([[0], np.cumsum(counts)])
    cstart = np.concatenate([[0], np.cumsum(per_col)])
    for c in np.nonzero(counts)[0]:
        idx = order[start[c]:start[c + 1]]
        k = len(idx)
        block = np.full(per_col[c] * m, -1, np.int64)
        block[:k] = idx
        members[cstart[c]:cstart[c + 1]] = block.reshape(-1, m)
    return members, ccol, (nx, ny)


@njit(cache=True)
def bounding_boxes(pos, members):
    """(lo, hi) (ncl, 3) of each cluster's real members."""
    ncl, m = members.shape
    lo = np.full((ncl, 3), np.inf)
    hi = np.full((ncl, 3), -np.inf)
    for c in range(ncl):
        for a in range(m):
            i = members[c, a]
            if i < 0:
                continue
            for d in range(3):
                v = float(pos[i, d])
                lo[c, d] = min(lo[c, d], v)
                hi[c, d] = max(hi[c, d], v)
    return lo, hi


@njit(inline="always")
def _gap2(lo, hi, a, b, L, per):
    """Squared distance between the bounding boxes of clusters a and b, the nearest image on
    periodic axes."""
    s = 0.0
    for d in range(3):
        best = np.inf
        for k in (-1.0, 0.0, 1.0):
            if k != 0.0 and not per[d]:
                continue
            sh = k * L[d]
            g = max(0.0, lo[b, d] + sh - hi[a, d], lo[a, d] - hi[b, d] - sh)
            best = min(best, g)
        s += best * best
    return s


@njit(parallel=True, cache=True)
def _count_pairs(lo, hi, L, per, rl2, cand, cand_start, counts):
    ncl = lo.shape[0]
    for a in prange(ncl):
        m = 0
        for t in range(cand_start[a], cand_start[a + 1]):
            if _gap2(lo, hi, a, cand[t], L, per) < rl2:
                m += 1
        counts[a] = m


@njit(parallel=True, cache=True)
def _fill_pairs(lo, hi, L, per, rl2, cand, cand_start, start, jlist):
    ncl = lo.shape[0]
    for a in prange(ncl):
        k = start[a]
        for t in range(cand_start[a], cand_start[a + 1]):
            if _gap2(lo, hi, a, cand[t], L, per) < rl2:
                jlist[k] = cand[t]
                k += 1


@njit(parallel=True, cache=True)
def _masks(pos, members, istart, jlist, box, rl2, masks):
    """Bit a * m + b of an entry: i-member a and j-member b within r_list, both real, not the
    same particle."""
    ncl, m = members.shape
    for c in prange(ncl):
        for e in range(istart[c], istart[c + 1]):
            j = jlist[e]
            bits = np.uint64(0)
            for a in range(m):
                i = members[c, a]
                if i < 0:
                    continue
                for b in range(m):
                    q = members[j, b]
                    if q < 0 or q == i:
                        continue
                    _, _, _, r2 = separation(pos, i, q, box)
                    if r2 < rl2:
                        bits |= np.uint64(1) << np.uint64(a * m + b)
            masks[e] = bits


def search(pos: np.ndarray, members: np.ndarray, ccol: np.ndarray, grid, L: np.ndarray, periodic, rl: float,
           box: np.ndarray):
    """The cluster-pair list: (istart (ncl + 1), jlist, masks) of every pair of clusters whose
    bounding boxes come closer than rl (both orders, a cluster with itself included), the
    candidates taken from the x-y columns within reach."""
    lo, hi = bounding_boxes(pos, members)
    nx, ny = grid
    side = np.array([L[0] / nx, L[1] / ny])
    reach = [int(math.ceil(rl / side[0])), int(math.ceil(rl / side[1]))]
    by_col = [[] for _ in range(nx * ny)]
    for c, col in enumerate(ccol):
        by_col[col].append(c)
    by_col = [np.array(v, np.int64) for v in by_col]
    per = np.array(periodic, np.bool_)
    cand_lists = []
    col_of = np.asarray(ccol)
    for col in range(nx * ny):
        cx, cy = divmod(col, ny)
        xs = sorted({(cx + o) % nx if periodic[0] else cx + o for o in range(-reach[0], reach[0] + 1)
                     if periodic[0] or 0 <= cx + o < nx})
        ys = sorted({(cy + o) % ny if periodic[1] else cy + o for o in range(-reach[1], reach[1] + 1)
                     if periodic[1] or 0 <= cy + o < ny})
        near = [by_col[x * ny + y] for x in xs for y in ys]
        cand_lists.append(np.sort(np.concatenate(near)) if near else np.zeros(0, np.int64))
    ncl = len(members)
    cand_start = np.zeros(ncl + 1, np.int64)
    sizes = np.array([len(cand_lists[col_of[c]]) for c in range(ncl)], np.int64)
    np.cumsum(sizes, out=cand_start[1:])
    cand = np.concatenate([cand_lists[col_of[c]] for c in range(ncl)]) if ncl else np.zeros(0, np.int64)
    counts = np.zeros(ncl, np.int64)
    rl2 = rl * rl
    _count_pairs(lo, hi, L, per, rl2, cand, cand_start, counts)
    istart = np.zeros(ncl + 1, np.int64)
    np.cumsum(counts, out=istart[1:])
    jlist = np.zeros(int(istart[-1]), np.int64)
    _fill_pairs(lo, hi, L, per, rl2, cand, cand_start, istart, jlist)
    masks = np.zeros(len(jlist), np.uint64)
    _masks(pos, members, istart, jlist, box, box.dtype.type(rl2), masks)
    return istart, jlist, masks


def brute_force_pairs(pos: np.ndarray, members: np.ndarray, L: np.ndarray, periodic, rl: float) -> set:
    """Every (a, b) of clusters whose bounding boxes come closer than rl: all pairs tested, for
    the search's unit test."""
    lo, hi = bounding_boxes(pos, members)
    out = set()
    for a in range(len(members)):
        for b in range(len(members)):
            g = 0.0
            for d in range(3):
                shifts = (-L[d], 0.0, L[d]) if periodic[d] else (0.0,)
                g += min(max(0.0, lo[b, d] + s - hi[a, d], lo[a, d] - hi[b, d] - s) for s in shifts) ** 2
            if g < rl * rl:
                out.add((a, b))
    return out


