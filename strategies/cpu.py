"""What the numba CPU strategies share: the pair step around a potential's pair function, the
precision set-up and the plan's buffers and reduction.

The loops take the potential's numba pair function as an argument (numba specialises them per
potential; no compile cache for such functions) and its cutoff^2 as a number: the potential is
a parameter, nothing in a loop knows which one it computes.

Precision: arrays carry the compute dtype (float32 or float64) and the pair function's constants
come in `prm` in that dtype, so float32 arithmetic stays float32 (a Python literal would promote
it); sums start from `zero` in the accumulation dtype, and every term enters a sum through `conv`
(the loops take it beside `pair`): as it is in the float modes, rounded to an int64 number of
2^-32 units in the fixed-point mode (as the kernels' Fixed(x)).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from mdcore import FIXED_SCALE, MODES, Forces, Problem, poison, poison_value
from mdcore.potentials import particle_words

from .base import Plan, Strategy


_UNIT = np.float32(FIXED_SCALE)


@njit(inline="always")
def as_sum(x):
    """conv of the float modes: the term as it is (the sum's type promotes it)."""
    return x


@njit(inline="always")
def to_fixed(x):
    """conv of the fixed-point mode: x in 2^-32 units, rounded to nearest (ties to even), as an
    int64; x * 2^32 is exact in float (Problem.make keeps |x| < 2^30)."""
    return np.int64(np.rint(x * _UNIT))


@njit
def pair_sums(pair, conv, s, dx, dy, dz, r2, prm, wi, wj):
    """One pair within the largest cutoff, d = r_i - r_j, of particles carrying wi and wj (their
    type or charge: mdcore.potentials.pair_table); pair(r2, prm, wi, wj) -> (|F|/r, u, hit), hit
    whether the pair interacts (|F|/r and u are 0 where not). s: the running sums (energy, virial
    xx, xy, xz, yy, yz, zz) as a tuple, so that they stay in registers (LLVM inlines the call;
    numba's own inlining would trip its parfor array analysis on the tuple). Returns the force on
    i, as conv makes it a term of a sum, the updated sums and hit."""
    fr, u, hit = pair(r2, prm, wi, wj)
    ax, ay, az = fr * dx, fr * dy, fr * dz
    s = (s[0] + conv(u), s[1] + conv(ax * dx), s[2] + conv(ax * dy), s[3] + conv(ax * dz), s[4] + conv(ay * dy),
         s[5] + conv(ay * dz), s[6] + conv(az * dz))
    return conv(ax), conv(ay), conv(az), s, hit


@njit
def pair_step(pair, conv, with_sums, s, dx, dy, dz, r2, prm, wi, wj):
    """pair_sums with the sums (all outputs), or the force on i alone (forces only; s unchanged)."""
    if with_sums:
        return pair_sums(pair, conv, s, dx, dy, dz, r2, prm, wi, wj)
    fr, _, hit = pair(r2, prm, wi, wj)
    return conv(fr * dx), conv(fr * dy), conv(fr * dz), s, hit


@njit(inline="always")
def store_sums(row, s):
    for k in range(7):
        row[k] = s[k]


@njit(inline="always")
def wrap(d, length, inv_length):
    """Minimum image along one axis; inv_length = 0 on an open axis."""
    return d - length * np.rint(d * inv_length)


@njit(inline="always")
def separation(pos, i, j, box):
    """Minimum-image d = r_i - r_j and |d|^2; box: L0, L1, L2, 1/L0, 1/L1, 1/L2 (0 = open)."""
    dx = wrap(pos[i, 0] - pos[j, 0], box[0], box[3])
    dy = wrap(pos[i, 1] - pos[j, 1], box[1], box[4])
    dz = wrap(pos[i, 2] - pos[j, 2], box[2], box[5])
    return dx, dy, dz, dx * dx + dy * dy + dz * dz


class CpuPlan(Plan):
    """Centred positions in the compute dtype; forces (n, 3) and per-row sums (rows, 7) in
    the accumulation dtype. Subclasses fill them in force(); reduce() folds the rows.
    pair, prm, rc2: the potential's pair function, its constants and largest cutoff^2 (compute dtype);
    w: what each particle carries (its position's fourth component on the GPU; zeros where the
    potential has no per-particle data)."""

    visits_per_pair = 2

    def __init__(self, strategy: Strategy, problem: Problem, rows: int | None = None):
        super().__init__(strategy, problem)
        mode = MODES[problem.precision]
        self.real, self.acc = mode.compute, mode.accumulate
        self.fixed = mode.fixed
        self.conv = to_fixed if mode.fixed else as_sum
        L = problem.box.array
        self.pos = (problem.positions - 0.5 * L).astype(self.real)  # centred, as on the GPU
        self.w = particle_words(problem).astype(self.real)
        self.box = np.concatenate([L, np.where(problem.box.periodic, 1.0 / L, 0.0)]).astype(self.real)
        pot = problem.potential
        self.pair = pot.cpu_pair()
        self.prm = pot.pair_params(self.real)
        self.rc2 = self.real(math.inf if pot.cutoff is None else pot.cutoff ** 2)
        n = problem.n
        rows = n if rows is None else rows
        self.forces = poison.empty((n, 3), self.acc)
        self.sums = poison.empty((rows, 7), self.acc)
        self.counts = poison.empty(rows, np.int64)
        self.result: Forces | None = None

    def reduce(self) -> None:
        forces = self.forces * (1.0 / FIXED_SCALE) if self.fixed else self.forces  # fixed: once, to float64
        if not self.energy:
            self.result = Forces(forces, None, None, None)
            return
        if self.fixed:  # integer sums (wrapping, as on the device), halved exactly where seen twice
            s = (self.sums.sum(axis=0, dtype=np.int64) >> (self.visits_per_pair - 1)) * (1.0 / FIXED_SCALE)
        else:
            s = self.sums.sum(axis=0, dtype=self.acc) * self.acc(1.0 / self.visits_per_pair)
        w = np.array([[s[1], s[2], s[3]], [s[2], s[4], s[5]], [s[3], s[5], s[6]]])
        self.result = Forces(forces, s[0], w, int(self.counts.sum()) // self.visits_per_pair)

    def output(self) -> Forces:
        if self.result is None:
            raise RuntimeError("compute() before output()")
        return self.result

    def poison(self) -> None:
        self.forces.fill(poison_value(self.acc))
        self.sums.fill(poison_value(self.acc))
        self.counts.fill(-1)
        self.result = None
