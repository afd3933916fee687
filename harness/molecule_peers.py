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
