"""Components files of the molecule scenarios (mdcore.molecules' format), built from each model's
published parameters: the sites' body-frame positions about the centre of mass and the principal
moments of inertia follow from the geometry and the atoms' masses.

  spce          SPC/E water (Berendsen, Grigera and Straatsma 1987): O-H 1 A, H-O-H 109.47 degrees,
                charges -0.8476 / +0.4238 e, LJ on the oxygen (sigma 3.166 A, epsilon 0.650 kJ/mol);
                A, amu, kJ/mol, e; reaction field eps_rf 78.3 (OpenMM's default), cutoff 9 A
  stockmayer    LJ centre and a point dipole at the centre of mass, reduced units (sigma = epsilon =
                mass = 1), mu*^2 = 3; a linear rotor of moment 0.025; conducting reaction field
                (eps_rf = inf), cutoff 2.5
  n2            nitrogen as a two-centre LJ plus point quadrupole (2CLJQ) fluid (Vrabec, Stoll and
                Hasse 2001, the ls1-MarDyn component library's model): sigma 3.3211 A, epsilon/k
                34.897 K, elongation 1.0464 A, Q 1.4397 D A; A, amu, kJ/mol, e; cutoff 10 A
"""
from __future__ import annotations

import copy
import math

import numpy as np

COULOMB_A_KJ = 1389.35456  # kJ/mol A / e^2 (OpenMM's 138.935456 kJ/mol nm / e^2)
K_TO_KJ = 0.0083144626  # kJ/mol per kelvin (the gas constant)
DEBYE_E_A = 0.2081943  # e A per debye
M_O, M_H, M_N = 15.9994, 1.008, 14.0067


def _principal(masses, positions) -> tuple[np.ndarray, list[float]]:
    """Positions about the centre of mass, and the principal moments of a geometry that is already
    on its principal axes (the inertia tensor's off-diagonal terms are checked to vanish)."""
    m = np.asarray(masses, np.float64)
    x = np.asarray(positions, np.float64)
    x = x - (m[:, None] * x).sum(0) / m.sum()
    tensor = np.einsum("i,ij,ik->jk", m, x, x)
    inertia = np.trace(tensor) * np.eye(3) - tensor
    assert np.allclose(inertia, np.diag(np.diag(inertia)), atol=1e-12), "geometry not on its principal axes"
    return x, [float(v) for v in np.diag(inertia)]


def _spce() -> dict:
    half = math.radians(109.47) / 2.0
    geometry = [[0.0, 0.0, 0.0], [math.sin(half), 0.0, math.cos(half)], [-math.sin(half), 0.0, math.cos(half)]]
    x, inertia = _principal([M_O, M_H, M_H], geometry)
    o, h1, h2 = (list(map(float, v)) for v in x)
    return {"components": {"spce": {"mass": M_O + 2 * M_H, "inertia": inertia, "sites": [
        {"kind": "lj", "position": o, "sigma": 3.166, "epsilon": 0.650},
        {"kind": "charge", "position": o, "charge": -0.8476},
        {"kind": "charge", "position": h1, "charge": 0.4238},
        {"kind": "charge", "position": h2, "charge": 0.4238}]}},
        "cutoff": 9.0, "electrostatics": {"method": "reaction-field", "epsilon_rf": 78.3},
        "coulomb_constant": COULOMB_A_KJ}


def _stockmayer() -> dict:
    return {"components": {"stockmayer": {"mass": 1.0, "inertia": [0.025, 0.025, 0.0], "sites": [
        {"kind": "lj", "position": [0.0, 0.0, 0.0], "sigma": 1.0, "epsilon": 1.0},
        {"kind": "dipole", "position": [0.0, 0.0, 0.0], "direction": [0.0, 0.0, 1.0], "moment": math.sqrt(3.0)}]}},
        "cutoff": 2.5, "electrostatics": {"method": "reaction-field", "epsilon_rf": "inf"}, "coulomb_constant": 1.0}


def _n2() -> dict:
    half = 1.0464 / 2.0
    x, inertia = _principal([M_N, M_N], [[0.0, 0.0, -half], [0.0, 0.0, half]])
    eps = 34.897 * K_TO_KJ
    return {"components": {"n2": {"mass": 2 * M_N, "inertia": inertia, "sites": [
        {"kind": "lj", "position": list(map(float, x[0])), "sigma": 3.3211, "epsilon": eps},
        {"kind": "lj", "position": list(map(float, x[1])), "sigma": 3.3211, "epsilon": eps},
        {"kind": "quadrupole", "position": [0.0, 0.0, 0.0], "direction": [0.0, 0.0, 1.0],
         "moment": 1.4397 * DEBYE_E_A}]}},
        "cutoff": 10.0, "electrostatics": {"method": "none"}, "coulomb_constant": COULOMB_A_KJ}


_BUILD = {"spce": _spce, "stockmayer": _stockmayer, "n2": _n2}
NAMES = tuple(_BUILD)


def components_file(name: str, cutoff: float | None = None) -> dict:
    """The components file of model `name` (a JSON-ready dict; a copy), with another cutoff if given."""
    data = copy.deepcopy(_BUILD[name]())
    if cutoff is not None:
        data["cutoff"] = float(cutoff)
    return data
