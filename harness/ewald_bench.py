"""`python -m harness ewald`: the reciprocal strategies timed on charges, size by size, with OpenMM's
Ewald beside them on the same charges.

The system of size N: N charges +1 and -1 alternating at uniform random positions in a cube at
`density` charges per unit volume (OpenMM's units: nm, kJ/mol, e; coulomb constant 138.935457644, OpenMM 8's), the
Ewald parameters from the tolerance and the cutoff as OpenMM chooses them (or --kmax). Each point is
one strategy and precision at one size: the structure factors, the energy with its weights, and the
forces, each timed with CUDA events between its kernels (the CPU strategy with the wall clock), the
median of `repeat` evaluations after a warm-up; `pairs_per_s` counts both passes, 2 N G over the
grid's G entries. `sfu_floor_ms` is the special-function units' bound of a sincos per (charge, k)
and pass in float (two SFU operations each, 16 per SM and clock): what the direct kernels cannot
beat and the recurrence does not pay.

OpenMM's rows (--peers openmm): NonbondedForce with method Ewald (openmm-ewald), and with PME for
scale (openmm-pme: its grid and spline order chosen by OpenMM for the same tolerance), the same
cutoff, the reciprocal part alone in force group 1; the wall time of getState(forces, energy) for
that group (its kernels, the download of the forces), the median of `repeat`. Its energy includes the
self term, so the rows' `energy` is E_rec + E_self for the comparison. OpenMM's structure-factor
kernel (calculateEwaldCosSinSums) runs n_x over 0 .. 2K - 2 while its forces stop at K - 1, so its
energy carries the terms of n_x = K .. 2K - 2 too: above the strategies' |n| < K sum by that tail
(2e-6 of the total at 10,000 and 100,000 charges, tolerance 5e-4), and equal to the sum with those
vectors to 1e-9 (tests/test_gpu_kspace.py). PME's differs by its own interpolation error. Its kernels under Nsight Compute in the same run as the strategies':
`ncu --kernel-name regex:"calculateEwald|kspace_" --clock-control none --metrics gpu__time_duration.sum
python -m harness ewald --n 100000 --precision fp32 --peers openmm --repeat 1` (docs/forcefield.md).
"""
from __future__ import annotations

import time

import numpy as np

from mdcore import MODES, InputError

from .timing import Stats

COULOMB = 138.93545764438198  # OpenMM 8's ONE_4PI_EPS0: its rows and the strategies' share every constant
PEER_PRECISION = {"fp32": "single", "mixed": "mixed", "fp64": "double"}
COLUMNS = ["strategy", "backend", "precision", "launch", "n", "box", "kmax", "kvectors", "alpha", "status", "structure_ms",
           "energy_ms", "forces_ms", "total_ms", "total_min_ms", "total_max_ms", "spread", "repeats", "pairs_per_s",
           "sfu_floor_ms", "energy", "energy_error", "detail"]


def system(n: int, density: float, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Positions (n, 3), charges (+1, -1 alternating) and the cube's side."""
    if n < 2 or n % 2:
        raise InputError(f"ewald: --n {n}: an even number of charges (a neutral system of +1 and -1), at least 2")
    L = (n / density) ** (1.0 / 3.0)
    rng = np.random.default_rng(seed)
    return rng.random((n, 3)) * L, np.tile([1.0, -1.0], n // 2), L


def parameters(L: float, cutoff: float, tolerance: float, kmax):
    from mdcore import forcefield
    from mdcore.ewald import Ewald

    es = {"method": "ewald", "cutoff": cutoff, "tolerance": tolerance}
    if kmax is not None:
        es["kmax"] = list(kmax)
    ff = forcefield.parse({"types": ["ion"], "electrostatics": es, "coulomb_constant": COULOMB})
    if cutoff > 0.5 * L:
        raise InputError(f"ewald: --cutoff {cutoff:g} is beyond half the box ({L:.4g} / 2) at this size and density")
    return Ewald.make(ff, (L, L, L), (True, True, True))


def sfu_floor_ms(n: int, grid: int) -> float | None:
    """Two passes of a sincos (two SFU operations) per (charge, grid entry) at 16 SFU operations per SM
    and clock on this GPU; None without one."""
    try:
        import cupy

        dev = cupy.cuda.Device()
        sms = dev.attributes["MultiProcessorCount"]
        clock = dev.attributes["ClockRate"] * 1e3  # kHz -> Hz
    except Exception:
        return None
    return 1e3 * (2 * 2 * n * grid) / (16.0 * sms * clock)


def _point(strategy, x, q, ewald, precision: str, repeat: int) -> dict:
    plan = strategy.prepare(q, ewald, precision)
    plan.upload(x)
    plan.run()  # warm-up: modules loaded, memory touched
    plan.synchronize()
    phases, totals = [], []
    for _ in range(repeat):
        if strategy.backend == "cuda":
            ph = plan.phases()
            phases.append(ph)
            totals.append(sum(ph.values()))
        else:
            t0 = time.perf_counter()
            plan.run()
            totals.append(1e3 * (time.perf_counter() - t0))
    out = plan.output()
    t = Stats.of(totals)
    row = {"total_ms": t.median, "total_min_ms": t.min, "total_max_ms": t.max, "repeats": repeat,
           "energy": out.energy + ewald.self_energy(q), "spread": t.spread}
    for k in ("structure_ms", "energy_ms", "forces_ms"):
        if phases:
            row[k] = float(np.median([p[k] for p in phases]))
    return row


OPENMM_METHODS = ("Ewald", "PME")  # each a peer row: openmm-ewald, openmm-pme


def openmm_point(x, q, L: float, cutoff: float, tolerance: float, precision: str, repeat: int,
                 method: str = "Ewald") -> dict:
    """OpenMM's reciprocal group (method Ewald, or PME for scale: its grid sized by OpenMM from the same
    tolerance) on the CUDA platform: its wall time and energy (E_rec + E_self)."""
    try:
        import openmm
        from openmm import unit
    except ImportError:
        return {"status": "n/a", "detail": "openmm is not installed (make setup EXTRAS=peers)"}
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    if "CUDA" not in names:
        return {"status": "n/a", "detail": "OpenMM has no CUDA platform here"}
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(L, 0, 0), openmm.Vec3(0, L, 0), openmm.Vec3(0, 0, L))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(getattr(openmm.NonbondedForce, method))
    nb.setCutoffDistance(cutoff)
    nb.setEwaldErrorTolerance(tolerance)
    nb.setReciprocalSpaceForceGroup(1)
    for qi in q:
        system.addParticle(1.0)
        nb.addParticle(float(qi), 0.3, 0.0)
    system.addForce(nb)
    ctx = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("CUDA"),
                         {"Precision": PEER_PRECISION[precision]})
    ctx.setPositions(x)
    ctx.getState(getForces=True, getEnergy=True, groups={1})
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        st = ctx.getState(getForces=True, getEnergy=True, groups={1})
        times.append(1e3 * (time.perf_counter() - t0))
    energy = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    del ctx
    t = Stats.of(times)
    return {"status": "ok", "total_ms": t.median, "total_min_ms": t.min, "total_max_ms": t.max, "repeats": repeat,
            "energy": float(energy), "spread": t.spread,
            "detail": "wall time of getState(forces, energy) for the reciprocal group: kernels and the forces' download"}


def run(strategies_, sizes, precisions, density: float, cutoff: float, tolerance: float, kmax, repeat: int,
        peers: list[str], seed: int, progress=None) -> list[dict]:
    rows = []
    for n in sizes:
        x, q, L = system(n, density, seed)
        ewald = parameters(L, cutoff, tolerance, kmax)
        grid = (ewald.kmax[0] + 1) * (2 * ewald.kmax[1] + 1) * (2 * ewald.kmax[2] + 1)
        base = {"n": n, "box": L, "kmax": list(ewald.kmax), "kvectors": ewald.count, "alpha": ewald.alpha}
        fp64 = None
        for p in precisions:
            for s in strategies_:
                row = {"strategy": s.name, "backend": s.backend, "precision": p, "launch": s.resolved(p), **base}
                ok, why = s.supports(p)
                if not ok:
                    rows.append({**row, "status": "n/a", "detail": why})
                    continue
                try:
                    row.update(status="ok", **_point(s, x, q, ewald, p, repeat))
                except Exception as e:  # a failing point is a row that says so, the sweep goes on
                    rows.append({**row, "status": "error", "detail": f"{type(e).__name__}: {e}"})
                    continue
                row["pairs_per_s"] = 2.0 * n * grid / (row["total_ms"] * 1e-3)
                if p == "fp32" and s.backend == "cuda":
                    row["sfu_floor_ms"] = sfu_floor_ms(n, grid)
                if p == "fp64" and fp64 is None:
                    fp64 = row["energy"]
                rows.append(row)
                if progress:
                    progress(f"  {s.name} {p} N={n}: {row['total_ms']:.4g} ms")
            for peer in peers:
                for method in OPENMM_METHODS:
                    row = {"strategy": f"{peer}-{method.lower()}", "backend": "peer", "precision": p, **base,
                           **openmm_point(x, q, L, cutoff, tolerance, p, repeat, method)}
                    rows.append(row)
        for r in rows:
            if r["n"] == n and r.get("status") == "ok" and fp64 is not None:
                r["energy_error"] = abs(r["energy"] / fp64 - 1.0)
    return rows


def table(rows: list[dict]) -> str:
    head = f"{'strategy':22s} {'prec':5s} {'N':>8s} {'k':>7s} {'total ms':>10s} {'S ms':>8s} {'F ms':>8s} {'pair/s':>9s}  status"
    lines = [head]
    for r in rows:
        f = lambda k, w, fmt: (format(r[k], fmt) if isinstance(r.get(k), (int, float)) else "").rjust(w)  # noqa: E731
        lines.append(f"{r['strategy']:22s} {r['precision']:5s} {r['n']:8d} {r['kvectors']:7d} {f('total_ms', 10, '.4g')} "
                     f"{f('structure_ms', 8, '.4g')} {f('forces_ms', 8, '.4g')} {f('pairs_per_s', 9, '.3g')}  "
                     f"{r['status']}" + (f" ({r['detail']})" if r.get("status") != "ok" and r.get("detail") else ""))
    return "\n".join(lines)


def check_sizes(text: str) -> list[int]:
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"ewald: --n {text!r}: a comma list of charge counts") from None
    if not sizes:
        raise InputError("ewald: --n names no size")
    for n in sizes:
        if n < 2 or n % 2:
            raise InputError(f"ewald: --n {n}: an even number of charges (a neutral system of +1 and -1), at least 2")
    return sizes


def precisions(text: str) -> list[str]:
    out = ["fp32", "mixed", "fp64"] if text == "all" else [p.strip() for p in text.split(",") if p.strip()]
    for p in out:
        if p not in MODES:
            raise InputError(f"ewald: --precision {p!r}; known: {', '.join(MODES)}")
    return out

