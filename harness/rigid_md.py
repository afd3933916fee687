"""md for rigid molecules: NVE with the NO_SQUISH integrator (mdcore.rigid) and the forces and torques
of the float64 reference or a molecule traversal (strategies/molecules.py: the CPU's or the GPU's). With
a GPU traversal the whole step runs on the device (strategies.rigid_cuda.DeviceRigid: the same
NO_SQUISH in kernels/rigid.cuh), the state read back only at the samples.

Units are the components file's: dt in its time unit, length * sqrt(mass / energy) (0.1 ps for
angstrom, amu and kJ/mol), and temperature as k_B T in its energy unit (2.494 kJ/mol at 300 K). The
start: the configuration as given, Maxwell-Boltzmann momenta at that temperature (the centre of
mass at rest) and angular momenta in the body frame likewise (none about an axis of zero moment).
--equilibrate K steps of velocity rescaling to that temperature come first (the scenarios start from
random orientations, far from equilibrium). The energy drift is the slope of a straight line fitted to
the total energy over the NVE steps' time, per molecule.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mdcore import InputError, rigid


@dataclass
class Sample:
    step: int
    time: float
    potential: float
    translational: float
    rotational: float
    temperature: float

    @property
    def total(self) -> float:
        return self.potential + self.translational + self.rotational


def forces_of(strategy: str, model, template, precision: str = "fp64"):
    """forces(r, q) -> (forces, torques, energy) for the molecules of `template` at centres r and
    orientations q, computed in `precision` (the integration is float64 whatever it is)."""
    from mdcore.molecules import Molecules

    if strategy == "reference":
        from reference.molecules import compute
    else:
        from strategies import molecules as traversals

        ok, why = traversals.applicable(strategy, template, model)
        if not ok:
            raise InputError(f"md: {strategy} cannot run these molecules: {why}")
        plan = traversals.Plan(strategy, template, model, precision)  # buffers, kernels and lists kept

        def compute(m, mdl):
            return plan.evaluate(m)

    def forces(r, q):
        out = compute(Molecules(r, q, template.components, template.box), model)
        return out["forces"], out["torques"], out["energy"]
    return forces


def start(mols, model, temperature: float, seed: int) -> rigid.RigidState:
    comps = model.components
    mass = np.array([comps[c].mass for c in mols.components])
    inertia = np.array([comps[c].inertia for c in mols.components])
    rng = np.random.default_rng(seed)
    m = len(mass)
    p = rng.normal(size=(m, 3)) * np.sqrt(mass * temperature)[:, None]
    if m > 1:
        p -= mass[:, None] * (p.sum(0) / mass.sum())
    lb = rng.normal(size=(m, 3)) * np.sqrt(inertia * temperature)
    return rigid.RigidState(mols.centres, mols.quaternions, p, lb, mass, inertia, mols.box.array, mols.box.periodic)


def degrees_of_freedom(state: rigid.RigidState) -> int:
    return 3 * len(state.mass) - 3 + int(np.sum(state.inertia > 0.0))


def equilibrate(state: rigid.RigidState, forces, dt: float, steps: int, temperature: float, every: int = 10) -> None:
    """`steps` steps with the momenta and angular momenta scaled to `temperature` every `every` steps
    (velocity rescaling: not a canonical ensemble, a start for the NVE run that follows)."""
    dof = degrees_of_freedom(state)
    done = 0
    while done < steps:
        k = min(every, steps - done)
        rigid.run(state, forces, dt, k)
        done += k
        kinetic = sum(state.kinetic())
        if kinetic > 0.0:
            scale = np.sqrt(0.5 * dof * temperature / kinetic)
            state.p *= scale
            state.pi *= scale


def _nve(state: rigid.RigidState, force_fn, dt: float, steps: int, sample: int, progress=None):
    """`steps` of NVE from `state`: its samples and summary."""
    dof = degrees_of_freedom(state)
    samples: list[Sample] = []

    def on_sample(step, u, kt, kr):
        s = Sample(step, step * dt, u, kt, kr, 2.0 * (kt + kr) / dof)
        samples.append(s)
        if progress:
            progress(f"  step {step:8d}  E {s.total:.10g}  U {u:.8g}  K {kt + kr:.8g}  T {s.temperature:.4g}")

    t0 = time.perf_counter()
    rigid.run(state, force_fn, dt, steps, sample, on_sample)
    wall = time.perf_counter() - t0
    return samples, _summary(state, samples, steps, dt, wall)


def _summary(state: rigid.RigidState, samples: list[Sample], steps: int, dt: float, wall: float) -> dict:
    """A run's summary from its samples: drift per molecule per time unit (the slope of a line fitted to
    the total energy), largest deviation per molecule, mean temperature, seconds per step."""
    dof = degrees_of_freedom(state)
    if not np.all(np.isfinite(state.r)) or not np.all(np.isfinite([s.total for s in samples])):
        raise InputError(f"md: the run blew up (not finite) by step {samples[-1].step}: a smaller --dt, or an "
                         "equilibrated start")
    m = len(state.mass)
    t = np.array([s.time for s in samples])
    e = np.array([s.total for s in samples])
    slope = float(np.polyfit(t, e, 1)[0]) if len(t) >= 2 else 0.0
    summary = {"molecules": m, "steps": steps, "dt": dt, "time": steps * dt, "degrees_of_freedom": dof,
               "energy_start": float(e[0]), "energy_end": float(e[-1]),
               "drift_per_molecule_per_time": slope / m,
               "max_deviation_per_molecule": float(np.max(np.abs(e - e[0]))) / m,
               "temperature_mean": float(np.mean([s.temperature for s in samples])),
               "seconds_per_step": wall / max(steps, 1)}
    return summary


def on_device(strategy: str) -> bool:
    """Whether the whole MD step runs on the device: a GPU traversal (strategies.rigid_cuda.DeviceRigid)."""
    if strategy == "reference":
        return False
    from strategies import molecules as traversals

    return traversals.backend(strategy) == "cuda"


def _nve_device(strategy: str, model, mols, precision: str, state: rigid.RigidState, dt: float, steps: int,
                sample: int, progress=None, equilibrate_steps: int = 0, temperature: float = 0.0,
                graph: bool = True, fused: bool = True, upkeep: str | None = None):
    """_nve with the whole step on the device: the state uploaded once, the energy summed only at the
    samples, the state read back only there (and every 10 steps of the equilibration, to rescale). The
    forces-only steps between samples replay CUDA graphs unless `graph` is False; `fused` and `upkeep` as
    DeviceRigid takes them."""
    from strategies import molecules as traversals
    from strategies.molecules_cuda import MoleculePlan
    from strategies.rigid_cuda import DeviceRigid

    ok, why = traversals.applicable(strategy, mols, model)
    if not ok:
        raise InputError(f"md: {strategy} cannot run these molecules: {why}")
    plan = MoleculePlan(strategy, mols, model, precision)
    dev = DeviceRigid(plan, state, fused=fused, upkeep=upkeep)
    dof = degrees_of_freedom(state)
    done = 0
    while done < equilibrate_steps:  # velocity rescaling, as equilibrate() does on the host
        k = min(10, equilibrate_steps - done)
        dev.steps(dt, k, graphs=graph)
        done += k
        dev.download(state)
        kinetic = sum(state.kinetic())
        if kinetic > 0.0:
            dev.scale(float(np.sqrt(0.5 * dof * temperature / kinetic)))
    if equilibrate_steps:
        dev.step(0.0, energy=True)  # the energy at the start of the NVE steps
    samples: list[Sample] = []

    def take(step: int) -> None:
        dev.download(state)
        kt, kr = state.kinetic()
        s = Sample(step, step * dt, plan.result()["energy"], kt, kr, 2.0 * (kt + kr) / dof)
        samples.append(s)
        if progress:
            progress(f"  step {step:8d}  E {s.total:.10g}  U {s.potential:.8g}  K {kt + kr:.8g}  T {s.temperature:.4g}")

    take(0)
    if graph:
        dev.capture(dt)  # the forces-only steps' CUDA graphs recorded before the clock starts
    wall, step = 0.0, 0
    while step < steps:  # forces-only steps up to the next sample (the last step is one too), then the sample's
        nxt = min(steps, (step // sample + 1) * sample) if sample else steps
        t0 = time.perf_counter()
        dev.steps(dt, nxt - step - 1, graphs=graph)
        dev.step(dt, energy=True)
        dev.settle()  # the step's closing half kick (fused steps keep it for the next one), timed with it
        wall += time.perf_counter() - t0
        step = nxt
        take(step)
    summary = _summary(state, samples, steps, dt, wall)
    summary["graph"] = (dev.graph or "off") if graph else "off"
    summary["upkeep"] = "device" if dev.device_upkeep else ("host" if dev.at is not None else "none")
    summary["fused"] = fused
    return samples, summary


def run(mols, model, strategy: str, dt: float, steps: int, temperature: float, sample: int, seed: int,
        progress=None, equilibrate_steps: int = 0, precision: str = "fp64", graph: bool = True, fused: bool = True,
        upkeep: str | None = None) -> dict:
    """The run's samples and summary (a JSON-ready dict): `equilibrate_steps` with velocity rescaling to
    `temperature` first, then `steps` of NVE. A GPU traversal keeps the whole step on the device."""
    state = start(mols, model, temperature, seed)
    if on_device(strategy):
        samples, summary = _nve_device(strategy, model, mols, precision, state, dt, steps, sample, progress,
                                       equilibrate_steps, temperature, graph, fused, upkeep)
        summary["on_device"] = True
    else:
        force_fn = forces_of(strategy, model, mols, precision)
        if equilibrate_steps:
            equilibrate(state, force_fn, dt, equilibrate_steps, temperature)
        samples, summary = _nve(state, force_fn, dt, steps, sample, progress)
    summary["equilibrate_steps"] = equilibrate_steps
    return {"kind": "md-molecules", "strategy": strategy, "precision": precision,
            "samples": [s.__dict__ | {"total": s.total} for s in samples], "summary": summary}


def nve_report(mols, model, names: list[str], precisions: list[str], dt: float, steps: int, temperature: float,
               sample: int, seed: int, equilibrate_steps: int = 0, say=None, peers: bool = True, graph: bool = True,
               fused: bool = True, upkeep: str | None = None) -> list[dict]:
    """NVE from one start for each traversal and precision: the start (momenta at `temperature`, then
    `equilibrate_steps` of velocity rescaling with the first traversal's fp64 forces) copied for each run.
    Rows: traversal, precision, drift per molecule per time unit, largest |E - E0| per molecule, ms per
    step; n/a with the reason where a traversal does not run here."""
    import copy

    from strategies import molecules as traversals

    state0 = start(mols, model, temperature, seed)
    if equilibrate_steps:
        first = next((n for n in names if n == "reference" or traversals.applicable(n, mols, model)[0]), "reference")
        equilibrate(state0, forces_of(first, model, mols, "fp64"), dt, equilibrate_steps, temperature)
    rows = []
    for name in names:
        for prec in precisions:
            row = {"strategy": name, "precision": prec, "molecules": len(mols.centres), "steps": steps, "dt": dt}
            ok, why = (True, "") if name == "reference" else traversals.applicable(name, mols, model)
            if not ok:
                rows.append({**row, "status": "n/a", "detail": why})
            elif name == "reference" and prec != "fp64":
                rows.append({**row, "status": "n/a", "detail": "the reference computes in fp64"})
            else:
                if on_device(name):
                    _, s = _nve_device(name, model, mols, prec, copy.deepcopy(state0), dt, steps, sample,
                                       graph=graph, fused=fused, upkeep=upkeep)
                else:
                    _, s = _nve(copy.deepcopy(state0), forces_of(name, model, mols, prec), dt, steps, sample)
                rows.append({**row, "status": "ok", "drift": s["drift_per_molecule_per_time"],
                             "max_deviation": s["max_deviation_per_molecule"],
                             "ms_per_step": 1e3 * s["seconds_per_step"], "temperature": s["temperature_mean"],
                             **{k: s[k] for k in ("graph", "upkeep", "fused") if k in s}})
            if say:
                say(rows[-1])
    if peers:
        rows += _openmm_rows(mols, model, precisions, dt, steps, temperature, sample, seed, equilibrate_steps, say)
    return rows


def _openmm_rows(mols, model, precisions, dt, steps, temperature, sample, seed, equilibrate_steps, say) -> list[dict]:
    """OpenMM's rigid three-atom molecules (harness/molecule_peers.openmm_rigid_nve) from the same
    configuration, equilibrated the same way with its own forces: a row per precision on a GPU platform,
    one on the CPU's; n/a with the reason where OpenMM is missing or the molecules do not map."""
    import importlib.util

    from . import molecule_peers

    base = {"strategy": "peer:openmm", "molecules": len(mols.centres), "steps": steps, "dt": dt}
    if importlib.util.find_spec("openmm") is None:
        rows = [{**base, "precision": "mixed", "status": "n/a",
                 "detail": "openmm is not installed (optional: requirements/peers.txt)"}]
    else:
        rows = []
        try:
            molecule_peers.openmm_rigid_system(mols, model)
        except InputError as e:
            rows = [{**base, "precision": "mixed", "status": "n/a", "detail": str(e)}]
        if not rows:
            import openmm

            gpu = any(openmm.Platform.getPlatform(k).getName() in ("CUDA", "OpenCL")
                      for k in range(openmm.Platform.getNumPlatforms()))
            for p in (precisions if gpu else ["mixed"]):
                rows.append({**base, "precision": p, **molecule_peers.openmm_rigid_nve(
                    mols, model, steps, dt, temperature, sample, equilibrate_steps, p, seed)})
    for r in rows:
        if say:
            say(r)
    return rows
