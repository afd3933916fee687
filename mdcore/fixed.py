"""What the fixed-point precision mode needs besides integer sums (mdcore.precision):

1. The same pair terms in every traversal. A kernel forms a displacement as r_i - r_j, or as
   (r_i - s) - r_j with a periodic shift s applied once per cell or cluster pair, or with a
   minimum image per pair: in float these round differently, and a pair seen from j would not
   give exactly minus what it gives seen from i. `snapped` puts the positions and the box
   lengths on a grid of step q = 2^(E-23), 2^E >= the longest box length, with even multiples
   of q for the lengths: then every centred coordinate, shifted coordinate and displacement a
   kernel forms (all below 2^(E+1) = 2^24 q in magnitude) is a multiple of q that float holds
   exactly, and each pair's r^2, force and energy are the same bits from either side and in any
   traversal (the kernels are compiled without fused multiply-adds, so r^2 = dx dx + dy dy + dz dz
   rounds one way). Snapping moves a position by at most q/2 <= 2^-23 L and a length by less than
   2 q <= 2^-21 L (rounded up, so cells keep their side); the tolerances count it
   (Precision.eps_compute).

2. The range. A sum in units of 2^-32 in an int64 holds magnitudes below 2^31. `range_check`
   bounds each particle's force by the sum of its pair forces' magnitudes, and the energy and
   virial by the sums of |u| and |r . f| over pairs (float64, every pair within the cutoff), and
   refuses an input where one reaches FIXED_LIMIT = 2^30 (half the range: float rounding of the
   terms, and totals that full-shell traversals form twice before halving), naming the particle.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit, prange

from .closest import min_image_r2
from .errors import InputError
from .precision import FIXED_LIMIT


def grid_step(lengths) -> float:
    """q = 2^(E-23) with 2^E >= every snapped length (see the module docstring)."""
    longest = float(np.max(lengths))
    e = math.ceil(math.log2(longest))
    q = 2.0 ** (e - 23)
    if 2.0 * q * math.ceil(longest / (2.0 * q)) > 2.0 ** e:  # rounding up crossed the power of two
        q *= 2.0
    return q


def snap_lengths(lengths) -> np.ndarray:
    L = np.asarray(lengths, dtype=np.float64)
    q = grid_step(L)
    return 2.0 * q * np.ceil(L / (2.0 * q))


def snap_positions(positions, snapped_lengths, periodic=(True, True, True)) -> np.ndarray:
    """Positions in [0, L) (any leading shape, last axis xyz) rounded to the grid of the snapped
    lengths, wrapped back into [0, L) on periodic axes (a copy)."""
    L = np.asarray(snapped_lengths, dtype=np.float64)
    q = grid_step(L)
    pos = np.rint(np.asarray(positions, dtype=np.float64) / q) * q
    for a in range(3):
        if periodic[a]:
            col = pos[..., a]
            col[col >= L[a]] -= L[a]
    return pos


_SNAPPED: dict = {}  # id(positions), box -> (positions, snapped problem): a small cache


def snapped(problem):
    """The problem on the fixed-point grid: positions rounded to multiples of q (wrapped into
    [0, L) on periodic axes), lengths rounded up to even multiples of q. Cached per positions
    array (every precision's Problem of one configuration shares it)."""
    key = (id(problem.positions), problem.box)
    hit = _SNAPPED.get(key)
    if hit is not None and hit[1].potential == problem.potential:
        return replace(hit[1], precision=problem.precision, label=problem.label)
    from .problem import Box

    L = snap_lengths(problem.box.lengths)
    pos = snap_positions(problem.positions, L, problem.box.periodic)
    pos.setflags(write=False)
    out = replace(problem, positions=pos, box=Box(tuple(float(v) for v in L), problem.box.periodic))
    while len(_SNAPPED) >= 4:
        _SNAPPED.pop(next(iter(_SNAPPED)))
    _SNAPPED[key] = (problem.positions, out)
    return out


@njit(inline="always")
def _reach(c, n, periodic):
    """Neighbour offsets along one axis: -1..1, without naming a cell twice (fewer than 3 cells
    on a periodic axis) or leaving an open one."""
    if periodic:
        return (-1 if n >= 3 else 0), (1 if n >= 2 else 0)
    return (-1 if c > 0 else 0), (1 if c < n - 1 else 0)


@njit(parallel=True)
def _magnitudes(ref, consts, rc2, pos, L, per, dims, start, order, force, energy, virial):
    """Per particle i: sums over its partners j of |F_ij| (force), |u_ij| (energy) and |F_ij| r_ij
    (virial), every pair inside the cutoff, in float64 (each pair seen from both sides)."""
    n = pos.shape[0]
    for k in prange(n):
        i = order[k]
        c0 = min(max(int(pos[i, 0] / L[0] * dims[0]), 0), dims[0] - 1)
        c1 = min(max(int(pos[i, 1] / L[1] * dims[1]), 0), dims[1] - 1)
        c2 = min(max(int(pos[i, 2] / L[2] * dims[2]), 0), dims[2] - 1)
        lo0, hi0 = _reach(c0, dims[0], per[0])
        lo1, hi1 = _reach(c1, dims[1], per[1])
        lo2, hi2 = _reach(c2, dims[2], per[2])
        f = 0.0
        u = 0.0
        w = 0.0
        for o0 in range(lo0, hi0 + 1):
            x0 = (c0 + o0 + dims[0]) % dims[0]
            for o1 in range(lo1, hi1 + 1):
                x1 = (c1 + o1 + dims[1]) % dims[1]
                for o2 in range(lo2, hi2 + 1):
                    cell = (x0 * dims[1] + x1) * dims[2] + (c2 + o2 + dims[2]) % dims[2]
                    for m in range(start[cell], start[cell + 1]):
                        j = order[m]
                        if j == i:
                            continue
                        r2 = min_image_r2(pos, i, j, L, per)
                        if r2 < rc2:
                            fr, uu = ref(r2, consts)
                            f += abs(fr) * math.sqrt(r2)
                            u += abs(uu)
                            w += abs(fr) * r2
        force[i] = f
        energy[i] = u
        virial[i] = w


def magnitudes(problem) -> tuple[np.ndarray, float, float]:
    """(per particle: sum of |F| over its pairs; sum over pairs of |u|; of |F| r), float64."""
    pos, L = problem.positions, problem.box.array
    pot = problem.potential
    n = problem.n
    force = np.zeros(n)
    energy = np.zeros(n)
    virial = np.zeros(n)
    if n < 2:
        return force, 0.0, 0.0
    rc = pot.cutoff
    if rc is None:
        dims = np.ones(3, np.int64)
    else:  # cells of side >= rc; at most ~8 per particle, so that a sparse box stays cheap
        dims = np.maximum(1, np.floor(L / rc)).astype(np.int64)
        while np.prod(dims) > 8 * n + 27:
            dims = np.maximum(1, dims // 2)
    idx = np.minimum((pos / L * dims).astype(np.int64), dims - 1)
    idx = np.maximum(idx, 0)
    cell = (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    order = np.argsort(cell, kind="stable")
    start = np.zeros(int(np.prod(dims)) + 1, np.int64)
    np.cumsum(np.bincount(cell, minlength=int(np.prod(dims))), out=start[1:])
    rc2 = math.inf if rc is None else rc * rc
    per = np.array(problem.box.periodic, dtype=np.bool_)
    _magnitudes(pot.reference_pair, pot.reference_constants(), rc2, np.ascontiguousarray(pos), L, per, dims, start,
                order, force, energy, virial)
    return force, 0.5 * float(energy.sum()), 0.5 * float(virial.sum())


_CHECKED: dict = {}  # id(positions), box, potential -> positions (held so the id is not reused)


def range_check(problem) -> None:
    """InputError where a fixed-point sum of this problem could leave the range (see the module
    docstring); checked once per configuration and potential."""
    key = (id(problem.positions), problem.box, problem.potential)
    if key in _CHECKED:
        return
    force, energy, virial = magnitudes(snapped(problem))
    limit = f"fixed point's range (|sum| < 2^30 = {FIXED_LIMIT:.3g}: int64 in 2^-32 units)"
    advice = "use fp32, mixed or fp64"
    if len(force) and force.max() >= FIXED_LIMIT:
        i = int(np.argmax(force))
        raise InputError(f"positions: particle {i}'s pair forces add up to {force[i]:.3g} in magnitude, beyond "
                         f"{limit}; {int((force >= FIXED_LIMIT).sum())} particle(s) affected: {advice}")
    for what, v in (("pair energies", energy), ("pair virials |r f|", virial)):
        if v >= FIXED_LIMIT:
            raise InputError(f"positions: the {what} add up to {v:.3g} in magnitude, beyond {limit}: {advice}")
    while len(_CHECKED) >= 8:
        _CHECKED.pop(next(iter(_CHECKED)))
    _CHECKED[key] = problem.positions
