"""The MD loop's steps fused into the Verlet list's order (velocity Verlet, as integrate.py, with the
state kept where the force kernel reads it). harness/md.py takes them where a plan's md_steps()
offers them (strategies/verlet/plan.py); kernels/verlet_steps.cu and verlet_md.cuh.
"""
from __future__ import annotations

import numpy as np

from mdcore import Forces
from mdcore.ranges import nvtx_range

from .binning import GUARDED_BLOCKS_PER_SM
from .cuda import kernel, sm_count
from .graphs import upkeep_if
from .verlet.packed import PackedLayout
from .verlet.plan import MD_BLOCK, md_dtype


class FusedSteps:
    """The MD loop's steps on a Verlet list with the state in the list's order (harness/md.py takes
    them where the plan's md_steps offers them; `harness md --no-fuse` keeps the plain loop).

    The plain loop runs, per step, kick_drift over the particles in input order, the list's check
    (verlet_refresh: each position gathered into slot order, the image nearest its build
    position, the trigger), the guarded upkeep, the force kernel (forces scattered to input order)
    and the kick. Here x, v and the closing kick's forces stay in slot order (the binning's order of
    the last build) and a step is the guarded upkeep and one force kernel that ends with each row's
    particle's update (kernels/verlet_md.cuh, MdStep): the closing half kick, the next step's opening
    one, the drift, the next step's positions (a second buffer: the kernel still gathers from the
    first) and trigger (a second flag). The last step of a run keeps the forces and closes only;
    the next run opens with verlet_open. A rebuild bins the positions in input order, as the plain
    loop does (verlet_stage writes them, with the state copied aside and the old order's inverse),
    and takes the state to the new order through that inverse (verlet_resort), so that the rows, the
    sums and every coordinate are the plain loop's bit for bit (tests/test_md_fused.py). x and v in
    input order (the integrator's, here the rebuild's scratch) are written where the loop reads them
    (kinetic, positions, velocities: verlet_unsort).
    """

    def __init__(self, plan, integ, forces):
        cp = plan.cp
        n = plan.problem.n
        self.plan, self.integ, self.n, self.cp = plan, integ, n, cp
        self.name = plan.strategy.name
        order = plan.binning.order[:n]
        self.xs, self.vs = integ.x[order], integ.v[order]
        self.fs = cp.asarray(forces)[order]
        self.cur = (plan.cur, plan.cur.copy())  # the copy keeps the phantom slot
        packed = isinstance(plan.layout, PackedLayout)
        self.qs = (plan.layout.q, plan.layout.q.copy()) if packed else (None, None)  # cur's packed copies
        self.flags = (plan.flag, cp.zeros(2, np.int32))  # each: the rebuild's and the prune's triggers
        self.never = plan.strategy.launch["rebuild"] == "never"
        real_t, acc_t = plan.real_t, plan.acc_t
        self.k_open = kernel("verlet_steps.cu", f"verlet_open<{real_t}, {acc_t}>")
        self.k_unsort = kernel("verlet_steps.cu", f"verlet_unsort<{real_t}, {acc_t}>")
        self.k_stage = kernel("verlet_steps.cu", f"verlet_stage<{real_t}, {acc_t}>")
        self.k_resort = kernel("verlet_steps.cu", f"verlet_resort<{acc_t}>")
        self.inv = cp.empty(max(n, 1), np.int32)  # the old slot order's inverse, during a rebuild
        self.adapt_args = plan.half_skin_args(integ.dt)  # verlet_stage's half-skins (launch parameter adapt)
        self.dtype = md_dtype(plan.acc, plan.real)
        self.blocks = max(1, -(-n // MD_BLOCK))
        self.guarded_blocks = max(1, min(self.blocks, GUARDED_BLOCKS_PER_SM * sm_count()))
        self._fn: dict = {}
        for outputs, mode in (("forces", 2), ("forces", 1), ("all", 1)):  # compiled before any step is timed
            self._kernel(outputs, mode)
        self.q = 0

    def _md(self, nxt, flag, qnext) -> np.ndarray:
        i = self.integ
        ptr = [a.data.ptr for a in (self.xs, self.vs, self.fs, self.plan.ref, nxt)]
        ptr += [0 if flag is None else flag.data.ptr, i.bad.data.ptr, 0 if qnext is None else qnext.data.ptr]
        ptr += [0 if self.plan.pref is None or flag is None else self.plan.pref.data.ptr]
        inv_h = 1.0 / self.plan.layout.h if qnext is not None else 0.0
        return np.array([(*ptr, i.half, i.dt, *i.L_acc, self.plan.half_skin2, self.plan.half_inner2,
                          inv_h)], dtype=self.dtype)

    def _kernel(self, outputs: str, mode: int):
        p = self.plan
        key = (outputs, mode)
        if key not in self._fn:
            self._fn[key] = kernel("verlet_force.cu", p.force_expression(outputs, mode), p.problem.potential)
        return self._fn[key]

    def open(self) -> None:
        """The opening half kick and drift of a run of steps (the forces the last step kept)."""
        self.q = 0
        md = self._md(self.cur[0], None if self.never else self.flags[0], self.qs[0])
        self.k_open((self.blocks,), (MD_BLOCK,), (md, self.plan.box, np.int32(self.n)))

    def step(self, outputs: str, last: bool) -> Forces:
        """The guarded upkeep and the force kernel that closes this step and, unless `last`, opens
        the next."""
        p = self.plan
        i = self.q & 1
        self.q += 1
        p.set_outputs(outputs)
        with nvtx_range(f"build/{self.name}"):
            self.upkeep(i)
        with nvtx_range(f"force/{self.name}"):
            self.force(i, 1 if last else 2)
        with nvtx_range(f"reduce/{self.name}"):
            p.reduce()
        return p.output()

    def upkeep(self, i: int) -> None:
        """The rebuild where flag i is set (skipped on the device otherwise): the positions to input
        order and the state aside (verlet_stage, into the integrator's x and v as scratch), the
        binning, the state to the new slot order (verlet_resort), the rows (their positions into cur
        i); then the inner list's prune where its trigger (flag i's second) is set."""
        p, n, flag = self.plan, self.n, self.flags[i]
        p.cur = self.cur[i]
        if self.qs[i] is not None:
            p.layout.q = self.qs[i]
        if self.never:
            return
        xt, vt, grid = self.integ.x, self.integ.v, (self.guarded_blocks,)
        with upkeep_if(flag):  # under capture: a conditional node's body (strategies/graphs.py)
            self.k_stage(grid, (MD_BLOCK,), (p.binning.order, self.xs, self.vs, p.ref, np.int32(n), xt, vt, p.pos,
                                             self.inv, flag, *self.adapt_args))
            p.binning.run(guard=flag)
            self.k_resort(grid, (MD_BLOCK,), (p.binning.order, self.inv, xt, vt, np.int32(n), self.xs, self.vs, flag))
            p._rows(flag)
        p._prune(flag[1:])  # the inner list (prune), where flag[1] is set: a moved particle or the rebuild

    def force(self, i: int, mode: int) -> None:
        """The force kernel on cur i, clearing flag i; mode 2 writes cur and flag i ^ 1."""
        md = self._md(self.cur[i ^ 1], None if self.never else self.flags[i ^ 1], self.qs[i ^ 1])
        self.plan._launch_force(self._kernel(self.plan.outputs, mode), self.cur[i], self.flags[i], md)

    def _unsort(self) -> None:
        """x, v (the integrator's, input order) and the plan's positions from the slot-order state."""
        i = self.integ
        self.k_unsort((self.blocks,), (MD_BLOCK,), (self.plan.binning.order, self.xs, self.vs, np.int32(self.n), i.x,
                                                    i.v, self.plan.pos))

    def kinetic(self):
        self._unsort()
        return self.integ.kinetic()

    def positions(self) -> np.ndarray:
        self._unsort()
        return self.integ.positions()

    def velocities(self) -> np.ndarray:
        self._unsort()
        return self.integ.velocities()

    def blown_up(self) -> bool:
        return self.integ.blown_up()
