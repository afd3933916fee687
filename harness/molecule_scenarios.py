"""Seeded rigid-molecule configurations (mdcore.molecules): the molecule scenarios.

Each maps (n, seed) to molecules and their components file (mdcore.molecule_library): centres on a
simple cubic lattice of m^3 >= n points (n of them taken at random, jittered by 5% of the spacing) in a
periodic cube at the model's liquid density, orientations uniformly random. The same arguments give
the same bits. Sizes: tiny (unit tests), small (CI), medium (the targets' 32,768 molecules) and
large (a million).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mdcore import Box, InputError
from mdcore import molecule_library, molecules

SIZES = {"tiny": 216, "small": 1000, "medium": 32768, "large": 1000000}
JITTER = 0.05


@dataclass(frozen=True)
class MoleculeScenario:
    name: str
    model: str  # the molecule_library entry
    density: float  # molecules per unit volume
    description: str

    def components(self) -> molecules.Model:
        return molecules.parse(molecule_library.components_file(self.model), source=f"scenario {self.name}")


SCENARIOS: dict[str, MoleculeScenario] = {s.name: s for s in [
    MoleculeScenario("spce_water", "spce", 0.033328,
                     "SPC/E water at 0.997 g/cm^3 (300 K), reaction field eps_rf 78.3, cutoff 9 A on the centres"),
    MoleculeScenario("stockmayer", "stockmayer", 0.8,
                     "Stockmayer fluid (LJ + point dipole, mu*^2 = 3) at rho* = 0.8, conducting reaction field, "
                     "cutoff 2.5"),
    MoleculeScenario("two_centre_lj_quadrupole", "n2",
                     0.807 / (2 * molecule_library.M_N) * 0.602214076,
                     "nitrogen as a 2CLJQ fluid (two LJ centres and a point quadrupole) at 0.807 g/cm^3 (77 K), "
                     "cutoff 10 A"),
]}


def parse_size(size: str | int) -> int:
    if isinstance(size, str) and size in SIZES:
        return SIZES[size]
    try:
        n = int(float(str(size).replace("_", "")))
    except ValueError:
        raise InputError(f"n: expected a molecule count or a size name ({', '.join(SIZES)}), got {size!r}") from None
    if n < 2 or float(str(size).replace("_", "")) != n:
        raise InputError(f"n: a molecule system needs a whole number of at least 2 molecules, got {size!r}")
    return n


def random_quaternions(rng: np.random.Generator, n: int) -> np.ndarray:
    """n unit quaternions (w, x, y, z) uniform over the rotations (Shoemake's method)."""
    u1, u2, u3 = rng.random((3, n))
    a, b = np.sqrt(1.0 - u1), np.sqrt(u1)
    q = np.stack([a * np.sin(2 * np.pi * u2), a * np.cos(2 * np.pi * u2),
                  b * np.sin(2 * np.pi * u3), b * np.cos(2 * np.pi * u3)], 1)
    return q / np.linalg.norm(q, axis=1)[:, None]


PARAMETERS = {"switch": "where the switch on the centres' distance starts (below the cutoff; default none: a plain "
                         "cutoff)"}


def named(spec: str) -> bool:
    """Whether `spec` ('spce_water' or 'spce_water:switch=8') names a molecule scenario."""
    return spec.partition(":")[0] in SCENARIOS


def components_doc(spec: str) -> dict:
    """The components file of scenario spec `name[:switch=S]`: the model's, with the switch where given.
    Unknown names, parameters and values end in one line."""
    name, _, rest = spec.partition(":")
    if name not in SCENARIOS:
        raise InputError(f"unknown molecule scenario {name!r}; known: {', '.join(SCENARIOS)}")
    doc = molecule_library.components_file(SCENARIOS[name].model)
    for item in (x for x in rest.split(",") if x.strip()):
        key, eq, value = item.strip().partition("=")
        if key not in PARAMETERS or not eq:
            raise InputError(f"scenario {name}: {item.strip()!r}: a molecule scenario takes "
                             f"{', '.join(k + '=' for k in PARAMETERS)} ({'; '.join(PARAMETERS.values())})")
        try:
            doc[key] = float(value)
        except ValueError:
            raise InputError(f"scenario {name}: {key}={value!r} is not a number") from None
    return doc


def make(name: str, size: str | int = "small", seed: int = 1) -> tuple[molecules.Molecules, molecules.Model]:
    """The molecules of scenario `name` (a spec: 'spce_water' or 'spce_water:switch=8') at `size` (a size
    name or a molecule count) and their model."""
    doc = components_doc(name)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a whole number >= 0, got {seed!r}")
    name = name.partition(":")[0]
    sc = SCENARIOS[name]
    n = parse_size(size)
    model = molecules.parse(doc, source=f"scenario {name}")
    side = (n / sc.density) ** (1.0 / 3.0)
    if model.cutoff > 0.5 * side:
        smallest = math.ceil(sc.density * (2.0 * model.cutoff) ** 3)
        raise InputError(f"molecule scenario {name}: {n} molecules give a periodic box of side {side:.3g}, shorter "
                         f"than twice the cutoff ({2 * model.cutoff:g}); the smallest count it takes is {smallest}")
    rng = np.random.default_rng(seed)
    m = math.ceil(n ** (1.0 / 3.0) - 1e-9)
    spacing = side / m
    grid = np.stack(np.meshgrid(*(np.arange(m),) * 3, indexing="ij"), -1).reshape(-1, 3)
    take = np.sort(rng.permutation(len(grid))[:n])
    centres = (grid[take] + 0.5 + JITTER * rng.uniform(-1.0, 1.0, (n, 3))) * spacing
    q = random_quaternions(rng, n)
    box = Box.make([side] * 3, True)
    mols = molecules.Molecules(centres % side, q, np.zeros(n, np.int32), box)
    mols.check(model)
    return mols, model


def write(path, mols: molecules.Molecules, model: molecules.Model) -> None:
    """An .npz that mdcore.molecules.read takes back (positions, quaternions, components, box, periodic)."""
    np.savez(path, positions=mols.centres, quaternions=mols.quaternions,
             components=np.array([model.names[c] for c in mols.components]), box=np.asarray(mols.box.lengths),
             periodic=np.asarray(mols.box.periodic, bool))
