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

Each particle's sums run over all others (its own loop, in index order), so the result is the same
whatever the thread count; energy and virial take each pair once (j > i) and are summed in index
order.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

METHOD_CODE = {"none": 0, "reaction-field": 1, "ewald": 2}


@njit(parallel=True, cache=True)
def _sums(x, L, periodic, types, q, sig2, eps4, eps24, rc2_lj, ushift, method, k, k_rf, c_rf, alpha, rc2_c):
    n = x.shape[0]
    f = np.zeros((n, 3))
    u_i = np.zeros(n)
    w_i = np.zeros((n, 6))  # xx, xy, xz, yy, yz, zz of the pairs j > i
    cnt = np.zeros(n, np.int64)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for i in prange(n):
        ti = types[i]
        qi = q[i]
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for j in range(n):
            if j == i:
                continue
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
            tj = types[j]
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
                qq = k * qi * q[j]
                r = math.sqrt(r2)
                if method == 1:
                    u += qq * (1.0 / r + k_rf * r2 - c_rf)
                    fr += qq * (1.0 / (r2 * r) - 2.0 * k_rf)
                else:
                    e = math.erfc(alpha * r)
                    u += qq * e / r
                    fr += qq * (e / r + two_over_sqrt_pi * alpha * math.exp(-alpha * alpha * r2)) / r2
            if not inside:
                continue
            fx += fr * d0
            fy += fr * d1
            fz += fr * d2
            if j > i:
                u_i[i] += u
                cnt[i] += 1
                w_i[i, 0] += d0 * d0 * fr
                w_i[i, 1] += d0 * d1 * fr
                w_i[i, 2] += d0 * d2 * fr
                w_i[i, 3] += d1 * d1 * fr
                w_i[i, 4] += d1 * d2 * fr
                w_i[i, 5] += d2 * d2 * fr
        f[i, 0] = fx
        f[i, 1] = fy
        f[i, 2] = fz
    return f, u_i, w_i, cnt


def compute(positions, lengths, periodic, types, charges, ff) -> dict:
    """forces (N, 3), energy, virial (3, 3) and pairs (interactions i < j) in float64."""
    x = np.ascontiguousarray(positions, dtype=np.float64)
    n = len(x)
    t = np.ascontiguousarray(types if types is not None else np.zeros(n), dtype=np.int64)
    q = np.ascontiguousarray(charges if charges is not None else np.zeros(n), dtype=np.float64)
    rc_c = ff.coulomb_cutoff or 0.0
    f, u_i, w_i, cnt = _sums(x, np.asarray(lengths, np.float64), np.asarray(periodic, np.bool_), t, q,
                             np.ascontiguousarray(ff.pair_sigma ** 2), 4.0 * ff.pair_epsilon, 24.0 * ff.pair_epsilon,
                             np.ascontiguousarray(ff.pair_cutoff ** 2), np.ascontiguousarray(ff.lj_shift()),
                             METHOD_CODE[ff.method], float(ff.coulomb_constant), float(ff.k_rf), float(ff.c_rf),
                             float(ff.alpha or 0.0), rc_c * rc_c)
    w = np.zeros(6)
    energy = 0.0
    for i in range(n):  # index order: the same sums whatever the threads did
        energy += u_i[i]
        w += w_i[i]
    virial = np.array([[w[0], w[1], w[2]], [w[1], w[3], w[4]], [w[2], w[4], w[5]]])
    return {"forces": f, "energy": float(energy), "virial": virial, "pairs": int(cnt.sum())}
