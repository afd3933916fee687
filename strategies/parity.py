"""The ls1-MarDyn CUDA port's strategies (the port's developer notes), for single-site
particles and any registered pair potential.

Traversal: the parity-plane domain traverser (strategies/schedules.py parity_launches): per
direction of one half space, the even and odd layers perpendicular to it (and the boundary
layer of an odd periodic axis) are one launch each, every cell in at most one pair of a launch;
one more launch is the intra-cell pass. Storage: the CSR cells (cellStartIndices) with the
binning of strategies/cells_cuda.py. Cell processors:

  parity_thread_csr   the port's REFERENCE_IMPLEMENTATION: one thread walks all molecule pairs
                      of its cell pair (debug mode, for comparison)
  parity_block_csr    thread-block cell processor: one block per cell pair, blocks of one
                      molecule per thread, block B in shared memory, warp blocks of 32
  parity_warpblock_<n3>_<sched>
                      warp-block cell processor: a persistent kernel per launch whose warps take
                      jobs (a warp block of cell A against all of cell B) from a scheduler.
                      n3: twopass (A->B and B->A, each writing its own side, no locks) or shared
                      (one pass, B's forces cached in shared memory and committed with atomics,
                      or under per-cell locks with commit=lock, the port's way); per-cell
                      statistics are committed the same way; sched: mutex (the port's global
                      mutex, the warps of a block joined: one lock claims jobs for all of them)
                      or atomic (each warp claims its next job with one atomicAdd, lock-free)
                      Jobs are numbered by a job table built in the force phase (warp blocks
                      per job, a scan, a table from warp block to job).

Statistics: energy, virial and pair count per cell, every pair added to both of its cells,
summed and halved by the reduce phase ("Global Statistics"). A lock not acquired within
lock_timeout_ms sets an error bit: the result raises StrategyError instead of hanging.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from mdcore import Forces, InputError, Potential, Problem, StrategyError

from . import schedules as S
from .cells import host_counts
from .cells_cuda import CellsCuda, CellsPlan
from .cuda import cbool, ctypes, resident_blocks, sm_count
from .registry import register

MODES = {"twopass": 0, "shared": 1}
SCHEDULERS = {"mutex": 0, "atomic": 1}
COMMITS = {"lock": 0, "atomic": 1}
ERRORS = {1: "the global job mutex", 2: "a per-cell lock"}
SCHED_INTS = 4  # struct Sched in parity.cu
DATA_KINDS = ("bin", "scatter", "zero", "gather")  # cells.cu kernels: binning, layout, forces out


def job_table_bound(total_jobs: int, n: int) -> int:
    """Entries the warp-block job table may need: every job of cell A has ceil(nA / 32) <= 1 +
    nA / 32 warp blocks, and a cell is A in at most 27 jobs of a traversal (26 directions of
    the two-pass jobs, or 13 shared-cache jobs, plus its intra-cell job)."""
    return total_jobs + -(-27 * n // 32) + 1


def warp_blocks(counts: np.ndarray, n_cells, periodic, mode: str) -> int:
    """Warp-block jobs of one traversal, enumerated on the host as the kernels define them
    (tests check the table bound and the schedule with it)."""
    total = 0
    for layer in S.parity_launches(n_cells, periodic):
        for a, b in S.layer_pairs(layer, n_cells, periodic):
            if a == b:
                total += -(-counts[a] // 32) if counts[a] >= 2 else 0
                continue
            sides = [(a, b), (b, a)] if mode == "twopass" else [(a, b) if counts[a] >= counts[b] else (b, a)]
            total += sum(-(-counts[x] // 32) for x, y in sides if counts[x] and counts[y])
    return int(total)


class _ParityCuda(CellsCuda):
    traversal = "parity"
    storage = "csr"
    newton3 = True

    accumulates = True  # every processor adds into the forces, the two-pass one too

    def grid_applicable(self, dims, periodic) -> tuple[bool, str]:
        return S.parity_applicable(dims, periodic)

    def work(self, problem: Problem) -> dict:
        """Distance checks from the cell occupancies: c08's count (each neighbouring pair of
        cells once, a cell with itself half) split into its inter- and intra-cell parts, then
        weighted by how often this processor computes each (checks())."""
        if problem.potential.cutoff is None or not problem.n:
            return {"distance_checks": 0 if problem.n == 0 else None}
        dims = self.grid(problem)
        counts = host_counts(problem, self.launch["cell_factor"]).astype(np.int64)
        intra_half = int((counts * (counts - 1) // 2).sum())
        inter = S.c08_checks(counts, dims, problem.box.periodic) - intra_half
        return {"distance_checks": self.checks(inter, intra_half), "cells": int(np.prod(dims)),
                "max_per_cell": int(counts.max())}

    def checks(self, inter: int, intra_half: int) -> int:
        return inter + intra_half

    source_file = "parity.cu"

    def traversal_specs(self, precision: str, potential: Potential, energy: bool,
                        minimage: bool = False) -> dict[str, tuple[str, str]]:
        real, acc = ctypes(precision)
        return {"force": ("parity.cu", self.force_expression(real, acc, potential.functor, cbool(energy)))}

    def force_expression(self, real: str, acc: str, functor: str, energy: str) -> str:
        raise NotImplementedError

    def _prepare(self, problem: Problem):
        return _ParityPlan(self, problem)


@register
class ParityThreadCsr(_ParityCuda):
    name = "parity_thread_csr"
    processor = "thread"
    description = ("CUDA, parity-plane traverser (13 directions, even/odd layers), REFERENCE_IMPLEMENTATION cell "
                   "processor: one thread per cell pair, serial loops (debug mode)")
    launch_defaults = {"block": 32, "cell_factor": 1.0}
    launch_choices = {"block": (32,)}

    def force_expression(self, real: str, acc: str, functor: str, energy: str) -> str:
        return f"parity_thread<{real}, {acc}, {functor}, {energy}>"


@register
class ParityBlockCsr(_ParityCuda):
    name = "parity_block_csr"
    processor = "block"
    description = ("CUDA, parity-plane traverser, thread-block cell processor: one block per cell pair, block B in "
                   "shared memory, warp blocks of 32, Newton3")
    # block 32 measured fastest on the LJ liquid at 1M (H200: 2.6 ms force, 5.1 at 64, 38 at 512)
    launch_defaults = {"block": 32, "cell_factor": 1.0}
    launch_choices = {"block": (32, 64, 128, 256, 512)}

    def force_expression(self, real: str, acc: str, functor: str, energy: str) -> str:
        return f"parity_block<{real}, {acc}, {functor}, {self.launch['block']}, {energy}>"


class _Warpblock(_ParityCuda):
    processor = "warpblock"
    mode: ClassVar[str] = "twopass"
    scheduler: ClassVar[str] = "atomic"
    deterministic = False  # jobs finish in any order: sums are added in any order
    # commit=atomic measured faster than the port's per-cell locks in every scenario (H200, LJ 1M:
    # 2.4 vs 3.2 ms; Gaussian sigma 12: 10.6 vs 38 ms); warps 2-8 are within the spread on LJ.
    # fault=1 starts with every lock held (the lost-lock test); lock_timeout_ms bounds every spin.
    launch_defaults = {"warps": 4, "commit": "atomic", "cell_factor": 1.0}
    # lock_timeout_ms: how long a lock is waited for before the run fails; fault=1: a lost lock
    # planted for the tests (the timeout must catch it)
    launch_internal = {"lock_timeout_ms": 1000, "fault": 0}
    launch_choices = {"warps": tuple(range(1, 17)), "commit": tuple(COMMITS), "fault": (0, 1)}

    def __init__(self, **launch):
        super().__init__(**launch)
        t = self.launch["lock_timeout_ms"]
        if not isinstance(t, (int, float)) or not 0 < t <= 600_000:
            raise InputError(f"{self.name}: lock_timeout_ms must be a number of milliseconds in (0, 600000], got {t!r}")

    def checks(self, inter: int, intra_half: int) -> int:
        # the intra-cell pass visits every pair of a cell from both sides
        return (2 * inter if self.mode == "twopass" else inter) + 2 * intra_half

    def data_specs(self, precision: str) -> dict[str, tuple[str, str]]:
        return {**super().data_specs(precision), "job_sizes": ("parity.cu", f"warpblock_job_sizes<{MODES[self.mode]}>"),
                "job_table": ("parity.cu", "warpblock_job_table")}

    def force_expression(self, real: str, acc: str, functor: str, energy: str) -> str:
        return (f"parity_warpblock<{real}, {acc}, {functor}, {self.launch['warps']}, {energy}, {MODES[self.mode]}, "
                f"{SCHEDULERS[self.scheduler]}, {COMMITS[self.launch['commit']]}>")


def _warpblock(mode: str, scheduler: str) -> type[_Warpblock]:
    n3 = {"twopass": "two-pass Newton3 (A->B and B->A, each side writes only its own molecules, no locks)",
          "shared": "shared-cache Newton3 (one pass, B forces cached in shared memory, committed with atomics or "
                    "under per-cell locks with commit=lock)"}[mode]
    sched = {"mutex": "global-mutex job scheduler, warps of a block joined (the port's)",
             "atomic": "lock-free atomic-counter job scheduler, one warp at a time"}
    name = f"parity_warpblock_{mode}_{scheduler}"
    return register(type(name, (_Warpblock,), {
        "name": name, "mode": mode, "scheduler": scheduler, "newton3": mode == "shared",
        "description": f"CUDA, parity-plane traverser, warp-block cell processor (persistent kernel), {n3}, "
                       f"{sched[scheduler]}"}))


for _m in MODES:
    for _s in SCHEDULERS:
        _warpblock(_m, _s)


class _ParityPlan(CellsPlan):
    def _schedule(self, strategy: _ParityCuda, problem: Problem) -> int:
        self.processor = strategy.processor
        self.layers = S.parity_launches(self.dims, problem.box.periodic)
        self.sizes = [int(L["du"] * L["dv"] * L["nl"]) for L in self.layers]
        self.visits_per_pair = 2  # every pair's sums reach the per-cell statistics twice
        if self.processor == "warpblock":
            self.block = 32 * strategy.launch["warps"]
            inter = [bool(L["dx"] or L["dy"] or L["dz"]) for L in self.layers]
            self.jobs = [s * (2 if strategy.mode == "twopass" and x else 1) for s, x in zip(self.sizes, inter)]
        else:
            self.block = strategy.launch["block"]
        self.schedule_info = {"launches": len(self.layers), "processor": self.processor}
        return self.ncells  # per-cell statistics are the partial sums

    def _upload_schedule(self) -> list:
        if self.processor != "warpblock":
            return []
        cp, s = self.cp, self.strategy
        self.sched = cp.zeros((len(self.layers), SCHED_INTS), np.int32)
        self.locks = cp.zeros(self.ncells, np.int32)
        self.error = cp.zeros(1, np.int32)
        self.budget_ns = np.uint64(int(s.launch["lock_timeout_ms"] * 1e6))
        arrays = [self.sched, self.locks, self.error]
        self.offsets_host = np.concatenate([[0], np.cumsum(self.jobs)]).astype(np.int64)
        total = int(self.offsets_host[-1])
        if total >= 2**31 - 1:
            raise StrategyError(f"{s.name}: {total} jobs exceed the int32 job table; use fewer cells")
        self.total_jobs = total
        self.d_layers = cp.asarray(self.layers.view(np.int32).reshape(len(self.layers), -1))
        self.d_offsets = cp.asarray(self.offsets_host[:-1].astype(np.int32))
        self.job_sizes = cp.zeros(max(total, 1), np.int32)
        self.job_ends = cp.zeros(max(total, 1), np.int32)
        self.job_first = cp.zeros(total + 1, np.int32)
        self.table = cp.zeros(job_table_bound(total, self.problem.n), np.int32)
        arrays += [self.d_layers, self.d_offsets, self.job_sizes, self.job_ends, self.job_first, self.table]
        fn = self.k["force"]
        self.persistent_grid = resident_blocks(fn, self.block) * sm_count()
        self.schedule_info.update({"warps": s.launch["warps"], "grid": self.persistent_grid,
                                   "scheduler": s.scheduler, "newton3": s.mode, "commit": s.launch["commit"]})
        return arrays

    def force(self) -> None:
        n = self.problem.n
        if n == 0:
            return
        cp = self.cp
        self.k["zero"]((self._blocks(n),), (256,), (self.cells_struct, self.cell_sorted, np.int32(n)))
        if self.energy:  # the per-cell statistics are sums
            self.partial.fill(0)
            self.pcount.fill(0)
        fn = self.k["force"]
        head = (self.cells_struct,)
        tail = (self.grid_struct, self.box, self.fparams, self.partial, self.pcount)
        if self.processor == "warpblock":
            self._prepare_jobs()
        for i, size in enumerate(self.sizes):
            layer = self.layers[i:i + 1]
            if self.processor == "thread":
                fn((-(-size // 32),), (32,), (*head, layer, *tail))
            elif self.processor == "block":
                fn((size,), (self.block,), (*head, layer, *tail))
            else:
                fn((self.persistent_grid,), (self.block,), (*head, layer, *tail, self.sched[i], self.table,
                                                            self.job_first, np.int32(self.offsets_host[i]),
                                                            self.locks, self.error, self.budget_ns))
        self.k["gather"]((self._blocks(n),), (256,), (self.cells_struct, self.order, self.cell_sorted, np.int32(n),
                                                       self.forces))

    def _prepare_jobs(self) -> None:
        s = self.strategy
        self.sched.fill(0)
        self.locks.fill(0)
        self.error.fill(0)
        if s.launch["fault"]:  # a lost lock: the mutex and every cell lock start held
            self.sched[:, 0] = 1
            self.locks.fill(1)
        if self.total_jobs:
            most = max(self.jobs)
            self.k["job_sizes"]((max(1, min(-(-most // 256), 4 * sm_count())), len(self.layers)), (256,),
                                (self.start, self.d_layers, self.d_offsets, self.grid_struct, self.job_sizes))
            self.cp.cumsum(self.job_sizes, dtype=np.int32, out=self.job_ends)
            self.k["job_table"]((self._blocks(self.total_jobs),), (256,),
                                (self.job_ends, np.int32(self.total_jobs), self.table, self.job_first))

    def output(self) -> Forces:
        out = super().output()
        if self.processor == "warpblock":
            what = " or ".join(v for k, v in ERRORS.items())
            timeout = self.strategy.launch["lock_timeout_ms"]
            out.checks = out.checks + ((self.error, f"{self.strategy.name}: {what} was not acquired within "
                                                    f"{timeout} ms (error bits {{value}}: 1 job mutex, 2 cell lock); "
                                                    "a lost lock, the result is void"),)
        return out
