"""Float64 reference for rigid molecules (mdcore.molecules), from the formulas, independent of any
strategy's code: every pair of molecules whose centres lie within the cutoff (minimum image), all
their sites against each other.

Per site pair at r = (c_i + a_s) - (c_j + a_t) (a: the site's lab-frame offset R(q) p):
  lj, lj          u = 4 eps (s^12 - s^6), s = sigma / |r|, eps = xi sqrt(eps_s eps_t),
                  sigma = eta (sigma_s + sigma_t) / 2;  f = 24 eps (2 s^12 - s^6) / |r|^2 r
  charge, charge  u = k q_s q_t (1/|r| + k_rf |r|^2 - c_rf) (reaction field; 1/|r| without);
                  f = k q_s q_t (1/|r|^3 - 2 k_rf) r
f is the force on molecule i's site (-f on j's). A molecule's force is the sum over its sites, its
torque about its centre sum a_s x f_s, and the virial in ls1-MarDyn's centre-of-mass convention
W = sum over pairs of (c_i - c_j) f^T. Dipole and quadrupole sites are not computed here yet.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from mdcore import InputError
from mdcore.molecules import rotation

LJ, CHARGE = 0, 1


@njit(cache=True)
def _pairs(c, L, periodic, first, count, comp, kind, a, sigma, eps, q, xi, eta, rc2, k, k_rf, c_rf, rf):
    m = c.shape[0]
    force = np.zeros((m, 3))
    torque = np.zeros((m, 3))
    w = np.zeros((3, 3))
    energy = 0.0
    pairs = 0
    for i in range(m):
        for j in range(i + 1, m):
            d = c[i] - c[j]
            for x in range(3):
                if periodic[x]:
                    d[x] -= L[x] * np.rint(d[x] / L[x])
            if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] >= rc2:
                continue
            pairs += 1
            for s in range(first[i], first[i] + count[i]):
                for t in range(first[j], first[j] + count[j]):
                    if kind[s] != kind[t]:
                        continue
                    r = d + a[s] - a[t]
                    r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
                    if kind[s] == LJ:
                        e = xi[comp[i], comp[j]] * np.sqrt(eps[s] * eps[t])
                        sg = eta[comp[i], comp[j]] * 0.5 * (sigma[s] + sigma[t])
                        s6 = (sg * sg / r2) ** 3
                        u = 4.0 * e * s6 * (s6 - 1.0)
                        fr = 24.0 * e * s6 * (2.0 * s6 - 1.0) / r2
                    else:
                        qq = k * q[s] * q[t]
                        inv = 1.0 / np.sqrt(r2)
                        if rf:
                            u = qq * (inv + k_rf * r2 - c_rf)
                            fr = qq * (inv * inv * inv - 2.0 * k_rf)
                        else:
                            u = qq * inv
                            fr = qq * inv * inv * inv
                    f = fr * r
                    energy += u
                    force[i] += f
                    force[j] -= f
                    torque[i] += np.cross(a[s], f)
                    torque[j] -= np.cross(a[t], f)
                    for x in range(3):
                        for y in range(3):
                            w[x, y] += d[x] * f[y]
    return force, torque, energy, w, pairs


def sites(molecules, model) -> dict:
    """The sites of every molecule as flat arrays: first and count per molecule, kind, lab-frame offset."""
    R = rotation(molecules.quaternions)
    first, count, kind, a, sigma, eps, q = [], [], [], [], [], [], []
    for i, ci in enumerate(molecules.components):
        comp = model.components[ci]
        if any(kd in ("dipole", "quadrupole") for kd in comp.kinds):
            raise InputError(f"{model.where()}: component {comp.name!r} has dipole or quadrupole sites, which the "
                             "float64 reference does not compute yet (lj and charge sites)")
        first.append(len(kind))
        count.append(len(comp.kinds))
        kind += [LJ if kd == "lj" else CHARGE for kd in comp.kinds]
        a.append(comp.position @ R[i].T)
        sigma.append(comp.sigma)
        eps.append(comp.epsilon)
        q.append(comp.charge)
    cat = (lambda v: np.concatenate(v) if v else np.zeros(0))
    return {"first": np.array(first, np.int64), "count": np.array(count, np.int64), "kind": np.array(kind, np.int64),
            "a": np.concatenate(a) if a else np.zeros((0, 3)), "sigma": cat(sigma), "epsilon": cat(eps),
            "charge": cat(q)}


def compute(molecules, model) -> dict:
    """forces (M, 3), torques (M, 3), energy, virial (3, 3) and pairs (molecule pairs within the cutoff)."""
    s = sites(molecules, model)
    f, tq, e, w, pairs = _pairs(np.ascontiguousarray(molecules.centres, np.float64), molecules.box.array,
                                np.asarray(molecules.box.periodic, np.bool_), s["first"], s["count"],
                                np.asarray(molecules.components, np.int64), s["kind"], s["a"], s["sigma"],
                                s["epsilon"], s["charge"], model.xi, model.eta, model.cutoff ** 2,
                                model.coulomb_constant, model.k_rf, model.c_rf, model.method == "reaction-field")
    return {"forces": f, "torques": tq, "energy": float(e), "virial": w, "pairs": int(pairs)}
