"""Ewald's reciprocal part as strategies of their own (`--kspace NAME`): the structure factors of the
charges, the energy and virial, and each charge's force (mdcore.ewald has the formulas,
kernels/kspace.cu the kernels). Names follow the grammar `kspace_<processor>_<variant>`:

  kspace_thread_kloop    a thread per k over all charges, then a thread per charge over all k (OpenMM's
                         Ewald kernels; GOMC's later branch): no atomics, a sincos per (charge, k)
  kspace_thread_atomic   a thread per (charge, k) adding into S(k) with atomics (GOMC's
                         MolExchangeReciprocal); forces as kloop
  kspace_block_staged    a 2-D grid of k x chunks of 64 charges staged in shared memory, atomics per
                         chunk (GOMC's main branch); forces with the weights staged in tiles
  kspace_thread_rows     a thread per run of 12 to 16 consecutive n_z (row_run: the least padding): one
                         sincos per charge and run, the next n_z by the three-term recurrence (or a
                         complex multiply, the recurrence of CPU Ewald codes); forces the same way; in
                         fp64 and mixed the structure factors of n_z and -n_z from one phase
  kspace_thread_cpu      numba, the rows recurrence on the CPU's cores, float64

Every GPU strategy takes `charged`: `only` (default) sends only the charged particles to the
kernels, as the GOMC report recommends; `all` sends every particle (an uncharged one adds zeros).
The kernels read the charges' positions as fractions of the box, gathered on the host when the
positions are uploaded.

Precision modes fp32, mixed and fp64 (double is the GOMC report's choice). In mixed, the rows kernels
sum a tile of up to 128 charges (structure factors) or a run of 16 n_z (forces) in float and add it
to the double sums: a double conversion per term went through the SFU's pipe and took as long as
the sincos. `fixed` does not apply:
its point is the same bits in every traversal of one pair sum, and these strategies order their
sums differently by design (the atomic ones are not even repeatable); `deterministic` says which are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from mdcore import MODES, InputError, StrategyError

PRECISIONS = ("fp32", "mixed", "fp64")
NULL = np.uint64(0)  # a null pointer argument
DEFAULT_GPU = "kspace_thread_rows"  # the fastest measured (docs/forcefield.md, the kspace table)
DEFAULT_CPU = "kspace_thread_cpu"
# The rows kernels walk a row's entries in unrolled runs, one sincos per charge and run; a run's padding
# past the row's end is work thrown away, so each grid takes the run length that pads least.
RSEGS = (12, 14, 16)  # kspace_s_rows and kspace_f_rows over KZ = 2 kz + 1 entries (2 x run sums in registers)
MSEGS = (6, 7, 8, 9)  # kspace_s_mirror over n = 0..kz (4 x run sums in registers)


def _least_padding(runs: tuple[int, ...], entries: int) -> int:
    """The run length of `runs` with the fewest padded slots over `entries` (a tie: the longer run, fewer
    sincos)."""
    return min(runs, key=lambda s: (-(-entries // s) * s, -s))


def row_run(KZ: int) -> int:
    """The rows kernels' run for a row of KZ entries: 14 for kmax 26 (56 slots for 53, where 16 computed 64)."""
    return _least_padding(RSEGS, KZ)


def mirror_run(kz: int) -> int:
    """kspace_s_mirror's run for n = 0..kz: 9 for OpenMM's kmax 26 (27 = 3 x 9, where 8 would compute 32)."""
    return _least_padding(MSEGS, kz + 1)


def whole_waves(units: int, slots: int, most: int) -> int:
    """How many chunks to split each of `units` blocks' work into, so that the units x chunks blocks of
    equal work fill whole waves of the `slots` blocks the GPU holds at once: the fewest chunks (at most
    `most`) within 5 % of a whole number of waves, else the best filled. A last wave 2 % full leaves the
    SMs nearly idle for a whole block's time; blocks over a whole wave cost only their fold."""
    def filled(c: int) -> float:
        blocks = units * c
        return blocks / (-(-blocks // slots) * slots)

    tries = range(1, max(1, most) + 1)
    good = [c for c in tries if filled(c) >= 0.95]
    return good[0] if good else max(tries, key=lambda c: (filled(c), -c))


CHUNK = 64  # the staged kernel's charges per shared-memory chunk (GOMC's)
TILE = 256  # the staged force kernel's weights per shared-memory tile
TROWS = 8  # the rows force kernel's (n_x, n_y) rows of weights per shared-memory tile
BLOCK = 128
ENERGY_BLOCK = 256
KSPACE: dict[str, type] = {}


def register(cls):
    if not cls.name.startswith(f"kspace_{cls.processor}_"):
        raise TypeError(f"kspace strategy {cls.name}: the name must read kspace_<processor>_<variant>")
    KSPACE[cls.name] = cls
    return cls


def names(backend: str | None = None) -> list[str]:
    return [n for n in sorted(KSPACE, key=lambda n: (KSPACE[n].backend != "cuda", n))
            if backend in (None, KSPACE[n].backend)]


def create(name: str, **launch) -> "KSpaceStrategy":
    if name not in KSPACE:
        raise InputError(f"--kspace {name!r}: no such reciprocal strategy; known: {', '.join(names())}")
    return KSPACE[name](**launch)


@dataclass
class Result:
    """The reciprocal part in float64: energy, forces (N, 3), virial (3, 3)."""

    energy: float
    forces: np.ndarray
    virial: np.ndarray


class KSpaceStrategy:
    name = ""
    backend = "cuda"
    processor = "thread"
    description = ""
    deterministic = True
    precisions = PRECISIONS
    defaults: dict = {}

    def __init__(self, **launch):
        unknown = sorted(set(launch) - set(self.defaults))
        if unknown:
            raise InputError(f"--kspace {self.name}: unknown launch parameter(s) {', '.join(unknown)}; known: "
                             f"{', '.join(self.defaults) or 'none'}")
        self.launch = {**self.defaults, **launch}

    def available(self) -> tuple[bool, str]:
        return True, ""

    def mirrors(self, precision: str) -> bool:
        """Whether the structure factors of n_z and -n_z come from one phase (kspace_s_mirror) in this
        precision: only the rows strategy has the kernel."""
        return False

    def resolved(self, precision: str) -> dict:
        """The launch parameters as this precision runs them (an `auto` replaced by its choice)."""
        return dict(self.launch)

    def supports(self, precision: str) -> tuple[bool, str]:
        ok, why = self.available()
        if not ok:
            return ok, why
        if precision not in self.precisions:
            if precision == "fixed":
                return False, ("fixed point keeps one pair sum's bits across traversals; the reciprocal sums have no "
                               "such counterpart here")
            return False, f"{self.name} computes in {', '.join(self.precisions)}"
        return True, ""

    def prepare(self, charges, ewald, precision: str = "fp32") -> "KPlan":
        ok, why = self.supports(precision)
        if not ok:
            raise StrategyError(f"{self.name} ({precision}): {why}")
        return self._prepare(np.asarray(charges, np.float64), ewald, precision)

    def evaluate(self, positions, charges, ewald, precision: str = "fp32") -> Result:
        plan = self.prepare(charges, ewald, precision)
        plan.upload(positions)
        plan.run()
        return plan.output()


class KPlan:
    """One system's reciprocal part: upload(positions), run() (the timed device work), output()."""

    def __init__(self, strategy: KSpaceStrategy, charges: np.ndarray, ewald, precision: str):
        self.strategy, self.ewald, self.precision = strategy, ewald, precision
        self.n = len(charges)
        self.charges = charges
        only = strategy.launch.get("charged", "only") == "only"
        self.index = np.flatnonzero(charges != 0.0).astype(np.int32) if only else np.arange(self.n, dtype=np.int32)
        kx, ky, kz = ewald.kmax
        self.grid = (kx + 1, 2 * ky + 1, 2 * kz + 1)
        self.G = int(np.prod(self.grid))

    def fractions(self, positions) -> np.ndarray:
        """(m, 4) float64: the sent particles' positions in fractions of the box, in [0, 1), and charges."""
        x = np.asarray(positions, np.float64)[self.index]
        s = x / np.asarray(self.ewald.lengths)
        s -= np.floor(s)
        return np.concatenate([s, self.charges[self.index, None]], axis=1)

    def weights(self) -> np.ndarray:
        """A(k) times k 4 pi / V on the grid, zero outside the half space (mdcore.ewald's vectors)."""
        n, _, a = self.ewald.vectors()
        kx, ky, kz = self.ewald.kmax
        out = np.zeros(self.G)
        out[(n[:, 0] * self.grid[1] + n[:, 1] + ky) * self.grid[2] + n[:, 2] + kz] = a
        return out

    def synchronize(self) -> None:
        pass


# ---- GPU ------------------------------------------------------------------------------------


class CudaKSpace(KSpaceStrategy):
    defaults = {"charged": "only"}
    variants: tuple = ({},)  # the launch values beyond the defaults whose kernels CI compiles
    structure = ""  # the S(k) kernel's template name
    force = ""
    zero_s = False  # atomics: S(k) zeroed before each evaluation

    def __init__(self, **launch):
        super().__init__(**launch)
        if self.launch["charged"] not in ("only", "all"):
            raise InputError(f"--kspace {self.name}: charged={self.launch['charged']!r}; take only or all")

    def available(self) -> tuple[bool, str]:
        from .cuda import device_status

        return device_status()

    def expressions(self, precision: str, run: int = MSEGS[-1], rrun: int = RSEGS[-1]) -> list[str]:
        """The kernels of one evaluation in this precision (run, rrun: the run lengths of kspace_s_mirror and
        of the rows kernels)."""
        m = MODES[precision]
        real, acc = m.cxx_compute, m.cxx_accumulate
        if self.structure == "kspace_s_rows":
            cheb = "true" if self.launch["recurrence"] == "chebyshev" else "false"
            s = (f"kspace_s_mirror<{real}, {acc}, {run}, {BLOCK}, {cheb}>" if self.mirrors(precision) else
                 f"kspace_s_rows<{real}, {acc}, {rrun}, {BLOCK}, {cheb}>")
            return [s, f"kspace_fold<{acc}>",
                    f"kspace_energy<{real}, {acc}, {ENERGY_BLOCK}>",
                    f"kspace_f_rows<{real}, {acc}, {rrun}, {BLOCK}, {TROWS}, {cheb}>"]
        s = f"{self.structure}<{real}, {acc}" + (f", {CHUNK}>" if self.structure == "kspace_s_staged" else ">")
        f = f"{self.force}<{real}, {acc}" + (f", {TILE}>" if self.force == "kspace_f_staged" else ">")
        return [s, f"kspace_energy<{real}, {acc}, {ENERGY_BLOCK}>", f]

    def _prepare(self, charges, ewald, precision):
        return CudaKPlan(self, charges, ewald, precision)


def expressions() -> list[str]:
    """Every specialisation of kernels/kspace.cu the GPU strategies use, each launch variant's (the CI
    compile check)."""
    out: list[str] = []
    for name in names("cuda"):
        for launch in KSPACE[name].variants:
            for p in PRECISIONS:
                s = KSPACE[name](**launch)
                for run in MSEGS if s.mirrors(p) else MSEGS[-1:]:
                    for rrun in RSEGS:
                        out += [e for e in s.expressions(p, run, rrun) if e not in out]
    return out


class CudaKPlan(KPlan):
    def __init__(self, strategy: CudaKSpace, charges, ewald, precision):
        super().__init__(strategy, charges, ewald, precision)
        import cupy as cp

        from . import cuda

        m = MODES[precision]
        self.cp, self.real, self.acc = cp, m.compute, m.accumulate
        kx, ky, kz = ewald.kmax
        self.run_n, self.run_z = mirror_run(kz), row_run(2 * kz + 1)  # the mirror's and the rows kernels' runs
        self.fns = [cuda.kernel("kspace.cu", e) for e in strategy.expressions(precision, self.run_n, self.run_z)]
        kgrid = np.dtype({"names": ["kx", "ky", "kz", "KZ", "NYZ", "G"], "formats": [np.int32] * 6})
        self.kgrid = np.array([kx, ky, kz, 2 * kz + 1, (2 * ky + 1) * (2 * kz + 1), self.G], np.int32).view(kgrid)
        self.m = len(self.index)
        self.sq = cp.zeros((max(self.m, 1), 4), self.real)
        self.idx = cp.asarray(self.index if self.m else np.zeros(1, np.int32))
        self.A = cp.asarray(self.weights().astype(self.real))
        self.S = cp.zeros(2 * self.G, self.acc)
        self.W = cp.zeros(2 * self.G, self.real)
        self.eblocks = min(-(-self.G // ENERGY_BLOCK), 1024)
        self.parts = cp.zeros(7 * self.eblocks, self.acc)
        self.F = cp.zeros(3 * self.n, self.acc)
        L = ewald.lengths
        self.twopi = tuple(2.0 * math.pi / v for v in L)
        self.sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        self.part = None
        if strategy.structure == "kspace_s_rows":
            # the rows kernel's threads: (n_x, n_y, run of n_z) x chunks of the charges, as many chunks as fill
            # whole waves of the blocks the SMs hold at once, each at least BLOCK charges long
            if strategy.mirrors(precision):  # blocks of BLOCK rows, each block one run of n >= 0
                self.sblocks = -(-self.grid[0] * self.grid[1] // BLOCK) * -(-(self.grid[2] // 2 + 1) // self.run_n)
                self.rows = self.sblocks * BLOCK
            else:
                self.rows = self.grid[0] * self.grid[1] * -(-self.grid[2] // self.run_z)
                self.sblocks = -(-self.rows // BLOCK)
            slots = cuda.resident_blocks(self.fns[0], BLOCK) * self.sms
            chunks = whole_waves(min(self.sblocks, 65535), slots, max(1, -(-self.m // BLOCK)))
            chunk = -(-max(self.m, 1) // chunks)
            self.chunks = (-(-max(self.m, 1) // chunk), chunk)
            if self.chunks[0] > 1:
                self.part = cp.zeros(2 * self.G * self.chunks[0], self.acc)
            # the forces: chunks of the (n_x, n_y) rows over blockIdx.y, as many as fill whole waves
            R = self.grid[0] * self.grid[1]
            slots = cuda.resident_blocks(self.fns[-1], BLOCK) * self.sms
            fchunks = whole_waves(-(-max(self.m, 1) // BLOCK), slots, -(-R // TROWS))
            per = -(-R // fchunks)
            per = -(-per // TROWS) * TROWS  # whole tiles
            self.fchunks = (-(-R // per), per)
            self.fpart = cp.zeros(3 * max(self.m, 1) * self.fchunks[0], self.acc)
            self.fshared = TROWS * -(-self.grid[2] // self.run_z) * self.run_z * 2 * np.dtype(self.real).itemsize

    def device_bytes(self) -> int:
        arrays = (self.sq, self.idx, self.A, self.S, self.W, self.parts, self.F, self.part, getattr(self, "fpart", None))
        return sum(int(a.nbytes) for a in arrays if a is not None)

    def upload(self, positions) -> None:
        if self.m:
            self.sq[...] = self.cp.asarray(self.fractions(positions).astype(self.real))

    def run(self) -> None:
        self._launch(None)

    def phases(self) -> dict[str, float]:
        """One evaluation with CUDA events between its kernels: milliseconds of the structure factors,
        the energy and weights, and the forces."""
        marks = [self.cp.cuda.Event() for _ in range(4)]
        self._launch(marks)
        marks[-1].synchronize()
        t = [self.cp.cuda.get_elapsed_time(a, b) for a, b in zip(marks, marks[1:])]
        return {"structure_ms": t[0], "energy_ms": t[1], "forces_ms": t[2]}

    def _launch(self, marks) -> None:
        s = self.strategy
        fs, *rest = self.fns
        n, G = np.int32(self.m), self.G
        grid = self.kgrid
        mark = (lambda k: marks[k].record()) if marks else (lambda k: None)
        mark(0)
        if s.zero_s or not self.m:
            self.S.fill(0)
        if self.m:
            if s.structure == "kspace_s_kloop":
                fs((min(-(-G // BLOCK), 65535),), (BLOCK,), (self.sq, n, grid, self.S))
            elif s.structure == "kspace_s_atomic":
                blocks = min(-(-(self.m * G) // BLOCK), 64 * self.sms)
                fs((blocks,), (BLOCK,), (self.sq, n, grid, self.S))
            elif s.structure == "kspace_s_staged":
                fs((-(-G // BLOCK), min(-(-self.m // CHUNK), 65535)), (BLOCK,), (self.sq, n, grid, self.S))
            else:
                chunks, chunk = self.chunks
                out = self.S if chunks == 1 else self.part
                fs((min(self.sblocks, 65535), chunks), (BLOCK,), (self.sq, n, np.int32(chunk), grid, out))
                if chunks > 1:
                    rest[0]((min(-(-2 * G // 256), 4 * self.sms),), (256,), (self.part, np.int32(chunks), np.int32(2 * G),
                                                                            NULL, self.S))
        fe, ff = rest[-2:]
        mark(1)
        tx, ty, tz = self.twopi
        q4 = 1.0 / (4.0 * self.ewald.alpha ** 2)
        fe((self.eblocks,), (ENERGY_BLOCK,), (self.S, self.A, grid, np.float64(tx), np.float64(ty), np.float64(tz),
                                               np.float64(q4), self.W, self.parts))
        mark(2)
        self.F.fill(0)
        if self.m and s.force == "kspace_f_rows":
            chunks, per = self.fchunks
            ff((-(-self.m // BLOCK), chunks), (BLOCK,), (self.sq, n, self.W, grid, np.int32(per), np.float64(tx),
                                                         np.float64(ty), np.float64(tz), self.fpart),
               shared_mem=self.fshared)
            rest[0]((min(-(-3 * self.m // 256), 4 * self.sms),), (256,), (self.fpart, np.int32(chunks),
                                                                         np.int32(3 * self.m), self.idx, self.F))
        elif self.m:
            ff((min(-(-self.m // BLOCK), 65535),), (BLOCK,), (self.sq, self.idx, n, self.W, grid, np.float64(tx),
                                                              np.float64(ty), np.float64(tz), self.F))
        mark(3)

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def output(self) -> Result:
        parts = self.parts.get().astype(np.float64).reshape(self.eblocks, 7)
        v = np.zeros(7)
        for b in range(self.eblocks):  # block order: the same sum every time
            v += parts[b]
        w = np.array([[v[1], v[2], v[3]], [v[2], v[4], v[5]], [v[3], v[5], v[6]]])
        return Result(float(v[0]), self.F.get().astype(np.float64).reshape(self.n, 3), w)


@register
class KSpaceThreadKloop(CudaKSpace):
    name = "kspace_thread_kloop"
    description = ("a thread per k over all charges (no atomics), then a thread per charge over all k; a sincos per "
                   "(charge, k): OpenMM's Ewald kernels, GOMC's later branch")
    structure, force = "kspace_s_kloop", "kspace_f_direct"


@register
class KSpaceThreadAtomic(CudaKSpace):
    name = "kspace_thread_atomic"
    description = ("a thread per (charge, k) adding into S(k) with atomics (GOMC's MolExchangeReciprocal); forces as "
                   "kloop; not repeatable (the order of atomic additions)")
    structure, force = "kspace_s_atomic", "kspace_f_direct"
    deterministic = False
    zero_s = True


@register
class KSpaceBlockStaged(CudaKSpace):
    name = "kspace_block_staged"
    processor = "block"
    description = ("a 2-D grid of k x chunks of 64 charges staged in shared memory, each chunk's sum added with "
                   "atomics (GOMC's main branch); forces with the weights staged in shared-memory tiles; not "
                   "repeatable")
    structure, force = "kspace_s_staged", "kspace_f_staged"
    deterministic = False
    zero_s = True


@register
class KSpaceThreadRows(CudaKSpace):
    name = "kspace_thread_rows"
    description = ("a thread per run of 12 to 16 consecutive n_z, the length that pads a row least: one sincos per "
                   "(charge, run), the next n_z by the three-term recurrence x(n+1) = 2 cos(f) x(n) - x(n-1) on "
                   "the FMA pipe; forces the same way. recurrence=rotate steps by a complex multiply instead (the "
                   "recurrence of CPU Ewald codes: twice the multiplies, a tenth of the phase's drift in float). "
                   "mirror=on: the structure factors of n_z and -n_z from one phase, four sums per n for the two "
                   "(auto, the default: on where the sums are double, fp64 and mixed; off in fp32)")
    structure, force = "kspace_s_rows", "kspace_f_rows"
    # recurrence: the step from one n_z's phase to the next, the three-term recurrence (chebyshev: two FMAs
    # a step, ten times the rotation's drift of the phase in float over a run) or a complex multiply (rotate)
    # mirror: the structure factors of n_z and -n_z from one phase (kspace_s_mirror), four sums per n;
    # auto takes it where the sums are double, fp64 and mixed (docs/decisions/kspace-rows.md has the times)
    defaults = {**CudaKSpace.defaults, "recurrence": "chebyshev", "mirror": "auto"}
    variants = ({}, {"recurrence": "rotate"}, {"mirror": "off"}, {"mirror": "on"},
                {"mirror": "off", "recurrence": "rotate"}, {"mirror": "on", "recurrence": "rotate"})

    def __init__(self, **launch):
        super().__init__(**launch)
        if self.launch["recurrence"] not in ("rotate", "chebyshev"):
            raise InputError(f"--kspace {self.name}: recurrence={self.launch['recurrence']!r}; take rotate or "
                             "chebyshev")
        if self.launch["mirror"] not in ("auto", "off", "on"):
            raise InputError(f"--kspace {self.name}: mirror={self.launch['mirror']!r}; take auto, off or on")

    def mirrors(self, precision: str) -> bool:
        if self.launch["mirror"] == "auto":
            return MODES[precision].cxx_accumulate == "double"
        return self.launch["mirror"] == "on"

    def resolved(self, precision: str) -> dict:
        return {**self.launch, "mirror": "on" if self.mirrors(precision) else "off"}


# ---- CPU ------------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def _cpu_structure(s, q, kx, ky, kz):
    ny_, kz_ = 2 * ky + 1, 2 * kz + 1
    re = np.zeros((kx + 1) * ny_ * kz_)
    im = np.zeros((kx + 1) * ny_ * kz_)
    for row in prange((kx + 1) * ny_):
        nx = row // ny_
        ny = row - nx * ny_ - ky
        base = row * kz_
        for j in range(s.shape[0]):
            t = nx * s[j, 0] + ny * s[j, 1] - kz * s[j, 2]
            c = math.cos(2.0 * math.pi * t)
            sn = math.sin(2.0 * math.pi * t)
            cz = math.cos(2.0 * math.pi * s[j, 2])
            sz = math.sin(2.0 * math.pi * s[j, 2])
            for z in range(kz_):
                re[base + z] += q[j] * c
                im[base + z] += q[j] * sn
                c, sn = c * cz - sn * sz, sn * cz + c * sz
    return re, im


@njit(parallel=True, cache=True)
def _cpu_forces(s, q, w, kx, ky, kz):
    ny_, kz_ = 2 * ky + 1, 2 * kz + 1
    f = np.zeros((s.shape[0], 3))
    for j in prange(s.shape[0]):
        cz = math.cos(2.0 * math.pi * s[j, 2])
        sz = math.sin(2.0 * math.pi * s[j, 2])
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for nx in range(kx + 1):
            for ny in range(-ky, ky + 1):
                base = (nx * ny_ + ny + ky) * kz_
                t = nx * s[j, 0] + ny * s[j, 1] - kz * s[j, 2]
                c = math.cos(2.0 * math.pi * t)
                sn = math.sin(2.0 * math.pi * t)
                row = 0.0
                for z in range(kz_):
                    v = w[2 * (base + z)] * sn - w[2 * (base + z) + 1] * c
                    row += v
                    fz += v * (z - kz)
                    c, sn = c * cz - sn * sz, sn * cz + c * sz
                fx += row * nx
                fy += row * ny
        f[j, 0] = q[j] * fx
        f[j, 1] = q[j] * fy
        f[j, 2] = q[j] * fz
    return f


class CpuKPlan(KPlan):
    def upload(self, positions) -> None:
        self.sq = self.fractions(positions)

    def run(self) -> None:
        kx, ky, kz = self.ewald.kmax
        s, q = np.ascontiguousarray(self.sq[:, :3]), np.ascontiguousarray(self.sq[:, 3])
        re, im = _cpu_structure(s, q, kx, ky, kz)
        a = self.weights()
        e = a * (re * re + im * im)
        self._energy = float(np.sum(e))
        n = np.stack(np.meshgrid(np.arange(kx + 1), np.arange(-ky, ky + 1), np.arange(-kz, kz + 1), indexing="ij"),
                     axis=-1).reshape(-1, 3)
        k = n * (2.0 * math.pi / np.asarray(self.ewald.lengths))
        k2 = np.maximum(np.sum(k * k, axis=1), 1e-300)
        h = 2.0 * (1.0 / k2 + 1.0 / (4.0 * self.ewald.alpha ** 2))
        self._virial = np.sum(e) * np.eye(3) - np.einsum("g,ga,gb->ab", e * h, k, k)
        w = np.empty(2 * self.G)
        w[0::2], w[1::2] = 2.0 * a * re, 2.0 * a * im
        f = _cpu_forces(s, q, w, kx, ky, kz) * (2.0 * math.pi / np.asarray(self.ewald.lengths))
        self._forces = np.zeros((self.n, 3))
        self._forces[self.index] = f

    def output(self) -> Result:
        return Result(self._energy, self._forces, self._virial)


@register
class KSpaceThreadCpu(KSpaceStrategy):
    name = "kspace_thread_cpu"
    backend = "cpu"
    description = "numba on the CPU's cores, float64: a row of n_z per task, the next n_z by a complex multiply"
    precisions = ("fp64",)
    defaults = {}

    def _prepare(self, charges, ewald, precision):
        return CpuKPlan(self, charges, ewald, precision)
