"""Peers timed beside the strategies (`python -m harness bench --peers openmm,jaxmd`).

Each peer gets exactly the problem's positions, box and cutoff, the same truncated (unshifted)
Lennard-Jones 12-6 with sigma and epsilon in its own units (nm and kJ/mol: the numbers are
the same), or the force-field file's types and charges (openmm_system says how), and is checked
against the float64 reference like a strategy: a peer can be wrong too. What each timing includes
is stated in its row (`includes`):

  openmm  the System of openmm_system (Lennard-Jones: NonbondedForce, CutoffPeriodic, zero charges,
          no dispersion correction, no switching);
          the CUDA platform, else OpenCL (on the same GPU), else CPU; precision
          single/mixed/double from the precision mode; the row names the platform used, and
          plugin load failures (a CUDA plugin built for another cuFFT) go into its notes. force_ms: Context.getState(forces, energy), which computes the forces and
          downloads them (OpenMM has no call that computes without returning them);
          step_ms: one VerletIntegrator step, neighbour-list upkeep included.
  openmm-reference  the same System on OpenMM's Reference platform (double, CPU): the errors of one
          evaluation against the float64 reference, a check of both (no timing)
  jaxmd   jax_md.partition neighbour list (cell list, capacity from the first build) and a
          truncated LJ pair function through smap.pair_neighbor_list, jit-compiled (typed particles:
          the force field's sigma, epsilon, cutoff and shift tables per species pair; charges n/a);
          force_ms: forces with the list as built (block_until_ready); update_ms: the list
          update alone.

A peer whose package is missing, or which cannot run the problem (open boundaries, no cutoff),
gives a row with status n/a and the reason. Each peer runs in a child process of its own: a
peer that runs out of memory (JAX-MD's dense neighbour list at a million particles does, on a
24 GiB machine) or crashes in native code gives a row with status error and what killed it,
and the bench goes on; jax's x64 switch and OpenMM's contexts stay in that child too.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from mdcore import InputError, Problem
from .timing import Stats, time_cpu

PEERS = ("openmm", "openmm-reference", "jaxmd")


def _applicable(problem: Problem) -> str:
    if problem.precision not in ("fp32", "mixed", "fp64"):
        return (f"has no precision {problem.precision} (OpenMM's CUDA platform sums forces in 64-bit fixed point in "
                "its single and mixed modes already)")
    pot = problem.potential
    if pot.name not in ("lj", "ff"):
        return f"set up for Lennard-Jones and force-field files only (this problem has {pot.name})"
    if pot.cutoff is None:
        return "needs a cutoff (this problem has none)"
    if not all(problem.box.periodic):
        return "set up for periodic boxes only (this one has open axes)"
    if pot.name == "lj" and pot.shift:
        return "compared with the unshifted potential only (this problem shifts it)"
    if pot.name == "ff" and pot.forcefield.method != "none" and pot.forcefield.coulomb_cutoff != \
            float(pot.forcefield.pair_cutoff.max()):
        return "computes charges and Lennard-Jones with one cutoff (this force field has two)"
    if np.any(problem.box.array < 2 * problem.potential.cutoff):
        return "needs a box of at least twice the cutoff"
    return ""


def _errors(forces: np.ndarray, energy: float | None, ref) -> dict:
    scale = float(np.sqrt(np.mean(np.sum(ref.forces ** 2, axis=1)))) or 1.0
    diff = np.sqrt(np.sum((forces - ref.forces) ** 2, axis=1))
    out = {"force_rms_err": float(np.sqrt(np.mean(diff ** 2))) / scale, "force_max_err": float(diff.max()) / scale}
    if energy is not None:
        out["energy_err"] = abs(energy - ref.energy) / max(ref.energy_abs, 1e-300)
    return out


def _timer(fn: Callable[[], object], min_time: float) -> Stats:
    return time_cpu(fn, warmup=1, repeat=5, min_time=min_time, max_repeat=200)


def cuda13_libdir() -> str | None:
    """The folder of the CUDA 13 runtime libraries a pip-installed CUDA stack brings
    (site-packages/nvidia/cu13/lib), which OpenMM's CUDA 13 plugin loads; None where absent."""
    for entry in sys.path:
        d = Path(entry) / "nvidia" / "cu13" / "lib"
        if d.is_dir():
            return str(d)
    return None


def child_env() -> dict:
    """The environment of a peer's process: the CUDA 13 runtime on the library path, where one
    is installed (the dynamic loader reads LD_LIBRARY_PATH when a process starts)."""
    env = dict(os.environ)
    lib = cuda13_libdir()
    if lib and lib not in env.get("LD_LIBRARY_PATH", "").split(":"):
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


# OpenMM's units on the problem's numbers: sigma in nm, epsilon in kJ/mol, masses 1 amu, so that
# the LJ time unit is tau = sqrt(m sigma^2 / epsilon) = 1 ps; the step of an LJ liquid run, 0.005
# tau, and its temperature T* = 0.72 (in K: 0.72 epsilon / k_B)
OPENMM_DT_PS = 0.005
OPENMM_T_STAR = 0.72
BOLTZMANN_KJ_PER_MOL_K = 0.0083144626


# OpenMM's Coulomb constant (kJ/mol nm / e^2): a force field's charges are scaled by
# sqrt(coulomb_constant / this), so that OpenMM's q^2 / r carries the file's constant
OPENMM_COULOMB = 138.93545764438198  # ONE_4PI_EPS0 of OpenMM 8
OPENMM_GROUPS = {0}  # the force groups of what the harness computes (PME's reciprocal part is group 1)


def openmm_system(problem: Problem):
    """An OpenMM System of the problem's particles and potential, no dispersion correction or switching:
      Lennard-Jones                NonbondedForce, CutoffPeriodic, zero charges
      one type with charges        NonbondedForce with the charges: CutoffPeriodic (OpenMM's reaction
                                   field, its dielectric the file's) or PME with the file's alpha (the
                                   reciprocal part in force group 1: group 0, OPENMM_GROUPS, is the
                                   real-space part the harness computes)
      typed particles              CustomNonbondedForce with the file's sigma and epsilon tables
                                   (Discrete2DFunction) and each pair's cutoff and shift; charges, if
                                   any, in a NonbondedForce beside it
    """
    import openmm

    pot = problem.potential
    L = problem.box.array
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(L[0], 0, 0), openmm.Vec3(0, L[1], 0), openmm.Vec3(0, 0, L[2]))
    for _ in range(problem.n):
        system.addParticle(1.0)

    def nonbonded(charges, sigma: float, epsilon: float, method: str, cutoff: float, ff=None):
        nb = openmm.NonbondedForce()
        nb.setNonbondedMethod(openmm.NonbondedForce.PME if method == "ewald" else openmm.NonbondedForce.CutoffPeriodic)
        nb.setCutoffDistance(cutoff)
        nb.setUseDispersionCorrection(False)
        nb.setUseSwitchingFunction(False)
        if ff is not None and method == "reaction-field":
            nb.setReactionFieldDielectric(ff.epsilon_rf if np.isfinite(ff.epsilon_rf) else 1e30)
        if method == "ewald":  # the file's alpha through the tolerance OpenMM derives it from; reciprocal apart
            nb.setEwaldErrorTolerance(0.5 * np.exp(-(ff.alpha * cutoff) ** 2))
            nb.setReciprocalSpaceForceGroup(1)
        scale = np.sqrt(ff.coulomb_constant / OPENMM_COULOMB) if ff is not None else 0.0
        for q in charges:
            nb.addParticle(float(q) * scale, sigma, epsilon)
        system.addForce(nb)

    if pot.name == "lj":
        nonbonded(np.zeros(problem.n), pot.sigma, pot.epsilon, "none", pot.cutoff)
        return system
    ff = pot.forcefield
    q = pot.charges if pot.charges is not None else np.zeros(problem.n)
    if pot.kind == "charge" and not ff.shift:
        nonbonded(q, float(ff.pair_sigma[0, 0]), float(ff.pair_epsilon[0, 0]), ff.method, ff.cutoff, ff)
        return system
    T = ff.ntypes
    shift = ff.lj_shift()
    f = openmm.CustomNonbondedForce("step(rc - r) * (4 * eps * ((sig / r)^12 - (sig / r)^6) - us); "
                                    "sig = sigT(type1, type2); eps = epsT(type1, type2); rc = rcT(type1, type2); "
                                    "us = usT(type1, type2)")
    for name, table in (("sigT", ff.pair_sigma), ("epsT", ff.pair_epsilon), ("rcT", ff.pair_cutoff), ("usT", shift)):
        f.addTabulatedFunction(name, openmm.Discrete2DFunction(T, T, [float(v) for v in table.T.reshape(-1)]))
    f.addPerParticleParameter("type")
    f.setNonbondedMethod(openmm.CustomNonbondedForce.CutoffPeriodic)
    f.setCutoffDistance(ff.cutoff)
    f.setUseSwitchingFunction(False)
    f.setUseLongRangeCorrection(False)
    for t in pot.types:
        f.addParticle([float(t)])
    system.addForce(f)
    if ff.method != "none":
        nonbonded(q, 1.0, 0.0, ff.method, ff.coulomb_cutoff, ff)
    return system


def openmm_context(problem: Problem, steps_dt: float = OPENMM_DT_PS, platform: str | None = None):
    """(context, integrator, platform name, properties) for the problem (openmm_system); CUDA, else
    OpenCL, else CPU (or the platform named)."""
    import openmm

    system = openmm_system(problem)
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    platform = platform or next(p for p in ("CUDA", "OpenCL", "CPU", "Reference") if p in names)
    props = {}
    if platform in ("CUDA", "OpenCL"):
        props["Precision"] = {"fp32": "single", "mixed": "mixed", "fp64": "double"}[problem.precision]
    integrator = openmm.VerletIntegrator(steps_dt)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform), props)
    context.setPositions(problem.positions)
    return context, integrator, platform, props


def run_openmm(problem: Problem, ref, min_time: float = 0.3) -> dict:
    import openmm
    from openmm import unit

    t0 = time.perf_counter()
    context, integrator, platform, props = openmm_context(problem)
    groups = OPENMM_GROUPS
    state = context.getState(getForces=True, getEnergy=True, groups=groups)
    setup_ms = (time.perf_counter() - t0) * 1e3
    forces = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    energy = state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    failures = [f.split(":")[-1].strip() for f in openmm.Platform.getPluginLoadFailures() if "CUDA.so" in f]
    row = {"status": "ok", "platform": platform, "plugin_failures": "; ".join(sorted(set(failures)))[:200],
           "cuda13_libdir": cuda13_libdir(), "precision_used": props.get("Precision", "double/mixed (CPU)"),
           "setup_ms": setup_ms, **_errors(np.asarray(forces, dtype=np.float64), float(energy), ref)}
    force = _timer(lambda: context.getState(getForces=True, getEnergy=True, groups=groups), min_time)
    row.update({"force_ms": force.median, "force_min_ms": force.min, "force_max_ms": force.max,
                "repeats": force.repeats})
    steps = 50
    context.setPositions(problem.positions)
    eps = problem.potential.epsilon if problem.potential.name == "lj" else float(problem.potential.forcefield.pair_epsilon[0, 0])
    kelvin = OPENMM_T_STAR * eps / BOLTZMANN_KJ_PER_MOL_K
    context.setVelocitiesToTemperature(kelvin, 1)
    integrator.step(steps)  # the neighbour list settles before the timing
    step = _timer(lambda: (integrator.step(steps), context.getState(getEnergy=True)), min_time)
    row["step_ms"] = step.median / steps
    row["includes"] = ("force_ms: getState(forces, energy) = force computation + download to the host; "
                       f"step_ms: VerletIntegrator.step of {OPENMM_DT_PS} tau from T* = {OPENMM_T_STAR} (the device "
                       f"synchronised once per {steps} steps), neighbour-list upkeep included ({platform} platform); "
                       "its force kernel alone: harness profile --peer openmm")
    del context
    return row


def run_openmm_reference(problem: Problem, ref, min_time: float = 0.3) -> dict:
    """OpenMM's Reference platform (double precision on the CPU, its own independent code) on the
    same particles: one evaluation, its errors against the harness's float64 reference."""
    from openmm import unit

    t0 = time.perf_counter()
    context, _, platform, _ = openmm_context(problem, platform="Reference")
    state = context.getState(getForces=True, getEnergy=True, groups=OPENMM_GROUPS)
    seconds = time.perf_counter() - t0
    forces = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    energy = state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    del context
    return {"status": "ok", "platform": platform, "precision_used": "double", "setup_ms": seconds * 1e3,
            **_errors(np.asarray(forces, dtype=np.float64), float(energy), ref),
            "includes": "one evaluation on OpenMM's Reference platform (set-up included): a correctness check, "
                        "not a timing"}


def run_jaxmd(problem: Problem, ref, min_time: float = 0.3) -> dict:
    import jax
    import jax.numpy as jnp
    from jax_md import partition, smap, space

    if problem.precision == "fp64":
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if problem.precision == "fp64" else jnp.float32
    pot = problem.potential
    box = jnp.asarray(problem.box.array, dtype=dtype)
    displacement, _ = space.periodic(box)
    metric = space.canonicalize_displacement_or_metric(displacement)

    def pair(dr, sigma, epsilon, rc, us):  # LJ 12-6 truncated at rc and lowered by us (U(rc) where shifted)
        r2 = dr * dr
        inv6 = (sigma * sigma / jnp.where(r2 > 0, r2, 1.0)) ** 3
        return jnp.where((r2 < rc * rc) & (r2 > 0), 4.0 * epsilon * inv6 * (inv6 - 1.0) - us, 0.0)

    if pot.name == "lj":
        sr6 = (pot.sigma / pot.cutoff) ** 6
        us = 4.0 * pot.epsilon * sr6 * (sr6 - 1.0) if pot.shift else 0.0
        params = {"sigma": pot.sigma, "epsilon": pot.epsilon, "rc": pot.cutoff, "us": us}
        cutoff, species = pot.cutoff, None
    else:  # typed particles: the force field's tables per species pair (no charges: _jaxmd_applicable)
        ff = pot.forcefield
        params = {k: jnp.asarray(v, dtype=dtype) for k, v in (("sigma", ff.pair_sigma), ("epsilon", ff.pair_epsilon),
                                                             ("rc", ff.pair_cutoff), ("us", ff.lj_shift()))}
        cutoff, species = float(ff.pair_cutoff.max()), jnp.asarray(pot.types)
    energy_fn = smap.pair_neighbor_list(pair, metric, species=species, reduce_axis=None,
                                        ignore_unused_parameters=True, **params)
    neighbor_fn = partition.neighbor_list(displacement, box, cutoff, dr_threshold=0.0,
                                          format=partition.NeighborListFormat.Dense)
    R = jnp.asarray(problem.positions, dtype=dtype)
    t0 = time.perf_counter()
    nbrs = neighbor_fn.allocate(R)
    total = jax.jit(lambda R, nbrs: jnp.sum(energy_fn(R, neighbor=nbrs)))
    force_fn = jax.jit(lambda R, nbrs: -jax.grad(lambda x: jnp.sum(energy_fn(x, neighbor=nbrs)))(R))
    forces = np.asarray(force_fn(R, nbrs), dtype=np.float64)
    energy = float(total(R, nbrs))
    setup_ms = (time.perf_counter() - t0) * 1e3
    if nbrs.did_buffer_overflow:
        return {"status": "error", "detail": "jax_md neighbour list overflowed its capacity"}
    row = {"status": "ok", "platform": jax.default_backend(), "setup_ms": setup_ms,
           **_errors(forces, energy, ref)}
    force = _timer(lambda: force_fn(R, nbrs).block_until_ready(), min_time)
    update = jax.jit(lambda R, nbrs: nbrs.update(R))
    upd = _timer(lambda: jax.block_until_ready(update(R, nbrs)), min_time)
    row.update({"force_ms": force.median, "force_min_ms": force.min, "force_max_ms": force.max,
                "repeats": force.repeats, "update_ms": upd.median,
                "includes": f"force_ms: jit-compiled forces with a built dense neighbour list ({jax.default_backend()}); "
                            "update_ms: the list update alone"})
    return row


RUNNERS = {"openmm": ("openmm", run_openmm), "openmm-reference": ("openmm", run_openmm_reference),
           "jaxmd": ("jax_md", run_jaxmd)}


def openmm_nve(problem: Problem, velocities: np.ndarray, steps: int, sample: int, dt: float, precision: str) -> dict:
    """OpenMM's VerletIntegrator from the same positions and velocities on the same potential
    (LJ truncated at the cutoff and shifted to zero there, as a CustomNonbondedForce: OpenMM's
    NonbondedForce would not shift it), in its single/mixed/double precision. Units: sigma in nm,
    epsilon in kJ/mol, mass 1 amu, so tau = 1 ps and the numbers are the harness's. Returns the
    samples (step, kinetic, potential) and the platform."""
    import openmm
    from openmm import unit

    lj = problem.potential
    L = problem.box.array
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(L[0], 0, 0), openmm.Vec3(0, L[1], 0), openmm.Vec3(0, 0, L[2]))
    rc = float(lj.cutoff)
    sr6 = (lj.sigma / rc) ** 6
    shift = 4.0 * lj.epsilon * (sr6 * sr6 - sr6)
    f = openmm.CustomNonbondedForce(f"4*{lj.epsilon!r}*((({lj.sigma!r}/r)^12)-(({lj.sigma!r}/r)^6))-({shift!r})")
    f.setNonbondedMethod(openmm.CustomNonbondedForce.CutoffPeriodic)
    f.setCutoffDistance(rc)
    f.setUseSwitchingFunction(False)
    f.setUseLongRangeCorrection(False)
    for _ in range(problem.n):
        system.addParticle(1.0)
        f.addParticle([])
    system.addForce(f)
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    platform = next(p for p in ("CUDA", "OpenCL", "CPU", "Reference") if p in names)
    props = {"Precision": {"fp32": "single", "mixed": "mixed", "fp64": "double"}[precision]} \
        if platform in ("CUDA", "OpenCL") else {}
    integrator = openmm.VerletIntegrator(dt)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform), props)
    context.setPositions(problem.positions)
    context.setVelocities(velocities)
    samples = []
    t0 = time.perf_counter()
    for step in range(0, steps + 1, sample):
        if step:
            integrator.step(sample)
        st = context.getState(getEnergy=True)
        samples.append((step, st.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole),
                        st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)))
    seconds = time.perf_counter() - t0
    return {"status": "ok", "platform": platform, "precision_used": props.get("Precision", "CPU platform's own"),
            "samples": samples, "ms_per_step": 1e3 * seconds / steps}


def parse(text: str | None) -> list[str]:
    names = [p.strip() for p in (text or "").split(",") if p.strip()]
    bad = [p for p in names if p not in PEERS]
    if bad:
        raise InputError(f"unknown peer(s) {', '.join(bad)}; known: {', '.join(PEERS)}")
    return names


def _jaxmd_applicable(problem: Problem) -> str:
    """'' where JAX-MD's pair machinery takes the potential (Lennard-Jones, one type or per species pair),
    else why not."""
    pot = problem.potential
    if pot.name == "lj":
        return ""
    if pot.name != "ff":
        return f"is set up for Lennard-Jones (one type or typed), not {pot.name}"
    if pot.forcefield.method != "none":
        return (f"has no {pot.forcefield.method} pair term (JAX-MD's pairs take per-species tables, not charges); "
                "typed particles without charges run")
    return ""


def run(name: str, problem: Problem, ref, min_time: float = 0.3) -> dict:
    """One row: the peer's timings and errors against the reference, or n/a with the reason."""
    module, runner = RUNNERS[name]
    row = {"strategy": f"peer:{name}", "name": f"peer:{name}", "backend": "peer",
           "scenario": problem.label.split(" ")[0], "n": problem.n, "precision": problem.precision}
    if importlib.util.find_spec(module) is None:
        return {**row, "status": "n/a", "detail": f"the {module} package is not installed (optional: requirements/peers.txt)"}
    why = _applicable(problem)
    if not why and name == "jaxmd":
        why = _jaxmd_applicable(problem)
    if why:
        return {**row, "status": "n/a", "detail": f"{name} {why}"}
    return {**row, **isolated(name, problem, ref, min_time)}


def _child(runner: Callable, args: tuple, conn) -> None:
    try:
        out = runner(*args)
    except Exception as e:  # a peer's own failure is a result, reported with its message
        out = {"status": "error", "detail": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    conn.send(out)
    conn.close()


def isolated(name: str, problem: Problem, ref, min_time: float) -> dict:
    """RUNNERS[name] in a fresh (spawned) process; its row, or status error saying how the
    process ended if it died before reporting (a signal, most often the kernel's OOM killer)."""
    return in_child(name, RUNNERS[name][1], (problem, ref, min_time))


def in_child(name: str, runner: Callable, args: tuple) -> dict:
    """runner(*args) in a fresh (spawned) process with the peers' environment (child_env)."""
    import multiprocessing as mp
    import signal

    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(runner, args, send), daemon=True)
    saved = dict(os.environ)
    os.environ.update(child_env())  # the child inherits the CUDA 13 library path
    try:
        proc.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    send.close()  # the child holds the only writer: its death ends recv() with EOFError
    try:
        out = receive.recv()
    except EOFError:
        out = None
    proc.join()
    if out is not None:
        return out
    code = proc.exitcode
    if code is not None and code < 0:
        sig = signal.Signals(-code).name
        how = f"was killed by {sig}" + (" (most often the out-of-memory killer: try a smaller N)"
                                        if -code == signal.SIGKILL else "")
    else:
        how = f"exited with status {code}"
    return {"status": "error", "detail": f"the {name} process {how} before reporting a result"}
