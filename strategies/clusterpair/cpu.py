"""clusterpair_thread_cpu: the cluster pairs in numba (the full list, the minimum image per particle pair)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from numba import njit, prange

from mdcore import Problem, StrategyError, poison

from ..base import Plan
from ..cpu import CpuPlan, pair_step, separation, store_sums
from ..lists import SKIN, ListStrategy, moved_beyond
from ..registry import register
from .search import CLUSTER_CHOICES, clusters, search


@njit(parallel=True)
def _force_cpu(pair, conv, with_sums, pos, w, members, istart, jlist, masks, box, prm, rc2, zero, forces, sums, counts):
    ncl, m = members.shape
    for c in prange(ncl):
        sm = (zero, zero, zero, zero, zero, zero, zero)
        npairs = 0
        for a in range(m):
            i = members[c, a]
            if i < 0:
                continue
            fx = fy = fz = zero
            for e in range(istart[c], istart[c + 1]):
                bits = masks[e] >> np.uint64(a * m)
                if bits == np.uint64(0):
                    continue
                j = jlist[e]
                for b in range(m):
                    if (bits >> np.uint64(b)) & np.uint64(1):
                        q = members[j, b]
                        dx, dy, dz, r2 = separation(pos, i, q, box)
                        if r2 < rc2:
                            ax, ay, az, sm, hit = pair_step(pair, conv, with_sums, sm, dx, dy, dz, r2, prm, w[i],
                                                            w[q])
                            fx += ax
                            fy += ay
                            fz += az
                            npairs += hit
            forces[i, 0] = fx
            forces[i, 1] = fy
            forces[i, 2] = fz
        store_sums(sums[c], sm)
        counts[c] = npairs


@register
class ClusterpairThreadCpu(ListStrategy):
    name = "clusterpair_thread_cpu"
    backend = "cpu"
    traversal = "clusterpair"
    processor = "thread"
    storage = "padded"
    list_kind = "a cluster-pair list"
    description = ("numba cluster pairs (GROMACS nbnxm): clusters of 8 from z-sorted x-y columns, a bounding-box "
                   "pair search to cutoff + skin with interaction masks, rebuilt when a particle moved more than skin/2")
    launch_defaults: ClassVar[dict] = {"skin": SKIN, "cluster": 8, "rebuild": "auto"}
    launch_choices: ClassVar[dict] = {"cluster": CLUSTER_CHOICES, "rebuild": ("auto", "never")}

    def work(self, problem: Problem) -> dict:
        return {"distance_checks": None}

    def _prepare(self, problem: Problem) -> Plan:
        return _ClusterPlan(self, problem)


class _ClusterPlan(CpuPlan):
    def __init__(self, strategy: ClusterpairThreadCpu, problem: Problem):
        self.m = strategy.launch["cluster"]
        L = problem.box.array
        self.density = problem.n / problem.box.volume if problem.n else 1.0
        members, _, _ = clusters(problem.positions - 0.5 * L, L, problem.box.periodic, self.m, self.density)
        super().__init__(strategy, problem, rows=max(len(members), 1))
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        self.ref: np.ndarray | None = None
        self.rebuilds = 0
        self.launch_info = {"cluster": self.m, "rlist": self.rl, "skin": self.skin}

    def build(self) -> None:
        p = self.problem
        L = p.box.array
        self.members, ccol, grid = clusters(self.pos.astype(np.float64), L, p.box.periodic, self.m, self.density)
        if len(self.members) > len(self.sums):  # more clusters than at prepare (columns filled unevenly)
            self.sums = poison.empty((len(self.members), 7), self.acc)
            self.counts = poison.empty(len(self.members), np.int64)
        self.istart, self.jlist, self.masks = search(self.pos, self.members, ccol, grid, L, p.box.periodic, self.rl,
                                                     self.box)
        self.ref = self.pos.copy()
        self.rebuilds += 1
        entries = len(self.jlist)
        self.launch_info.update({"clusters": len(self.members), "entries": entries,
                                 "list_bytes": int(self.jlist.nbytes + self.masks.nbytes + self.istart.nbytes
                                                   + self.members.nbytes)})

    def needs_rebuild(self, positions=None) -> bool:
        if self.ref is None:
            return True
        if self.strategy.launch["rebuild"] == "never":
            return False
        return moved_beyond(self.pos, self.ref, self.problem.box.array, self.problem.box.periodic, 0.5 * self.skin)

    def rebuild_count(self) -> int:
        return self.rebuilds

    def listed_pairs(self) -> int:
        return int(np.unpackbits(self.masks.view(np.uint8)).sum())

    def force(self) -> None:
        if self.ref is None:
            raise StrategyError(f"{self.strategy.name}: force before build")
        ncl = len(self.members)
        self.sums[ncl:] = 0
        self.counts[ncl:] = 0
        _force_cpu(self.pair, self.conv, self.energy, self.pos, self.w, self.members, self.istart, self.jlist, self.masks, self.box,
                   self.prm, self.rc2, self.acc(0), self.forces, self.sums, self.counts)


