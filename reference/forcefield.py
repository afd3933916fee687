"""Float64 reference for typed particles and point charges (mdcore.forcefield): every pair i < j
under the minimum image, from the formulas of the force-field file, written independently of any
strategy's pair code.

Per pair at distance r (r_ij = r_i - r_j, f_ij = (F/r) r_ij the force on i):
  Lennard-Jones, r < rc_ab:   u = 4 eps_ab (s^12 - s^6) - u_shift,ab   with s = sigma_ab / r
                              F/r = 24 eps_ab (2 s^12 - s^6) / r^2
  reaction field, r < rc:     u = k q_i q_j (1/r + k_rf r^2 - c_rf),   F/r = k q_i q_j (1/r^3 - 2 k_rf)
  Ewald real space, r < rc:   u = k q_i q_j erfc(alpha r) / r
                              F/r = k q_i q_j (erfc(alpha r) / r + 2 alpha / sqrt(pi) exp(-alpha^2 r^2)) / r^2
A pair counts as an interaction where it lies within either cutoff that applies to it.

Each particle's sums run over its partners in a fixed order (all others in index order, or the
neighbour cells' particles), so the result is the same whatever the thread count; energy and virial
take each pair once (j > i) and are summed in index order. Besides the sums, what verification
needs (reference.Reference): the pairs within rounding of a cutoff per precision, what one pair
crossing a cutoff changes, the scales of the sums and the closest interacting pair.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .pairsum import bin_particles, cell_grid, cutoff_band, neighbour_cells

METHOD_CODE = {"none": 0, "reaction-field": 1, "ewald": 2}
# per-particle float columns: force x, y, z, energy (pairs j > i), |u|, |r . f|, virial xx xy xz yy yz zz,
# closest interacting r^2; integer columns: pairs (j > i), partners near a cutoff in float and in double
_F, _E, _EABS, _WABS, _W, _RMIN, _NCOL = 0, 3, 4, 5, 6, 12, 13
_PAIRS, _NEAR32, _NEAR64 = 0, 1, 2


@njit(inline="always")
def _visit(x, L, periodic, i, j, types, q, sig2, eps4, eps24, rc2_lj, ushift, band32_lj, band64_lj, method, k,
           k_rf, c_rf, alpha, rc2_c, band32_c, band64_c, acc, cnt):
    """The ordered pair (i, j): its force into row i, its energy and virial there where j > i."""
    d0 = x[i, 0] - x[j, 0]
    d1 = x[i, 1] - x[j, 1]
    d2 = x[i, 2] - x[j, 2]
    if periodic[0]:
        d0 -= L[0] * np.rint(d0 / L[0])
    if periodic[1]:
        d1 -= L[1] * np.rint(d1 / L[1])
    if periodic[2]:
        d2 -= L[2] * np.rint(d2 / L[2])
    r2 = d0 * d0 + d1 * d1 + d2 * d2
    ti = types[i]
    tj = types[j]
    gap = abs(r2 - rc2_lj[ti, tj])
    if gap <= band32_lj[ti, tj]:
        cnt[i, _NEAR32] += 1
    if gap <= band64_lj[ti, tj]:
        cnt[i, _NEAR64] += 1
    if method != 0:
        gap = abs(r2 - rc2_c)
        if gap <= band32_c:
            cnt[i, _NEAR32] += 1
        if gap <= band64_c:
            cnt[i, _NEAR64] += 1
    fr = 0.0
    u = 0.0
    inside = False
    if r2 < rc2_lj[ti, tj]:
        inside = True
        s2 = sig2[ti, tj] / r2
        s6 = s2 * s2 * s2
        u += eps4[ti, tj] * s6 * (s6 - 1.0) - ushift[ti, tj]
        fr += eps24[ti, tj] * s6 * (2.0 * s6 - 1.0) / r2
    if method != 0 and r2 < rc2_c:
        inside = True
        qq = k * q[i] * q[j]
        r = math.sqrt(r2)
        if method == 1:
            u += qq * (1.0 / r + k_rf * r2 - c_rf)
            fr += qq * (1.0 / (r2 * r) - 2.0 * k_rf)
        else:
            e = math.erfc(alpha * r)
            u += qq * e / r
            fr += qq * (e / r + 2.0 / math.sqrt(math.pi) * alpha * math.exp(-alpha * alpha * r2)) / r2
    if not inside:
        return
    acc[i, _F] += fr * d0
    acc[i, _F + 1] += fr * d1
    acc[i, _F + 2] += fr * d2
    if j > i:
        cnt[i, _PAIRS] += 1
        acc[i, _E] += u
        acc[i, _EABS] += abs(u)
        acc[i, _WABS] += abs(fr) * r2
        acc[i, _W] += d0 * d0 * fr
        acc[i, _W + 1] += d0 * d1 * fr
        acc[i, _W + 2] += d0 * d2 * fr
        acc[i, _W + 3] += d1 * d1 * fr
        acc[i, _W + 4] += d1 * d2 * fr
        acc[i, _W + 5] += d2 * d2 * fr
        if r2 < acc[i, _RMIN]:
            acc[i, _RMIN] = r2


@njit(parallel=True, cache=True)
def _direct(x, L, periodic, types, q, sig2, eps4, eps24, rc2_lj, ushift, b32, b64, method, k, k_rf, c_rf, alpha,
            rc2_c, b32c, b64c):
    n = x.shape[0]
    acc = np.zeros((n, _NCOL))
    acc[:, _RMIN] = np.inf
    cnt = np.zeros((n, 3), np.int64)
    for i in prange(n):
        for j in range(n):
            if j != i:
                _visit(x, L, periodic, i, j, types, q, sig2, eps4, eps24, rc2_lj, ushift, b32, b64, method, k, k_rf,
                       c_rf, alpha, rc2_c, b32c, b64c, acc, cnt)
    return acc, cnt


@njit(parallel=True, cache=True)
def _cells(x, L, periodic, nc, cell_of, start, order, types, q, sig2, eps4, eps24, rc2_lj, ushift, b32, b64, method,
           k, k_rf, c_rf, alpha, rc2_c, b32c, b64c):
    n = x.shape[0]
    acc = np.zeros((n, _NCOL))
    acc[:, _RMIN] = np.inf
    cnt = np.zeros((n, 3), np.int64)
    for si in prange(n):
        i = order[si]
        cells = np.empty(27, np.int64)
        m = neighbour_cells(cell_of[i], nc, periodic, cells)
        for c in range(m):
            for s in range(start[cells[c]], start[cells[c] + 1]):
                j = order[s]
                if j != i:
                    _visit(x, L, periodic, i, j, types, q, sig2, eps4, eps24, rc2_lj, ushift, b32, b64, method, k,
                           k_rf, c_rf, alpha, rc2_c, b32c, b64c, acc, cnt)
    return acc, cnt


def _bands(eps: float, L: np.ndarray, rc2) -> np.ndarray:
    return np.vectorize(lambda r: cutoff_band(eps, L, float(r)))(rc2)


def cutoff_jump(ff, charges) -> dict:
    """What one pair crossing its cutoff changes at most: |F|, |U| and r |F| there, the Lennard-Jones
    term's largest over the type pairs plus the charges' (the largest |k q_i q_j|)."""
    if ff.lj:
        rc = ff.pair_cutoff
        s6 = (ff.pair_sigma / rc) ** 6
        f_lj = np.abs(24.0 * ff.pair_epsilon * s6 * (2.0 * s6 - 1.0) / rc)
        u_lj = np.abs(4.0 * ff.pair_epsilon * s6 * (s6 - 1.0) - ff.lj_shift())
        jump = {"force": float(f_lj.max()), "energy": float(u_lj.max()), "virial": float((f_lj * rc).max())}
    else:  # point charges only
        jump = {"force": 0.0, "energy": 0.0, "virial": 0.0}
    if ff.method != "none" and charges is not None and len(charges):
        qq = abs(ff.coulomb_constant) * float(np.max(np.abs(charges))) ** 2
        r = ff.coulomb_cutoff
        if ff.method == "reaction-field":
            f_c, u_c = qq * abs(1.0 / r ** 2 - 2.0 * ff.k_rf * r), qq * abs(1.0 / r + ff.k_rf * r * r - ff.c_rf)
        else:
            e = math.erfc(ff.alpha * r)
            f_c = qq * (e / r ** 2 + 2.0 / math.sqrt(math.pi) * ff.alpha * math.exp(-(ff.alpha * r) ** 2) / r)
            u_c = qq * e / r
        jump = {"force": jump["force"] + f_c, "energy": jump["energy"] + u_c, "virial": jump["virial"] + f_c * r}
    return jump


def reference(positions, lengths, periodic, types, charges, ff, method: str = "auto") -> dict:
    """Everything reference.Reference holds, in float64: forces (N, 3), energy, virial (3, 3), pairs
    (interactions i < j), near_cutoff and near_per_particle (pairs within rounding of a cutoff, per
    precision), cutoff_jump, energy_abs, virial_abs, r_min, method (direct or cells)."""
    x = np.ascontiguousarray(positions, dtype=np.float64)
    n = len(x)
    L = np.asarray(lengths, np.float64)
    per = np.asarray(periodic, np.bool_)
    t = np.ascontiguousarray(types if types is not None else np.zeros(n), dtype=np.int64)
    q = np.ascontiguousarray(charges if charges is not None else np.zeros(n), dtype=np.float64)
    rc_c = ff.coulomb_cutoff or 0.0
    rc2_lj = np.ascontiguousarray(ff.pair_cutoff ** 2)
    e32, e64 = float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
    coul = ff.method != "none"
    args = (t, q, np.ascontiguousarray(ff.pair_sigma ** 2), 4.0 * ff.pair_epsilon, 24.0 * ff.pair_epsilon, rc2_lj,
            np.ascontiguousarray(ff.lj_shift()), _bands(e32, L, rc2_lj), _bands(e64, L, rc2_lj),
            METHOD_CODE[ff.method], float(ff.coulomb_constant), float(ff.k_rf), float(ff.c_rf),
            float(ff.alpha or 0.0), rc_c * rc_c, cutoff_band(e32, L, rc_c * rc_c) if coul else 0.0,
            cutoff_band(e64, L, rc_c * rc_c) if coul else 0.0)
    if method == "auto":
        method = "direct" if n < 2000 else "cells"
    if method == "direct":
        acc, cnt = _direct(x, L, per, *args)
    elif method == "cells":
        side = max(ff.cutoff, (float(np.prod(L)) / (2.0 * max(n, 1))) ** (1.0 / 3.0))
        nc = cell_grid(L, side)
        cell, start, order = bin_particles(x, L, nc)
        acc, cnt = _cells(x, L, per, nc, cell, start, order, *args)
    else:
        raise ValueError(f"unknown reference method {method!r}; known: auto, direct, cells")
    w = np.zeros(6)
    energy = energy_abs = virial_abs = 0.0
    for i in range(n):  # index order: the same sums whatever the threads did
        energy += acc[i, _E]
        energy_abs += acc[i, _EABS]
        virial_abs += acc[i, _WABS]
        w += acc[i, _W:_W + 6]
    virial = np.array([[w[0], w[1], w[2]], [w[1], w[3], w[4]], [w[2], w[4], w[5]]])
    near = cnt.sum(axis=0) if n else np.zeros(3, np.int64)
    return {"forces": acc[:, _F:_F + 3].copy(), "energy": float(energy), "virial": virial,
            "pairs": int(cnt[:, _PAIRS].sum()),
            "near_cutoff": {"fp32": int(near[_NEAR32]) // 2, "fp64": int(near[_NEAR64]) // 2},
            "near_per_particle": {"fp32": cnt[:, _NEAR32].astype(np.int32), "fp64": cnt[:, _NEAR64].astype(np.int32)},
            "cutoff_jump": cutoff_jump(ff, charges), "energy_abs": float(energy_abs), "virial_abs": float(virial_abs),
            "r_min": math.sqrt(float(acc[:, _RMIN].min())) if n else math.inf, "method": method}


def compute(positions, lengths, periodic, types, charges, ff, method: str = "auto") -> dict:
    """forces (N, 3), energy, virial (3, 3) and pairs (interactions i < j) in float64."""
    out = reference(positions, lengths, periodic, types, charges, ff, method)
    return {k: out[k] for k in ("forces", "energy", "virial", "pairs")}
