"""verlet_thread_cpu: the Verlet list and its trigger in numba (the CPU counterpart of
verlet_thread_padded, with its launch parameter adapt)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mdcore import Problem, StrategyError

from ..base import Plan
from ..cells_cpu import _axis_range, _wrapi, bin_cells
from ..cpu import CpuPlan, pair_step, separation, store_sums
from ..lists import moved_beyond
from ..registry import register
from .common import VerletStrategy, adapt_text, cap_of, parse_adapt


@njit(parallel=True)
def _build_cpu(sorted_pos, order, cell_sorted, start, dims, per, box, rlist2, nbr, length, overflow, adapt, rc, hs):
    """Rows in sorted order s (particle order[s]); nbr (rows, cap) of particle indices. adapt: a pair listed
    where r < rc + hs[s] + hs[q] (each particle's half-skin, sorted order), else r^2 < rlist2."""
    n = sorted_pos.shape[0]
    cap = nbr.shape[1]
    for s in prange(n):
        c = cell_sorted[s]
        cz = c % dims[2]
        cy = (c // dims[2]) % dims[1]
        cx = c // (dims[2] * dims[1])
        xlo, xhi = _axis_range(cx, dims[0], per[0])
        ylo, yhi = _axis_range(cy, dims[1], per[1])
        zlo, zhi = _axis_range(cz, dims[2], per[2])
        m = 0
        for ox in range(xlo, xhi + 1):
            x = _wrapi(cx + ox, dims[0])
            for oy in range(ylo, yhi + 1):
                y = _wrapi(cy + oy, dims[1])
                for oz in range(zlo, zhi + 1):
                    nb = (x * dims[1] + y) * dims[2] + _wrapi(cz + oz, dims[2])
                    for q in range(start[nb], start[nb + 1]):
                        if q == s:
                            continue
                        _, _, _, r2 = separation(sorted_pos, s, q, box)
                        lim = rlist2
                        if adapt:
                            reach = rc + (hs[s] + hs[q])
                            lim = reach * reach
                        if r2 < lim:
                            if m < cap:
                                nbr[s, m] = order[q]
                            m += 1
        length[s] = min(m, cap)
        overflow[s] = m


@njit(parallel=True)
def _force_cpu(pair, conv, with_sums, pos, w, order, nbr, length, box, prm, rc2, zero, forces, sums, counts):
    n = nbr.shape[0]
    for s in prange(n):
        i = order[s]
        sm = (zero, zero, zero, zero, zero, zero, zero)
        fx = fy = fz = zero
        m = 0
        for k in range(length[s]):
            j = nbr[s, k]
            dx, dy, dz, r2 = separation(pos, i, j, box)
            if r2 < rc2:
                ax, ay, az, sm, hit = pair_step(pair, conv, with_sums, sm, dx, dy, dz, r2, prm, w[i], w[j])
                fx += ax
                fy += ay
                fz += az
                m += hit
        forces[i, 0] = fx
        forces[i, 1] = fy
        forces[i, 2] = fz
        store_sums(sums[s], sm)
        counts[s] = m


@register
class VerletThreadCpu(VerletStrategy):
    name = "verlet_thread_cpu"
    backend = "cpu"
    storage = "padded"
    description = "numba Verlet list (cutoff + skin), padded rows, rebuilt when a particle moved more than skin/2"
    # adapt: verlet_thread_padded's per-particle skins on the CPU, from the MD loop's velocities (use_velocities),
    # so that CI exercises the per-pair reach and the per-particle trigger
    launch_defaults = {**VerletStrategy.launch_defaults, "adapt": "off"}
    launch_help = {"adapt": "off, or m:K: each particle's buffer m + K dt times its speed at a rebuild of the MD loop"}

    def __init__(self, **launch):
        super().__init__(**launch)
        self.adapt = parse_adapt(self.name, self.launch["adapt"])

    def _prepare(self, problem: Problem) -> Plan:
        return _VerletCpuPlan(self, problem)


class _VerletCpuPlan(CpuPlan):
    def __init__(self, strategy: VerletThreadCpu, problem: Problem):
        super().__init__(strategy, problem)
        self.dims = strategy.grid(problem)
        self.per = np.array(problem.box.periodic, dtype=np.bool_)
        self.side = (problem.box.array / self.dims).astype(self.real)
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        self.rlist2 = self.real(self.rl ** 2)
        self.cap = int(strategy.launch["cap"])
        self.rebuilds = 0
        self.ref: np.ndarray | None = None
        self.nbr = np.zeros((problem.n, max(self.cap, 1)), np.int64)
        self.length = np.zeros(problem.n, np.int64)
        self.overflow_len = 0
        # adapt: each particle's half-skin (input order) from the integrator's velocities at a build; skin / 2
        # where none is known
        self.adapt = getattr(strategy, "adapt", None)
        self.hcap = self.real(0.5 * self.skin)
        self.h = np.full(problem.n, self.hcap, self.real)
        self.integ = None
        self.launch_info = {"cells": self.dims.tolist(), "rlist": self.rl, "skin": self.skin,
                            "adapt": adapt_text(self.adapt)}

    def use_velocities(self, integ) -> None:
        """The MD loop's integrator (harness/md.py, plain steps), or anything with its v and dt (a replay's
        FrameVelocities): its velocities size adapt's half-skins at each build. None: skin / 2 again."""
        self.integ = integ

    def _half_skins(self) -> None:
        if self.adapt is None or self.integ is None:
            self.h.fill(self.hcap)
            return
        m, k = self.adapt
        v = np.asarray(self.integ.v, dtype=np.float64).reshape(-1, 3)
        speed = np.sqrt(np.einsum("ij,ij->i", v, v))
        self.h[:] = np.minimum(self.hcap, m + k * float(self.integ.dt) * speed).astype(self.real)

    def build(self) -> None:
        self.order, cell_sorted, start, sorted_pos = bin_cells(self.pos, self.problem.box.array, self.side, self.dims)
        n = self.problem.n
        dims = self.dims.astype(np.int64)
        full = np.zeros(n, np.int64)
        self._half_skins()
        hs = self.h[self.order]  # sorted order, as the rows
        adapt = self.adapt is not None
        rc = self.real(self.problem.potential.cutoff)
        if self.cap == 0:  # size the rows from a first pass
            probe = np.zeros((n, 0), np.int64)
            _build_cpu(sorted_pos, self.order, cell_sorted, start, dims, self.per, self.box, self.rlist2, probe,
                       self.length, full, adapt, rc, hs)
            self.cap = cap_of(int(full.max()) if n else 0)
            self.nbr = np.zeros((n, self.cap), np.int64)
        _build_cpu(sorted_pos, self.order, cell_sorted, start, dims, self.per, self.box, self.rlist2, self.nbr,
                   self.length, full, adapt, rc, hs)
        self.overflow_len = max(self.overflow_len, int(full.max()) if n and full.max() > self.cap else 0)
        self.ref = self.pos.copy()
        self.rebuilds += 1
        self.launch_info["cap"] = self.cap
        self.launch_info["list_bytes"] = int(self.nbr.nbytes + self.length.nbytes + self.ref.nbytes)

    def needs_rebuild(self, positions=None) -> bool:
        if self.ref is None:
            return True
        if self.strategy.launch["rebuild"] == "never":
            return False
        if self.adapt is not None:  # each particle its own half-skin, the build's
            return moved_beyond(self.pos, self.ref, self.problem.box.array, self.per, self.h)
        return moved_beyond(self.pos, self.ref, self.problem.box.array, self.per, 0.5 * self.skin)

    def rebuild_count(self) -> int:
        return self.rebuilds

    def listed_pairs(self) -> int:
        return int(self.length.sum())

    def force(self) -> None:
        if self.overflow_len:
            raise StrategyError(f"{self.strategy.name}: a particle has {self.overflow_len} neighbours within "
                                f"{self.rl:g} (cutoff + skin), more than the list's capacity {self.cap}; the list was "
                                f"not complete: give the launch parameter cap (>= {self.overflow_len}) or prepare again")
        _force_cpu(self.pair, self.conv, self.energy, self.pos, self.w, self.order, self.nbr, self.length, self.box, self.prm, self.rc2,
                   self.acc(0), self.forces, self.sums, self.counts)
