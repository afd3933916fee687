"""Bring your own configuration: extended XYZ (ASE's convention) or .npz.

Extended XYZ: line 1 the particle count; line 2 key=value pairs with
Lattice="Lx 0 0 0 Ly 0 0 0 Lz" (orthorhombic only) and pbc="T T T" (default T T T when a
Lattice is given, as in ASE); optional Properties=species:S:1:pos:R:3:... says which
columns hold the positions (default: species then x y z). Origin="x y z" is subtracted.
.npz: arrays positions (N, 3), box (3,) or a diagonal (3, 3), periodic (3,) or one bool.
"""
from __future__ import annotations

import shlex
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


def _pos_columns(props: str | None, path: Path) -> int:
    """First column holding the position, from Properties=name:type:count:..."""
    if props is None:
        return 1
    parts = props.split(":")
    if len(parts) % 3:
        raise InputError(f"{path}: Properties={props!r} is not a list of name:type:count triples")
    col = 0
    for name, _kind, count in zip(parts[0::3], parts[1::3], parts[2::3]):
        if name.lower() == "pos":
            return col
        col += int(count)
    raise InputError(f"{path}: Properties has no 'pos' entry ({props!r})")


def read_xyz(path: Path) -> tuple[np.ndarray, Box]:
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
    col = _pos_columns(info.get("properties"), path)
    pos = np.empty((n, 3))
    for k in range(n):
        words = lines[2 + k].split()
        try:
            pos[k] = [float(w) for w in words[col:col + 3]]
        except (ValueError, IndexError):
            raise InputError(f"{path} line {3 + k}: expected x y z in columns {col + 1}-{col + 3}, "
                             f"got {lines[2 + k]!r}") from None
    if "origin" in info:
        try:
            pos -= np.array(info["origin"].split(), dtype=np.float64).reshape(3)
        except ValueError:
            raise InputError(f"{path} line 2: Origin must be 3 numbers, got {info['origin']!r}") from None
    return pos, box


def read_npz(path: Path) -> tuple[np.ndarray, Box]:
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
    return data["positions"], Box.make(data["box"], periodic)


def read_configuration(path: str | Path) -> tuple[np.ndarray, Box]:
    """Positions (N, 3) and box from an .xyz / .extxyz or .npz file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"input: no such file {p}")
    suffix = p.suffix.lower()
    if suffix in (".xyz", ".extxyz"):
        return read_xyz(p)
    if suffix == ".npz":
        return read_npz(p)
    raise InputError(f"input: {p} has an unknown format {suffix!r}; use .xyz/.extxyz (extended XYZ) or .npz")


def write_xyz(path: str | Path, positions: np.ndarray, box: Box, species: str = "Ar") -> None:
    """Extended XYZ with every coordinate written as the shortest repr that round-trips."""
    L = [repr(float(v)) for v in box.lengths]
    pbc = " ".join("T" if b else "F" for b in box.periodic)
    head = f'Lattice="{L[0]} 0.0 0.0 0.0 {L[1]} 0.0 0.0 0.0 {L[2]}" Properties=species:S:1:pos:R:3 pbc="{pbc}"'
    body = "\n".join(f"{species} {x!r} {y!r} {z!r}" for x, y, z in np.asarray(positions, dtype=np.float64).tolist())
    Path(path).write_text(f"{len(positions)}\n{head}\n{body}\n")


def write_npz(path: str | Path, positions: np.ndarray, box: Box) -> None:
    np.savez(path, positions=np.asarray(positions, dtype=np.float64), box=box.array,
             periodic=np.array(box.periodic))


def write_configuration(path: str | Path, positions: np.ndarray, box: Box) -> None:
    suffix = Path(path).suffix.lower()
    if suffix in (".xyz", ".extxyz"):
        write_xyz(path, positions, box)
    elif suffix == ".npz":
        write_npz(path, positions, box)
    else:
        raise InputError(f"output: unknown format {suffix!r}; use .xyz or .npz")

