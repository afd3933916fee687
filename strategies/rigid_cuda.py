"""NO_SQUISH on the device for a GPU molecule traversal (kernels/rigid.cuh, molecules.cu's molecule_kick and
molecule_kick_drift): the whole rigid-body MD step stays on the GPU, around a MoleculePlan's forces and
torques (strategies/molecules_cuda.py). harness/rigid_md.py runs it."""
from __future__ import annotations

import numpy as np

from . import cuda
from .molecules_cuda import LISTS, PRECISIONS, SKIN, MoleculePlan


class DeviceRigid:
    """NO_SQUISH on the device (kernels/rigid.cuh) with a GPU traversal's forces and torques: the whole MD
    step stays there. The state (mdcore.rigid.RigidState: r, p, q, pi) lives in the precision mode's
    accumulation type; each drift writes the traversal's inputs (centres, quaternions) directly. A list
    traversal's list is built again once a centre has moved half the skin since its build (the drift
    kernel raises a flag, which the host reads each step into pinned memory).

    `fused` (the default): a step's closing half kick waits and goes with the next step's opening one, one
    kick of dt where there were two of dt / 2 (the same forces and orientations: the same step up to
    rounding), in one kernel with the drift (molecule_kick_drift); settle() applies a waiting half kick,
    and download() and scale() call it first."""

    def __init__(self, plan: MoleculePlan, state, fused: bool = True):
        import cupyx

        cp = plan.cp
        self.plan, self.cp = plan, cp
        S = plan.acc
        self.S = S
        self.r, self.p, self.q, self.pi = (cp.asarray(np.ascontiguousarray(x, S)) for x in (state.r, state.p, state.q,
                                                                                             state.pi))
        self.mass = cp.asarray(np.asarray(state.mass, S))
        self.inertia = cp.asarray(np.ascontiguousarray(state.inertia, S))
        real_c, acc_c = PRECISIONS[plan.precision][:2]
        self.fn_kick = cuda.kernel("molecules.cu", f"molecule_kick<{acc_c}, {acc_c}>")
        self.fn_kick_drift = cuda.kernel("molecules.cu", f"molecule_kick_drift<{real_c}, {acc_c}, {acc_c}>")
        self.grid = (max(1, -(-plan.m // 256)),)
        self.L = np.asarray(plan.lengths, np.float64)
        plan.upload(state.r, state.q)
        plan.run()
        self.at = self.r.copy() if plan.name in LISTS else None
        self.moved = cp.zeros(1, np.int32)
        self.moved_host = cupyx.empty_pinned(1, np.int32)  # the flag's copy: no host allocation a step
        self.fused, self.waiting = fused, 0.0
        self.limit2 = self.S((0.5 * SKIN * plan.model.cutoff) ** 2)
        self.builds = getattr(plan, "rebuilds", 0)
        for energy in (True, False):  # warm-up: every kernel of a step compiled and run once (dt 0 moves nothing)
            self.step(0.0, energy)
        plan.cp.cuda.get_current_stream().synchronize()

    def _kick(self, h: float) -> None:
        self.fn_kick(self.grid, (256,), (np.int32(self.plan.m), self.p, self.pi, self.q, self.inertia,
                                         self.plan.d_force, self.plan.d_torque, self.S(h)))

    def settle(self) -> None:
        """The waiting closing half kick, applied now: the momenta belong to the positions again."""
        if self.waiting:
            self._kick(self.waiting)
            self.waiting = 0.0

    def step(self, dt: float, energy: bool = False) -> None:
        """kick(dt/2), drift(dt), the traversal (with its energy and virial where `energy`), kick(dt/2); fused,
        the first kick takes the last step's waiting half too, in one kernel with the drift, and the last
        one waits (settle)."""
        cp, plan, S = self.cp, self.plan, self.S
        stream = cp.cuda.get_current_stream()
        if self.at is not None:
            cp.cuda.runtime.memsetAsync(self.moved.data.ptr, 0, 4, stream.ptr)
        if not self.fused:
            self._kick(0.5 * dt)
        h = self.waiting + 0.5 * dt if self.fused else 0.0  # unfused: kicked apart just now
        self.fn_kick_drift(self.grid, (256,), (np.int32(plan.m), self.r, self.p, self.q, self.pi, self.mass,
                                               self.inertia, plan.d_force, plan.d_torque, S(h), S(dt),
                                               *(S(x) for x in self.L), *(np.int32(x) for x in plan.periodic),
                                               plan.d_c, plan.d_q, self.at if self.at is not None else np.uint64(0),
                                               self.limit2, self.moved))  # at: or a null pointer
        self.waiting = 0.0
        if self.at is not None:  # one 4-byte read a step
            cp.cuda.runtime.memcpyAsync(self.moved_host.ctypes.data, self.moved.data.ptr, 4,
                                        cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
            stream.synchronize()
            if int(self.moved_host[0]):
                plan.stale = True
        plan.run(energy)
        if self.at is not None and plan.rebuilds != self.builds:
            self.at = self.r.copy()
            self.builds = plan.rebuilds
        if self.fused:
            self.waiting = 0.5 * dt
        else:
            self._kick(0.5 * dt)

    def scale(self, factor: float) -> None:
        """Momenta and quaternion momenta times factor (velocity rescaling)."""
        self.settle()
        self.p *= self.S(factor)
        self.pi *= self.S(factor)

    def download(self, state) -> None:
        """The device state into `state` (a RigidState), as float64."""
        self.settle()
        state.r[:] = self.r.get()
        state.p[:] = self.p.get()
        state.q[:] = self.q.get()
        state.pi[:] = self.pi.get()
