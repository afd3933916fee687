"""Rigid molecules on the CPU (numba): the molecule-pair body, and the traversals that call it, the
CPU counterparts for molecules of allpairs_thread_cpu, fullshell_thread_cpu, c08_thread_cpu and
verlet_thread_cpu; `forces`, `md` and `verify` take them by those names.

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

Precision modes (PRECISIONS) as for points: fp32 computes and sums in float32, mixed computes in
float32 and sums (the molecule's force, torque, energy and virial) in float64, fp64 in float64. Each
function takes its literals as R(x), R the dtype of an array it is given (the compute type), so that
float32 arithmetic stays float32 (a Python literal would promote it); a molecule pair's sums over
its sites are in the compute type. Traversals, the same bits run after run:
  allpairs   a thread per molecule i (numba prange) against every j != i: no Newton3, each pair
             computed from both sides, each thread writing only its own molecule (energy and virial
             halved)
  fullshell  the same over the 27 neighbour cells (cells of side >= the cutoff over the centres)
  c08        the c08 colours of those cells (strategies/schedules.py), a thread per base: each pair
             once, Newton3 (the torque on j from the same body: -a_t x f + tau_t); periodic axes need
             3 cells or more
  verlet     a list over the centres within (1 + SKIN) rc, built from cells of that side, then a thread
             per molecule over its list (built at each evaluation here)
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from mdcore.molecules import rotation

from .cells_cpu import _axis_range, _block_cell, _wrapi

LJ, CHARGE, DIPOLE, QUADRUPOLE = 0, 1, 2, 3
KIND = {"lj": LJ, "charge": CHARGE, "dipole": DIPOLE, "quadrupole": QUADRUPOLE}
TRAVERSALS = ("allpairs_thread_cpu", "fullshell_thread_cpu", "c08_thread_cpu", "verlet_thread_cpu")
SKIN = 0.1  # the Verlet list's skin, a fraction of the cutoff
# precision mode: (compute type, accumulation type), as the point strategies' modes (mdcore.MODES)
PRECISIONS = {"fp32": (np.float32, np.float32), "mixed": (np.float32, np.float64), "fp64": (np.float64, np.float64)}


@njit(cache=True)
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


@njit(cache=True)
def _site_pair(ks, kt, rx, ry, rz, es, et, ms, mt, k, krf, crf, rf_dd):
    """(u, fx, fy, fz, tau_s, tau_t) of two electrostatic sites (kinds ks, kt; charge or moment ms, mt)."""
    R = es.dtype.type
    z = R(0.0)
    r2 = rx * rx + ry * ry + rz * rz
    inv = R(1.0) / math.sqrt(r2)
    inv2 = inv * inv
    cs = (es[0] * rx + es[1] * ry + es[2] * rz) * inv
    ct = (et[0] * rx + et[1] * ry + et[2] * rz) * inv
    g = es[0] * et[0] + es[1] * et[1] + es[2] * et[2]
    p = k * ms * mt
    if ks == CHARGE and kt == CHARGE:  # p (1/r + k_rf r^2 - c_rf)
        u = p * (inv + krf * r2 - crf)
        return _generic(u, p * (-inv2 + R(2.0) * krf * r2 * inv), z, z, z, cs, ct, inv, rx, ry, rz, es, et)
    if ks == CHARGE and kt == DIPOLE:  # p cos_t / r^2
        u = p * ct * inv2
        return _generic(u, -R(2.0) * u * inv, z, p * inv2 * inv, z, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == CHARGE:  # -p cos_s / r^2
        u = -p * cs * inv2
        return _generic(u, -R(2.0) * u * inv, -p * inv2 * inv, z, z, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == DIPOLE:  # p (g - 3 cos_s cos_t) / r^3 - p rf g
        f3 = p * inv2 * inv
        u = f3 * (g - R(3.0) * cs * ct)
        return _generic(u - p * rf_dd * g, -R(3.0) * u * inv, -R(3.0) * f3 * ct * inv, -R(3.0) * f3 * cs * inv,
                        f3 - p * rf_dd, cs, ct, inv, rx, ry, rz, es, et)
    if ks == CHARGE and kt == QUADRUPOLE:  # p (3 cos_t^2 - 1) / (2 r^3)
        f3 = R(0.5) * p * inv2 * inv
        u = f3 * (R(3.0) * ct * ct - R(1.0))
        return _generic(u, -R(3.0) * u * inv, z, R(6.0) * f3 * ct * inv, z, cs, ct, inv, rx, ry, rz, es, et)
    if ks == QUADRUPOLE and kt == CHARGE:
        f3 = R(0.5) * p * inv2 * inv
        u = f3 * (R(3.0) * cs * cs - R(1.0))
        return _generic(u, -R(3.0) * u * inv, R(6.0) * f3 * cs * inv, z, z, cs, ct, inv, rx, ry, rz, es, et)
    if ks == DIPOLE and kt == QUADRUPOLE:  # 3/2 p (-cos_s (5 cos_t^2 - 1) + 2 g cos_t) / r^4
        f4 = R(1.5) * p * inv2 * inv2
        u = f4 * (-cs * (R(5.0) * ct * ct - R(1.0)) + R(2.0) * g * ct)
        return _generic(u, -R(4.0) * u * inv, f4 * (R(1.0) - R(5.0) * ct * ct) * inv,
                        R(2.0) * f4 * (g - R(5.0) * cs * ct) * inv, R(2.0) * f4 * ct, cs, ct, inv, rx, ry, rz, es, et)
    if ks == QUADRUPOLE and kt == DIPOLE:  # the same with the roles swapped: r -> -r, cos_s <-> -cos_t
        f4 = R(1.5) * p * inv2 * inv2
        u = f4 * (ct * (R(5.0) * cs * cs - R(1.0)) - R(2.0) * g * cs)
        return _generic(u, -R(4.0) * u * inv, -R(2.0) * f4 * (g - R(5.0) * cs * ct) * inv,
                        -f4 * (R(1.0) - R(5.0) * cs * cs) * inv, -R(2.0) * f4 * cs, cs, ct, inv, rx, ry, rz, es, et)
    # quadrupole - quadrupole: 3/4 p / r^5 (1 - 5 (cos_s^2 + cos_t^2) - 15 cos_s^2 cos_t^2 + 2 (g - 5 cos_s cos_t)^2)
    f5 = R(0.75) * p * inv2 * inv2 * inv
    term = g - R(5.0) * cs * ct
    c2s, c2t = cs * cs, ct * ct
    u = f5 * (R(1.0) - R(5.0) * (c2s + c2t) - R(15.0) * c2s * c2t + R(2.0) * term * term)
    return _generic(u, -R(5.0) * u * inv, -R(10.0) * f5 * (cs + R(3.0) * cs * c2t + R(2.0) * ct * term) * inv,
                    -R(10.0) * f5 * (ct + R(3.0) * c2s * ct + R(2.0) * cs * term) * inv, R(4.0) * f5 * term, cs, ct,
                    inv, rx, ry, rz, es, et)


@njit(cache=True)
def _molecule_pair(i, j, dx, dy, dz, first, count, comp, kind, a, e, sigma, eps, mom, xi, eta, k, krf, crf, rf_dd):
    """Every site of molecule i against every site of j (centres d = c_i - c_j apart): the force on i,
    the torques on i and on j about their centres, and the energy, summed in the compute type."""
    R = a.dtype.type
    z = R(0.0)
    fx = fy = fz = tx = ty = tz = sx = sy = sz = u = z
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
                sg = eta[comp[i], comp[j]] * R(0.5) * (sigma[s] + sigma[t])
                l6 = sg * sg / r2
                l6 = l6 * l6 * l6
                us = R(4.0) * ep * l6 * (l6 - R(1.0))
                fac = R(24.0) * ep * l6 * (R(2.0) * l6 - R(1.0)) / r2
                px, py, pz = fac * rx, fac * ry, fac * rz
                o = (z, z, z)
                ot = (z, z, z)
            else:
                us, px, py, pz, o, ot = _site_pair(kind[s], kind[t], rx, ry, rz, e[s], e[t], mom[s], mom[t], k, krf,
                                                    crf, rf_dd)
            u += us
            fx += px
            fy += py
            fz += pz
            tx += a[s, 1] * pz - a[s, 2] * py + o[0]
            ty += a[s, 2] * px - a[s, 0] * pz + o[1]
            tz += a[s, 0] * py - a[s, 1] * px + o[2]
            sx += -(a[t, 1] * pz - a[t, 2] * py) + ot[0]  # -a_t x f + tau_t
            sy += -(a[t, 2] * px - a[t, 0] * pz) + ot[1]
            sz += -(a[t, 0] * py - a[t, 1] * px) + ot[2]
    return fx, fy, fz, tx, ty, tz, sx, sy, sz, u


@njit(cache=True)
def _switch(c, dx, dy, dz, rs, rc, px, py, pz, qx, qy, qz, sx, sy, sz, u):
    """A molecule pair's totals under the switch on the centres' distance (S = 1 - 10 x^3 + 15 x^4 - 6 x^5,
    x = (r - rs) / (rc - rs)): energy and torques times S, the force S f - u S'(r) d / r (c: the
    centres, whose dtype is the compute type)."""
    R = c.dtype.type
    r = math.sqrt(dx * dx + dy * dy + dz * dz)
    if r <= rs:
        return px, py, pz, qx, qy, qz, sx, sy, sz, u
    x = (r - rs) / (rc - rs)
    sw = R(1.0) - x * x * x * (R(10.0) - R(15.0) * x + R(6.0) * x * x)
    g = R(30.0) * x * x * (R(1.0) - x) * (R(1.0) - x) / (rc - rs) * u / r  # -u S'(r) / r
    return (sw * px + g * dx, sw * py + g * dy, sw * pz + g * dz, sw * qx, sw * qy, sw * qz, sw * sx, sw * sy,
            sw * sz, sw * u)


@njit(cache=True)
def _image(d, length, periodic):
    return d - length * np.rint(d / length) if periodic else d


@njit(cache=True)
def _separation(c, i, j, L, per):
    """d = c_i - c_j (minimum image on periodic axes) and |d|^2."""
    dx = _image(c[i, 0] - c[j, 0], L[0], per[0])
    dy = _image(c[i, 1] - c[j, 1], L[1], per[1])
    dz = _image(c[i, 2] - c[j, 2], L[2], per[2])
    return dx, dy, dz, dx * dx + dy * dy + dz * dz


ALLPAIRS, CELLS, LIST = 0, 1, 2


@njit(cache=True)
def _shell(i, c, per, cell_of, dims):
    """Molecule i's cell coordinates and the neighbour-cell offset ranges (cells_cpu's rule)."""
    cc = cell_of[i]
    cz = cc % dims[2]
    cy = (cc // dims[2]) % dims[1]
    cx = cc // (dims[2] * dims[1])
    xlo, xhi = _axis_range(cx, dims[0], per[0])
    ylo, yhi = _axis_range(cy, dims[1], per[1])
    zlo, zhi = _axis_range(cz, dims[2], per[2])
    return cx, cy, cz, xlo, xhi, ylo, yhi, zlo, zhi


@njit(parallel=True, cache=True)
def _list_counts(c, L, per, cell_of, start, order, dims, rl2, counts, fill, nstart, nidx):
    """The Verlet list over the centres (every j != i within rl, both directions), CSR: with fill False
    the counts per molecule, with fill True the indices, in cell order."""
    for i in prange(c.shape[0]):
        cx, cy, cz, xlo, xhi, ylo, yhi, zlo, zhi = _shell(i, c, per, cell_of, dims)
        n = 0
        for ox in range(xlo, xhi + 1):
            for oy in range(ylo, yhi + 1):
                for oz in range(zlo, zhi + 1):
                    nb = ((_wrapi(cx + ox, dims[0]) * dims[1] + _wrapi(cy + oy, dims[1])) * dims[2]
                          + _wrapi(cz + oz, dims[2]))
                    for q in range(start[nb], start[nb + 1]):
                        j = order[q]
                        if j == i:
                            continue
                        dx, dy, dz, r2 = _separation(c, i, j, L, per)
                        if r2 < rl2:
                            if fill:
                                nidx[nstart[i] + n] = j
                            n += 1
        counts[i] = n


@njit(parallel=True, cache=True)
def _traverse(c, L, per, cell_of, start, order, dims, mode, rc2, rs, first, count, comp, kind, a, e, sigma, eps,
              mom, xi, eta, k, krf, crf, rf_dd, force, torque, energy, virial, pairs):
    """A thread per molecule i over its candidates: every molecule (ALLPAIRS, order = 0..m-1), the 27
    neighbour cells (CELLS), or its Verlet list (LIST: start and order the CSR list)."""
    m = c.shape[0]
    rc = math.sqrt(rc2)
    Acc = force.dtype.type
    for i in prange(m):
        fx = fy = fz = tx = ty = tz = ui = Acc(0.0)
        w = np.zeros(9, force.dtype)
        np_ = 0
        cx, cy, cz, xlo, xhi, ylo, yhi, zlo, zhi = _shell(i, c, per, cell_of, dims)
        ncell = (xhi - xlo + 1) * (yhi - ylo + 1) * (zhi - zlo + 1) if mode == CELLS else 1
        for b in range(ncell):
            if mode == CELLS:
                ox = xlo + b // ((yhi - ylo + 1) * (zhi - zlo + 1))
                oy = ylo + (b // (zhi - zlo + 1)) % (yhi - ylo + 1)
                oz = zlo + b % (zhi - zlo + 1)
                nb = ((_wrapi(cx + ox, dims[0]) * dims[1] + _wrapi(cy + oy, dims[1])) * dims[2]
                      + _wrapi(cz + oz, dims[2]))
                lo, hi = start[nb], start[nb + 1]
            elif mode == LIST:
                lo, hi = start[i], start[i + 1]
            else:
                lo, hi = 0, m
            for q in range(lo, hi):
                j = order[q]
                if j == i:
                    continue
                dx, dy, dz, r2 = _separation(c, i, j, L, per)
                if r2 >= rc2:
                    continue
                np_ += 1
                px, py, pz, qx, qy, qz, sx, sy, sz, u = _molecule_pair(i, j, dx, dy, dz, first, count, comp, kind, a,
                                                                       e, sigma, eps, mom, xi, eta, k, krf, crf, rf_dd)
                px, py, pz, qx, qy, qz, sx, sy, sz, u = _switch(c, dx, dy, dz, rs, rc, px, py, pz, qx, qy, qz, sx,
                                                                sy, sz, u)
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
        energy[i] = Acc(0.5) * ui
        for x in range(9):
            virial[i, x] = Acc(0.5) * w[x]
        pairs[i] = np_


@njit(parallel=True, cache=True)
def _c08_colour(c, L, per, start, order, bases, blocks, dims, rc2, rs, first, count, comp, kind, a, e, sigma, eps,
                mom, xi, eta, k, krf, crf, rf_dd, force, torque, energy, virial, pairs):
    """One colour of c08 (bases of one colour touch disjoint cells): every pair of molecules of the
    block's cell pairs once, Newton3 (the force and torque on j from the same body)."""
    rc = math.sqrt(rc2)
    Acc = force.dtype.type
    for t in prange(bases.shape[0]):
        w = np.zeros(9, force.dtype)
        ut = Acc(0.0)
        np_ = 0
        for p in range(blocks.shape[0]):
            ca = _block_cell(bases[t], blocks[p, 0], dims, per)
            cb = _block_cell(bases[t], blocks[p, 1], dims, per)
            if ca < 0 or cb < 0:
                continue
            for qi in range(start[ca], start[ca + 1]):
                i = order[qi]
                for qj in range(qi + 1 if ca == cb else start[cb], start[cb + 1]):
                    j = order[qj]
                    dx, dy, dz, r2 = _separation(c, i, j, L, per)
                    if r2 >= rc2:
                        continue
                    np_ += 1
                    px, py, pz, qx, qy, qz, sx, sy, sz, u = _molecule_pair(i, j, dx, dy, dz, first, count, comp, kind,
                                                                           a, e, sigma, eps, mom, xi, eta, k, krf,
                                                                           crf, rf_dd)
                    px, py, pz, qx, qy, qz, sx, sy, sz, u = _switch(c, dx, dy, dz, rs, rc, px, py, pz, qx, qy, qz,
                                                                    sx, sy, sz, u)
                    force[i, 0] += px
                    force[i, 1] += py
                    force[i, 2] += pz
                    force[j, 0] -= px
                    force[j, 1] -= py
                    force[j, 2] -= pz
                    torque[i, 0] += qx
                    torque[i, 1] += qy
                    torque[i, 2] += qz
                    torque[j, 0] += sx
                    torque[j, 1] += sy
                    torque[j, 2] += sz
                    ut += u
                    dd = (dx, dy, dz)
                    ff = (px, py, pz)
                    for x in range(3):
                        for y in range(3):
                            w[3 * x + y] += dd[x] * ff[y]
        energy[t] = ut
        for x in range(9):
            virial[t, x] = w[x]
        pairs[t] = np_


def _sites(mols, model):
    """Per molecule its first site and count; per site its kind, lab-frame offset a and direction e,
    sigma, epsilon and charge or moment (the orientations turned once, as the port's quaternion kernel).
    Sites are laid out molecule after molecule; the work is done per component, vectorised."""
    R = rotation(mols.quaternions)
    comps = model.components
    comp = np.asarray(mols.components, np.int64)
    sizes = np.array([len(cp.kinds) for cp in comps], np.int64)
    count = sizes[comp] if len(comp) else np.zeros(0, np.int64)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    total = int(count.sum())
    kind, sigma, eps, mom = (np.zeros(total, np.int64), np.zeros(total), np.zeros(total), np.zeros(total))
    a, e = np.zeros((total, 3)), np.zeros((total, 3))
    for k, cp in enumerate(comps):
        mine = np.nonzero(comp == k)[0]
        if not len(mine):
            continue
        at = (first[mine][:, None] + np.arange(len(cp.kinds))[None, :]).ravel()  # these molecules' sites
        kind[at] = np.tile([KIND[x] for x in cp.kinds], len(mine))
        sigma[at] = np.tile(cp.sigma, len(mine))
        eps[at] = np.tile(cp.epsilon, len(mine))
        mom[at] = np.tile(np.where(np.array([x == "charge" for x in cp.kinds]), cp.charge, cp.moment), len(mine))
        a[at] = np.einsum("mij,sj->msi", R[mine], cp.position).reshape(-1, 3)
        e[at] = np.einsum("mij,sj->msi", R[mine], cp.direction).reshape(-1, 3)
    return first, count, kind, a, e, sigma, eps, mom


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


def _csr_list(c, L, per, cells, reach: float):
    """Every j != i with centres within `reach` of i's, both directions, as CSR (start (m + 1), indices),
    from cells of side >= reach."""
    cell, start, order, dims = cells
    counts = np.zeros(len(c), np.int64)
    _list_counts(c, L, per, cell, start, order, dims, reach * reach, counts, False, start, order)
    lstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    lidx = np.zeros(int(lstart[-1]), np.int64)
    _list_counts(c, L, per, cell, start, order, dims, reach * reach, counts, True, lstart, lidx)
    return lstart, lidx


def neighbours(mols, reach: float):
    """The molecules whose centres lie within `reach` of each molecule's (minimum image), in float64:
    CSR (start, indices)."""
    c = np.ascontiguousarray(mols.centres, np.float64)
    per = np.asarray(mols.box.periodic, np.bool_)
    return _csr_list(c, mols.box.array, per, _cells(c, mols.box.lengths, per, reach), reach)


def pairs_within(mols, radii) -> list[int]:
    """The molecule pairs (each once) whose centres lie within each of `radii` (minimum image, float64)."""
    c = np.ascontiguousarray(mols.centres, np.float64)
    per = np.asarray(mols.box.periodic, np.bool_)
    cell, start, order, dims = _cells(c, mols.box.lengths, per, max(radii))
    out = []
    for r in radii:
        counts = np.zeros(len(c), np.int64)
        _list_counts(c, mols.box.array, per, cell, start, order, dims, r * r, counts, False, start, order)
        out.append(int(counts.sum()) // 2)
    return out


def applicable(name: str, mols, model) -> tuple[bool, str]:
    """Whether traversal `name` runs these molecules: c08 needs 3 or more cells along each periodic axis."""
    if name != "c08_thread_cpu":
        return True, ""
    from .schedules import c08_applicable

    _, _, _, dims = _cells(np.ascontiguousarray(mols.centres, np.float64), mols.box.lengths,
                           np.asarray(mols.box.periodic, np.bool_), model.cutoff)
    ok, why = c08_applicable(dims, mols.box.periodic)
    return ok, "" if ok else f"c08 over the centres' cells ({'x'.join(map(str, dims))}): {why}"


def evaluate(name: str, mols, model, precision: str = "fp64", verlet_list=None) -> dict:
    """forces (M, 3), torques (M, 3), energy, virial (3, 3) and pairs (molecule pairs within the
    cutoff) of molecules `mols` under `model`, by the traversal `name` (TRAVERSALS), in `precision`
    (PRECISIONS); the results are float64 arrays whatever the precision. verlet_list: the Verlet
    traversal's list (CSR start, indices) to use instead of building one (VerletPlan keeps it)."""
    from . import schedules

    if name not in TRAVERSALS:
        raise ValueError(name)
    if precision not in PRECISIONS:
        raise ValueError(f"molecules compute in {', '.join(PRECISIONS)}, not {precision}")
    ok, why = applicable(name, mols, model)
    if not ok:
        raise ValueError(why)
    real, acc = PRECISIONS[precision]
    first, count, kind, a, e, sigma, eps, mom = _sites(mols, model)
    a, e, sigma, eps, mom = (np.ascontiguousarray(x, real) for x in (a, e, sigma, eps, mom))
    c = np.ascontiguousarray(mols.centres, np.float64)
    m = len(c)
    per = np.asarray(mols.box.periodic, np.bool_)
    # the cells from the float64 centres (which cell a centre falls in is not what the precision
    # mode is about); the pair separations from the centres in the compute type
    cr, lengths = c.astype(real), np.asarray(mols.box.array, real)
    rf_dd = real(model.rf_dipoles)
    rc2 = real(model.cutoff) * real(model.cutoff)
    rs = real(model.switch_start)
    comp = np.asarray(mols.components, np.int64)
    force, torque = np.zeros((m, 3), acc), np.zeros((m, 3), acc)
    body = (first, count, comp, kind, a, e, sigma, eps, mom, model.xi.astype(real), model.eta.astype(real),
            real(model.coulomb_constant), real(model.k_rf), real(model.c_rf), rf_dd)
    if name == "c08_thread_cpu":
        cell, start, order, dims = _cells(c, mols.box.lengths, per, model.cutoff)
        colours = [b.astype(np.int64) for b in schedules.c08_colours(dims, mols.box.periodic)]
        rows = sum(len(b) for b in colours)
        energy, virial, pairs = np.zeros(rows, acc), np.zeros((rows, 9), acc), np.zeros(rows, np.int64)
        blocks = schedules.C08_PAIRS.astype(np.int64)
        row = 0
        for bases in colours:
            k = len(bases)
            _c08_colour(cr, lengths, per, start, order, bases, blocks, dims, rc2, rs, *body, force, torque,
                        energy[row:row + k], virial[row:row + k], pairs[row:row + k])
            row += k
        visits = 1
    else:
        mode = {"allpairs_thread_cpu": ALLPAIRS, "fullshell_thread_cpu": CELLS, "verlet_thread_cpu": LIST}[name]
        if mode == ALLPAIRS or (mode == LIST and verlet_list is not None):  # no cells to build
            cell, start, order, dims = (np.zeros(m, np.int64), np.array([0, m], np.int64),
                                        np.arange(m, dtype=np.int64), np.ones(3, np.int64))
        else:
            side = model.cutoff * (1.0 + SKIN) if mode == LIST else model.cutoff
            cell, start, order, dims = _cells(c, mols.box.lengths, per, side)
        if mode == LIST and verlet_list is not None:
            start, order = verlet_list
        elif mode == LIST:  # the list over the centres within rc + skin, then the traversal over it
            start, order = _csr_list(c, mols.box.array, per, (cell, start, order, dims), (1.0 + SKIN) * model.cutoff)
        energy, virial, pairs = np.zeros(m, acc), np.zeros((m, 9), acc), np.zeros(m, np.int64)
        _traverse(cr, lengths, per, cell, start, order, dims, mode, rc2, rs, *body, force, torque, energy,
                  virial, pairs)
        visits = 2
    dip = kind == DIPOLE
    self_term = -0.5 * model.coulomb_constant * model.rf_dipoles * float(np.sum(mom[dip].astype(np.float64) ** 2))
    return {"forces": force.astype(np.float64), "torques": torque.astype(np.float64),
            "energy": float(energy.sum(dtype=acc)) + self_term,
            "virial": virial.sum(0, dtype=acc).astype(np.float64).reshape(3, 3), "pairs": int(pairs.sum()) // visits}


class VerletPlan:
    """verlet_thread_cpu across the steps of a trajectory: the list over the centres within (1 + SKIN)
    rc is built once and kept while no centre has moved more than SKIN rc / 2 from where it was at the
    build (minimum image; the cutoff is on the centres, so turning molecules never invalidates it), then
    built again. `rebuilds` counts the builds."""

    def __init__(self, model, precision: str = "fp64"):
        self.model, self.precision = model, precision
        self.at: np.ndarray | None = None
        self.lists = None
        self.rebuilds = 0

    def evaluate(self, mols) -> dict:
        c = np.ascontiguousarray(mols.centres, np.float64)
        if self.at is None or len(self.at) != len(c) or self._moved(c, mols.box) > 0.5 * SKIN * self.model.cutoff:
            self.lists = neighbours(mols, (1.0 + SKIN) * self.model.cutoff)
            self.at = c.copy()
            self.rebuilds += 1
        return evaluate("verlet_thread_cpu", mols, self.model, self.precision, verlet_list=self.lists)

    def _moved(self, c: np.ndarray, box) -> float:
        d = c - self.at
        L = np.asarray(box.lengths, np.float64)
        per = np.asarray(box.periodic, bool)
        d = np.where(per, d - L * np.rint(d / np.where(per, L, 1.0)), d)
        return float(np.sqrt(np.max(np.sum(d * d, axis=1)))) if len(d) else 0.0
