"""clusterpair_warp_padded and clusterpair_warp_newton3: the cluster pairs on the GPU (kernels/clusterpair.cu)."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from mdcore import MODES, InputError, Potential, Problem, StrategyError

from ..base import Plan
from ..binning import Binning
from ..cells import pmask
from ..cuda import CudaPlan, CudaStrategy, kernel, sm_count
from ..lists import SKIN, DeviceListPlan, ListStrategy
from ..registry import register

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
    overflow_words = ("an i-cluster", "j-clusters")
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

