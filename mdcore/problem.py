"""What a strategy is asked to compute, and what it returns.

Units are reduced LJ units throughout (length sigma, energy epsilon) unless a file says
otherwise; nothing here converts units.

Virial convention (used by the reference, every strategy and the reports):
    W[a, b] = sum over pairs i<j of r_ij[a] * f_ij[b]
with r_ij = r_i - r_j (minimum image) and f_ij the force on i due to j. W is positive for
repulsion; the pressure tensor is P = (sum_i m v_i v_i^T + W) / V.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .closest import closest_below
from .errors import InputError, StrategyError
from .potentials import LennardJones, Potential
from .precision import MODES, PRECISIONS, check_precision

AXES = "xyz"


def parse_value(text: str):
    """A launch or scenario value as typed on a command line: int, float, or the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class Box:
    """Orthorhombic box [0, L_x) x [0, L_y) x [0, L_z), periodic or open per axis.

    lengths: (3,) float64, length units. periodic: three bools.
    """

    lengths: tuple[float, float, float]
    periodic: tuple[bool, bool, bool] = (True, True, True)

    @staticmethod
    def make(lengths: Any, periodic: Any = True) -> "Box":
        arr = np.asarray(lengths)
        if arr.dtype.kind not in "iuf" or arr.shape not in ((3,), (3, 3)):
            raise InputError(f"box: expected 3 lengths (or a diagonal 3x3 matrix), got shape {arr.shape} dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if arr.shape == (3, 3):
            if np.any(arr - np.diag(np.diag(arr))):
                raise InputError("box: only orthorhombic boxes are supported (the 3x3 box matrix has off-diagonal entries)")
            arr = np.diag(arr).copy()
        for a, v in zip(AXES, arr):
            if not math.isfinite(v) or v <= 0.0:
                raise InputError(f"box: length along {a} must be finite and > 0, got {v}")
        per = np.asarray(periodic)
        if per.dtype.kind not in "bi" or per.shape not in ((), (3,)):
            raise InputError(f"periodic: expected one bool or three bools, got {periodic!r}")
        per = np.broadcast_to(per.astype(bool), (3,))
        return Box(tuple(float(v) for v in arr), tuple(bool(p) for p in per))

    @property
    def array(self) -> np.ndarray:
        return np.array(self.lengths, dtype=np.float64)

    @property
    def volume(self) -> float:
        return float(np.prod(self.lengths))

    def describe(self) -> str:
        dims = "x".join(f"{v:g}" for v in self.lengths)
        pbc = "".join(a if p else "-" for a, p in zip(AXES, self.periodic))
        return f"{dims} pbc={pbc}"


def _validate_positions(positions: Any) -> np.ndarray:
    arr = np.asarray(positions)
    if arr.dtype.kind not in "iuf":
        raise InputError(f"positions: expected a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InputError(f"positions: expected shape (N, 3), got {arr.shape}")
    arr = np.array(arr, dtype=np.float64, order="C", copy=True)  # ours: wrapped and frozen below
    bad = ~np.isfinite(arr)
    if bad.any():
        i, a = np.argwhere(bad)[0]
        raise InputError(f"positions: particle {i} has a non-finite {AXES[a]} coordinate ({arr[i, a]})"
                         f"; {int(bad.any(axis=1).sum())} particle(s) affected")
    return arr


def _min_separation(potential: Potential, box: Box, precision: str) -> float:
    """Closest distance a pair may have in this precision: the potential's overflow distance,
    and the coordinate resolution (one ulp of the compute type at the box's largest length)."""
    return max(potential.min_distance(precision), MODES[precision].eps_compute * max(box.lengths))


@dataclass(frozen=True, eq=False)
class Problem:
    """One force evaluation: positions in a box, a pair potential (any registered one), a
    precision mode.

    positions: (N, 3) float64, length units, inside [0, L) on periodic axes (wrapped on
    construction) and inside [0, L] on open axes (checked). label: how to reproduce it.
    """

    positions: np.ndarray
    box: Box
    potential: Potential = LennardJones()
    precision: str = "fp32"
    label: str = ""
    # the closest pair (i, j, r) below the largest min_distance of the potential over the
    # precision modes (and the coordinate resolution), (-1, -1, inf) when none: set by make()
    closest: tuple = (-1, -1, math.inf)

    @staticmethod
    def make(positions: Any, box: Box | Any, potential: Potential | None = None,
             precision: str = "fp32", periodic: Any = True, label: str = "") -> "Problem":
        if not isinstance(box, Box):
            box = Box.make(box, periodic)
        potential = potential or LennardJones()
        if not isinstance(potential, Potential):
            raise InputError(f"potential: expected a registered potential, got {type(potential).__name__}")
        check_precision(precision)
        pos = _validate_positions(positions)
        L = box.array
        rc = potential.cutoff
        for a in range(3):
            if not box.periodic[a]:
                continue
            if rc is None:
                raise InputError(f"cutoff: no cutoff needs open boundaries on every axis, but {AXES[a]} is periodic "
                                 "(minimum image would count only the nearest image)")
            if L[a] < 2.0 * rc:
                raise InputError(f"box: periodic length along {AXES[a]} ({L[a]:g}) is shorter than twice the cutoff "
                                 f"(2 x {rc:g}); minimum image would miss interactions")
        if len(pos):
            for a in range(3):
                if box.periodic[a]:
                    col = pos[:, a] - L[a] * np.floor(pos[:, a] / L[a])
                    col[col >= L[a]] = 0.0  # x = -tiny wraps to L by rounding
                    pos[:, a] = col
                else:
                    out = (pos[:, a] < 0.0) | (pos[:, a] > L[a])
                    if out.any():
                        i = int(np.argmax(out))
                        raise InputError(f"positions: particle {i} lies outside the open box along {AXES[a]}: "
                                         f"{pos[i, a]:g} not in [0, {L[a]:g}] ({int(out.sum())} particle(s) outside)")
        pos.setflags(write=False)
        r_check = max(_min_separation(potential, box, p) for p in PRECISIONS)
        problem = Problem(pos, box, potential, precision, label, closest_below(pos, L, box.periodic, r_check))
        problem._check_separation()
        return problem

    def _check_separation(self) -> None:
        """Refuse pairs closer than this precision can compute (see mdcore.closest), and in the
        fixed-point mode sums that could leave its range (mdcore.fixed)."""
        i, j, r = self.closest
        limit = _min_separation(self.potential, self.box, self.precision)
        if i >= 0 and r < limit:
            what = "coincide (distance 0)" if r == 0.0 else f"are {r:.3g} apart"
            raise InputError(f"positions: particles {i} and {j} {what}; closer than {limit:.3g} a pair has no "
                             f"direction or its {self.potential.name} terms overflow {MODES[self.precision].cxx_compute} "
                             f"({self.precision}): move or remove one of them")
        if MODES[self.precision].fixed:
            from .fixed import range_check

            range_check(self)

    @property
    def n(self) -> int:
        return int(self.positions.shape[0])

    def with_precision(self, precision: str) -> "Problem":
        p = replace(self, precision=check_precision(precision))
        p._check_separation()
        return p

    def describe(self) -> str:
        rc = "none" if self.potential.cutoff is None else f"{self.potential.cutoff:g}"
        return f"{self.label or 'problem'}: N={self.n} box {self.box.describe()} rc={rc} {self.precision}"


def _host(x: Any) -> np.ndarray:
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


@dataclass
class Forces:
    """Result of one evaluation. On the host: forces (N, 3) float64 (force units),
    energy float, virial (3, 3) float64 (see module docstring), pairs int (pairs i<j with
    r < cutoff); energy, virial and pairs are None from a forces-only evaluation. A GPU strategy
    returns device arrays; to_host() copies them.

    checks: (flag, message) pairs a strategy raises from the device (errors as data): a
    non-zero flag makes to_host() raise StrategyError(message.format(value=flag))."""

    forces: Any
    energy: Any
    virial: Any
    pairs: Any
    checks: tuple = ()

    def raise_checks(self) -> None:
        """StrategyError for the first raised device check (reads the flags, not the forces)."""
        for flag, message in self.checks:
            value = int(_host(flag).reshape(-1)[0])
            if value:
                raise StrategyError(message.format(value=value))

    def to_host(self) -> "Forces":
        host = _host
        self.raise_checks()
        f = host(self.forces).astype(np.float64, copy=False).reshape(-1, 3)
        if self.energy is None:
            return Forces(f, None, None, None)
        return Forces(f, float(host(self.energy)), host(self.virial).astype(np.float64).reshape(3, 3),
                      int(host(self.pairs)))
