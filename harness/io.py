"""Bring your own configuration: extended XYZ (ASE's convention) or .npz.

Extended XYZ: line 1 the particle count; line 2 key=value pairs with
Lattice="Lx 0 0 0 Ly 0 0 0 Lz" (orthorhombic only) and pbc="T T T" (default T T T when a
Lattice is given, as in ASE); optional Properties=species:S:1:pos:R:3:... says which
columns hold the positions (default: species then x y z). Origin="x y z" is subtracted.
.npz: arrays positions (N, 3), box (3,) or a diagonal (3, 3), periodic (3,) or one bool.

Particle attributes (read_particles): a type per particle and a charge. Extended XYZ: the species
column names the type; a column initial_charges (ASE's name), charge or charges holds the charges.
.npz: types (N,) integers (indices into the force field's types, or into type_names where the file
has them) and charges (N,).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mdcore import Box, InputError

_TRUE = {"t", "true", "1"}
_FALSE = {"f", "false", "0"}


def _bools(text: str, what: str) -> tuple[bool, bool, bool]:
    words = text.replace(",", " ").split()
    if len(words) == 1:
        words *= 3
    if len(words) != 3 or any(w.lower() not in _TRUE | _FALSE for w in words):
        raise InputError(f"{what}: expected three of T/F, got {text!r}")
    return tuple(w.lower() in _TRUE for w in words)  # type: ignore[return-value]


def _comment_pairs(line: str) -> dict[str, str]:
    try:
        tokens = shlex.split(line)
    except ValueError as e:
        raise InputError(f"comment line: {e}") from None
    out = {}
    for tok in tokens:
        key, eq, val = tok.partition("=")
        if eq:
            out[key.lower()] = val
    return out


CHARGE_COLUMNS = ("initial_charges", "charge", "charges")


def _columns(props: str | None, path: Path) -> dict[str, int]:
    """Property name (lower case) -> its first column, from Properties=name:type:count:...
    (default: species then pos)."""
    if props is None:
        return {"species": 0, "pos": 1}
    parts = props.split(":")
    if len(parts) % 3:
        raise InputError(f"{path}: Properties={props!r} is not a list of name:type:count triples")
    out, col = {}, 0
    for name, _kind, count in zip(parts[0::3], parts[1::3], parts[2::3]):
        out[name.lower()] = col
        try:
            col += int(count)
        except ValueError:
            raise InputError(f"{path}: Properties={props!r}: count {count!r} of {name} is not a number") from None
    if "pos" not in out:
        raise InputError(f"{path}: Properties has no 'pos' entry ({props!r})")
    return out


def _pos_columns(props: str | None, path: Path) -> int:
    """First column holding the position, from Properties=name:type:count:..."""
    return _columns(props, path)["pos"]


@dataclass
class Particles:
    """A configuration with what its particles carry: species (a name each, XYZ), types (indices,
    .npz) with type_names where the file names them, charges; None where the file has none."""

    positions: np.ndarray
    box: Box
    species: list[str] | None = None
    types: np.ndarray | None = None
    type_names: list[str] | None = None
    charges: np.ndarray | None = None

    def names(self) -> list[str] | None:
        """A type name per particle where the file gives names (species, or type_names[types])."""
        if self.species is not None:
            return self.species
        if self.types is not None and self.type_names is not None:
            return [self.type_names[t] for t in self.types]
        return None


def read_xyz(path: Path) -> Particles:
    lines = path.read_text().splitlines()
    if len(lines) < 2:
        raise InputError(f"{path}: an XYZ file needs a count line and a comment line")
    try:
        n = int(lines[0].split()[0])
    except (ValueError, IndexError):
        raise InputError(f"{path} line 1: expected the particle count, got {lines[0]!r}") from None
    body = len(lines) - 2
    while body > n and not lines[1 + body].strip():  # trailing blank lines
        body -= 1
    if n < 0 or body != n:
        extra = ""
        if body > n >= 0 and lines[2 + n].split() and lines[2 + n].split()[0].isdigit():
            extra = f" (line {3 + n} starts another frame: this reader takes files of one frame)"
        raise InputError(f"{path}: header says {n} particles but the file has {body} particle lines{extra}")
    info = _comment_pairs(lines[1])
    if "lattice" not in info:
        raise InputError(f"{path} line 2: no Lattice=\"Lx 0 0 0 Ly 0 0 0 Lz\"; the box must be given")
    try:
        lattice = np.array(info["lattice"].split(), dtype=np.float64)
    except ValueError:
        raise InputError(f"{path} line 2: Lattice must be 9 numbers, got {info['lattice']!r}") from None
    if lattice.shape != (9,):
        raise InputError(f"{path} line 2: Lattice must be 9 numbers, got {lattice.size}")
    periodic = _bools(info.get("pbc", "T T T"), f"{path} line 2: pbc")
    box = Box.make(lattice.reshape(3, 3), periodic)
    cols = _columns(info.get("properties"), path)
    col = cols["pos"]
    qcol = next((cols[c] for c in CHARGE_COLUMNS if c in cols), None)
    scol = cols.get("species")
    pos = np.empty((n, 3))
    species = [] if scol is not None else None
    charges = np.empty(n) if qcol is not None else None
    for k in range(n):
        words = lines[2 + k].split()
        try:
            pos[k] = [float(w) for w in words[col:col + 3]]
        except (ValueError, IndexError):
            raise InputError(f"{path} line {3 + k}: expected x y z in columns {col + 1}-{col + 3}, "
                             f"got {lines[2 + k]!r}") from None
        if species is not None:
            if scol >= len(words):
                raise InputError(f"{path} line {3 + k}: no species in column {scol + 1}")
            species.append(words[scol])
        if charges is not None:
            try:
                charges[k] = float(words[qcol])
            except (ValueError, IndexError):
                raise InputError(f"{path} line {3 + k}: expected a charge in column {qcol + 1}, "
                                 f"got {lines[2 + k]!r}") from None
    if "origin" in info:
        try:
            pos -= np.array(info["origin"].split(), dtype=np.float64).reshape(3)
        except ValueError:
            raise InputError(f"{path} line 2: Origin must be 3 numbers, got {info['origin']!r}") from None
    if charges is not None and not np.all(np.isfinite(charges)):
        raise InputError(f"{path}: particle {int(np.argmax(~np.isfinite(charges)))} has a non-finite charge")
    return Particles(pos, box, species=species, charges=charges)


def read_npz(path: Path) -> Particles:
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    if magic != b"PK\x03\x04":  # an .npz is a zip archive of .npy arrays
        raise InputError(f"{path}: not an .npz archive (numpy.savez writes one: arrays positions and box)")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as e:
        raise InputError(f"{path}: not a readable .npz file ({e})") from None
    missing = [k for k in ("positions", "box") if k not in data.files]
    if missing:
        raise InputError(f"{path}: missing array(s) {', '.join(missing)}; has {', '.join(data.files) or 'none'}")
    periodic = data["periodic"] if "periodic" in data.files else True
    pos = data["positions"]
    n = len(pos) if np.ndim(pos) == 2 else -1
    out = Particles(pos, Box.make(data["box"], periodic))
    if "types" in data.files:
        t = data["types"]
        if t.dtype.kind not in "iu" or t.shape != (n,):
            raise InputError(f"{path}: types must be {n} integers (one per particle), got {t.dtype} {t.shape}")
        if t.size and t.min() < 0:
            raise InputError(f"{path}: types: particle {int(np.argmin(t))} has a negative type index {int(t.min())}")
        out.types = t.astype(np.int32)
    if "type_names" in data.files:
        names = data["type_names"]
        if names.dtype.kind != "U" or names.ndim != 1:
            raise InputError(f"{path}: type_names must be a list of names, got {names.dtype} {names.shape}")
        if out.types is None:
            raise InputError(f"{path}: type_names without types")
        if out.types.size and out.types.max() >= len(names):
            raise InputError(f"{path}: types: index {int(out.types.max())} but type_names lists {len(names)}")
        out.type_names = [str(v) for v in names]
    if "charges" in data.files:
        q = data["charges"]
        if q.dtype.kind not in "iuf" or q.shape != (n,) or not np.all(np.isfinite(q)):
            raise InputError(f"{path}: charges must be {n} finite numbers (one per particle), got {q.dtype} {q.shape}")
        out.charges = q.astype(np.float64)
    return out


def read_particles(path: str | Path) -> Particles:
    """Positions, box and what the particles carry from an .xyz / .extxyz or .npz file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"input: no such file {p}")
    suffix = p.suffix.lower()
    if suffix in (".xyz", ".extxyz"):
        return read_xyz(p)
    if suffix == ".npz":
        return read_npz(p)
    raise InputError(f"input: {p} has an unknown format {suffix!r}; use .xyz/.extxyz (extended XYZ) or .npz")


def read_configuration(path: str | Path) -> tuple[np.ndarray, Box]:
    """Positions (N, 3) and box from an .xyz / .extxyz or .npz file."""
    c = read_particles(path)
    return c.positions, c.box


def write_xyz(path: str | Path, positions: np.ndarray, box: Box, species="Ar", charges=None) -> None:
    """Extended XYZ with every coordinate written as the shortest repr that round-trips; species: one
    name for all or one per particle; charges as ASE's initial_charges column."""
    L = [repr(float(v)) for v in box.lengths]
    pbc = " ".join("T" if b else "F" for b in box.periodic)
    props = "species:S:1:pos:R:3" + (":initial_charges:R:1" if charges is not None else "")
    head = f'Lattice="{L[0]} 0.0 0.0 0.0 {L[1]} 0.0 0.0 0.0 {L[2]}" Properties={props} pbc="{pbc}"'
    names = [species] * len(positions) if isinstance(species, str) else list(species)
    q = [""] * len(positions) if charges is None else [f" {float(v)!r}" for v in charges]
    body = "\n".join(f"{s} {x!r} {y!r} {z!r}{c}" for s, (x, y, z), c in
                     zip(names, np.asarray(positions, dtype=np.float64).tolist(), q))
    Path(path).write_text(f"{len(positions)}\n{head}\n{body}\n")


def write_npz(path: str | Path, positions: np.ndarray, box: Box, types=None, type_names=None, charges=None) -> None:
    extra = {}
    if types is not None:
        extra["types"] = np.asarray(types, dtype=np.int32)
    if type_names is not None:
        extra["type_names"] = np.asarray(list(type_names), dtype=str)
    if charges is not None:
        extra["charges"] = np.asarray(charges, dtype=np.float64)
    np.savez(path, positions=np.asarray(positions, dtype=np.float64), box=box.array,
             periodic=np.array(box.periodic), **extra)


def write_configuration(path: str | Path, positions: np.ndarray, box: Box, particles: Particles | None = None) -> None:
    """particles: types (names or indices) and charges to write with the positions."""
    suffix = Path(path).suffix.lower()
    p = particles
    if suffix in (".xyz", ".extxyz"):
        names = p.names() if p is not None else None
        if p is not None and names is None and p.types is not None:
            names = [str(t) for t in p.types]  # indices without names: the index as the species
        write_xyz(path, positions, box, species=names or "Ar", charges=p.charges if p is not None else None)
    elif suffix == ".npz":
        if p is None:
            write_npz(path, positions, box)
        else:
            types, type_names = p.types, p.type_names
            if types is None and p.species is not None:
                type_names = list(dict.fromkeys(p.species))
                lookup = {t: k for k, t in enumerate(type_names)}
                types = np.array([lookup[s] for s in p.species], np.int32)
            write_npz(path, positions, box, types=types, type_names=type_names, charges=p.charges)
    else:
        raise InputError(f"output: unknown format {suffix!r}; use .xyz or .npz")
