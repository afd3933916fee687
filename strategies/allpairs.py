"""All-pairs strategies: every particle against every other (O(N^2)), with or without cutoff.

allpairs_thread_naive  CUDA, one thread per particle, j from global memory (PLUMED tutorial)
allpairs_thread_tiled  CUDA, the same with j staged through shared-memory tiles
allpairs_thread_cpu    numba prange over particles, the CPU counterpart
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mdcore import PRECISIONS, Potential, Problem, poison_value

from .base import Plan, Strategy
from .cpu import CpuPlan, pair_step, separation, store_sums
from .cuda import (LAYOUTS, CudaPlan, CudaStrategy, Layout, cbool, ctypes, fold_expression, kernel,
                   layout_expressions, resident_blocks, sm_count)
from .registry import register


def _all_pairs_work(problem: Problem) -> dict:
    n = problem.n
    return {"distance_checks": n * (n - 1), "visits_per_pair": 2}


class _AllPairsCuda(CudaStrategy):
    source_file = "allpairs.cu"
    traversal = "allpairs"
    processor = "thread"
    # layout: how the positions lie (aos4: the plan's Vec4 array; aos3, soa: a copy made at the
    # start of the force phase; kernels/layout.cuh)
    launch_defaults = {"block": 256, "layout": "aos4"}
    launch_choices = {"block": (64, 128, 256, 512, 1024), "layout": tuple(LAYOUTS)}

    def expression(self, precision: str, pbc: bool, potential: Potential, energy: bool = True,
                   block: int | None = None, layout: str | None = None) -> str:
        real, acc = ctypes(precision)
        block = block or self.launch["block"]
        code = LAYOUTS[layout or self.launch["layout"]]
        return f"{self.name}<{real}, {acc}, {potential.functor}, {block}, {cbool(pbc)}, {cbool(energy)}, {code}>"

    def default_expressions(self, potential: Potential) -> list[str]:
        return sorted({self.expression(p, pbc, potential, en) for p in PRECISIONS for pbc in (False, True)
                       for en in (True, False)})

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        out = self.default_expressions(potential) + [self.expression("fp32", True, potential, True, b)
                                                     for b in self.launch_choices["block"]]
        out += [self.expression(p, True, potential, en, layout=lay) for p in PRECISIONS for en in (True, False)
                for lay in LAYOUTS]
        return sorted(set(out))

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        return {"reduce.cu": sorted({fold_expression(a) for a in ("float", "double")}),
                "layout.cu": layout_expressions()}

    def work(self, problem: Problem) -> dict:
        return _all_pairs_work(problem)


class _AllPairsPlan(CudaPlan):
    def __init__(self, strategy: _AllPairsCuda, problem: Problem, slices: int = 1):
        self.block = strategy.launch["block"]
        self.grid = -(-problem.n // self.block)
        super().__init__(strategy, problem, nparts=self.grid * slices)
        self._kernels: dict = {}
        self.layout = Layout(self.cp, strategy.launch["layout"], self.real_t, self.real, problem.n,
                             words=problem.potential.per_particle)

    @property
    def device_bytes(self) -> int:
        return super().device_bytes + self.layout.nbytes

    def positions(self) -> tuple:
        """The kernel's positions and stride: for aos3 and soa, the copy is made first (in the
        force phase, so that positions the MD loop moved on the device reach the kernel)."""
        self.layout.fill(self.pos, self.problem.n)
        return self.layout.args(self.pos)

    @property
    def _kernel(self):
        """The traversal of the current outputs flavour (compiled on first use)."""
        if self.outputs not in self._kernels:
            p, s = self.problem, self.strategy
            self._kernels[self.outputs] = kernel(s.source_file, s.expression(p.precision, any(p.box.periodic),
                                                                             p.potential, self.energy), p.potential)
        return self._kernels[self.outputs]


@register
class AllPairsThreadNaive(_AllPairsCuda):
    name = "allpairs_thread_naive"
    description = ("CUDA, one thread per particle, every j read from global memory (PLUMED tutorial's kernel); "
                   "layout aos4 (default), aos3 or soa")

    def _prepare(self, problem: Problem) -> Plan:
        return _NaivePlan(self, problem)


class _NaivePlan(_AllPairsPlan):
    def force(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        self._kernel((self.grid,), (self.block,), (*self.positions(), np.int32(n), self.box, self.fparams,
                                                    self.forces, self.partial, self.pcount))


@register
class AllPairsThreadTiled(_AllPairsCuda):
    name = "allpairs_thread_tiled"
    description = ("CUDA, one thread per particle, j staged through shared-memory tiles; the j range is split "
                   "over blockIdx.y until the GPU is full (slices=0: automatic); layout aos4 (default), aos3 or soa")
    # block 128: fastest of 64..1024 at 32,768 and 216,000 particles on an H200 (1.43 / 60.0 ms
    # against 1.50 / 63.0 ms at 256, fp32, automatic slices)
    launch_defaults = {"block": 128, "slices": 0, "layout": "aos4"}
    launch_choices = {"block": (64, 128, 256, 512, 1024), "slices": (0, 1, 2, 4, 8, 16, 32, 64),
                      "layout": tuple(LAYOUTS)}
    WAVES = 4  # automatic slices aim at this many waves of resident blocks (keeps the tail small)

    def _prepare(self, problem: Problem) -> Plan:
        return _TiledPlan(self, problem)


class _TiledPlan(_AllPairsPlan):
    def __init__(self, strategy: AllPairsThreadTiled, problem: Problem):
        n, block = problem.n, strategy.launch["block"]
        grid = -(-n // block)
        wanted = strategy.launch["slices"]
        if wanted == 0 and n:
            probe = kernel(strategy.source_file,
                           strategy.expression(problem.precision, any(problem.box.periodic), problem.potential),
                           problem.potential)
            target = strategy.WAVES * resident_blocks(probe, block) * sm_count()
            wanted = -(-target // grid)
        tiles = max(1, -(-n // block))
        self.jchunk = block * -(-tiles // max(1, min(wanted, tiles)))  # whole tiles per slice
        self.slices = max(1, -(-n // self.jchunk))
        super().__init__(strategy, problem, slices=self.slices)
        self.launch_info = {"grid": [self.grid, self.slices], "block": block, "jchunk": self.jchunk}
        if self.slices > 1:
            self.parts = self.cp.empty((self.slices, n, 3), dtype=self.acc)
            self._fold = kernel("reduce.cu", fold_expression(self.acc_t))

    @property
    def device_bytes(self) -> int:
        return super().device_bytes + (self.parts.nbytes if self.slices > 1 else 0)

    def force(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        target = self.parts if self.slices > 1 else self.forces
        self._kernel((self.grid, self.slices), (self.block,), (*self.positions(), np.int32(n), np.int32(self.jchunk),
                                                                self.box, self.fparams, target, self.partial,
                                                                self.pcount))
        if self.slices > 1:
            blocks = min(-(-3 * n // 256), 4 * sm_count())
            self._fold((blocks,), (256,), (self.parts, np.int32(3 * n), np.int32(self.slices), self.forces))

    def poison(self) -> None:
        super().poison()
        if self.slices > 1:
            self.parts.fill(poison_value(self.acc))


# --- CPU --------------------------------------------------------------------------------

@njit(parallel=True)
def _allpairs_cpu(pair, conv, with_sums, pos, w, box, prm, rc2, zero, forces, sums, counts):
    """pos (n, 3) and w (n,) in the compute dtype; box: L0, L1, L2, 1/L0, 1/L1, 1/L2 (0 = open axis);
    pair, prm, rc2: the potential's pair function, constants and cutoff^2 (strategies.cpu);
    zero: 0 in the accumulation dtype. forces (n, 3) and sums (n, 7) in the accumulation dtype,
    counts (n,) int64."""
    n = pos.shape[0]
    for i in prange(n):
        s = (zero, zero, zero, zero, zero, zero, zero)
        fx = fy = fz = zero
        c = 0
        for j in range(n):
            if j == i:
                continue
            dx, dy, dz, r2 = separation(pos, i, j, box)
            if r2 < rc2:
                ax, ay, az, s, hit = pair_step(pair, conv, with_sums, s, dx, dy, dz, r2, prm, w[i], w[j])
                fx += ax
                fy += ay
                fz += az
                c += hit
        forces[i, 0], forces[i, 1], forces[i, 2] = fx, fy, fz
        store_sums(sums[i], s)
        counts[i] = c


class _CpuPlan(CpuPlan):
    def force(self) -> None:
        _allpairs_cpu(self.pair, self.conv, self.energy, self.pos, self.w, self.box, self.prm, self.rc2, self.acc(0), self.forces, self.sums,
                      self.counts)


@register
class AllPairsThreadCpu(Strategy):
    name = "allpairs_thread_cpu"
    backend = "cpu"
    traversal = "allpairs"
    processor = "thread"
    description = "numba prange over particles, every pair from both sides (the OpenMP counterpart)"

    def work(self, problem: Problem) -> dict:
        return _all_pairs_work(problem)

    def _prepare(self, problem: Problem) -> Plan:
        return _CpuPlan(self, problem)
