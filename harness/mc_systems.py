"""Built-in systems for `harness mc --system NAME[:key=value,...]`: rigid water molecules placed at
random centres with random orientations in a cubic box, with the Ewald parameters the measurements in
docs/forcefield.md use (a 1 nm cutoff, alpha 3.12 per nm, kmax 10, 10, 11: 5,071 wave vectors in a
half space at the default box). Units are nm, e and kJ/mol.

  water   three sites, all charged (SPC/E: O -0.8476, H +0.4238 twice)
  water4  four sites, the oxygen uncharged (TIP4P: O 0, H +0.52 twice, M -1.04 on the bisector): the
          system on which sending only the charged atoms can matter

Keys: molecules (default 3000), box (the cube's side in nm, default 4.5; at least twice the cutoff).
The same name, keys and --seed give the same positions.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mdcore import InputError, parse_value

CUTOFF = 1.0
ALPHA = 3.12
KMAX = (10, 10, 11)
COULOMB = 138.935456
DEFAULTS = {"molecules": 3000, "box": 4.5}
MAX_MOLECULES = 1_000_000

_H = (0.0816, 0.0577, 0.0)  # an H site in the molecule's frame (nm): 0.1 nm from O at 109.47 degrees
SITES = {
    "water": (np.array([[0.0, 0.0, 0.0], [_H[0], _H[1], 0.0], [-_H[0], _H[1], 0.0]]),
              np.array([-0.8476, 0.4238, 0.4238])),
    "water4": (np.array([[0.0, 0.0, 0.0], [0.0757, 0.0586, 0.0], [-0.0757, 0.0586, 0.0], [0.0, 0.015, 0.0]]),
               np.array([0.0, 0.52, 0.52, -1.04])),
}


def parse(spec: str) -> tuple[str, dict]:
    """`NAME[:key=value,...]` read and checked: (name, {molecules, box})."""
    name, _, rest = spec.strip().partition(":")
    if name not in SITES:
        raise InputError(f"--system {spec}: unknown system {name!r}; choose one of {', '.join(SITES)}")
    keys = dict(DEFAULTS)
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if not eq or key not in DEFAULTS:
            raise InputError(f"--system {spec}: {item!r} is not one of {', '.join(k + '=' for k in DEFAULTS)}")
        keys[key] = parse_value(val)
    m, box = keys["molecules"], keys["box"]
    if not isinstance(m, int) or not 1 <= m <= MAX_MOLECULES:
        raise InputError(f"--system {spec}: molecules must be a whole number from 1 to {MAX_MOLECULES:,}, got {m!r}")
    if isinstance(box, str) or not np.isfinite(box) or box < 2.0 * CUTOFF:
        raise InputError(f"--system {spec}: box must be a side in nm of at least {2.0 * CUTOFF:g} (twice the cutoff), "
                         f"got {box!r}")
    return name, {"molecules": m, "box": float(box)}


def label(name: str, keys: dict) -> str:
    return f"{name}:molecules={keys['molecules']},box={keys['box']:g}"


def build(name: str, keys: dict, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(positions wrapped into the box, charges, molecule id per atom, box lengths)."""
    body, charges = SITES[name]
    rng = np.random.default_rng(seed)
    m, L = keys["molecules"], np.full(3, keys["box"])
    centres = rng.random((m, 3)) * L
    turns = np.linalg.qr(rng.normal(size=(m, 3, 3)))[0]  # a random orthogonal frame per molecule
    x = centres[:, None, :] + np.einsum("mij,sj->msi", turns, body)
    return ((x.reshape(-1, 3) % L), np.tile(charges, m), np.repeat(np.arange(m), len(body)), L)


def write(name: str, keys: dict, seed: int, folder: Path) -> tuple[Path, Path]:
    """The system as an .npz (positions, box, charges, types, mol) and its force-field file, in folder."""
    x, q, ids, L = build(name, keys, seed)
    conf, ff = folder / f"{name}.npz", folder / f"{name}.json"
    np.savez(conf, positions=x, box=L, charges=q, types=np.zeros(len(x), np.int64), mol=ids)
    ff.write_text(json.dumps({"types": ["X"], "coulomb_constant": COULOMB,
                              "electrostatics": {"method": "ewald", "cutoff": CUTOFF, "alpha": ALPHA,
                                                 "kmax": list(KMAX)}}))
    return conf, ff
