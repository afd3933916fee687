"""NO_SQUISH on the device for a GPU molecule traversal (kernels/rigid.cuh, molecule_md.cu's molecule_kick and
molecule_kick_drift): the whole rigid-body MD step stays on the GPU, around a MoleculePlan's forces and
torques (strategies/molecules_cuda.py). harness/rigid_md.py runs it."""
from __future__ import annotations

import numpy as np

from mdcore import StrategyError

from . import cuda
from . import graphs as conditional
from .molecules_cuda import LISTS, MD_FILE, PRECISIONS, SKIN, MoleculePlan

# forces-only steps one CUDA graph replays (steps() takes the largest that fit, then smaller ones)
GRAPH_SIZES = (32, 8, 1)
UPKEEP = ("device", "host")


class DeviceRigid:
    """NO_SQUISH on the device (kernels/rigid.cuh) with a GPU traversal's forces and torques: the whole MD
    step stays there, on a stream of its own. The state (mdcore.rigid.RigidState: r, p, q, pi) lives in
    the precision mode's accumulation type; each drift writes the traversal's inputs (centres,
    quaternions) directly. A list traversal's list is built again once a centre has moved half the skin
    since its build: the drift kernel raises a device flag, and

    - `upkeep="device"` (the default where the cells are sorted on the device): the build's kernels
      run behind that flag (MoleculePlan.upkeep; under a CUDA graph capture the body of a conditional
      node, strategies/graphs.py), with the centres at the build and the build count kept on the device:
      a step never waits for the host, and steps() replays captured CUDA graphs of steps. A row longer
      than the list's capacity is counted on the device and reported by download() (StrategyError
      naming the capacity): the run's forces were then not complete;
    - `upkeep="host"`: the host reads the flag each step (a synchronisation) and builds the list as
      MoleculePlan.run does, its rows widened where one overflows.

    `fused` (the default): a step's closing half kick waits and goes with the next step's opening one, one
    kick of dt where there were two of dt / 2 (the same forces and orientations: the same step up to
    rounding), in one kernel with the drift (molecule_kick_drift); settle() applies a waiting half kick,
    and download() and scale() call it first."""

    def __init__(self, plan: MoleculePlan, state, fused: bool = True, upkeep: str | None = None):
        import cupyx

        cp = plan.cp
        self.plan, self.cp = plan, cp
        S = plan.acc
        self.S = S
        listed = plan.name in LISTS
        if upkeep is None:
            upkeep = "device" if listed and plan.counting else "host"
        if upkeep not in UPKEEP:
            raise ValueError(f"upkeep is one of {', '.join(UPKEEP)}, not {upkeep!r}")
        if upkeep == "device" and listed and not plan.counting:
            raise ValueError("upkeep='device' needs the cells' counting sort (the argsort is the host's)")
        self.device_upkeep = listed and upkeep == "device"
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.r, self.p, self.q, self.pi = (cp.asarray(np.ascontiguousarray(x, S)) for x in (state.r, state.p, state.q,
                                                                                             state.pi))
        self.mass = cp.asarray(np.asarray(state.mass, S))
        self.inertia = cp.asarray(np.ascontiguousarray(state.inertia, S))
        real_c, acc_c = PRECISIONS[plan.precision][:2]
        self.fn_kick = cuda.kernel(MD_FILE, f"molecule_kick<{acc_c}, {acc_c}>")
        self.fn_kick_drift = cuda.kernel(MD_FILE, f"molecule_kick_drift<{real_c}, {acc_c}, {acc_c}>")
        self.grid = (max(1, -(-plan.m // 256)),)
        self.L = np.asarray(plan.lengths, np.float64)
        plan.upload(state.r, state.q)
        plan.run()  # the first build on the host's decision: its rows widened to the longest
        self.at = self.r.copy() if listed else None
        cp.cuda.Device().synchronize()  # the default stream's uploads and build before the steps' stream
        self.moved = cp.zeros(1, np.int32)
        self.moved_host = cupyx.empty_pinned(1, np.int32)  # the flag's copy: no host allocation a step
        self.fused, self.waiting = fused, 0.0
        self.limit2 = self.S((0.5 * SKIN * plan.model.cutoff) ** 2)
        self.builds = getattr(plan, "rebuilds", 0)
        if self.device_upkeep:
            self.fn_mark = cuda.kernel(MD_FILE, f"molecule_list_mark<{acc_c}>")
            self.d_builds = cp.zeros(1, np.uint32)  # builds the steps decided on the device
            self.host_builds = plan.rebuilds
            conditional.conditional_status()  # self-tested here, before any capture
        self.graphs: dict = {}  # (dt, steps) -> a captured graph of forces-only steps
        self.graph = ""  # "on" once steps() replayed a graph, or why it did not
        for energy in (True, False):  # warm-up: every kernel of a step compiled and run once (dt 0 moves nothing)
            self.step(0.0, energy)
        self.stream.synchronize()

    def _kick(self, h: float) -> None:
        self.fn_kick(self.grid, (256,), (np.int32(self.plan.m), self.p, self.pi, self.q, self.inertia,
                                         self.plan.d_force, self.plan.d_torque, self.S(h)))

    def settle(self) -> None:
        """The waiting closing half kick, applied now: the momenta belong to the positions again; then the
        stream's work done (the default stream may read the state)."""
        with self.stream:
            if self.waiting:
                self._kick(self.waiting)
                self.waiting = 0.0
        self.stream.synchronize()
        if self.device_upkeep:
            self.plan.rebuilds = self.host_builds + int(self.d_builds.get()[0])

    def check(self) -> None:
        """StrategyError where a build the device decided had a row longer than the list's capacity (its
        forces were not complete); reads one int (a synchronisation)."""
        if not self.device_upkeep:
            return
        self.stream.synchronize()
        longest = int(self.plan.d_longest.get()[0])
        if longest:
            raise StrategyError(f"{self.plan.name}: a molecule had {longest} neighbours within {self.plan.reach:g} "
                                f"(cutoff + skin) at a list build during the steps, more than the list's capacity "
                                f"{self.plan.cap}; those steps' forces were not complete: run again from the "
                                "last state read back (the list is sized from it)")

    def step(self, dt: float, energy: bool = False) -> None:
        """kick(dt/2), drift(dt), the traversal (with its energy and virial where `energy`), kick(dt/2); fused,
        the first kick takes the last step's waiting half too, in one kernel with the drift, and the last
        one waits (settle)."""
        with self.stream:
            self._step(dt, energy)

    def _step(self, dt: float, energy: bool) -> None:
        cp, plan, S = self.cp, self.plan, self.S
        if self.at is not None:
            cp.cuda.runtime.memsetAsync(self.moved.data.ptr, 0, 4, self.stream.ptr)
        if not self.fused:
            self._kick(0.5 * dt)
        h = self.waiting + 0.5 * dt if self.fused else 0.0  # unfused: kicked apart just now
        self.fn_kick_drift(self.grid, (256,), (np.int32(plan.m), self.r, self.p, self.q, self.pi, self.mass,
                                               self.inertia, plan.d_force, plan.d_torque, S(h), S(dt),
                                               *(S(x) for x in self.L), *(np.int32(x) for x in plan.periodic),
                                               plan.d_c, plan.d_q, self.at if self.at is not None else np.uint64(0),
                                               self.limit2, self.moved))  # at: or a null pointer
        self.waiting = 0.0
        if self.device_upkeep:  # the build behind the flag, on the device
            plan.sites()
            with conditional.upkeep_if(self.moved):
                plan.upkeep(self.moved)
                self.fn_mark(self.grid, (256,), (np.int32(plan.m), self.r, self.at, self.d_builds, self.moved))
            plan.traverse(energy)
        else:
            if self.at is not None:  # one 4-byte read a step
                cp.cuda.runtime.memcpyAsync(self.moved_host.ctypes.data, self.moved.data.ptr, 4,
                                            cp.cuda.runtime.memcpyDeviceToHost, self.stream.ptr)
                self.stream.synchronize()
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

    def steps(self, dt: float, count: int, graphs: bool = True) -> None:
        """`count` forces-only steps. With the build decided on the device (or no list) and `graphs`, the
        steps are captured once per dt as CUDA graphs of GRAPH_SIZES steps and replayed, the largest that
        fit first (one host launch for many steps; `graph` says "on", or why not); else step by step."""
        done = 0
        if graphs and count and (self.device_upkeep or self.at is None) and not self.graph.startswith("not"):
            if self.fused and self.waiting != 0.5 * dt:  # a graph's steps open with dt/2 waiting
                self.step(dt)
                done = 1
            while done < count:
                k = next(k for k in GRAPH_SIZES if k <= count - done)
                g = self._graph(dt, k)
                if g is None:
                    break
                g.launch(self.stream)
                done += k
        for _ in range(count - done):
            self.step(dt)

    def capture(self, dt: float) -> None:
        """The graphs steps() replays at dt, recorded now (not run), where it would replay them."""
        if self.device_upkeep or self.at is None:
            for k in GRAPH_SIZES:
                if self._graph(dt, k) is None:
                    return

    def _graph(self, dt: float, k: int):
        """The graph of k forces-only steps at dt (captured on first use; None where capture fails)."""
        key = (float(dt), k)
        if key not in self.graphs:
            waiting = self.waiting
            self.waiting = 0.5 * dt if self.fused else 0.0  # as steps() replays it: after a step, half a kick waits
            try:
                with self.stream:
                    self.stream.begin_capture()
                    try:
                        for _ in range(k):
                            self._step(dt, False)
                    finally:
                        g = self.stream.end_capture()
            except Exception as e:  # noqa: BLE001 - the reason is kept and the steps run one by one
                self.graph = f"not capturable: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
                self.waiting = waiting
                return None
            self.waiting = waiting  # recorded, not run
            self.graphs[key] = g
            self.graph = "on"
        return self.graphs[key]

    def scale(self, factor: float) -> None:
        """Momenta and quaternion momenta times factor (velocity rescaling)."""
        self.settle()
        with self.stream:
            self.p *= self.S(factor)
            self.pi *= self.S(factor)
        self.stream.synchronize()

    def download(self, state) -> None:
        """The device state into `state` (a RigidState), as float64; StrategyError where a list build
        during the steps overflowed its rows (check)."""
        self.settle()
        self.check()
        state.r[:] = self.r.get()
        state.p[:] = self.p.get()
        state.q[:] = self.q.get()
        state.pi[:] = self.pi.get()
