"""Rigid molecules on the CPU (numba): the molecule-pair body, and the all-pairs and full-shell
traversals that call it. These are the CPU counterparts of allpairs_thread_cpu and
fullshell_thread_cpu for molecules; `forces --molecules` takes them by those names.

The body (`_site_pair`) is written in ls1-MarDyn's PotForce form. For two sites s (molecule i) and
t (molecule j) at r = r_s - r_t, with unit directions e_s and e_t, cos_s = e_s.r / |r|,
cos_t = e_t.r / |r| and g = e_s.e_t, each electrostatic term is u(|r|, cos_s, cos_t, g). The force on
s is

    f = (-u_r / |r| + (cos_s p_s + cos_t p_t) / |r|) r - p_s e_s - p_t e_t,   p = u_cos / |r|

The orientations' own torques are tau_s = -p_s (e_s x r) - u_g (e_s x e_t) and
tau_t = -p_t (e_t x r) + u_g (e_s x e_t). The torque on molecule i about its centre is
sum over s of a_s x f + tau_s, where a_s is the site's lab-frame offset. The float64 reference
(reference/molecules.py) derives the same terms another way, from u(R, A, B, G) with
A = e_s.r and B = e_t.r.

Traversal: a thread per molecule i (numba prange) against every molecule j != i in reach. There is
no Newton3: each pair is computed from both sides, and each thread writes only its own molecule's
force and torque, so the result is the same run after run. The energy and virial are halved. Full
shell: cells of side >= the cutoff over the centres, and the 27 neighbour cells. Computed in float64
(the `fp64` precision mode).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from mdcore.molecules import rotation

from .cells_cpu import _axis_range, _wrapi

LJ, CHARGE, DIPOLE, QUADRUPOLE = 0, 1, 2, 3
KIND = {"lj": LJ, "charge": CHARGE, "dipole": DIPOLE, "quadrupole": QUADRUPOLE}
TRAVERSALS = ("allpairs_thread_cpu", "fullshell_thread_cpu")


@njit(inline="always")
def _generic(u, ur, ps, pt, ug, cs, ct, inv, rx, ry, rz, es, et):
    """Force on s and the two orientation torques from u's partial derivatives (p_s, p_t already over |r|)."""
    fac = -ur * inv + (cs * ps + ct * pt) * inv
    fx = fac * rx - ps * es[0] - pt * et[0]
    fy = fac * ry - ps * es[1] - pt * et[1]
    fz = fac * rz - ps * es[2] - pt * et[2]
    gx = es[1] * et[2] - es[2] * et[1]
    gy = es[2] * et[0] - es[0] * et[2]
    gz = es[0] * et[1] - es[1] * et[0]
    t1 = (-ps * (es[1] * rz - es[2] * ry) - ug * gx, -ps * (es[2] * rx - es[0] * rz) - ug * gy,
          -ps * (es[0] * ry - es[1] * rx) - ug * gz)
    t2 = (-pt * (et[1] * rz - et[2] * ry) + ug * gx, -pt * (et[2] * rx - et[0] * rz) + ug * gy,
          -pt * (et[0] * ry - et[1] * rx) + ug * gz)
    return u, fx, fy, fz, t1, t2


@njit(inline="always")
def _site_pair(ks, kt, rx, ry, rz, es, et, ms, mt, k, krf, crf, rf_dd):
    """(u, fx, fy, fz, tau_s, tau_t) of two electrostatic sites (kinds ks, kt; charge or moment ms, mt)."""
    r2 = rx * rx + ry * ry + rz * rz
    inv = 1.0 / math.sqrt(r2)
    inv2 = inv * inv
    cs = (es[0] * rx + es[1] * ry + es[2] * rz) * inv
    ct = (et[0] * rx + et[1] * ry + et[2] * rz) * inv
    g = es[0] * et[0] + es[1] * et[1] + es[2] * et[2]
    p = k * ms * mt
    if ks == CHARGE and kt == CHARGE:  # p (1/r + k_rf r^2 - c_rf)
        u = p * (inv + krf * r2 - crf)
        return _generic(u, p * (-inv2 + 2.0 * krf * r2 * inv), 0.0, 0.0, 0.0, cs, ct, inv, rx, ry, rz, es, et)
    if ks == CHARGE and kt == DIPOLE:  # p cos_t / r^2
        u = p * ct * inv2
        return _generic(u, -2.0 * u * inv, 0.0, p * inv2 * inv, 0.0, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == CHARGE:  # -p cos_s / r^2
        u = -p * cs * inv2
        return _generic(u, -2.0 * u * inv, -p * inv2 * inv, 0.0, 0.0, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == DIPOLE:  # p (g - 3 cos_s cos_t) / r^3 - p rf g
        f3 = p * inv2 * inv
        u = f3 * (g - 3.0 * cs * ct)
        return _generic(u - p * rf_dd * g, -3.0 * u * inv, -3.0 * f3 * ct * inv, -3.0 * f3 * cs * inv,
                        f3 - p * rf_dd, cs, ct, inv, rx, ry, rz, es, et)
    if ks == CHARGE and kt == QUADRUPOLE:  # p (3 cos_t^2 - 1) / (2 r^3)
        f3 = 0.5 * p * inv2 * inv
        u = f3 * (3.0 * ct * ct - 1.0)
        return _generic(u, -3.0 * u * inv, 0.0, 6.0 * f3 * ct * inv, 0.0, cs, ct, inv, rx, ry, rz, es, et)
    if ks == QUADRUPOLE and kt == CHARGE:
        f3 = 0.5 * p * inv2 * inv
        u = f3 * (3.0 * cs * cs - 1.0)
        return _generic(u, -3.0 * u * inv, 6.0 * f3 * cs * inv, 0.0, 0.0, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == QUADRUPOLE:  # 3/2 p (-cos_s (5 cos_t^2 - 1) + 2 g cos_t) / r^4
        f4 = 1.5 * p * inv2 * inv2
        u = f4 * (-cs * (5.0 * ct * ct - 1.0) + 2.0 * g * ct)
        return _generic(u, -4.0 * u * inv, f4 * (1.0 - 5.0 * ct * ct) * inv, 2.0 * f4 * (g - 5.0 * cs * ct) * inv,
                        2.0 * f4 * ct, cs, ct, inv, rx, ry, rz, es, et)
    if ks == QUADRUPOLE and kt == DIPOLE:  # the same with the roles swapped: r -> -r, cos_s <-> -cos_t
        f4 = 1.5 * p * inv2 * inv2
        u = f4 * (ct * (5.0 * cs * cs - 1.0) - 2.0 * g * cs)
        return _generic(u, -4.0 * u * inv, -2.0 * f4 * (g - 5.0 * cs * ct) * inv, -f4 * (1.0 - 5.0 * cs * cs) * inv,
                        -2.0 * f4 * cs, cs, ct, inv, rx, ry, rz, es, et)
    # quadrupole - quadrupole: 3/4 p / r^5 (1 - 5 (cos_s^2 + cos_t^2) - 15 cos_s^2 cos_t^2 + 2 (g - 5 cos_s cos_t)^2)
    f5 = 0.75 * p * inv2 * inv2 * inv
    term = g - 5.0 * cs * ct
    c2s, c2t = cs * cs, ct * ct
    u = f5 * (1.0 - 5.0 * (c2s + c2t) - 15.0 * c2s * c2t + 2.0 * term * term)
    return _generic(u, -5.0 * u * inv, -10.0 * f5 * (cs + 3.0 * cs * c2t + 2.0 * ct * term) * inv,
                    -10.0 * f5 * (ct + 3.0 * c2s * ct + 2.0 * cs * term) * inv, 4.0 * f5 * term, cs, ct, inv,
                    rx, ry, rz, es, et)


@njit(inline="always")
def _molecule_pair(i, j, dx, dy, dz, first, count, comp, kind, a, e, sigma, eps, mom, xi, eta, k, krf, crf, rf_dd):
    """Every site of molecule i against every site of j (centres d = c_i - c_j apart): the force on i,
    the torque on i about its centre, the energy and the virial's d (x) f terms (full 3 x 3, row-major)."""
    fx = fy = fz = tx = ty = tz = u = 0.0
    for s in range(first[i], first[i] + count[i]):
        for t in range(first[j], first[j] + count[j]):
            if (kind[s] == LJ) != (kind[t] == LJ):
                continue
            rx = dx + a[s, 0] - a[t, 0]
            ry = dy + a[s, 1] - a[t, 1]
            rz = dz + a[s, 2] - a[t, 2]
            if kind[s] == LJ:  # 4 eps ((sig/r)^12 - (sig/r)^6), eps = xi sqrt(eps_s eps_t), sig = eta (sig_s + sig_t) / 2
                r2 = rx * rx + ry * ry + rz * rz
                ep = xi[comp[i], comp[j]] * math.sqrt(eps[s] * eps[t])
                sg = eta[comp[i], comp[j]] * 0.5 * (sigma[s] + sigma[t])
                l6 = sg * sg / r2
                l6 = l6 * l6 * l6
                us = 4.0 * ep * l6 * (l6 - 1.0)
                fac = 24.0 * ep * l6 * (2.0 * l6 - 1.0) / r2
                px, py, pz = fac * rx, fac * ry, fac * rz
                o = (0.0, 0.0, 0.0)
            else:
                us, px, py, pz, o, _ = _site_pair(kind[s], kind[t], rx, ry, rz, e[s], e[t], mom[s], mom[t], k, krf,
                                                   crf, rf_dd)
            u += us
            fx += px
            fy += py
            fz += pz
            tx += a[s, 1] * pz - a[s, 2] * py + o[0]
            ty += a[s, 2] * px - a[s, 0] * pz + o[1]
            tz += a[s, 0] * py - a[s, 1] * px + o[2]
    return fx, fy, fz, tx, ty, tz, u


@njit(inline="always")
def _image(d, length, periodic):
    return d - length * np.rint(d / length) if periodic else d


@njit(parallel=True)
def _traverse(c, L, per, cell_of, start, order, dims, use_cells, rc2, first, count, comp, kind, a, e, sigma, eps,
              mom, xi, eta, k, krf, crf, rf_dd, force, torque, energy, virial, pairs):
    m = c.shape[0]
    for i in prange(m):
        fx = fy = fz = tx = ty = tz = ui = 0.0
        w = np.zeros(9)
        np_ = 0
        cc = cell_of[i]
        cz = cc % dims[2]
        cy = (cc // dims[2]) % dims[1]
        cx = cc // (dims[2] * dims[1])
        xlo, xhi = _axis_range(cx, dims[0], per[0])
        ylo, yhi = _axis_range(cy, dims[1], per[1])
        zlo, zhi = _axis_range(cz, dims[2], per[2])
        ncell = (xhi - xlo + 1) * (yhi - ylo + 1) * (zhi - zlo + 1) if use_cells else 1
        for b in range(ncell):
            if use_cells:
                ox = xlo + b // ((yhi - ylo + 1) * (zhi - zlo + 1))
                oy = ylo + (b // (zhi - zlo + 1)) % (yhi - ylo + 1)
                oz = zlo + b % (zhi - zlo + 1)
                nb = ((_wrapi(cx + ox, dims[0]) * dims[1] + _wrapi(cy + oy, dims[1])) * dims[2]
                      + _wrapi(cz + oz, dims[2]))
                lo, hi = start[nb], start[nb + 1]
            else:
                lo, hi = 0, m
            for q in range(lo, hi):
                j = order[q]
                if j == i:
                    continue
                dx = _image(c[i, 0] - c[j, 0], L[0], per[0])
                dy = _image(c[i, 1] - c[j, 1], L[1], per[1])
                dz = _image(c[i, 2] - c[j, 2], L[2], per[2])
                if dx * dx + dy * dy + dz * dz >= rc2:
                    continue
                np_ += 1
                px, py, pz, qx, qy, qz, u = _molecule_pair(i, j, dx, dy, dz, first, count, comp, kind, a, e, sigma, eps,
                                                           mom, xi, eta, k, krf, crf, rf_dd)
                fx += px
                fy += py
                fz += pz
                tx += qx
                ty += qy
                tz += qz
                ui += u
                dd = (dx, dy, dz)
                ff = (px, py, pz)
                for x in range(3):
                    for y in range(3):
                        w[3 * x + y] += dd[x] * ff[y]
        force[i, 0], force[i, 1], force[i, 2] = fx, fy, fz
        torque[i, 0], torque[i, 1], torque[i, 2] = tx, ty, tz
        energy[i] = 0.5 * ui
        for x in range(9):
            virial[i, x] = 0.5 * w[x]
        pairs[i] = np_


def _sites(mols, model):
    """Per molecule its first site and count; per site its kind, lab-frame offset a and direction e,
    sigma, epsilon and charge or moment (the orientations turned once, as the port's quaternion kernel)."""
    R = rotation(mols.quaternions)
    comps = model.components
    count = np.array([len(comps[c].kinds) for c in mols.components], np.int64)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    by = [(np.array([KIND[x] for x in cp.kinds], np.int64), cp.position, cp.direction, cp.sigma, cp.epsilon,
           np.where(np.array([x == "charge" for x in cp.kinds]), cp.charge, cp.moment)) for cp in comps]
    kind = np.concatenate([by[c][0] for c in mols.components]) if len(mols.components) else np.zeros(0, np.int64)
    a = np.concatenate([by[c][1] @ R[i].T for i, c in enumerate(mols.components)])
    e = np.concatenate([by[c][2] @ R[i].T for i, c in enumerate(mols.components)])
    sigma, eps, mom = (np.concatenate([by[c][x] for c in mols.components]) for x in (3, 4, 5))
    return first, count, kind, np.ascontiguousarray(a), np.ascontiguousarray(e), sigma, eps, mom


def _cells(c: np.ndarray, lengths, periodic, cutoff: float):
    """Cells of side >= cutoff over the centres: (cell of each molecule, start offsets, molecules in
    cell order, dims)."""
    dims, cell = [], np.zeros(len(c), np.int64)
    for ax in range(3):
        x = c[:, ax]
        if periodic[ax]:
            lo, extent = 0.0, float(lengths[ax])
            x = np.mod(x, extent)
        else:
            lo, extent = float(x.min()), max(float(x.max() - x.min()), cutoff)
        n = max(1, int(extent // cutoff))
        dims.append(n)
        cell = cell * n + np.minimum((np.floor((x - lo) / (extent / n))).astype(np.int64), n - 1)
    order = np.argsort(cell, kind="stable")
    start = np.searchsorted(cell[order], np.arange(int(np.prod(dims)) + 1))
    return cell, start.astype(np.int64), order.astype(np.int64), np.array(dims, np.int64)


def evaluate(name: str, mols, model) -> dict:
    """forces (M, 3), torques (M, 3), energy, virial (3, 3) and pairs (molecule pairs within the
    cutoff) of molecules `mols` under `model`, by the traversal `name` (TRAVERSALS), in float64."""
    from reference.molecules import reaction_field_dipoles

    if name not in TRAVERSALS:
        raise ValueError(name)
    first, count, kind, a, e, sigma, eps, mom = _sites(mols, model)
    c = np.ascontiguousarray(mols.centres, np.float64)
    m = len(c)
    per = np.asarray(mols.box.periodic, np.bool_)
    rf_dd = reaction_field_dipoles(model)
    use_cells = name == "fullshell_thread_cpu"
    if use_cells:
        cell, start, order, dims = _cells(c, mols.box.lengths, per, model.cutoff)
    else:
        cell, start, order, dims = (np.zeros(m, np.int64), np.array([0, m], np.int64), np.arange(m, dtype=np.int64),
                                    np.ones(3, np.int64))
    force, torque = np.zeros((m, 3)), np.zeros((m, 3))
    energy, virial, pairs = np.zeros(m), np.zeros((m, 9)), np.zeros(m, np.int64)
    _traverse(c, mols.box.array, per, cell, start, order, dims, use_cells, model.cutoff ** 2, first, count,
              np.asarray(mols.components, np.int64), kind, a, e, sigma, eps, mom, model.xi, model.eta,
              model.coulomb_constant, model.k_rf, model.c_rf, rf_dd, force, torque, energy, virial, pairs)
    dip = kind == DIPOLE
    self_term = -0.5 * model.coulomb_constant * rf_dd * float(np.sum(mom[dip] ** 2))
    return {"forces": force, "torques": torque, "energy": float(energy.sum()) + self_term,
            "virial": virial.sum(0).reshape(3, 3), "pairs": int(pairs.sum()) // 2}
