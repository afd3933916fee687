"""The CUDA Verlet list's plan: the binning, the list build and its trigger, the force kernel, and
the inner list of the experimental launch parameter prune (kernels/verlet_build.cu,
verlet_force.cu, verlet_prune.cu)."""
from __future__ import annotations

import numpy as np

from mdcore import MODES, Problem, StrategyError

from ..binning import GUARDED_BLOCKS_PER_SM, Binning
from ..cells import pmask
from ..cuda import CudaPlan, Layout, auto_tpp, cbool, kernel, sm_count
from ..lists import DeviceListPlan
from . import tuning
from .common import GRID_DTYPE, PHANTOM, adapt_text, cap_of, groups_of
from .packed import NO_PACKED, PackedLayout

MD_BLOCK = 256
# The fused MD steps (integrate_fused.py) take rows of at most this many threads: with more, the
# row's lane 0 updates the particle after the row's shuffle sum, a chain of dependent loads that the
# plain steps' kick_drift spreads over a thread per coordinate (the plain steps won at 4,000).
FUSE_TPP_MOST = 4


def md_dtype(acc, real) -> np.dtype:
    """kernels/verlet_md.cuh's MdStep<Real, Acc>, passed by value: 9 pointers, 5 Acc, two Real, one float."""
    names = ["x", "v", "f", "ref", "next", "flag", "bad", "qnext", "pref", "half_dt_m", "dt", "lx", "ly", "lz",
             "half_skin2", "half_inner2", "inv_h"]
    return np.dtype({"names": names, "formats": [np.uint64] * 9 + [acc] * 5 + [real, real, np.float32]}, align=True)


class VerletPlan(DeviceListPlan):
    visits_per_pair = 2  # a full list: every pair from both sides
    overflow_words = ("a particle", "neighbours")

    def __init__(self, strategy, problem: Problem):
        n = problem.n
        self.tpp = strategy.launch.get("tpp", 1) or auto_tpp(n, tuning.table().tpp_most, round_up=False)
        self.block = strategy.launch["block"]
        self._opted_in: set[int] = set()  # force kernels allowed more than 48 KB of dynamic shared memory
        self.rows = self.row_count(strategy, problem)
        self.blocks = max(1, -(-(self.rows * self.tpp) // self.block))
        super().__init__(strategy, problem, nparts=self.blocks if n else 0)
        cp = self.cp
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        self.dims = strategy.grid(problem)
        self.grid_struct = np.array([(*self.dims, pmask(problem))], dtype=GRID_DTYPE)
        self.inv_side = [self.real(self.dims[a] / problem.box.array[a]) for a in range(3)]
        self.pbc = any(problem.box.periodic)
        self.rc2 = self.real(problem.potential.cutoff ** 2)
        self.rlist2 = self.real(self.rl ** 2)
        self.half_skin2 = self.real((0.5 * self.skin) ** 2)
        # adapt: each particle's half-skin in its position's w (kernels/verlet_build.cu, verlet_build ADAPT),
        # skin / 2 where no velocity is known; the triggers read the build's (half_skin2 < 0: per slot,
        # refreshed). The MD loop's plain steps hand the plan their integrator (use_velocities): a rebuild then
        # writes each w from the velocity (verlet_half_skins), as the fused steps' verlet_stage does
        self.adapt = getattr(strategy, "adapt", None)
        self.hcap = self.real(0.5 * self.skin)
        self.integ, self.k_half_skins = None, None
        if self.adapt is not None:
            self.host_pos[:, 3] = self.hcap
            self.half_skin2 = self.real(-1.0)
        self.binning = Binning(cp, self.real_t, n, self.dims, self.pos, self.box, self.grid_struct, self.inv_side,
                               write_pos=True)
        m = max(n, 1)
        # flag[0]: the rebuild trigger; flag[1]: the inner list's (prune); rebuilds: their counts
        # (kernels/verlet_rows.cuh, consume_flags)
        self.flag = cp.ones(2, np.int32)
        self.rebuilds = cp.zeros(2, np.uint32)
        self.overflow = cp.zeros(1, np.int32)
        self.ref = cp.zeros((m, 4), self.real)  # the build's positions, sorted order
        # the positions now, sorted order, unwrapped since the build; slot n: the phantom the rows are
        # padded with (kernels/verlet_rows.cuh, RowWriter), so far that no pair with it lies inside a cutoff
        self.cur = cp.zeros((m + 1, 4), self.real)
        self.cur[n, :3] = PHANTOM
        self.len = cp.zeros((max(self.rows, 1), 2), np.int32)  # per row: plain entries, image entries
        self.k_check = kernel("verlet_build.cu", f"verlet_refresh<{self.real_t}>")
        # per-pair minimum image in the build only on a periodic axis of fewer than 3 cells; z-windows otherwise
        minimage = any(p and int(d) < 3 for d, p in zip(self.dims, problem.box.periodic))
        self.margin = self.real(8 * np.finfo(np.float32).eps * (0.5 * float(problem.box.array.max()) + self.rl))
        self._force: dict[str, object] = {}
        self.entries = strategy.entries(self.tpp)
        # first build: the binning method (and the fullest cell: the list build's), then the rows'
        # lengths (capacity 0), then the list
        if n:
            self.upload()
        counts = self.binning.choose()
        self.sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self._build_kernel(int(counts.max()) if counts.size else 0, minimage)
        self.cap = int(strategy.launch["cap"])
        self.nbr = cp.zeros(1, np.int32)
        if n and self.cap == 0:
            self._build_rows(0)
            longest = int(self.overflow.get()[0])
            self.overflow.fill(0)
            self.cap = cap_of(longest)
        rows = max(self.rows, 1)
        need = groups_of(self.cap) * 4 * rows * 4
        free = self._free_bytes()
        if need > free:
            raise StrategyError(f"{strategy.name}: the list needs {need / 2**30:.2f} GiB ({rows:,} rows x {self.cap} "
                                f"neighbours within {self.rl:g}) but the GPU has {free / 2**30:.2f} GiB free; take a "
                                "smaller skin")
        self.nbr = cp.empty(groups_of(self.cap) * 4 * rows, np.int32)
        self._prune_setup(need, free)
        layout = strategy.layout_for(problem)
        if layout == "packed":
            self.layout = PackedLayout(cp, n + 1, strategy.packed_reach(problem))
        else:
            self.layout = Layout(cp, layout, self.real_t, self.real, n + 1,  # the phantom too
                                 words=problem.potential.per_particle)
        self.launch_info = {"cells": self.dims.tolist(), "rlist": self.rl, "skin": self.skin, "cap": self.cap,
                            "tpp": self.tpp, "block": self.block, "build": self.binning.method,
                            "list_build": self.build_kind,
                            "split": "entries" if self.entries else "groups",
                            "layout": self.layout.name,
                            "prune": self.inner_skin if self.inner_skin else "off",
                            "adapt": adapt_text(self.adapt),
                            "list_bytes": int(self.nbr.nbytes + self.len.nbytes + self.ref.nbytes
                                              + self.cur.nbytes + sum(a.nbytes for a in self._inner_arrays()))}

    def use_velocities(self, integ) -> None:
        """The MD loop's integrator (harness/md.py, plain steps; a GpuIntegrator on this plan), or anything
        with its v (N x 3, the accumulation type, on the device) and dt (a replay's FrameVelocities): with
        adapt, each rebuild sizes the half-skins from those velocities (verlet_half_skins) before the
        binning. None: no velocity known again, every half-skin skin / 2."""
        if self.adapt is None:
            return
        self.integ = integ
        if integ is None:
            self.k_half_skins = None
            if self.problem.n:
                self.pos[: self.problem.n, 3] = self.hcap
            return
        v_t = "double" if integ.v.dtype == np.float64 else "float"  # the integrator's Acc; a replay's own type
        self.k_half_skins = kernel("verlet_steps.cu", f"verlet_half_skins<{self.real_t}, {v_t}>")

    def half_skin_args(self, dt) -> tuple:
        """The half-skins' constants (kernels/verlet_steps.cu, adapt_half_skin) for time step dt, in Real: K dt,
        the margin and the cap; without adapt K dt < 0 (verlet_stage keeps ref's w). One place for the fused
        steps (verlet_stage) and the plain ones (verlet_half_skins), so both take the same h."""
        k_dt, margin = (-1.0, 0.0) if self.adapt is None else (self.adapt[1] * dt, self.adapt[0])
        return self.real(k_dt), self.real(margin), self.hcap

    def _before_binning(self, guard) -> None:
        if self.k_half_skins is None or not self.problem.n:
            return
        n = self.problem.n
        self.k_half_skins((max(1, min(-(-n // MD_BLOCK), GUARDED_BLOCKS_PER_SM * sm_count())),), (MD_BLOCK,),
                          (self.integ.v, np.int32(n), self.pos, guard if guard is not None else np.uint64(0),
                           *self.half_skin_args(self.integ.dt)))

    def _prune_setup(self, need: int, free: int) -> None:
        """The inner list (experimental launch parameter prune; kernels/verlet_prune.cu): rows of the
        outer list's storage and capacity (a subset of its entries never overflows), their lengths,
        the positions of the last prune, and the kernel. Refused with the GiB both lists need where
        the GPU lacks them."""
        cp, n, strategy = self.cp, self.problem.n, self.strategy
        prune = strategy.launch.get("prune", "off")
        self.inner_skin = 0.0 if prune == "off" else float(prune)
        self.inner = self.ilen = self.pref = None
        self.half_inner2 = self.real(0.0)  # the prune trigger's (inner / 2)^2; 0 without an inner list
        if not self.inner_skin:
            return
        if 2 * need > free:
            raise StrategyError(f"{strategy.name}: the outer and inner lists need {2 * need / 2**30:.2f} GiB "
                                f"({max(self.rows, 1):,} rows x {self.cap} neighbours each) but the GPU has "
                                f"{free / 2**30:.2f} GiB free; take a smaller skin, or prune=off")
        rl_in = float(self.problem.potential.cutoff) + self.inner_skin
        self.rin2 = self.real(rl_in ** 2)
        self.half_inner2 = self.real((0.5 * self.inner_skin) ** 2)
        self.inner = cp.empty_like(self.nbr)
        self.ilen = cp.zeros_like(self.len)
        self.pref = cp.zeros((max(n, 1), 4), self.real)
        packed = strategy.layout_for(self.problem) == "packed"
        fma = cbool(MODES[self.problem.precision].cxx_accumulate != "Fixed")
        self.k_prune = kernel("verlet_prune.cu",
                              f"verlet_prune<{self.real_t}, {fma}, {cbool(self.pbc)}, {cbool(packed)}>")

    def _inner_arrays(self) -> list:
        return [a for a in (self.inner, self.ilen, self.pref) if a is not None]

    def _prune(self, guard) -> None:
        """The inner rows from the outer ones at the positions of now (guard: flag[1:], set where a
        particle moved beyond inner/2 since the last prune, and by every rebuild; None: always)."""
        n = self.problem.n
        if not self.inner_skin or not n:
            return
        self.k_prune((-(-n // 128),), (128,), (self.cur, self.nbr, self.len, np.int32(n), np.int32(self.cap), self.box,
                                               self.rin2, self.inner, self.ilen, self.pref,
                                               guard if guard is not None else np.uint64(0), self._packed()))

    def build(self) -> None:
        super().build()
        self._prune(None)

    def update(self) -> None:
        super().update()
        if self.problem.n and self.strategy.launch["rebuild"] != "never":
            self._prune(self.flag[1:])

    def prune_count(self) -> int | None:
        """Prunes of the inner list the force phase has used since prepare (0 without one)."""
        return int(self.rebuilds.get()[1]) if self.inner_skin else None

    def _rows_read(self) -> tuple:
        """The rows the force kernel reads: the inner list's where the plan keeps one."""
        return (self.inner, self.ilen) if self.inner_skin else (self.nbr, self.len)

    @staticmethod
    def row_count(strategy, problem: Problem) -> int:
        """Rows of the list: one per particle."""
        return problem.n

    def _build_kernel(self, fullest: int, minimage: bool) -> None:
        """The list build (build_kind, k_build) for this run: an explicit choice or 'auto'
        (tuning.build_kind); the strip build where the opposite walk or adapt cannot run."""
        launch, real_t = self.strategy.launch, self.real_t
        self.build_kind = tuning.build_kind(launch["build"], self.problem.n, self.sms, fullest)
        if self.build_kind == "opposite" and minimage:  # its walk is over z-windows
            self.build_kind = "strip"
        adapt = self.adapt is not None
        if adapt and self.build_kind not in ("strip", "opposite"):  # the per-particle reach: the strip builds only
            self.build_kind = "strip"
        window = not minimage
        self.k_build = kernel("verlet_build.cu", {
            "cell": f"verlet_build_cells<{real_t}, {cbool(minimage)}>",
            "warp": f"verlet_build_warp<{real_t}, {cbool(minimage)}>",
            "opposite": f"verlet_build<{real_t}, false, true, true, {cbool(adapt)}>",
        }.get(self.build_kind, f"verlet_build<{real_t}, {cbool(minimage)}, {cbool(window)}, false, {cbool(adapt)}>"))

    @property
    def device_bytes(self) -> int:
        own = [self.flag, self.rebuilds, self.overflow, self.ref, self.cur, self.len, self.nbr, *self._inner_arrays()]
        return (CudaPlan.device_bytes.fget(self) + self.binning.device_bytes + int(sum(a.nbytes for a in own))
                + self.layout.nbytes)

    def _build_rows(self, cap: int, guard=None) -> None:
        n = self.problem.n
        g = guard if guard is not None else np.uint64(0)
        b = self.binning
        rows = (self.nbr, self.len, self.ref, self.cur, self.overflow, g)
        if self.build_kind == "warp":  # 32 threads per row
            self.k_build((-(-n * 32 // 128),), (128,), (b.sorted, b.cell_sorted, b.start, np.int32(n), self.grid_struct,
                                                         self.box, self.rlist2, np.int32(cap), *rows))
            return
        if self.build_kind == "cell":
            ncells = int(np.prod(self.dims))
            self.k_build((ncells,), (32,), (b.sorted, b.start, np.int32(n), self.grid_struct, self.box, self.rlist2,
                                            np.int32(cap), *rows))
            return
        self.k_build((-(-n // 128),), (128,), (b.sorted, b.cell_sorted, b.start, np.int32(n), self.grid_struct,
                                               self.box, self.rlist2, self.margin, np.int32(cap), *rows,
                                               self.real(self.problem.potential.cutoff), self.hcap))

    def _check(self, flag=None) -> None:
        """The trigger (flag) and cur: the positions the MD loop moved, in the list's order."""
        n = self.problem.n
        pref = self.pref if self.pref is not None else np.uint64(0)
        self.k_check((-(-n // 256),), (256,), (self.pos, self.binning.order, self.ref, np.int32(n), self.box,
                                               self.half_skin2, self.cur, self.flag if flag is None else flag,
                                               self._packed(), pref, self.half_inner2))

    def _refresh(self) -> None:
        self._check(np.uint64(0))  # cur only: the list is kept whatever the displacement

    def _rows(self, guard) -> None:
        self._build_rows(self.cap, guard)
        if isinstance(self.layout, PackedLayout):  # the build wrote cur
            self.layout.pack(self.cur, self.problem.n, guard)

    def listed_pairs(self) -> int:
        """Entries of the list the force kernel reads (each pair twice; the inner list where the plan
        keeps one): the force phase's distance checks."""
        n = self.problem.n
        return int(self._rows_read()[1][:n].sum(dtype=np.int64).get()) if n else 0  # plain and image entries

    def force_expression(self, outputs: str | None = None, md: int = 0) -> str:
        """The force kernel's specialisation for this run (its outputs, or the plan's)."""
        p = self.problem
        energy = (outputs or self.outputs) == "all"
        return self.strategy.force_expression(p.precision, p.potential, energy, self.pbc, self.tpp, md,
                                              layout=self.layout.name)

    def _force_kernel(self):
        """The force kernel of this run's outputs (compiled once per flavour)."""
        fn = self._force.get(self.outputs)
        if fn is None:
            fn = self._force[self.outputs] = kernel(self.strategy.source_file, self.force_expression(),
                                                   self.problem.potential)
        return fn

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        self._launch_force(self._force_kernel(), self.cur, self.flag, self._no_md())

    def _launch_force(self, fn, cur, flag, md) -> None:
        """The force kernel on positions `cur`; flag: the trigger it clears (counting the rebuild
        the step's upkeep made); md: its MdStep (zero where it writes forces)."""
        n = self.problem.n
        self.layout.fill(cur, n + 1)  # aos3, soa: the positions of this step (and the phantom), copied
        fn((self.blocks,), (self.block,), (*self.layout.args(cur), self.binning.order, *self._rows_read(),
                                           np.int32(n), np.int32(self.cap), self.box, self.fparams, self.forces, self.partial,
                                           self.pcount, flag, self.rebuilds, md, self._packed()),
           shared_mem=self._table_shared(fn))

    def _table_shared(self, fn) -> int:
        """The dynamic shared memory of the force kernel: the pair table where launch table=shared (the
        kernel allowed above 48 KB once), else 0."""
        if self.strategy.launch.get("table") != "shared":
            return 0
        size = self.problem.potential.table_bytes(np.dtype(self.real).itemsize)
        if size > 48 * 1024 and id(fn) not in self._opted_in:
            fn.max_dynamic_shared_size_bytes = size  # CuPy's RawKernel: cuFuncSetAttribute
            self._opted_in.add(id(fn))
        return size

    def _packed(self) -> np.ndarray:
        """The kernels' PackedPositions (layout=packed: the plan's q now; zero otherwise)."""
        return self.layout.struct() if isinstance(self.layout, PackedLayout) else NO_PACKED

    def _no_md(self) -> np.ndarray:
        if getattr(self, "_md_zero", None) is None:
            self._md_zero = np.zeros(1, md_dtype(self.acc, self.real))
        return self._md_zero

    def md_steps(self, integ, forces, always: bool = False):
        """(FusedSteps, "on"): the MD loop's steps fused into the list's order, from the state of
        `integ` (a GpuIntegrator on this plan) and the forces of its positions (input order);
        or (None, why not). Not where a row takes more than FUSE_TPP_MOST threads (small systems),
        unless `always`."""
        from ..integrate_fused import FusedSteps

        if not self.problem.n:
            return None, "no particles"
        if not self.binning.guardable:
            return None, f"the {self.binning.method} binning cannot be skipped on the device"
        if self.tpp > FUSE_TPP_MOST and not always:
            return None, (f"{self.tpp} threads a row (small systems: one of them updates the particle after the "
                          "row's sum, and the plain steps measured faster)")
        return FusedSteps(self, integ, forces), "on"
