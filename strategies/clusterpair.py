"""Cluster pairs (GROMACS nbnxm: Páll & Hess 2013; Páll et al. 2020), on the GPU and the CPU.

Particles are grouped into clusters of M (launch parameter cluster, default 8): the box is cut
into x-y columns of side about (M / density)^(1/3), each column's particles sorted by z and cut
into runs of M (the last one padded). The pair search keeps every pair of clusters whose bounding
boxes come closer than r_list = cutoff + skin (minimum image), with an interaction mask of the
M x M particle pairs within r_list (padding and a particle with itself left out). The list is
reused while no particle has moved more than skin / 2 since the search, like a Verlet list.

  clusterpair_warp_padded  CUDA (kernels/clusterpair.cu): clusters of 8 from the shared binning
                          (x-y columns sorted by z), the search on the device (bounding boxes
                          within r_list, in each column the clusters of the z-layers within
                          reach) into padded rows of j-clusters, each with its periodic image; a
                          warp per i-cluster computes 8 x 4 pairs per step (the lanes), the image
                          applied once per entry, the positions gathered into cluster order each
                          step at the image nearest their build position (so the MD loop's
                          wrapping leaves the entries' images valid). Full list, no atomics:
                          deterministic. The displacement check and the guarded rebuild run on
                          the device.
  clusterpair_warp_newton3 the same clusters and search into a half list (each cluster pair once),
                          Newton3: each pair's force added to i in registers and subtracted from j
                          by a shuffle reduce-scatter and one atomic instruction per entry (GROMACS's
                          GPU form); float atomics: not bitwise repeatable.
  clusterpair_thread_cpu  numba prange over i-clusters, the full list (each cluster pair from
                          both sides, no Newton3), the minimum image per particle pair (the MD
                          loop wraps positions every step, so an image fixed at the search would go
                          stale)

The search is exposed (search, bounding_boxes, brute_force_pairs) for its unit test against a
brute-force count of bounding-box pairs.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numba import njit, prange

from mdcore import MODES, Forces, InputError, Potential, Problem, StrategyError

from .base import Plan
from .binning import Binning
from .cells import pmask
from .cpu import CpuPlan, pair_step, separation, store_sums
from .cuda import CudaPlan, CudaStrategy, kernel, sm_count
from .lists import SKIN, DeviceListPlan, ListStrategy, moved_beyond
from .registry import register

CLUSTER_CHOICES = (4, 8)


def clusters(pos: np.ndarray, L: np.ndarray, periodic, m: int, density: float):
    """(members (ncl, m) int64 with -1 padding, column of each cluster) for centred positions pos
    (N, 3): x-y columns of side about (m / density)^(1/3), each column's particles sorted by z
    (ties by index) and cut into runs of m."""
    n = len(pos)
    side = (m / max(density, 1e-300)) ** (1.0 / 3.0)
    nx = max(1, int(L[0] // side))
    ny = max(1, int(L[1] // side))
    fx = np.clip(np.floor((pos[:, 0] + 0.5 * L[0]) * (nx / L[0])).astype(np.int64), 0, nx - 1)
    fy = np.clip(np.floor((pos[:, 1] + 0.5 * L[1]) * (ny / L[1])).astype(np.int64), 0, ny - 1)
    col = fx * ny + fy
    order = np.lexsort((np.arange(n), pos[:, 2], col))  # by column, then z, then index
    counts = np.bincount(col, minlength=nx * ny)
    per_col = -(-counts // m)  # clusters per column
    ncl = int(per_col.sum())
    members = np.full((ncl, m), -1, np.int64)
    ccol = np.repeat(np.arange(nx * ny), per_col)
    start = np.concatenate([[0], np.cumsum(counts)])
    cstart = np.concatenate([[0], np.cumsum(per_col)])
    for c in np.nonzero(counts)[0]:
        idx = order[start[c]:start[c + 1]]
        k = len(idx)
        block = np.full(per_col[c] * m, -1, np.int64)
        block[:k] = idx
        members[cstart[c]:cstart[c + 1]] = block.reshape(-1, m)
    return members, ccol, (nx, ny)


@njit(cache=True)
def bounding_boxes(pos, members):
    """(lo, hi) (ncl, 3) of each cluster's real members."""
    ncl, m = members.shape
    lo = np.full((ncl, 3), np.inf)
    hi = np.full((ncl, 3), -np.inf)
    for c in range(ncl):
        for a in range(m):
            i = members[c, a]
            if i < 0:
                continue
            for d in range(3):
                v = float(pos[i, d])
                lo[c, d] = min(lo[c, d], v)
                hi[c, d] = max(hi[c, d], v)
    return lo, hi


@njit(inline="always")
def _gap2(lo, hi, a, b, L, per):
    """Squared distance between the bounding boxes of clusters a and b, the nearest image on
    periodic axes."""
    s = 0.0
    for d in range(3):
        best = np.inf
        for k in (-1.0, 0.0, 1.0):
            if k != 0.0 and not per[d]:
                continue
            sh = k * L[d]
            g = max(0.0, lo[b, d] + sh - hi[a, d], lo[a, d] - hi[b, d] - sh)
            best = min(best, g)
        s += best * best
    return s


@njit(parallel=True, cache=True)
def _count_pairs(lo, hi, L, per, rl2, cand, cand_start, counts):
    ncl = lo.shape[0]
    for a in prange(ncl):
        m = 0
        for t in range(cand_start[a], cand_start[a + 1]):
            if _gap2(lo, hi, a, cand[t], L, per) < rl2:
                m += 1
        counts[a] = m


@njit(parallel=True, cache=True)
def _fill_pairs(lo, hi, L, per, rl2, cand, cand_start, start, jlist):
    ncl = lo.shape[0]
    for a in prange(ncl):
        k = start[a]
        for t in range(cand_start[a], cand_start[a + 1]):
            if _gap2(lo, hi, a, cand[t], L, per) < rl2:
                jlist[k] = cand[t]
                k += 1


@njit(parallel=True, cache=True)
def _masks(pos, members, istart, jlist, box, rl2, masks):
    """Bit a * m + b of an entry: i-member a and j-member b within r_list, both real, not the
    same particle."""
    ncl, m = members.shape
    for c in prange(ncl):
        for e in range(istart[c], istart[c + 1]):
            j = jlist[e]
            bits = np.uint64(0)
            for a in range(m):
                i = members[c, a]
                if i < 0:
                    continue
                for b in range(m):
                    q = members[j, b]
                    if q < 0 or q == i:
                        continue
                    _, _, _, r2 = separation(pos, i, q, box)
                    if r2 < rl2:
                        bits |= np.uint64(1) << np.uint64(a * m + b)
            masks[e] = bits


def search(pos: np.ndarray, members: np.ndarray, ccol: np.ndarray, grid, L: np.ndarray, periodic, rl: float,
           box: np.ndarray):
    """The cluster-pair list: (istart (ncl + 1), jlist, masks) of every pair of clusters whose
    bounding boxes come closer than rl (both orders, a cluster with itself included), the
    candidates taken from the x-y columns within reach."""
    lo, hi = bounding_boxes(pos, members)
    nx, ny = grid
    side = np.array([L[0] / nx, L[1] / ny])
    reach = [int(math.ceil(rl / side[0])), int(math.ceil(rl / side[1]))]
    by_col = [[] for _ in range(nx * ny)]
    for c, col in enumerate(ccol):
        by_col[col].append(c)
    by_col = [np.array(v, np.int64) for v in by_col]
    per = np.array(periodic, np.bool_)
    cand_lists = []
    col_of = np.asarray(ccol)
    for col in range(nx * ny):
        cx, cy = divmod(col, ny)
        xs = sorted({(cx + o) % nx if periodic[0] else cx + o for o in range(-reach[0], reach[0] + 1)
                     if periodic[0] or 0 <= cx + o < nx})
        ys = sorted({(cy + o) % ny if periodic[1] else cy + o for o in range(-reach[1], reach[1] + 1)
                     if periodic[1] or 0 <= cy + o < ny})
        near = [by_col[x * ny + y] for x in xs for y in ys]
        cand_lists.append(np.sort(np.concatenate(near)) if near else np.zeros(0, np.int64))
    ncl = len(members)
    cand_start = np.zeros(ncl + 1, np.int64)
    sizes = np.array([len(cand_lists[col_of[c]]) for c in range(ncl)], np.int64)
    np.cumsum(sizes, out=cand_start[1:])
    cand = np.concatenate([cand_lists[col_of[c]] for c in range(ncl)]) if ncl else np.zeros(0, np.int64)
    counts = np.zeros(ncl, np.int64)
    rl2 = rl * rl
    _count_pairs(lo, hi, L, per, rl2, cand, cand_start, counts)
    istart = np.zeros(ncl + 1, np.int64)
    np.cumsum(counts, out=istart[1:])
    jlist = np.zeros(int(istart[-1]), np.int64)
    _fill_pairs(lo, hi, L, per, rl2, cand, cand_start, istart, jlist)
    masks = np.zeros(len(jlist), np.uint64)
    _masks(pos, members, istart, jlist, box, box.dtype.type(rl2), masks)
    return istart, jlist, masks


def brute_force_pairs(pos: np.ndarray, members: np.ndarray, L: np.ndarray, periodic, rl: float) -> set:
    """Every (a, b) of clusters whose bounding boxes come closer than rl: all pairs tested, for
    the search's unit test."""
    lo, hi = bounding_boxes(pos, members)
    out = set()
    for a in range(len(members)):
        for b in range(len(members)):
            g = 0.0
            for d in range(3):
                shifts = (-L[d], 0.0, L[d]) if periodic[d] else (0.0,)
                g += min(max(0.0, lo[b, d] + s - hi[a, d], lo[a, d] - hi[b, d] - s) for s in shifts) ** 2
            if g < rl * rl:
                out.add((a, b))
    return out


@njit(parallel=True)
def _force_cpu(pair, conv, with_sums, pos, members, istart, jlist, masks, box, prm, rc2, zero, forces, sums, counts):
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
                            ax, ay, az, sm = pair_step(pair, conv, with_sums, sm, dx, dy, dz, r2, prm)
                            fx += ax
                            fy += ay
                            fz += az
                            npairs += 1
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
            self.sums = np.empty((len(self.members), 7), self.acc)
            self.counts = np.empty(len(self.members), np.int64)
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
        _force_cpu(self.pair, self.conv, self.energy, self.pos, self.members, self.istart, self.jlist, self.masks, self.box,
                   self.prm, self.rc2, self.acc(0), self.forces, self.sums, self.counts)


# --- CUDA ---------------------------------------------------------------------------------------

GPU_CLUSTER = 8  # kCluster in clusterpair.cu: 8 i-particles x 4 j-particles per warp step
SEARCH_BLOCK = 128
COLUMNS_BLOCK = 1024
PER_LAYER = 4.0  # particles per thin z-layer of a column in the binning (keeps its rank step short)
J_LIMIT = 1 << 26  # j-cluster indices above the 5 bits of image code in an int entry
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])


def pair_density(problem: Problem) -> float:
    """The density a particle sees around it: sum c (c - 1) / (N V) over cells of side about the
    cutoff (c particles in a cell of volume V; Poisson-unbiased). The box's mean density for a
    homogeneous system, the blob's for an inhomogeneous one (a Gaussian in a large box), so that
    clusters come out about as long as wide where the particles are."""
    n = problem.n
    if n < 2:
        return 1.0
    L = problem.box.array
    rc = problem.potential.cutoff or float(L.min()) / 4.0
    dims = np.maximum(1, np.minimum((L // rc).astype(np.int64), 256))
    idx = np.clip((problem.positions / (L / dims)).astype(np.int64), 0, dims - 1)
    c = np.bincount((idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]).astype(np.float64)
    pairs = float(np.sum(c * (c - 1.0)))
    if pairs <= 0.0:
        return n / problem.box.volume
    return pairs / (n * float(np.prod(L / dims)))


def column_grid(problem: Problem, m: int = GPU_CLUSTER) -> np.ndarray:
    """(nx, ny, nz): x-y columns of side about (m / density)^(1/3), with the density a particle
    sees (pair_density), cut along z into layers of about PER_LAYER particles."""
    L = problem.box.array
    side = (m / max(pair_density(problem), 1e-300)) ** (1.0 / 3.0)
    nx = max(1, int(L[0] // side))
    ny = max(1, int(L[1] // side))
    nz = max(1, int(round(problem.n / (nx * ny * PER_LAYER))))
    return np.array([nx, ny, nz], np.int64)


ROLLING_CHOICES = (1, 2, 4, 8)
PRUNE_BLOCK = 128  # cp_prune's threads per block (a warp per i-cluster)


def cap_of(longest: int) -> int:
    """Row capacity (entries per i-cluster) from the longest row of a build."""
    return int(math.ceil(1.2 * longest)) + 8


@register
class ClusterpairWarpPadded(ListStrategy, CudaStrategy):
    name = "clusterpair_warp_padded"
    traversal = "clusterpair"
    processor = "warp"
    storage = "padded"
    list_kind = "a cluster-pair list"
    source_file = "clusterpair.cu"
    description = ("CUDA cluster pairs (GROMACS nbnxm): clusters of 8 from z-sorted x-y columns, a bounding-box "
                   "search on the device into padded rows of j-clusters with their image, a warp per i-cluster "
                   "computing 8 x 4 pairs per step, full list (deterministic); split warps per i-cluster for small "
                   "systems; the displacement check and rebuild decided on the device every step")
    # split: warps per i-cluster (0: by size, split_for). prune, rolling: experimental, GROMACS's dynamic
    # pruning (an inner list of buffer prune, pruned in `rolling` parts, a part a step); it made the
    # force phase faster but cost about a force phase per prune: docs/decisions/clusterpair-inner-list.md.
    launch_defaults: ClassVar[dict] = {"skin": SKIN, "cap": 0, "block": 256, "rebuild": "auto"}
    launch_internal: ClassVar[dict] = {"split": 0, "prune": "off", "rolling": 1}
    launch_choices: ClassVar[dict] = {"block": (32, 64, 128, 256), "split": (0, 1, 2, 4, 8),
                                      "rebuild": ("auto", "never"), "rolling": ROLLING_CHOICES}
    half: ClassVar[str] = "false"  # cp_search's HALF: each cluster pair once (the Newton3 form)
    force_kernel: ClassVar[str] = "cp_force"

    def __init__(self, **launch):
        super().__init__(**launch)
        cap = self.launch["cap"]
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InputError(f"{self.name}: launch parameter cap must be a whole number >= 0 (0: sized at the first "
                             f"build), got {cap!r}")
        if self.launch["prune"] == "off" and self.launch["rolling"] != 1:  # prune itself: ListStrategy
            raise InputError(f"{self.name}: rolling={self.launch['rolling']} prunes the inner list in parts; there is "
                             "none with prune=off: give prune (a buffer below the skin) or take rolling=1")

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        dims = column_grid(problem)
        if -(-problem.n // GPU_CLUSTER) + int(dims[0] * dims[1]) >= J_LIMIT:
            return False, f"more than {J_LIMIT:,} clusters: the entry word holds a 26-bit cluster index"
        return True, ""

    def split_for(self, clusters: int) -> int:
        """Warps per i-cluster: the launch parameter, or (0) as many as keep about two waves of
        warps on the GPU when there are few clusters (one for large systems)."""
        split = self.launch["split"]
        if split == 0:
            from .cuda import sm_count

            split = 1
            while split < 8 and clusters * split < 64 * sm_count():
                split *= 2
        return min(split, self.launch["block"] // 32)

    def force_expression(self, precision: str, potential: Potential, energy: bool, split: int = 1) -> str:
        m = MODES[precision]
        e = "true" if energy else "false"
        return (f"{self.force_kernel}<{m.cxx_compute}, {m.cxx_accumulate}, {potential.functor}, {e}, "
                f"{self.launch['block']}, {split}>")

    def default_expressions(self, potential: Potential) -> list[str]:
        return [self.force_expression(p, potential, e, s) for p in MODES for e in (True, False)
                for s in (1, 2) if s <= self.launch["block"] // 32]

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        out: list[str] = []
        for b in self.launch_choices["block"]:
            for split in (1, 2, 4, 8):
                if split <= b // 32:
                    out += [type(self)(block=b).force_expression(p, potential, e, split)
                            for p in MODES for e in (True, False)]
        return out

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        reals = sorted({m.cxx_compute for m in MODES.values()})
        prune = [e for r in reals for e in (f"cp_prune_check<{r}>", f"cp_prune<{r}, {PRUNE_BLOCK}>")]
        return {"clusterpair.cu": [f"cp_columns<{COLUMNS_BLOCK}>"] + [e for r in reals for e in (
                    f"cp_fill<{r}>", f"cp_search<{r}, {SEARCH_BLOCK}, {self.half}>", f"cp_gather<{r}>")] +
                (prune if experimental else []),
                "verlet_build.cu": [f"verlet_check<{r}>" for r in reals],
                "binning.cu": sorted({e for r in reals for e in Binning.expressions(r)})}

    def _prepare(self, problem: Problem) -> Plan:
        return _ClusterCudaPlan(self, problem)


@register
class ClusterpairWarpNewton3(ClusterpairWarpPadded):
    name = "clusterpair_warp_newton3"
    newton3 = True
    deterministic = False  # float atomics add the j-forces in scheduling order
    description = ("CUDA cluster pairs with Newton3 (GROMACS nbnxm's GPU form): the clusters and search of "
                   "clusterpair_warp_padded into a half list (each cluster pair once), a warp per i-cluster "
                   "computing 8 x 4 pairs per step, each pair's force added to i in registers and subtracted from "
                   "j through a shuffle reduce-scatter and one atomic instruction per entry; float atomics: not "
                   "bitwise repeatable")
    half = "true"
    force_kernel = "cp_force_n3"

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        out = super().data_expressions(experimental)
        out["clusterpair.cu"] = out["clusterpair.cu"] + [f"cp_scatter<{a}>" for a in
                                                         sorted({m.cxx_accumulate for m in MODES.values()})]
        return out

    def _prepare(self, problem: Problem) -> Plan:
        return _ClusterN3Plan(self, problem)


class _ClusterCudaPlan(DeviceListPlan):
    visits_per_pair = 2  # a full list: every pair from both clusters

    def __init__(self, strategy: ClusterpairWarpPadded, problem: Problem):
        n = problem.n
        dims = column_grid(problem)
        self.ncols = int(dims[0] * dims[1])
        self.ncap = -(-n // GPU_CLUSTER) + self.ncols  # at most one padded cluster per column
        self.block = strategy.launch["block"]
        self.split = strategy.split_for(-(-n // GPU_CLUSTER))
        self.blocks = max(1, -(-self.ncap // (self.block // 32 // self.split)))
        super().__init__(strategy, problem, nparts=self.blocks if n else 0)
        cp = self.cp
        self.dims = dims
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        L = problem.box.array
        self.reach = [int(math.ceil(self.rl / (L[a] / dims[a]))) for a in range(2)]
        for a in range(2):  # one wrap per neighbour column (column_axis): holds for every box the base accepts
            if problem.box.periodic[a] and self.reach[a] > dims[a]:
                raise StrategyError(f"{strategy.name}: {dims[a]} columns along {'xy'[a]} for a reach of "
                                    f"{self.reach[a]}: the box is too small for clusters")
        self.grid_struct = np.array([(*dims, pmask(problem))], dtype=GRID_DTYPE)
        inv_side = [self.real(dims[a] / L[a]) for a in range(3)]
        self.margin = self.real(8 * np.finfo(np.float32).eps * (0.5 * float(L.max()) + self.rl))
        self.half_skin2 = self.real((0.5 * self.skin) ** 2)
        self.binning = Binning(cp, self.real_t, n, dims, self.pos, self.box, self.grid_struct, inv_side,
                               write_pos=True)
        slots = self.ncap * GPU_CLUSTER
        self.cstart = cp.zeros(self.ncols + 1, np.int32)
        self.member = cp.full(slots, -1, np.int32)
        self.xbuild = cp.zeros((slots, 4), self.real)
        self.xc = cp.zeros((slots, 4), self.real)
        self.lo = cp.zeros((self.ncap, 4), self.real)
        self.hi = cp.zeros((self.ncap, 4), self.real)
        self.ccol = cp.zeros(self.ncap, np.int32)
        self.len = cp.zeros(self.ncap, np.int32)
        self.ref = cp.zeros((max(n, 1), 4), self.real)
        self.flag = cp.ones(3, np.int32)  # [0] rebuild, [1] the parts a displacement prunes, [2] the rolling step
        self.rebuilds = cp.zeros(2, np.uint32)  # [0] rebuilds, [1] parts pruned
        self.overflow = cp.zeros(1, np.int32)
        r = self.real_t
        self.k_check = kernel("verlet_build.cu", f"verlet_check<{r}>")
        self.k_columns = kernel("clusterpair.cu", f"cp_columns<{COLUMNS_BLOCK}>")
        self.k_fill = kernel("clusterpair.cu", f"cp_fill<{r}>")
        self.k_search = kernel("clusterpair.cu", f"cp_search<{r}, {SEARCH_BLOCK}, {strategy.half}>")
        self.k_gather = kernel("clusterpair.cu", f"cp_gather<{r}>")
        self._force: dict[str, object] = {}
        if n:
            self.upload()
        self.binning.choose()
        self.cap = int(strategy.launch["cap"])
        self.ent = cp.zeros(1, np.int32)
        if n and self.cap == 0:  # size the rows from a first search (capacity 0: counts only)
            self._rows(None)
            longest = int(self.overflow.get()[0])
            self.overflow.fill(0)
            self.cap = cap_of(longest)
        need = self.cap * self.ncap * 4
        free = self._free_bytes()
        if need > free:
            raise StrategyError(f"{strategy.name}: the list needs {need / 2**30:.2f} GiB ({self.ncap:,} clusters x "
                                f"{self.cap} entries within {self.rl:g}) but the GPU has {free / 2**30:.2f} GiB free; "
                                "take a smaller skin")
        self.ent = cp.zeros(max(self.cap, 1) * self.ncap, np.int32)
        self._prune_setup(need, free)
        self.launch_info = {"columns": dims[:2].tolist(), "layers": int(dims[2]), "rlist": self.rl, "skin": self.skin,
                            "cap": self.cap, "block": self.block, "split": self.split, "cluster": GPU_CLUSTER, "build": self.binning.method,
                            "prune": self.inner_skin if self.inner_skin else "off", "rolling": self.parts or 1,
                            "list_bytes": int(self.ent.nbytes + self.len.nbytes + self.member.nbytes
                                              + self.xbuild.nbytes + self.xc.nbytes + self.ref.nbytes
                                              + sum(a.nbytes for a in self._inner_arrays()))}

    def _prune_setup(self, need: int, free: int) -> None:
        """The inner list (launch parameters prune and rolling; kernels/clusterpair.cu, cp_prune):
        rows of the outer list's storage, their lengths, a snapshot of the positions per part and
        the kernels. Refused with the GiB it needs where the GPU lacks it."""
        cp, strategy = self.cp, self.strategy
        prune = strategy.launch["prune"]
        self.inner_skin = 0.0 if prune == "off" else float(prune)
        self.parts = 0  # the kernels' parts: 0 without an inner list
        self.ient = self.ilen = self.snap = None
        if not self.inner_skin or not self.problem.n:
            return
        self.parts = int(strategy.launch["rolling"])
        slots = self.ncap * GPU_CLUSTER
        total = 2 * need + self.parts * slots * 4 * self.real().itemsize
        if total > free:
            raise StrategyError(f"{strategy.name}: the outer and inner lists need {total / 2**30:.2f} GiB "
                                f"({self.ncap:,} clusters x {self.cap} entries each, and {self.parts} snapshots) but "
                                f"the GPU has {free / 2**30:.2f} GiB free; take a smaller skin, or prune=off")
        rin = float(self.problem.potential.cutoff) + self.inner_skin
        self.rin2 = self.real(rin * rin)
        self.half_inner2 = self.real((0.5 * self.inner_skin) ** 2)
        self.ient = cp.zeros_like(self.ent)
        self.ilen = cp.zeros_like(self.len)
        self.snap = cp.zeros((self.parts * slots, 4), self.real)
        self.k_pcheck = kernel("clusterpair.cu", f"cp_prune_check<{self.real_t}>")
        self.k_prune = kernel("clusterpair.cu", f"cp_prune<{self.real_t}, {PRUNE_BLOCK}>")

    def _inner_arrays(self) -> list:
        return [a for a in (self.ient, self.ilen, self.snap) if a is not None]

    def _gather(self) -> None:
        """xc: the positions in cluster order, at the images of the build."""
        slots = self.ncap * GPU_CLUSTER
        self.k_gather((max(1, min(-(-slots // 256), 8 * sm_count())),), (256,),
                      (self.pos, self.member, self.xbuild, self.cstart, np.int32(self.ncols), self.box, self.xc))

    def _prune(self, check: bool) -> None:
        """The inner list's step (after the outer list's upkeep, on xc of now): the displacement
        check against each part's snapshot (check), then the parts to prune pruned."""
        slots = self.ncap * GPU_CLUSTER
        if check:
            self.k_pcheck((-(-slots // 256),), (256,), (self.xc, self.member, self.cstart, np.int32(self.ncols),
                                                         self.snap, np.int32(slots), np.int32(self.parts),
                                                         self.half_inner2, self.flag))
        self.k_prune((max(1, -(-self.ncap // (PRUNE_BLOCK // 32))),), (PRUNE_BLOCK,),
                     (self.xc, self.ent, self.len, self.cstart, np.int32(self.ncols), np.int32(self.cap), self.box,
                      self.rin2, np.int32(self.parts), np.int32(slots), self.ient, self.ilen, self.snap, self.flag,
                      self.rebuilds[1:]))

    def build(self) -> None:
        super().build()
        if self.parts:  # every part (flag[0] is set)
            self._gather()
            self._prune(check=False)

    def update(self) -> None:
        super().update()
        if self.parts and self.problem.n and self.strategy.launch["rebuild"] != "never":
            self._gather()  # the force phase gathers again (it reads xc whatever ran before it)
            self._prune(check=True)

    def prune_count(self) -> int | None:
        """Parts of the inner list pruned since prepare (each part once a prune; None without one)."""
        return int(self.rebuilds.get()[1]) if self.parts else None

    def _rows_read(self) -> tuple:
        """The rows the force kernels read: the inner list's where the plan keeps one."""
        return (self.ient, self.ilen) if self.parts else (self.ent, self.len)

    @property
    def device_bytes(self) -> int:
        own = [self.cstart, self.member, self.xbuild, self.xc, self.lo, self.hi, self.ccol, self.len, self.ref,
               self.flag, self.rebuilds, self.overflow, self.ent, *self._inner_arrays()]
        return CudaPlan.device_bytes.fget(self) + self.binning.device_bytes + int(sum(a.nbytes for a in own))

    def _rows(self, guard) -> None:
        """Clusters from the binning's order, then the search (guard: a device flag, or None)."""
        g = guard if guard is not None else np.uint64(0)
        b = self.binning
        nz = np.int32(self.dims[2])
        self.k_columns((1,), (COLUMNS_BLOCK,), (b.start, np.int32(self.ncols), nz, self.cstart, g))
        fill_blocks = max(1, min(-(-self.ncols // 4), 8 * sm_count()))
        self.k_fill((fill_blocks,), (128,), (b.sorted, b.order, b.start, self.cstart, np.int32(self.ncols), nz,
                                             self.member, self.xbuild, self.ref, self.lo, self.hi, self.ccol, g))
        cap = np.int32(self.cap)
        self.k_search((max(1, -(-self.ncap // (SEARCH_BLOCK // 32))),), (SEARCH_BLOCK,),
                      (self.xbuild, self.member, self.lo, self.hi, self.ccol, self.cstart, b.start, self.grid_struct,
                       self.box,
                       np.int32(self.reach[0]), np.int32(self.reach[1]), self.real(self.rl), self.margin, cap, self.ent, self.len,
                       self.overflow, g))

    def listed_pairs(self) -> int:
        """Particle pairs the force phase checks: 64 per entry and per cluster (its step with
        itself); each pair from both clusters (full list) or once (half list)."""
        if not self.problem.n:
            return 0
        ncl = int(self.cstart[-1].get())
        rows = self._rows_read()[1]
        return (int(self.cp.sum(rows[:ncl], dtype=np.int64).get()) + ncl) * GPU_CLUSTER * GPU_CLUSTER

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        self._gather()
        fn = self._force.get(self.outputs)
        if fn is None:
            p = self.problem
            fn = self._force[self.outputs] = kernel("clusterpair.cu", self.strategy.force_expression(
                p.precision, p.potential, self.energy, self.split), p.potential)
        fn((self.blocks,), (self.block,), (self.xc, self.member, *self._rows_read(), self.cstart, np.int32(self.ncols),
                                           np.int32(self.cap), self.box, self.fparams, self.forces, self.partial,
                                           self.pcount, self.flag, self.rebuilds, np.int32(self.parts)))

    def output(self) -> Forces:
        out = super().output()
        out.checks = ((self.overflow, f"{self.strategy.name}: an i-cluster has {{value}} j-clusters within "
                                      f"{self.rl:g} (cutoff + skin), more than the list's capacity {self.cap}; the "
                                      f"list was not complete: give the launch parameter cap (>= {{value}}) or prepare "
                                      "again"),)
        return out


class _ClusterN3Plan(_ClusterCudaPlan):
    """The Newton3 form: a half list, forces summed in cluster order (fc) and written in input
    order by cp_scatter."""

    visits_per_pair = 1  # each pair once

    def __init__(self, strategy: ClusterpairWarpNewton3, problem: Problem):
        super().__init__(strategy, problem)
        self.fc = self.cp.zeros((self.ncap * GPU_CLUSTER, 3), self.acc)
        self.k_scatter = kernel("clusterpair.cu", f"cp_scatter<{self.acc_t}>")
        self.launch_info["list_bytes"] += int(self.fc.nbytes)

    @property
    def device_bytes(self) -> int:
        return super().device_bytes + int(self.fc.nbytes)

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        slots = self.ncap * GPU_CLUSTER
        grid = (max(1, min(-(-slots // 256), 8 * sm_count())),)
        self._gather()
        self.fc.fill(0)
        fn = self._force.get(self.outputs)
        if fn is None:
            p = self.problem
            fn = self._force[self.outputs] = kernel("clusterpair.cu", self.strategy.force_expression(
                p.precision, p.potential, self.energy, self.split), p.potential)
        fn((self.blocks,), (self.block,), (self.xc, *self._rows_read(), self.cstart, np.int32(self.ncols),
                                           np.int32(self.cap), self.box, self.fparams, self.fc, self.partial,
                                           self.pcount, self.flag, self.rebuilds, np.int32(self.parts)))
        self.k_scatter(grid, (256,), (self.fc, self.member, self.cstart, np.int32(self.ncols), self.forces))
