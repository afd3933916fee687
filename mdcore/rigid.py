"""Rigid-body molecular dynamics: the NO_SQUISH integrator (Miller, Eleftheriou, Pattnaik,
Ndirango, Newns and Martyna, J. Chem. Phys. 116, 8649 (2002)), symplectic and time-reversible.

State per molecule: centre of mass r, momentum p, unit quaternion q (w, x, y, z; body -> lab as
mdcore.molecules.rotation) and its conjugate momentum pi (4 components). One step of dt:

  p  += dt/2 F                 pi += dt/2 * 2 S(q) (0, tau_body)      tau_body = R(q)^T tau_lab
  r  += dt p / m
  free rotation, split as R_3(dt/2) R_2(dt/2) R_1(dt) R_2(dt/2) R_3(dt/2), each the exact rotation
  about one body axis k:  zeta = (pi . P_k q) / (4 I_k),
      q <- cos(zeta h) q + sin(zeta h) P_k q,  pi <- cos(zeta h) pi + sin(zeta h) P_k pi
  forces and torques at the new positions and orientations
  p  += dt/2 F                 pi += dt/2 * 2 S(q) (0, tau_body)

with S(q) the matrix of quaternion multiplication q * (0, v) and P_1 q = (-q1, q0, q3, -q2),
P_2 q = (-q2, -q3, q0, q1), P_3 q = (-q3, q2, -q1, q0). The body-frame angular momentum is
L_k = (P_k q) . pi / 2 and the rotational kinetic energy sum_k L_k^2 / (2 I_k). An axis of zero moment
(a linear molecule's own axis) is not rotated about and its angular momentum is kept at zero: the
rotations about the other two axes would turn some of theirs into it, which is projected out after
each free rotation (pi rebuilt from L with that component 0).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

from .molecules import rotation


@njit(cache=True)
def _p(k, v):
    """P_k v for k = 1, 2, 3 (a permutation with signs of the quaternion's components)."""
    if k == 1:
        return np.array([-v[1], v[0], v[3], -v[2]])
    if k == 2:
        return np.array([-v[2], -v[3], v[0], v[1]])
    return np.array([-v[3], v[2], -v[1], v[0]])


@njit(cache=True)
def _free_rotation(q, pi, inertia, dt):
    """The free rotor's split flow over dt, in place, for every molecule (inertia (M, 3))."""
    axes = (3, 2, 1, 2, 3)
    steps = (0.5, 0.5, 1.0, 0.5, 0.5)
    for i in range(q.shape[0]):
        for a in range(5):
            k = axes[a]
            moment = inertia[i, k - 1]
            if moment <= 0.0:
                continue
            h = steps[a] * dt
            pq = _p(k, q[i])
            zeta = (pi[i, 0] * pq[0] + pi[i, 1] * pq[1] + pi[i, 2] * pq[2] + pi[i, 3] * pq[3]) / (4.0 * moment)
            c, s = np.cos(zeta * h), np.sin(zeta * h)
            pp = _p(k, pi[i])
            for x in range(4):
                q[i, x], pi[i, x] = c * q[i, x] + s * pq[x], c * pi[i, x] + s * pp[x]


def _s_times(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """S(q) (0, v) for every molecule: the quaternion product q * (0, v), (M, 4)."""
    w, x, y, z = q.T
    a, b, c = v.T
    return np.stack([-x * a - y * b - z * c, w * a - z * b + y * c, z * a + w * b - x * c,
                     -y * a + x * b + w * c], 1)


def body_angular_momentum(q: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """L in the body frame, (M, 3): L_k = (P_k q) . pi / 2."""
    w, x, y, z = q.T
    p1 = np.stack([-x, w, z, -y], 1)
    p2 = np.stack([-y, -z, w, x], 1)
    p3 = np.stack([-z, y, -x, w], 1)
    return 0.5 * np.stack([(p1 * pi).sum(1), (p2 * pi).sum(1), (p3 * pi).sum(1)], 1)


def conjugate_momentum(q: np.ndarray, l_body: np.ndarray) -> np.ndarray:
    """pi = 2 S(q) (0, L_body): the quaternion momentum of a body-frame angular momentum."""
    return 2.0 * _s_times(q, l_body)


class RigidState:
    """Molecules in motion: centres r (M, 3), momenta p, quaternions q (M, 4), their momenta pi; masses
    (M,) and principal moments (M, 3); box lengths and periodic axes for wrapping the centres."""

    def __init__(self, r, q, p, l_body, mass, inertia, box=None, periodic=(False, False, False)):
        self.r = np.array(r, np.float64)
        self.q = np.array(q, np.float64)
        self.p = np.array(p, np.float64)
        self.mass = np.asarray(mass, np.float64)
        self.inertia = np.ascontiguousarray(inertia, np.float64)
        l_body = np.where(self.inertia > 0.0, np.asarray(l_body, np.float64), 0.0)
        self.pi = conjugate_momentum(self.q, l_body)
        self.linear = bool(np.any(self.inertia <= 0.0))
        self.box = None if box is None else np.asarray(box, np.float64)
        self.periodic = np.asarray(periodic, bool)

    def kinetic(self) -> tuple[float, float]:
        """(translational, rotational) kinetic energy."""
        trans = 0.5 * float(np.sum(self.p ** 2 / self.mass[:, None]))
        lb = body_angular_momentum(self.q, self.pi)
        on = self.inertia > 0.0
        rot = 0.5 * float(np.sum(np.where(on, lb ** 2 / np.where(on, self.inertia, 1.0), 0.0)))
        return trans, rot

    def kick(self, force: np.ndarray, torque: np.ndarray, h: float) -> None:
        self.p += h * force
        tau_body = np.einsum("mji,mj->mi", rotation(self.q), torque)  # R^T tau
        tau_body = np.where(self.inertia > 0.0, tau_body, 0.0)
        self.pi += h * 2.0 * _s_times(self.q, tau_body)

    def drift(self, dt: float) -> None:
        self.r += dt * self.p / self.mass[:, None]
        if self.box is not None:
            self.r[:, self.periodic] %= self.box[self.periodic]
        _free_rotation(self.q, self.pi, self.inertia, dt)
        if self.linear:
            lb = np.where(self.inertia > 0.0, body_angular_momentum(self.q, self.pi), 0.0)
            self.pi = conjugate_momentum(self.q, lb)


ForceFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, float]]


def run(state: RigidState, forces: ForceFn, dt: float, steps: int, sample: int = 0,
        on_sample: Callable[[int, float, float, float], None] | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """`steps` NO_SQUISH steps of dt; forces(r, q) -> (forces, torques, potential energy). Every `sample`
    steps, at step 0 and at the last step, on_sample(step, potential, translational, rotational). Returns
    the last forces, torques and potential energy."""
    f, tq, u = forces(state.r, state.q)
    if on_sample is not None:
        on_sample(0, u, *state.kinetic())
    for step in range(1, steps + 1):
        state.kick(f, tq, 0.5 * dt)
        state.drift(dt)
        f, tq, u = forces(state.r, state.q)
        state.kick(f, tq, 0.5 * dt)
        if on_sample is not None and ((sample and step % sample == 0) or step == steps):
            on_sample(step, u, *state.kinetic())
    return f, tq, u
