"""The closest pair of particles below a distance, in O(N): what Problem.make refuses.

Two particles at one position have no pair direction, and closer than a potential's
min_distance(precision) their pair terms overflow the compute type: every kernel would return
inf or NaN (or, in the CPU strategies, raise from inside numba). A problem is checked once, on
construction, for pairs closer than the largest such distance of its potential over the precision
modes; each mode then compares the closest pair with its own distance.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(inline="always")
def min_image_r2(pos, i, j, L, per):
    """|r_i - r_j|^2 in float64, minimum image along the periodic axes."""
    r2 = 0.0
    for a in range(3):
        d = pos[i, a] - pos[j, a]
        if per[a]:
            d -= L[a] * np.rint(d / L[a])
        r2 += d * d
    return r2


@njit(inline="always")
def _scan(a0, a1, b0, b1, order, pos, L, per, best):
    """Pairs (i, j), i < j, between the particles order[a0:a1] and order[b0:b1]; best = [r2, i, j]."""
    for x in range(a0, a1):
        i = order[x]
        for y in range(b0, b1):
            j = order[y]
            if j <= i:
                continue
            r2 = min_image_r2(pos, i, j, L, per)
            if r2 < best[0]:
                best[0], best[1], best[2] = r2, i, j


@njit(cache=True)
def _closest_below(pos, L, per, r_check):
    """(i, j, r) of the closest pair with r < r_check (minimum image on periodic axes), i < j;
    (-1, -1, inf) when there is none.

    Cells of side s >= r_check (and >= the largest length / 2^20), only the occupied ones: the
    particles sorted by cell key, each occupied cell finding its neighbours' runs by binary
    search along z-columns. O(N log N) time and O(N) memory whatever the density contrast (a
    Gaussian clump in a large box)."""
    n = pos.shape[0]
    best = np.array([r_check * r_check, -1.0, -1.0])
    if n < 2 or not r_check > 0.0:
        return -1, -1, math.inf
    s = max(r_check, max(L[0], max(L[1], L[2])) / (1 << 20))
    ng = np.empty(3, np.int64)
    for a in range(3):
        ng[a] = max(1, int(L[a] / s))
    keys = np.empty(n, np.int64)
    for i in range(n):
        k = 0
        for a in range(3):
            g = int(pos[i, a] / L[a] * ng[a])
            k = k * ng[a] + min(max(g, 0), ng[a] - 1)
        keys[i] = k
    order = np.argsort(keys, kind="mergesort")
    sk = keys[order]
    m = 1
    for x in range(1, n):
        if sk[x] != sk[x - 1]:
            m += 1
    ckey = np.empty(m, np.int64)
    cstart = np.empty(m + 1, np.int64)
    c = 0
    ckey[0], cstart[0] = sk[0], 0
    for x in range(1, n):
        if sk[x] != sk[x - 1]:
            c += 1
            ckey[c], cstart[c] = sk[x], x
    cstart[m] = n
    ptr = np.zeros(9, np.int64)  # per (x, y) neighbour column: where its last search ended
    for c in range(m):
        k = ckey[c]
        g2 = k % ng[2]
        g1 = (k // ng[2]) % ng[1]
        g0 = k // (ng[1] * ng[2])
        # z neighbours as runs of keys: [z_lo, z_hi], plus the wrapped cell at a periodic edge
        z_lo, z_hi, z_wrap = max(g2 - 1, 0), min(g2 + 1, ng[2] - 1), -1
        if per[2] and ng[2] >= 3:
            if g2 == 0:
                z_wrap = ng[2] - 1
            elif g2 == ng[2] - 1:
                z_wrap = 0
        col = -1
        for ox in range(-1, 2):
            h0 = g0 + ox
            if per[0]:
                if ng[0] < 3 and (ox < 0 or ox >= ng[0]):
                    continue
                h0 %= ng[0]
            elif h0 < 0 or h0 >= ng[0]:
                continue
            for oy in range(-1, 2):
                col = (ox + 1) * 3 + oy + 1
                h1 = g1 + oy
                if per[1]:
                    if ng[1] < 3 and (oy < 0 or oy >= ng[1]):
                        continue
                    h1 %= ng[1]
                elif h1 < 0 or h1 >= ng[1]:
                    continue
                base = (h0 * ng[1] + h1) * ng[2]
                lo = base + z_lo
                d = ptr[col]
                if d < m and ckey[d] <= lo:  # gallop forward from the last position
                    step = 1
                    while d + step < m and ckey[d + step] < lo:
                        d += step
                        step *= 2
                    d += np.searchsorted(ckey[d:min(d + step + 1, m)], lo)
                else:  # the column wrapped around: search afresh
                    d = np.searchsorted(ckey, lo)
                ptr[col] = d
                while d < m and ckey[d] <= base + z_hi:
                    _scan(cstart[c], cstart[c + 1], cstart[d], cstart[d + 1], order, pos, L, per, best)
                    d += 1
                if z_wrap >= 0:
                    d = np.searchsorted(ckey, base + z_wrap)
                    if d < m and ckey[d] == base + z_wrap:
                        _scan(cstart[c], cstart[c + 1], cstart[d], cstart[d + 1], order, pos, L, per, best)
    if best[1] < 0.0:
        return -1, -1, math.inf
    return int(best[1]), int(best[2]), math.sqrt(best[0])


def closest_below(positions: np.ndarray, lengths: np.ndarray, periodic, r_check: float) -> tuple[int, int, float]:
    """The closest pair closer than r_check: (i, j, distance), or (-1, -1, inf)."""
    pos = np.ascontiguousarray(positions, dtype=np.float64)
    i, j, r = _closest_below(pos, np.asarray(lengths, dtype=np.float64), np.asarray(periodic, dtype=np.bool_),
                             float(r_check))
    return int(i), int(j), float(r)
