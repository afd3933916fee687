"""Monte-Carlo moves in Ewald's reciprocal space (`python -m harness mc`): the energy change of moving
one molecule rigidly (a translation and a rotation about the centre of its atoms; a single ion is
only translated), with the structure factors S(k) kept where the strategy computes:

  dS(k) = sum_a q_a (exp(i k . r'_a) - exp(i k . r_a)),   dE = sum_half A(k) (|S + dS|^2 - |S|^2)

Two uses, as MC codes have them:
  batch   B independent trial moves from one state (a block per move on the GPU)
  loop    moves one after another as a Metropolis loop runs them: dE, the test against the move's
          uniform number u (accept where dE <= 0 or u < exp(-dE / kT)), S and the atoms updated on
          acceptance; on the GPU in one launch, no host round trip per move: one block (`--loop
          block`) or a grid of blocks, at most one per SM, with two grid barriers a move (`--loop grid`)

The reciprocal strategy picks the batch kernel (kernels/kspace_mc.cu): kspace_thread_kloop a thread
per k over the molecule's atoms read from global memory, kspace_block_staged the same with the atoms
staged in shared memory, kspace_thread_atomic a thread per (atom, k) adding into dS with atomics
(GOMC's MolExchangeReciprocal), kspace_thread_rows the recurrence along n_z; `charged=only` leaves
a molecule's uncharged atoms out of the sums. The loop is one kernel for every GPU strategy (the
recurrence, a block), and kspace_thread_cpu runs both on the CPU in float64.

Moves are drawn on the host (seeded) before any work: molecule, rotation, shift, u. The centre a
molecule turns about is the mean of its atoms sent (all, or the charged ones), unwrapped by minimum
image from its first atom.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from mdcore import MODES, InputError, StrategyError

from . import kspace
from .kspace import BLOCK, ENERGY_BLOCK  # noqa: F401

MAXA = 64  # atoms per molecule the GPU kernels stage
MC_BLOCK = 256
MC_SEG = 8  # the batch kernels' run of n_z (a kmax of 10 gives 21 n_z: three runs)
# the loop's block and run of n_z: measured on an H200 (3,000 three-site molecules, 5,071 wave
# vectors, fp64) 23.1 us per move against 28.3 with the batch's 256 and 8; 1,024 threads and runs of 2
# gave 22.6. The loop is bound by the latency of its one block, not by its arithmetic
LOOP_BLOCK = 512
LOOP_SEG = 4
# the loop on a grid (mc_loop_grid): blocks of GRID_BLOCK threads over runs of GRID_SEG n_z, as many
# blocks as the runs fill, at most one per SM (all resident at once, as its grid barriers need)
GRID_BLOCK = 128
GRID_SEG = 2
LOOPS = ("block", "grid")


def default_loop(strategy) -> str:
    """The Metropolis loop a strategy runs without --loop: a grid of blocks on the GPU, 2.8 times faster than
    one block per move in fp64 on an H200 (docs/forcefield.md), whose launch of at most one block per SM
    keeps every block resident; the CPU's own loop otherwise."""
    return "grid" if strategy.backend == "cuda" else "block"


def loop_form(text: str | None) -> tuple[str, int]:
    """`--loop` read: "block" (one block; the CPU's loop), "grid" (a grid of blocks, chosen
    from the runs and the SMs) or "grid:N" (N blocks); returns (form, N), N = 0 where the blocks are chosen."""
    text = (text or "block").strip()
    form, _, count = text.partition(":")
    if form not in LOOPS or (count and form != "grid"):
        raise InputError(f"--loop {text}: expected block, grid or grid:N (N blocks)")
    if not count:
        return form, 0
    try:
        blocks = int(count)
    except ValueError:
        blocks = 0
    if blocks < 1:
        raise InputError(f"--loop {text}: N must be a whole number of blocks >= 1")
    return form, blocks


def check_grid_blocks(text: str | None) -> int:
    """The SMs of this GPU, after checking that `--loop grid:N` asks for no more blocks than that: the grid
    loop's barriers need every block resident at once, and it runs one block per SM."""
    from . import cuda

    most = cuda.sm_count()
    form, blocks = loop_form(text)
    if form == "grid" and blocks > most:
        raise InputError(f"--loop grid:{blocks}: the grid loop takes at most one block per SM, {most} here "
                         f"(its barriers need every block resident at once)")
    return most


@dataclass
class Moves:
    """B trial moves: molecule (B,) int32, rt (B, 12) rotation row-major then shift, u (B,)."""

    mol: np.ndarray
    rt: np.ndarray
    u: np.ndarray


def molecules(n: int, ids=None, charges=None, charged_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the molecules: start (M + 1,) and atoms, from one molecule id per atom (None: each atom a
    molecule); the uncharged atoms left out with charged_only (a molecule left empty is dropped)."""
    if ids is None:
        ids = np.arange(n)
    ids = np.asarray(ids)
    if ids.shape != (n,) or ids.dtype.kind not in "iu":
        raise InputError(f"molecule ids: expected one integer per atom ({n}), got shape {ids.shape} dtype {ids.dtype}")
    keep = np.ones(n, bool) if charges is None or not charged_only else np.asarray(charges) != 0.0
    order = np.argsort(ids, kind="stable")
    order = order[keep[order]]
    _, counts = np.unique(ids[order], return_counts=True)
    if counts.size and counts.max() > MAXA:
        raise InputError(f"molecule ids: a molecule of {counts.max()} atoms; at most {MAXA}")
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return start, order.astype(np.int32)


def draw(count: int, nmol: int, step: float, angle: float, rigid_bodies: bool, seed: int) -> Moves:
    """count random moves: a molecule, a shift uniform in [-step, step]^3 and, for molecules of more than
    one atom, a rotation by an angle uniform in [-angle, angle] about a uniform random axis."""
    rng = np.random.default_rng(seed)
    mol = rng.integers(0, nmol, count).astype(np.int32)
    shift = rng.uniform(-step, step, (count, 3))
    rt = np.zeros((count, 12))
    rt[:, 9:] = shift
    rt[:, [0, 4, 8]] = 1.0
    if rigid_bodies and angle > 0.0:
        axis = rng.normal(size=(count, 3))
        axis /= np.linalg.norm(axis, axis=1)[:, None]
        th = rng.uniform(-angle, angle, count)
        c, s = np.cos(th), np.sin(th)
        x, y, z = axis.T
        C = 1.0 - c
        rt[:, :9] = np.stack([c + x * x * C, x * y * C - z * s, x * z * C + y * s,
                              y * x * C + z * s, c + y * y * C, y * z * C - x * s,
                              z * x * C - y * s, z * y * C + x * s, c + z * z * C], axis=1)
    return Moves(mol, rt, rng.random(count))


def trial_positions(x: np.ndarray, L: np.ndarray, atoms: np.ndarray, rt: np.ndarray) -> np.ndarray:
    """A molecule's atoms (indices `atoms`) after one move, in length units (unwrapped)."""
    p = x[atoms]
    d = p - p[0]
    p = p[0] + d - L * np.rint(d / L)
    c = p.mean(axis=0)
    return (p - c) @ rt[:9].reshape(3, 3).T + c + rt[9:]


# ---- CPU ------------------------------------------------------------------------------------


@njit(cache=True)
def _delta(k, a, sr, si, old, new, q):
    e = 0.0
    dr = np.empty(k.shape[0])
    di = np.empty(k.shape[0])
    for v in range(k.shape[0]):
        r = 0.0
        i = 0.0
        for j in range(q.shape[0]):
            p1 = k[v, 0] * new[j, 0] + k[v, 1] * new[j, 1] + k[v, 2] * new[j, 2]
            p0 = k[v, 0] * old[j, 0] + k[v, 1] * old[j, 1] + k[v, 2] * old[j, 2]
            r += q[j] * (math.cos(p1) - math.cos(p0))
            i += q[j] * (math.sin(p1) - math.sin(p0))
        dr[v] = r
        di[v] = i
        e += a[v] * (2.0 * (sr[v] * r + si[v] * i) + r * r + i * i)
    return e, dr, di


class CpuMoves:
    """kspace_thread_cpu's moves: S over the half space's vectors (reference.ewald's order), float64."""

    def __init__(self, positions, charges, ewald, start, atoms):
        self.x = np.array(positions, np.float64)
        self.q = np.asarray(charges, np.float64)
        self.L = np.asarray(ewald.lengths)
        self.start, self.atoms = start, atoms
        n, self.k, self.a = ewald.vectors()
        s = self.x / self.L
        kx, ky, kz = ewald.kmax
        re, im = kspace._cpu_structure(np.ascontiguousarray(s - np.floor(s)), self.q, kx, ky, kz)  # on the grid
        g = (n[:, 0] * (2 * ky + 1) + n[:, 1] + ky) * (2 * kz + 1) + n[:, 2] + kz
        self.sr, self.si = re[g].copy(), im[g].copy()

    def _move(self, mol, rt):
        at = self.atoms[self.start[mol]:self.start[mol + 1]]
        new = trial_positions(self.x, self.L, at, rt)
        return at, new, _delta(self.k, self.a, self.sr, self.si, self.x[at], new, self.q[at])

    def batch(self, moves: Moves) -> np.ndarray:
        return np.array([self._move(m, rt)[2][0] for m, rt in zip(moves.mol, moves.rt)])

    def loop(self, moves: Moves, beta: float) -> tuple[np.ndarray, np.ndarray]:
        de = np.empty(len(moves.mol))
        ok = np.zeros(len(moves.mol), np.int32)
        for m in range(len(moves.mol)):
            at, new, (e, dr, di) = self._move(moves.mol[m], moves.rt[m])
            de[m] = e
            if e <= 0.0 or moves.u[m] < math.exp(-beta * e):
                ok[m] = 1
                self.sr += dr
                self.si += di
                self.x[at] = new - self.L * np.floor(new / self.L)
        return de, ok

    def structure(self) -> np.ndarray:
        return self.sr + 1j * self.si

    def positions(self) -> np.ndarray:
        return self.x


# ---- GPU ------------------------------------------------------------------------------------

BATCH_KERNELS = {"kspace_thread_kloop": "mc_batch_kloop", "kspace_block_staged": "mc_batch_staged",
                 "kspace_thread_atomic": "mc_batch_atomic", "kspace_thread_rows": "mc_batch_rows"}


class CudaMoves:
    """A GPU kspace strategy's moves: its plan's S, A and grid; the atoms' fractions on the device."""

    def __init__(self, strategy, positions, charges, ewald, precision: str, start, atoms, loop: str = "block"):
        import cupy as cp

        from . import cuda

        self.cp, self.strategy, self.ewald = cp, strategy, ewald
        m = MODES[precision]
        self.real, self.acc = m.compute, m.accumulate
        real, acc = m.cxx_compute, m.cxx_accumulate
        plan = strategy.prepare(np.asarray(charges, np.float64), ewald, precision)
        plan.upload(positions)
        plan.run()
        self.plan = plan
        self.n = len(charges)
        x = np.asarray(positions, np.float64) / np.asarray(ewald.lengths)
        self.sq = cp.asarray(np.concatenate([x - np.floor(x), np.asarray(charges, np.float64)[:, None]],
                                            axis=1).astype(self.real))
        self.start, self.atoms = cp.asarray(start), cp.asarray(atoms)
        self.box = np.array(tuple(ewald.lengths), np.float64).view(np.dtype({"names": ["lx", "ly", "lz"],
                                                                            "formats": [np.float64] * 3}))
        kind = BATCH_KERNELS[strategy.name]
        self.kind = kind
        names = {"mc_batch_kloop": f"mc_batch_kloop<{real}, {acc}, {MC_BLOCK}>",
                 "mc_batch_staged": f"mc_batch_staged<{real}, {acc}, {MC_BLOCK}>",
                 "mc_batch_atomic": f"mc_batch_atomic<{real}, {acc}>",
                 "mc_batch_rows": f"mc_batch_rows<{real}, {acc}, {MC_SEG}, {MC_BLOCK}>"}
        self.fn = cuda.kernel("kspace_mc.cu", names[kind])
        self.trial_fn = cuda.kernel("kspace_mc.cu", f"mc_trial<{real}>")
        self.sum_fn = cuda.kernel("kspace_mc.cu", f"mc_batch_sum<{real}, {acc}, {MC_BLOCK}>")
        self.loop_form, blocks = loop_form(loop)
        if self.loop_form == "grid":
            self.loop_fn = cuda.kernel("kspace_mc.cu", f"mc_loop_grid<{real}, {acc}, {GRID_SEG}, {GRID_BLOCK}>")
            runs = (ewald.kmax[0] + 1) * (2 * ewald.kmax[1] + 1) * -(-(2 * ewald.kmax[2] + 1) // GRID_SEG)
            most = check_grid_blocks(loop)
            self.loop_blocks = blocks or max(1, min(most, -(-runs // GRID_BLOCK)))
            self.partial = cp.zeros(self.loop_blocks, self.acc)
            # the barriers' counters: arrivals return to 0 at every barrier, so zeroed once; a failure flag
            self.bar, self.failed = cp.zeros(2, np.uint32), cp.zeros(1, np.int32)
        else:
            self.loop_fn = cuda.kernel("kspace_mc.cu", f"mc_loop_rows<{real}, {acc}, {LOOP_SEG}, {LOOP_BLOCK}>")
            self.loop_blocks = 1
        self.dS = cp.zeros(2 * plan.G, self.acc)
        self.most = int(np.max(np.diff(start))) if len(start) > 1 else 1

    def upload_moves(self, moves: Moves):
        cp = self.cp
        return (cp.asarray(moves.mol), cp.asarray(moves.rt.astype(self.real)), cp.asarray(moves.u.astype(self.real)))

    def batch(self, moves_dev, count: int):
        """dE of `count` moves (device arrays from upload_moves), a device array."""
        cp, p = self.cp, self.plan
        mol, rt, _ = moves_dev
        dE = cp.empty(count, self.acc)
        if self.kind in ("mc_batch_kloop", "mc_batch_atomic"):
            trial = cp.empty(4 * MAXA * count, self.real)
            self.trial_fn((count,), (64,), (self.sq, self.start, self.atoms, mol, rt, self.box, trial))
        if self.kind == "mc_batch_kloop":
            self.fn((count,), (MC_BLOCK,), (self.sq, self.start, self.atoms, mol, trial, p.S, p.A, p.kgrid, dE))
        elif self.kind == "mc_batch_atomic":
            dS = cp.zeros(2 * p.G * count, self.acc)
            self.fn((-(-self.most * p.G // MC_BLOCK), count), (MC_BLOCK,), (self.sq, self.start, self.atoms, mol, trial, p.A,
                                                                       p.kgrid, dS))
            self.sum_fn((count,), (MC_BLOCK,), (dS, p.S, p.A, p.kgrid, dE))
        else:
            self.fn((count,), (MC_BLOCK,), (self.sq, self.start, self.atoms, mol, rt, self.box, p.S, p.A, p.kgrid, dE))
        return dE

    def batch_bytes(self, count: int) -> int:
        """Scratch memory of a batch: the atomic kernel's dS per move."""
        return 2 * self.plan.G * count * np.dtype(self.acc).itemsize if self.kind == "mc_batch_atomic" else 0

    def loop(self, moves_dev, count: int, beta: float, check: bool = True):
        """The Metropolis loop's launch: (dE, accepted) on the device. check: read the grid loop's barrier
        flag at once (a synchronisation); without it, check_loop() reads it later, outside a timed region."""
        mol, rt, u = moves_dev
        p = self.plan
        dE = self.cp.empty(count, self.acc)
        ok = self.cp.zeros(count, np.int32)
        args = (self.sq, self.start, self.atoms, mol, rt, u, np.int32(count), np.float64(beta), self.box, p.S, p.A,
                p.kgrid, self.dS, dE, ok)
        if self.loop_form == "grid":
            self.loop_fn((self.loop_blocks,), (GRID_BLOCK,), (*args, self.partial, self.bar, self.failed))
            if check:
                self.check_loop()
        else:
            self.loop_fn((1,), (LOOP_BLOCK,), args)
        return dE, ok

    def check_loop(self) -> None:
        """The grid loop's barriers all met (nothing for the one-block loop); the counters made ready again."""
        if self.loop_form == "grid" and int(self.failed.get()[0]):
            self.bar.fill(0)
            self.failed.fill(0)
            raise StrategyError(f"--loop grid:{self.loop_blocks}: a grid barrier waited beyond its limit (the "
                                f"blocks were not all resident at once); the loop stopped there")

    def structure(self) -> np.ndarray:
        """S on the half space's vectors (mdcore.ewald's order), complex, from the device grid."""
        n, _, _ = self.ewald.vectors()
        kx, ky, kz = self.ewald.kmax
        g = (n[:, 0] * (2 * ky + 1) + n[:, 1] + ky) * (2 * kz + 1) + n[:, 2] + kz
        s = self.plan.S.get().astype(np.float64)
        return s[2 * g] + 1j * s[2 * g + 1]

    def positions(self) -> np.ndarray:
        return self.sq.get()[:, :3].astype(np.float64) * np.asarray(self.ewald.lengths)


def expressions() -> list[str]:
    """Every specialisation of kernels/kspace_mc.cu the GPU strategies use (the CI compile check)."""
    out = []
    for p in kspace.PRECISIONS:
        m = MODES[p]
        real, acc = m.cxx_compute, m.cxx_accumulate
        out += [f"mc_trial<{real}>", f"mc_batch_kloop<{real}, {acc}, {MC_BLOCK}>",
                f"mc_batch_staged<{real}, {acc}, {MC_BLOCK}>", f"mc_batch_atomic<{real}, {acc}>",
                f"mc_batch_sum<{real}, {acc}, {MC_BLOCK}>", f"mc_batch_rows<{real}, {acc}, {MC_SEG}, {MC_BLOCK}>",
                f"mc_loop_rows<{real}, {acc}, {LOOP_SEG}, {LOOP_BLOCK}>",
                f"mc_loop_grid<{real}, {acc}, {GRID_SEG}, {GRID_BLOCK}>"]
    return list(dict.fromkeys(out))


def create(strategy, positions, charges, ewald, precision: str, start, atoms, loop: str | None = None):
    """The moves of a kspace strategy on these charges: CpuMoves or CudaMoves (`loop`: loop_form's text,
    for the GPU; default_loop's where None)."""
    loop = loop or default_loop(strategy)
    if strategy.backend == "cpu":
        if loop_form(loop)[0] != "block":
            raise InputError(f"--loop {loop}: {strategy.name} runs its loop on the CPU; the grid form is the GPU's")
        return CpuMoves(positions, charges, ewald, start, atoms)
    return CudaMoves(strategy, positions, charges, ewald, precision, start, atoms, loop)
