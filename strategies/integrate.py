"""Velocity Verlet on a strategy's plan: the MD loop's integrator, beside the strategies because
it writes the positions their force phase reads (kernels/integrate.cu on the GPU, numba on the
CPU).

The state is positions centred on the box (x - L/2, wrapped into [-L/2, L/2) on every axis) and
velocities, both in the precision mode's accumulation type (float in fp32; double in mixed and
fp64), on the plan's device. One step:

    kick_drift()   v += dt/(2m) f;  x += dt v;  wrap;  the plan's positions = x in its compute type
    (the strategy's step: build where needed, force, reduce)
    kick()         v += dt/(2m) f

Mass m for every particle (reduced units: 1). Nothing here synchronises with the host except
the reads the caller asks for (kinetic energy, state, the blow-up flag).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from mdcore import FLOAT_PRECISIONS, MODES, InputError, Problem

from .base import Plan

BLOCK = 256
# every specialisation the integrator launches: (compute, accumulate) type of each precision mode
# with float sums (fixed point is a mode of force evaluations, not of the MD loop)
_FLOAT = [MODES[p] for p in FLOAT_PRECISIONS]
EXPRESSIONS = [f"{k}<{m.cxx_compute}, {m.cxx_accumulate}>" for k in ("kick_drift", "kick_kick_drift") for m in _FLOAT] + \
    sorted({f"kick<{m.cxx_accumulate}>" for m in _FLOAT})


def check_periodic(problem: Problem) -> None:
    if not all(problem.box.periodic):
        open_axes = ", ".join(a for a, p in zip("xyz", problem.box.periodic) if not p)
        raise InputError(f"md needs a box periodic on every axis; {problem.label or 'the problem'} is open along "
                         f"{open_axes} (particles could leave it)")


class Integrator:
    """Velocity Verlet for one plan. positions0 (N, 3) float64 in [0, L), velocities0 (N, 3)."""

    def __init__(self, plan: Plan, positions0: np.ndarray, velocities0: np.ndarray, dt: float, mass: float = 1.0):
        problem = plan.problem
        check_periodic(problem)
        if MODES[problem.precision].fixed:
            raise InputError("md: precision fixed is for force evaluations (verify, bench, forces); the MD loop "
                             f"integrates in {', '.join(FLOAT_PRECISIONS)}")
        self.plan, self.n = plan, problem.n
        self.L = problem.box.array
        mode = MODES[problem.precision]
        self.acc, self.real = mode.accumulate, mode.compute
        self.dt, self.half = self.acc(dt), self.acc(0.5 * dt / mass)
        self.mass = float(mass)
        x = positions0 - 0.5 * self.L
        x -= self.L * np.floor(x / self.L + 0.5)
        self._setup(np.array(x, dtype=self.acc, order="C"), np.array(velocities0, dtype=self.acc, order="C"))  # copies

    def _setup(self, x: np.ndarray, v: np.ndarray) -> None:
        raise NotImplementedError

    def kick_drift(self, forces) -> None:
        raise NotImplementedError

    def kick(self, forces) -> None:
        raise NotImplementedError

    def kick_kick_drift(self, forces) -> None:
        """kick(forces), then kick_drift(forces) of the next step (the same bits; one launch on the GPU)."""
        self.kick(forces)
        self.kick_drift(forces)

    def kinetic(self) -> tuple[float, np.ndarray]:
        """(kinetic energy, its 3x3 tensor sum m v v^T) in float64 on the host."""
        v = self.velocities()
        t = self.mass * (v.T @ v)
        return 0.5 * float(np.trace(t)), t

    def blown_up(self) -> bool:
        raise NotImplementedError

    def positions(self) -> np.ndarray:
        """(N, 3) float64 in [0, L)."""
        raise NotImplementedError

    def velocities(self) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def create(plan: Plan, positions0, velocities0, dt: float, mass: float = 1.0) -> "Integrator":
        cls = GpuIntegrator if plan.strategy.backend == "cuda" else CpuIntegrator
        return cls(plan, positions0, velocities0, dt, mass)


class GpuIntegrator(Integrator):
    def _setup(self, x: np.ndarray, v: np.ndarray) -> None:
        import cupy

        from .cuda import ctypes, kernel

        self.cp = cupy
        real_t, acc_t = ctypes(self.plan.problem.precision)
        self._kd = kernel("integrate.cu", f"kick_drift<{real_t}, {acc_t}>")
        self._k = kernel("integrate.cu", f"kick<{acc_t}>")
        self._kkd = kernel("integrate.cu", f"kick_kick_drift<{real_t}, {acc_t}>")
        self.x, self.v = cupy.asarray(x), cupy.asarray(v)
        self.bad = cupy.zeros(1, dtype=np.int32)
        pos = self.plan.pos
        if pos.dtype != self.real or pos.ndim != 2 or pos.shape[1] < 3 or not pos.flags.c_contiguous:
            raise TypeError(f"{self.plan.strategy.name}: positions buffer {pos.shape} {pos.dtype} is not (N, >=3) "
                            f"{np.dtype(self.real).name}")
        self.stride = np.int32(pos.shape[1])
        self.plan.pos[: self.n, :3] = self.x.astype(self.real)
        self.L_acc = [self.acc(v) for v in self.L]

    def _grid(self, count: int) -> tuple[int]:
        return ((count + BLOCK - 1) // BLOCK,)

    def kick_drift(self, forces) -> None:
        self._kd(self._grid(3 * self.n), (BLOCK,), (self.x, self.v, forces, np.int32(3 * self.n), self.half, self.dt,
                                                 *self.L_acc, self.plan.pos, self.stride, self.bad))

    def kick_kick_drift(self, forces) -> None:
        self._kkd(self._grid(3 * self.n), (BLOCK,), (self.x, self.v, forces, np.int32(3 * self.n), self.half, self.dt,
                                                  *self.L_acc, self.plan.pos, self.stride, self.bad))

    def kick(self, forces) -> None:
        self._k(self._grid(3 * self.n), (BLOCK,), (self.v, forces, np.int32(3 * self.n), self.half))

    def kinetic(self) -> tuple[float, np.ndarray]:
        v = self.v.astype(np.float64)
        t = self.mass * (v.T @ v).get()
        return 0.5 * float(np.trace(t)), t

    def blown_up(self) -> bool:
        return bool(int(self.bad.get()[0]))

    def positions(self) -> np.ndarray:
        return self.x.get().astype(np.float64) + 0.5 * self.L

    def velocities(self) -> np.ndarray:
        return self.v.get().astype(np.float64)


@njit(cache=True)
def _kick_drift_cpu(x, v, f, half, dt, L, one_half, pos):
    """one_half: 0.5 in the state's type (a Python literal would promote float32 to float64)."""
    bad = False
    for i in range(x.shape[0]):
        for a in range(3):
            vk = v[i, a] + half * f[i, a]
            xk = x[i, a] + dt * vk
            if not np.isfinite(xk):
                bad = True
            xk -= L[a] * np.floor(xk / L[a] + one_half)
            if xk >= one_half * L[a]:
                xk -= L[a]
            v[i, a] = vk
            x[i, a] = xk
            pos[i, a] = xk
    return bad


@njit(cache=True)
def _kick_cpu(v, f, half):
    for i in range(v.shape[0]):
        for a in range(3):
            v[i, a] += half * f[i, a]


class CpuIntegrator(Integrator):
    def _setup(self, x: np.ndarray, v: np.ndarray) -> None:
        self.x, self.v = x, v
        self._bad = False
        self.Lacc = self.L.astype(self.acc)
        self.plan.pos[:, :] = x.astype(self.real)

    def kick_drift(self, forces) -> None:
        self._bad |= bool(_kick_drift_cpu(self.x, self.v, forces, self.half, self.dt, self.Lacc, self.acc(0.5),
                                          self.plan.pos))

    def kick(self, forces) -> None:
        _kick_cpu(self.v, forces, self.half)

    def blown_up(self) -> bool:
        return self._bad

    def positions(self) -> np.ndarray:
        return self.x.astype(np.float64) + 0.5 * self.L

    def velocities(self) -> np.ndarray:
        return self.v.astype(np.float64)
