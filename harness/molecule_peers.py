"""OpenMM on rigid molecules: the same molecules as an OpenMM System of point sites, for an oracle of
the float64 molecule reference (reference/molecules.py) on a cluster without cutoff.

The System (openmm_system): every Lennard-Jones or charge site a particle at c + R(q) p, every pair of
sites of one molecule excluded, NonbondedForce with NoCutoff (open boundaries, plain Coulomb) and
Lorentz-Berthelot mixing. Units: the numbers are taken as they are (lengths as nm, energies as
kJ/mol), the charges scaled by sqrt(k / k_OpenMM) so that OpenMM's Coulomb constant gives the
components file's k (k_OpenMM read from OpenMM itself: the energy of two unit charges one nm apart,
138.9354576 in 8.4); its forces and energy are then in the file's units. What OpenMM's
NonbondedForce cannot hold is refused with the reason: point dipoles and quadrupoles, xi or eta other
than 1 (Lorentz-Berthelot only), a periodic axis (the centres' cutoff of the model is not OpenMM's
per-atom cutoff).

oracle(): OpenMM's Reference platform (double precision, its own code) gives the site forces; summed
per molecule they are its force, and sum (r_s - c) x f_s its torque. The errors of the reference
against them: forces and torques to the largest entry, the energy to |E|.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mdcore import InputError



def openmm_coulomb() -> float:
    """OpenMM's Coulomb constant (kJ mol^-1 nm e^-2): two unit charges 1 nm apart, Reference platform."""
    import openmm

    system = openmm.System()
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    for _ in range(2):
        system.addParticle(1.0)
        nb.addParticle(1.0, 1.0, 0.0)
    system.addForce(nb)
    context = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    context.setPositions([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    return float(context.getState(getEnergy=True).getPotentialEnergy()._value)


def cluster(mols, model, count: int):
    """The `count` molecules nearest the centre of the box, in an open box, with the model's cutoff
    beyond their largest centre distance and plain Coulomb (no reaction field, no switch): every pair
    interacts, as OpenMM's NoCutoff has it."""
    from mdcore import Box
    from mdcore.molecules import Molecules

    c = np.asarray(mols.centres, np.float64)
    mid = 0.5 * np.asarray(mols.box.lengths) if any(mols.box.periodic) else c.mean(0)
    d = c - mid
    if any(mols.box.periodic):
        d -= np.asarray(mols.box.lengths) * np.rint(d / np.asarray(mols.box.lengths))
    pick = np.argsort(np.einsum("ij,ij->i", d, d), kind="stable")[:count]
    centres = mid + d[pick]
    extent = np.ptp(centres, axis=0)
    reach = float(np.sqrt(np.sum(extent ** 2))) + 1.0
    open_box = Box.make(np.maximum(extent, 1.0) + 2.0 * reach, (False, False, False))
    sub = Molecules(centres, np.asarray(mols.quaternions)[pick], np.asarray(mols.components)[pick], open_box)
    return sub, dataclasses.replace(model, cutoff=reach, method="none", switch=None)


def site_table(mols, model):
    """Per Lennard-Jones or charge site: its molecule, lab position, sigma, epsilon and charge; refuses
    dipoles and quadrupoles."""
    from mdcore.molecules import rotation

    R = rotation(np.asarray(mols.quaternions, np.float64))
    rows = []
    for i, ci in enumerate(mols.components):
        comp = model.components[ci]
        for s, kind in enumerate(comp.kinds):
            if kind not in ("lj", "charge"):
                raise InputError(f"openmm: component {comp.name} has a {kind} site; OpenMM's NonbondedForce holds "
                                 "Lennard-Jones centres and charges only")
            pos = np.asarray(mols.centres[i], np.float64) + R[i] @ comp.position[s]
            rows.append((i, pos, float(comp.sigma[s]) if kind == "lj" else 1.0,
                         float(comp.epsilon[s]) if kind == "lj" else 0.0,
                         float(comp.charge[s]) if kind == "charge" else 0.0))
    return rows


def openmm_system(mols, model):
    """(System, positions, molecule of each particle) for OpenMM, or InputError saying why not."""
    import openmm

    if any(mols.box.periodic):
        raise InputError("openmm: the oracle takes an open cluster (a periodic box's cutoff is on the centres here, "
                         "per atom in OpenMM)")
    if not (np.all(np.asarray(model.xi) == 1.0) and np.all(np.asarray(model.eta) == 1.0)):
        raise InputError("openmm: xi or eta other than 1; OpenMM's NonbondedForce mixes by Lorentz-Berthelot only")
    if model.method != "none":
        raise InputError(f"openmm: electrostatics {model.method}; the oracle compares plain Coulomb without cutoff")
    rows = site_table(mols, model)
    scale = np.sqrt(model.coulomb_constant / openmm_coulomb())
    system = openmm.System()
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    nb.setUseDispersionCorrection(False)
    for _, _, sigma, eps, q in rows:
        system.addParticle(1.0)
        nb.addParticle(q * scale, sigma, eps)
    owner = np.array([r[0] for r in rows], np.int64)
    start = np.searchsorted(owner, np.arange(len(mols.centres) + 1))
    for i in range(len(mols.centres)):
        for a in range(start[i], start[i + 1]):
            for b in range(a + 1, start[i + 1]):
                nb.addException(int(a), int(b), 0.0, 1.0, 0.0)
    system.addForce(nb)
    return system, np.array([r[1] for r in rows]), owner


def oracle(mols, model) -> dict:
    """OpenMM's Reference platform against the float64 molecule reference on these molecules (an open
    cluster; cluster() makes one): the relative errors and the largest entries."""
    import openmm

    from reference.molecules import compute

    system, pos, owner = openmm_system(mols, model)
    context = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    context.setPositions(pos)
    state = context.getState(getForces=True, getEnergy=True)
    f_site = np.asarray(state.getForces(asNumpy=True)._value, np.float64)
    energy = float(state.getPotentialEnergy()._value)
    del context
    m = len(mols.centres)
    force = np.zeros((m, 3))
    torque = np.zeros((m, 3))
    np.add.at(force, owner, f_site)
    np.add.at(torque, owner, np.cross(pos - np.asarray(mols.centres)[owner], f_site))
    ref = compute(mols, model)

    def rel(a, b):
        return float(np.abs(a - b).max() / np.abs(b).max())
    return {"molecules": m, "sites": len(owner), "forces": rel(ref["forces"], force),
            "torques": rel(ref["torques"], torque), "energy": abs(ref["energy"] - energy) / abs(energy),
            "openmm_energy": energy, "reference_energy": ref["energy"]}


KJ_PER_MOL_K = 0.0083144626  # Boltzmann's constant in kJ/mol/K
ANGSTROM_COULOMB = 1389.35456  # kJ/mol A e^-2: the components files' unit system (A, amu, kJ/mol, e)


def _atoms(comp):
    """A component's sites merged by position into atoms: (body positions (k, 3), sigma, epsilon, charge)."""
    pos, sig, eps, q = [], [], [], []
    for s, kind in enumerate(comp.kinds):
        p = comp.position[s]
        k = next((a for a, x in enumerate(pos) if np.allclose(x, p, atol=1e-9)), None)
        if k is None:
            pos.append(np.array(p, np.float64))
            sig.append(1.0)
            eps.append(0.0)
            q.append(0.0)
            k = len(pos) - 1
        if kind == "lj":
            sig[k], eps[k] = float(comp.sigma[s]), float(comp.epsilon[s])
        else:
            q[k] += float(comp.charge[s])
    return np.array(pos), np.array(sig), np.array(eps), np.array(q)


def _masses(comp, pos: np.ndarray) -> np.ndarray:
    """Point masses at the atoms that add up to the component's mass with the centre of mass at the origin
    (the least-norm solution); InputError where none is positive."""
    A = np.vstack([np.ones(len(pos)), pos.T])
    b = np.array([comp.mass, 0.0, 0.0, 0.0])
    m, *_ = np.linalg.lstsq(A, b, rcond=None)
    if np.any(m <= 0.0) or not np.allclose(A @ m, b, atol=1e-6 * comp.mass):
        raise InputError(f"openmm: component {comp.name}: no positive point masses on its {len(pos)} atoms carry "
                         "its mass with the centre of mass at the origin")
    return m


def openmm_rigid_system(mols, model):
    """(System, positions in nm, atoms per molecule) of rigid three-atom molecules for OpenMM: every pair
    of atoms of a molecule constrained (OpenMM's SETTLE), NonbondedForce CutoffPeriodic with the model's
    reaction field and cutoff (on atom pairs, where the model's is on the centres), no dispersion
    correction; InputError where the molecules do not map."""
    import openmm

    from mdcore.molecules import rotation

    if not all(mols.box.periodic):
        raise InputError("openmm: the rigid-water peer runs a periodic box")
    if abs(model.coulomb_constant - ANGSTROM_COULOMB) > 1e-3:
        raise InputError(f"openmm: the peer maps angstrom, amu, kJ/mol and e (coulomb_constant {ANGSTROM_COULOMB}); "
                         f"this file has {model.coulomb_constant:g}")
    if model.method not in ("reaction-field", "none"):
        raise InputError(f"openmm: electrostatics {model.method}")
    kinds = {k for c in model.components for k in c.kinds}
    if kinds - {"lj", "charge"}:
        raise InputError(f"openmm: {', '.join(sorted(kinds - {'lj', 'charge'}))} sites; OpenMM's NonbondedForce holds "
                         "Lennard-Jones centres and charges only")
    per = []
    for c in model.components:
        pos, sig, eps, q = _atoms(c)
        if len(pos) != 3:
            raise InputError(f"openmm: component {c.name} has {len(pos)} atoms; the peer constrains three-atom "
                             "molecules (SETTLE)")
        per.append((pos, sig, eps, q, _masses(c, pos)))
    system = openmm.System()
    L = 0.1 * np.asarray(mols.box.lengths, np.float64)
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(L[0], 0, 0), openmm.Vec3(0, L[1], 0), openmm.Vec3(0, 0, L[2]))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(0.1 * model.cutoff)
    nb.setUseDispersionCorrection(False)
    nb.setReactionFieldDielectric(min(model.epsilon_rf, 1e10) if model.method == "reaction-field" else 1.0)
    R = rotation(np.asarray(mols.quaternions, np.float64))
    xyz = []
    for i, ci in enumerate(mols.components):
        pos, sig, eps, q, mass = per[ci]
        base = system.getNumParticles()
        for a in range(3):
            system.addParticle(float(mass[a]))
            nb.addParticle(float(q[a]), 0.1 * float(sig[a]), float(eps[a]))
            xyz.append(0.1 * (np.asarray(mols.centres[i], np.float64) + R[i] @ pos[a]))
        for a in range(3):
            for b in range(a + 1, 3):
                system.addConstraint(base + a, base + b, 0.1 * float(np.linalg.norm(pos[a] - pos[b])))
                nb.addException(base + a, base + b, 0.0, 1.0, 0.0)
    system.addForce(nb)
    return system, np.array(xyz), 3


def openmm_rigid_nve(mols, model, steps: int, dt: float, temperature: float, sample: int, equilibrate: int,
                     precision: str = "mixed", seed: int = 1) -> dict:
    """OpenMM on the same molecules as rigid three-atom molecules (openmm_rigid_system): VerletIntegrator
    with SETTLE, `equilibrate` steps with the velocities set to `temperature` every 10 steps, then `steps`
    of NVE sampled every `sample`. dt and temperature in the components file's units (0.1 ps; k_B T in
    kJ/mol). The row: drift per molecule per time unit, the largest deviation, ms per step (the wall
    time of the NVE steps over their count, the samples' energy reads included), the platform."""
    import time as _time

    import openmm

    system, xyz, _ = openmm_rigid_system(mols, model)
    names = [openmm.Platform.getPlatform(k).getName() for k in range(openmm.Platform.getNumPlatforms())]
    platform = next(p for p in ("CUDA", "OpenCL", "CPU", "Reference") if p in names)
    props = {"Precision": {"fp32": "single", "mixed": "mixed", "fp64": "double"}[precision]} \
        if platform in ("CUDA", "OpenCL") else {}
    integrator = openmm.VerletIntegrator(0.1 * dt)
    integrator.setConstraintTolerance(1e-8)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform), props)
    context.setPositions(xyz)
    context.applyConstraints(1e-8)
    kelvin = temperature / KJ_PER_MOL_K
    context.setVelocitiesToTemperature(kelvin, seed)
    for done in range(0, equilibrate, 10):
        integrator.step(min(10, equilibrate - done))
        context.setVelocitiesToTemperature(kelvin, seed + 1 + done)
    energies, times = [], []
    t0 = _time.perf_counter()
    for k in range(0, steps + 1, sample):
        if k:
            integrator.step(sample)
        st = context.getState(getEnergy=True)
        energies.append(st.getPotentialEnergy()._value + st.getKineticEnergy()._value)
        times.append(k * dt)
    wall = _time.perf_counter() - t0
    del context
    m = len(mols.centres)
    e = np.array(energies)
    slope = float(np.polyfit(times, e, 1)[0]) if len(e) >= 2 else 0.0
    return {"status": "ok", "drift": slope / m, "max_deviation": float(np.max(np.abs(e - e[0]))) / m,
            "ms_per_step": 1e3 * wall / max(steps, 1), "platform": platform,
            "precision_used": props.get("Precision", f"{platform} platform"),
            "detail": "rigid three-atom molecules (SETTLE), cutoff and reaction field on atom pairs"}
