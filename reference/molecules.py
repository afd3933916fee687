"""Float64 reference for rigid molecules (mdcore.molecules), from the formulas, independent of any
strategy's code: every pair of molecules whose centres lie within the cutoff (minimum image), all
their sites against each other.

A site pair at r = (c_i + a_s) - (c_j + a_t) (a: the site's lab-frame offset R(q) p), e_s and e_t the
dipoles' and quadrupoles' lab-frame directions; every electrostatic term is written as
u(R = r.r, A = e_s.r, B = e_t.r, G = e_s.e_t) times k and the moments (charge q, dipole m, linear
quadrupole Q in Buckingham's convention):

  lj - lj                u = 4 eps (s^12 - s^6), s = sigma / r, eps = xi sqrt(eps_s eps_t),
                         sigma = eta (sigma_s + sigma_t) / 2
  charge - charge        u = k q q (1/r + k_rf r^2 - c_rf) (reaction field; 1/r without)
  charge - dipole        u = k q m B / r^3           (dipole - charge: -k m q A / r^3)
  dipole - dipole        u = k m m (G / r^3 - 3 A B / r^5) - k m m rf G  (rf = 2 (eps_rf - 1) /
                         ((2 eps_rf + 1) r_c^3) with a reaction field, 1 / r_c^3 at eps_rf = inf)
  charge - quadrupole    u = k q Q (3 B^2 - r^2) / (2 r^5)   (and with A for quadrupole - charge)
  dipole - quadrupole    u = 3/2 k m Q (-5 A B^2 / r^7 + A / r^5 + 2 G B / r^5)  (ls1-MarDyn's, mirrored
                         for quadrupole - dipole)
  quadrupole - quadrupole  u = 3/4 k Q Q / r^5 (1 - 5 (A^2 + B^2) / r^2 - 15 A^2 B^2 / r^4
                         + 2 (G - 5 A B / r^2)^2)

From u's partial derivatives: the force on site s, f = -du/dr = -(2 u_R r + u_A e_s + u_B e_t); the
torque on molecule i, sum a_s x f + (-e_s x du/de_s) with du/de_s = u_A r + u_G e_t (the orientation's
own torque, which the ls1-MarDyn CUDA port left out for dipoles). The virial in the centre-of-mass
convention W = sum over pairs of (c_i - c_j) f^T. With a reaction field each dipole adds the self
energy -k m^2 rf / 2. With a switch (the components file's "switch": r_s) a molecule pair's energy,
forces and torques are scaled by S(|c_i - c_j|), 1 below r_s falling smoothly to 0 at the cutoff, and
the force on i gains -u S'(r) (c_i - c_j) / r: the energy then stays continuous when a pair crosses the
cutoff.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from mdcore.molecules import rotation

LJ, CHARGE, DIPOLE, QUAD = 0, 1, 2, 3
CODES = {"lj": LJ, "charge": CHARGE, "dipole": DIPOLE, "quadrupole": QUAD}


@njit(cache=True)
def _term(ks, kt, R, A, B, G, ms, mt, k, k_rf, c_rf, rf, rf_dd):
    """(u, u_R, u_A, u_B, u_G) of one electrostatic site pair (kinds ks, kt; moments ms, mt)."""
    P = k * ms * mt
    r1 = 1.0 / math.sqrt(R)
    r3 = r1 / R
    r5 = r3 / R
    r7 = r5 / R
    r9 = r7 / R
    r11 = r9 / R
    if ks == CHARGE and kt == CHARGE:
        if rf:
            return P * (r1 + k_rf * R - c_rf), P * (-0.5 * r3 + k_rf), 0.0, 0.0, 0.0
        return P * r1, -0.5 * P * r3, 0.0, 0.0, 0.0
    if ks == CHARGE and kt == DIPOLE:
        return P * B * r3, -1.5 * P * B * r5, 0.0, P * r3, 0.0
    if ks == DIPOLE and kt == CHARGE:
        return -P * A * r3, 1.5 * P * A * r5, -P * r3, 0.0, 0.0
    if ks == DIPOLE and kt == DIPOLE:
        return (P * (G * r3 - 3.0 * A * B * r5) - P * rf_dd * G, P * (-1.5 * G * r5 + 7.5 * A * B * r7),
                -3.0 * P * B * r5, -3.0 * P * A * r5, P * r3 - P * rf_dd)
    if ks == CHARGE and kt == QUAD:
        return (P * (1.5 * B * B * r5 - 0.5 * r3), P * (-3.75 * B * B * r7 + 0.75 * r5), 0.0, 3.0 * P * B * r5, 0.0)
    if ks == QUAD and kt == CHARGE:
        return (P * (1.5 * A * A * r5 - 0.5 * r3), P * (-3.75 * A * A * r7 + 0.75 * r5), 3.0 * P * A * r5, 0.0, 0.0)
    if ks == DIPOLE and kt == QUAD:
        P *= 1.5
        return (P * (-5.0 * A * B * B * r7 + A * r5 + 2.0 * G * B * r5),
                P * (17.5 * A * B * B * r9 - 2.5 * A * r7 - 5.0 * G * B * r7),
                P * (-5.0 * B * B * r7 + r5), P * (-10.0 * A * B * r7 + 2.0 * G * r5), 2.0 * P * B * r5)
    if ks == QUAD and kt == DIPOLE:
        P *= 1.5
        return (P * (5.0 * B * A * A * r7 - B * r5 - 2.0 * G * A * r5),
                P * (-17.5 * B * A * A * r9 + 2.5 * B * r7 + 5.0 * G * A * r7),
                P * (10.0 * A * B * r7 - 2.0 * G * r5), P * (5.0 * A * A * r7 - r5), -2.0 * P * A * r5)
    # quadrupole - quadrupole
    P *= 0.75
    x = A * A + B * B
    y = A * B
    u = P * (r5 * (1.0 + 2.0 * G * G) - r7 * (5.0 * x + 20.0 * G * y) + 35.0 * y * y * r9)
    u_r = P * (-2.5 * r7 * (1.0 + 2.0 * G * G) + 3.5 * r9 * (5.0 * x + 20.0 * G * y) - 157.5 * y * y * r11)
    u_a = P * (-r7 * (10.0 * A + 20.0 * G * B) + 70.0 * y * B * r9)
    u_b = P * (-r7 * (10.0 * B + 20.0 * G * A) + 70.0 * y * A * r9)
    u_g = P * (4.0 * G * r5 - 20.0 * y * r7)
    return u, u_r, u_a, u_b, u_g


@njit(cache=True)
def switch(r, rs, rc):
    """S(r) and dS/dr of the switch on the centres' distance: 1 below rs, 1 - 10 x^3 + 15 x^4 - 6 x^5 with
    x = (r - rs) / (rc - rs) up to rc (S, S' and S'' continuous)."""
    if r <= rs or rs >= rc:
        return 1.0, 0.0
    x = (r - rs) / (rc - rs)
    return 1.0 - x * x * x * (10.0 - 15.0 * x + 6.0 * x * x), -30.0 * x * x * (1.0 - x) * (1.0 - x) / (rc - rs)


@njit(cache=True)
def _pairs(c, L, periodic, first, count, comp, kind, a, e, sigma, eps, mom, xi, eta, rc2, k, k_rf, c_rf, rf, rf_dd,
           rs):
    m = c.shape[0]
    force = np.zeros((m, 3))
    torque = np.zeros((m, 3))
    w = np.zeros((3, 3))
    energy = 0.0
    scale = 0.0  # the sum of the molecule pairs' |energy|: the scale of the energy's rounding
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
            fp = np.zeros(3)  # this molecule pair's force on i, torques on i and j, and energy
            tpi = np.zeros(3)
            tpj = np.zeros(3)
            up = 0.0
            for s in range(first[i], first[i] + count[i]):
                for t in range(first[j], first[j] + count[j]):
                    if (kind[s] == LJ) != (kind[t] == LJ):
                        continue
                    r = d + a[s] - a[t]
                    R = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
                    if kind[s] == LJ:
                        ep = xi[comp[i], comp[j]] * np.sqrt(eps[s] * eps[t])
                        sg = eta[comp[i], comp[j]] * 0.5 * (sigma[s] + sigma[t])
                        s6 = (sg * sg / R) ** 3
                        u = 4.0 * ep * s6 * (s6 - 1.0)
                        f = (24.0 * ep * s6 * (2.0 * s6 - 1.0) / R) * r
                        ts = np.zeros(3)
                        tt = np.zeros(3)
                    else:
                        A = e[s, 0] * r[0] + e[s, 1] * r[1] + e[s, 2] * r[2]
                        B = e[t, 0] * r[0] + e[t, 1] * r[1] + e[t, 2] * r[2]
                        G = e[s, 0] * e[t, 0] + e[s, 1] * e[t, 1] + e[s, 2] * e[t, 2]
                        u, u_r, u_a, u_b, u_g = _term(kind[s], kind[t], R, A, B, G, mom[s], mom[t], k, k_rf, c_rf,
                                                      rf, rf_dd)
                        f = -(2.0 * u_r * r + u_a * e[s] + u_b * e[t])
                        ts = -np.cross(e[s], u_a * r + u_g * e[t])
                        tt = -np.cross(e[t], u_b * r + u_g * e[s])
                    up += u
                    fp += f
                    tpi += np.cross(a[s], f) + ts
                    tpj += -np.cross(a[t], f) + tt
            # the switch scales the pair's energy, forces and torques, and adds -u S'(r) d / r to the force on i
            r = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            sw, dsw = switch(r, rs, np.sqrt(rc2))
            f = sw * fp - (up * dsw / r) * d if dsw != 0.0 else sw * fp
            energy += sw * up
            scale += abs(sw * up)
            force[i] += f
            force[j] -= f
            torque[i] += sw * tpi
            torque[j] += sw * tpj
            for x in range(3):
                for y in range(3):
                    w[x, y] += d[x] * f[y]
    return force, torque, energy, w, pairs, scale


def sites(molecules, model) -> dict:
    """The sites of every molecule as flat arrays: first and count per molecule, kind, lab-frame offset."""
    R = rotation(molecules.quaternions)
    first, count, kind, a, e, sigma, eps, mom = [], [], [], [], [], [], [], []
    for i, ci in enumerate(molecules.components):
        comp = model.components[ci]
        first.append(len(kind))
        count.append(len(comp.kinds))
        kind += [CODES[kd] for kd in comp.kinds]
        a.append(comp.position @ R[i].T)
        e.append(comp.direction @ R[i].T)
        sigma.append(comp.sigma)
        eps.append(comp.epsilon)
        mom.append(np.where(np.array([kd == "charge" for kd in comp.kinds]), comp.charge, comp.moment))
    cat = (lambda v: np.concatenate(v) if v else np.zeros(0))
    cat3 = (lambda v: np.concatenate(v) if v else np.zeros((0, 3)))
    return {"first": np.array(first, np.int64), "count": np.array(count, np.int64), "kind": np.array(kind, np.int64),
            "a": cat3(a), "e": cat3(e), "sigma": cat(sigma), "epsilon": cat(eps), "moment": cat(mom)}


def compute(molecules, model) -> dict:
    """forces (M, 3), torques (M, 3), energy, virial (3, 3), pairs (molecule pairs within the cutoff) and
    energy_scale (the sum of the molecule pairs' |energy|: what an energy's rounding is measured against,
    where the total can come near zero)."""
    s = sites(molecules, model)
    rf = model.method == "reaction-field"
    rf_dd = model.rf_dipoles
    f, tq, e, w, pairs, scale = _pairs(np.ascontiguousarray(molecules.centres, np.float64), molecules.box.array,
                                       np.asarray(molecules.box.periodic, np.bool_), s["first"], s["count"],
                                       np.asarray(molecules.components, np.int64), s["kind"], s["a"], s["e"],
                                       s["sigma"], s["epsilon"], s["moment"], model.xi, model.eta, model.cutoff ** 2,
                                       model.coulomb_constant, model.k_rf, model.c_rf, rf, rf_dd, model.switch_start)
    dip = s["kind"] == DIPOLE
    e += -0.5 * model.coulomb_constant * rf_dd * float(np.sum(s["moment"][dip] ** 2))  # the dipoles' self terms
    return {"forces": f, "torques": tq, "energy": float(e), "virial": w, "pairs": int(pairs),
            "energy_scale": max(float(scale), abs(float(e)))}
