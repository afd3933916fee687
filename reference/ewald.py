"""Float64 reference of Ewald's reciprocal part (mdcore.ewald's formulas), independent of the kspace
strategies: each wave vector's structure factor from the full phase k . r_j with the library's
cos and sin (the strategies step phases by recurrence or reduce them to fractions of a turn),
then the energy, the virial and each charge's force summed over the half space.

S(k) is summed over the charges in index order, the energy and virial over k in the vectors'
order, and each force over k in that order: the same result whatever the thread count.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def _structure(x, q, k):
    m = k.shape[0]
    re = np.zeros(m)
    im = np.zeros(m)
    for v in prange(m):
        sr = 0.0
        si = 0.0
        for j in range(x.shape[0]):
            phase = k[v, 0] * x[j, 0] + k[v, 1] * x[j, 1] + k[v, 2] * x[j, 2]
            sr += q[j] * math.cos(phase)
            si += q[j] * math.sin(phase)
        re[v] = sr
        im[v] = si
    return re, im


@njit(parallel=True, cache=True)
def _forces(x, q, k, a, re, im):
    n = x.shape[0]
    f = np.zeros((n, 3))
    for j in prange(n):
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for v in range(k.shape[0]):
            phase = k[v, 0] * x[j, 0] + k[v, 1] * x[j, 1] + k[v, 2] * x[j, 2]
            t = 2.0 * a[v] * (re[v] * math.sin(phase) - im[v] * math.cos(phase))
            fx += t * k[v, 0]
            fy += t * k[v, 1]
            fz += t * k[v, 2]
        f[j, 0] = q[j] * fx
        f[j, 1] = q[j] * fy
        f[j, 2] = q[j] * fz
    return f


@njit(cache=True)
def _energy_virial(k, a, re, im, alpha):
    energy = 0.0
    w = np.zeros((3, 3))
    c = 1.0 / (4.0 * alpha * alpha)
    for v in range(k.shape[0]):
        e = a[v] * (re[v] * re[v] + im[v] * im[v])
        energy += e
        k2 = k[v, 0] * k[v, 0] + k[v, 1] * k[v, 1] + k[v, 2] * k[v, 2]
        g = 2.0 * (1.0 / k2 + c)
        for p in range(3):
            for s in range(3):
                w[p, s] += e * ((1.0 if p == s else 0.0) - g * k[v, p] * k[v, s])
    return energy, w


def reciprocal(positions, charges, ewald, forces: bool = True) -> dict:
    """energy, forces (N, 3), virial (3, 3) of the reciprocal part, and S (M,) complex, in float64."""
    x = np.ascontiguousarray(positions, dtype=np.float64)
    q = np.ascontiguousarray(charges, dtype=np.float64)
    _, k, a = ewald.vectors()
    re, im = _structure(x, q, k)
    energy, w = _energy_virial(k, a, re, im, float(ewald.alpha))
    f = _forces(x, q, k, a, re, im) if forces else None
    return {"energy": float(energy), "forces": f, "virial": w, "structure": re + 1j * im}


def total(positions, charges, ewald, real: dict) -> dict:
    """The whole Ewald sum: the real-space part `real` (forces, energy, virial of the pair sum) plus the
    reciprocal part, the self term and the net-charge term; each part apart too."""
    rec = reciprocal(positions, charges, ewald)
    e_self = ewald.self_energy(charges)
    e_net = ewald.net_charge_energy(charges)
    return {"forces": real["forces"] + rec["forces"],
            "energy": real["energy"] + rec["energy"] + e_self + e_net,
            "virial": real["virial"] + rec["virial"] + e_net * np.eye(3),
            "parts": {"real": real["energy"], "reciprocal": rec["energy"], "self": e_self, "net_charge": e_net}}
