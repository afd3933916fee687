"""Rigid molecules (`--molecules FILE.json`): components made of sites at body-frame positions, as
ls1-MarDyn's component descriptors, and the molecules' centres, orientations and components.

    {"components": {"spce": {"mass": 18.015, "inertia": [Ixx, Iyy, Izz],
       "sites": [{"kind": "lj", "position": [0, 0, z_O], "sigma": 3.166, "epsilon": 0.650},
                 {"kind": "charge", "position": [0, 0, z_O], "charge": -0.8476}, ...]}},
     "mixing": {"xi": {"spce|spce": 1.0}, "eta": {"spce|spce": 1.0}},
     "cutoff": 9.0, "electrostatics": {"method": "reaction-field", "epsilon_rf": "inf"},
     "coulomb_constant": 1389.35456}

Site kinds: `lj` (sigma, epsilon), `charge` (charge), `dipole` and `quadrupole` (direction, moment).
Positions are relative to the centre of mass in the body frame, `inertia` the principal moments.
Mixing per pair of components: epsilon_ij = xi sqrt(epsilon_i epsilon_j), sigma_ij = eta (sigma_i +
sigma_j) / 2 (xi = eta = 1 where the file names no value). All sites of two molecules interact when
their centres lie within the cutoff. Electrostatics: `none` or `reaction-field` (epsilon_rf, "inf"
allowed; the charges' k_rf and c_rf as in mdcore.forcefield).

A molecule's orientation is a unit quaternion (w, x, y, z) turning body-frame vectors into the lab
frame (R(q) below); a zero quaternion is refused, another one not of unit length normalised (and said).
Every value is checked by name: InputError, one line.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .forcefield import epsilon_rf_value, reaction_field
from .precision import MODES, PRECISIONS
from .problem import Box

KINDS = ("lj", "charge", "dipole", "quadrupole")
METHODS = ("none", "reaction-field")
SITE_KEYS = {"lj": {"sigma", "epsilon"}, "charge": {"charge"}, "dipole": {"direction", "moment"},
             "quadrupole": {"direction", "moment"}}
NORM_TOLERANCE = 1e-6  # |q| - 1 beyond which a quaternion is said to be normalised


@dataclass(frozen=True, eq=False)
class Component:
    """One molecule type: its sites as arrays (S sites; a value the kind does not use is 0)."""

    name: str
    mass: float
    inertia: np.ndarray  # (3,)
    kinds: tuple[str, ...]
    position: np.ndarray  # (S, 3) body frame
    sigma: np.ndarray
    epsilon: np.ndarray
    charge: np.ndarray
    direction: np.ndarray  # (S, 3) unit vectors
    moment: np.ndarray


@dataclass(frozen=True, eq=False)
class Model:
    components: tuple[Component, ...]
    xi: np.ndarray  # (C, C)
    eta: np.ndarray
    cutoff: float
    method: str = "none"
    epsilon_rf: float = math.inf
    coulomb_constant: float = 1.0
    source: str = ""
    switch: float | None = None  # where the switch on the centres' distance starts (None: a plain cutoff)

    @property
    def rf_dipoles(self) -> float:
        """rf of the dipole - dipole reaction field: 2 (eps_rf - 1) / ((2 eps_rf + 1) r_c^3), 1 / r_c^3 at
        eps_rf = inf, 0 without a reaction field."""
        if self.method != "reaction-field":
            return 0.0
        if math.isinf(self.epsilon_rf):
            return 1.0 / self.cutoff ** 3
        return 2.0 * (self.epsilon_rf - 1.0) / ((2.0 * self.epsilon_rf + 1.0) * self.cutoff ** 3)

    @property
    def switch_start(self) -> float:
        """r_s: the pair energies are scaled by S(r) from r_s to the cutoff (the cutoff itself: no switch)."""
        return self.cutoff if self.switch is None else self.switch

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components)

    @property
    def k_rf(self) -> float:
        return reaction_field(self.epsilon_rf, self.cutoff)[0] if self.method == "reaction-field" else 0.0

    @property
    def c_rf(self) -> float:
        return reaction_field(self.epsilon_rf, self.cutoff)[1] if self.method == "reaction-field" else 0.0

    def where(self) -> str:
        return f"components file {self.source}" if self.source else "components file"

    def index(self, names) -> np.ndarray:
        lookup = {n: k for k, n in enumerate(self.names)}
        out = np.empty(len(names), np.int32)
        for i, n in enumerate(names):
            if str(n) not in lookup:
                raise InputError(f"{self.where()}: molecule {i} has component {str(n)!r}, which the file does not name "
                                 f"(components: {', '.join(self.names)})")
            out[i] = lookup[str(n)]
        return out


def load(path: str | Path) -> Model:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"--molecules: no such file {p}")
    try:
        data = json.loads(p.read_text())
    except ValueError as e:
        raise InputError(f"--molecules {p}: not valid JSON ({e})") from None
    return parse(data, source=str(p))


def parse(data: Any, source: str = "") -> Model:
    where = f"components file {source}" if source else "components file"

    def bad(msg: str) -> InputError:
        return InputError(f"{where}: {msg}")

    if not isinstance(data, dict):
        raise bad(f"expected an object with components, got {type(data).__name__}")
    unknown = sorted(set(data) - {"components", "mixing", "cutoff", "switch", "electrostatics", "coulomb_constant"})
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)}")
    comps = data.get("components")
    if not isinstance(comps, dict) or not comps:
        raise bad("components must be an object naming at least one component")
    components = tuple(_component(name, c, bad) for name, c in comps.items())
    names = [c.name for c in components]
    C = len(components)
    mix = data.get("mixing", {})
    if not isinstance(mix, dict) or set(mix) - {"xi", "eta"}:
        raise bad("mixing takes xi and eta, each an object {\"a|b\": value}")
    tables = {}
    for key in ("xi", "eta"):
        t = np.ones((C, C))
        entries = mix.get(key, {})
        if not isinstance(entries, dict):
            raise bad(f"mixing.{key} must be an object {{\"a|b\": value}}")
        for pair, v in entries.items():
            a, sep, b = str(pair).partition("|")
            if not sep or a not in names or b not in names:
                raise bad(f"mixing.{key}: {pair!r} must name two components as \"a|b\" (components: {', '.join(names)})")
            v = _positive(v, f"mixing.{key}[{pair}]", bad)
            t[names.index(a), names.index(b)] = t[names.index(b), names.index(a)] = v
        tables[key] = t
    cutoff = _positive(data.get("cutoff"), "cutoff", bad)
    switch = None
    if "switch" in data:
        switch = _positive(data["switch"], "switch", bad)
        if switch >= cutoff:
            raise bad(f"switch {switch:g} must lie below the cutoff {cutoff:g} (the switch runs from it to the cutoff)")
    es = data.get("electrostatics", {"method": "none"})
    if not isinstance(es, dict) or es.get("method", "none") not in METHODS or set(es) - {"method", "epsilon_rf"}:
        raise bad(f"electrostatics takes method ({', '.join(METHODS)}) and, for reaction-field, epsilon_rf")
    kw: dict = {"method": es.get("method", "none")}
    if "epsilon_rf" in es:
        if kw["method"] != "reaction-field":
            raise bad("electrostatics: epsilon_rf belongs to reaction-field")
        kw["epsilon_rf"] = epsilon_rf_value(es["epsilon_rf"], bad)
    kw["coulomb_constant"] = _positive(data.get("coulomb_constant", 1.0), "coulomb_constant", bad)
    return Model(components, tables["xi"], tables["eta"], cutoff, source=source, switch=switch, **kw)


def _positive(v, name: str, bad, zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise bad(f"{name} must be a number, got {v!r}")
    if float(v) < 0.0 or (float(v) == 0.0 and not zero):
        raise bad(f"{name} must be {'>= 0' if zero else '> 0'}, got {v!r}")
    return float(v)


def _vector(v, name: str, bad) -> np.ndarray:
    if not isinstance(v, list) or len(v) != 3 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                         and math.isfinite(float(x)) for x in v):
        raise bad(f"{name} must be three numbers, got {v!r}")
    return np.array(v, np.float64)


def _component(name: str, c: Any, bad) -> Component:
    where = f"component {name!r}"
    if not isinstance(c, dict) or set(c) - {"mass", "inertia", "sites"}:
        raise bad(f"{where} takes mass, inertia and sites")
    mass = _positive(c.get("mass"), f"{where}: mass", bad)
    inertia = _vector(c.get("inertia"), f"{where}: inertia", bad)
    if np.any(inertia < 0.0):
        raise bad(f"{where}: inertia must be >= 0 on every axis, got {inertia.tolist()}")
    sites = c.get("sites")
    if not isinstance(sites, list) or not sites:
        raise bad(f"{where}: sites must be a non-empty list")
    S = len(sites)
    kinds, pos = [], np.zeros((S, 3))
    cols = {k: np.zeros(S) for k in ("sigma", "epsilon", "charge", "moment")}
    direction = np.zeros((S, 3))
    for i, s in enumerate(sites):
        at = f"{where}: site {i}"
        if not isinstance(s, dict) or s.get("kind") not in KINDS:
            raise bad(f"{at}: kind {s.get('kind') if isinstance(s, dict) else s!r} is not one of {', '.join(KINDS)}")
        kind = s["kind"]
        extra = set(s) - {"kind", "position"} - SITE_KEYS[kind]
        missing = SITE_KEYS[kind] - set(s)
        if extra or missing:
            raise bad(f"{at}: a {kind} site takes position and {', '.join(sorted(SITE_KEYS[kind]))}"
                      + (f" (unknown: {', '.join(sorted(extra))})" if extra else "")
                      + (f" (missing: {', '.join(sorted(missing))})" if missing else ""))
        kinds.append(kind)
        pos[i] = _vector(s.get("position"), f"{at}: position", bad)
        if kind == "lj":
            cols["sigma"][i] = _positive(s["sigma"], f"{at}: sigma", bad)
            cols["epsilon"][i] = _positive(s["epsilon"], f"{at}: epsilon", bad, zero=True)
        elif kind == "charge":
            q = s["charge"]
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(float(q)):
                raise bad(f"{at}: charge must be a number, got {q!r}")
            cols["charge"][i] = float(q)
        else:
            d = _vector(s["direction"], f"{at}: direction", bad)
            norm = float(np.linalg.norm(d))
            if norm == 0.0:
                raise bad(f"{at}: direction is the zero vector")
            direction[i] = d / norm
            cols["moment"][i] = _positive(s["moment"], f"{at}: moment", bad, zero=True)
    return Component(name, mass, inertia, tuple(kinds), pos, cols["sigma"], cols["epsilon"], cols["charge"],
                     direction, cols["moment"])


def rotation(q: np.ndarray) -> np.ndarray:
    """(M, 3, 3) rotation matrices of unit quaternions (M, 4) as (w, x, y, z): body frame -> lab frame."""
    q = np.asarray(q, np.float64).reshape(-1, 4)
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def unit_quaternions(q, where: str = "quaternions") -> tuple[np.ndarray, int]:
    """The quaternions normalised, and how many were not of unit length; a zero one is refused."""
    q = np.asarray(q, np.float64)
    if q.ndim != 2 or q.shape[1] != 4 or not np.all(np.isfinite(q)):
        raise InputError(f"{where}: expected finite (M, 4) quaternions (w, x, y, z), got shape {q.shape}")
    norm = np.linalg.norm(q, axis=1)
    if np.any(norm == 0.0):
        raise InputError(f"{where}: molecule {int(np.argmin(norm))} has the zero quaternion (no orientation)")
    off = int(np.sum(np.abs(norm - 1.0) > NORM_TOLERANCE))
    return q / norm[:, None], off


@dataclass(frozen=True, eq=False)
class Molecules:
    """Molecules in a box: centres of mass (M, 3), unit quaternions (M, 4), component indices (M,)."""

    centres: np.ndarray
    quaternions: np.ndarray
    components: np.ndarray
    box: Box
    normalised: int = 0  # quaternions that were not of unit length in the input
    _closest: tuple | None = None  # (molecule, molecule, distance) of the closest sites (check_precision)
    _passed: set | None = None  # (model, precision) pairs check_precision passed: a later call costs a lookup

    def check(self, model: Model) -> None:
        """The components and the cutoff against the file, and no two sites of different molecules closer
        than any precision computes (the float64 limit; check_precision takes the others)."""
        c = self.components
        if c.size and (c.min() < 0 or c.max() >= len(model.components)):
            bad = int(np.argmax((c < 0) | (c >= len(model.components))))
            raise InputError(f"{model.where()}: molecule {bad} has component index {int(c[bad])}; the file names "
                             f"{len(model.components)}")
        for a, axis in enumerate("xyz"):
            if self.box.periodic[a] and model.cutoff > 0.5 * self.box.lengths[a]:
                raise InputError(f"{model.where()}: cutoff {model.cutoff:g} is beyond half the periodic side along "
                                 f"{axis} ({self.box.lengths[a]:g} / 2)")
        self.check_precision(model, "fp64")

    def check_precision(self, model: Model, precision: str) -> None:
        """Refuse two sites of different molecules closer than `precision` computes (min_separation):
        a pair of them would have no direction, or its Lennard-Jones terms would overflow the compute
        type; every traversal would return inf or NaN, or stop inside numba."""
        if self._passed is not None and (model, precision) in self._passed:  # an evaluation's hot path
            return
        if self._closest is None:
            found = closest_sites(self, model, max(min_separation(model, p, self.box) for p in PRECISIONS
                                                   if not MODES[p].fixed))
            object.__setattr__(self, "_closest", found)
        i, j, r = self._closest
        limit = min_separation(model, precision, self.box)
        if i >= 0 and r < limit:
            what = "coincide (distance 0)" if r == 0.0 else f"are {r:.3g} apart"
            raise InputError(f"molecules {i} and {j}: two of their sites {what}; closer than {limit:.3g} two sites of "
                             f"different molecules have no direction or their Lennard-Jones terms overflow "
                             f"{MODES[precision].cxx_compute} ({precision}): move or turn one of them")
        if self._passed is None:
            object.__setattr__(self, "_passed", set())
        self._passed.add((model, precision))


def min_separation(model: Model, precision: str, box: Box) -> float:
    """The closest two sites of different molecules may be in this precision: the distance below which a
    Lennard-Jones site pair's terms overflow the compute type (LennardJones.min_distance, with the mixed
    sigma and epsilon of every pair of LJ sites), and the coordinate resolution (one ulp of the compute
    type at the box's largest length), as Problem.make takes them for points."""
    from .potentials import LennardJones

    out = MODES[precision].eps_compute * float(max(box.lengths))
    lj = [(a, float(c.sigma[k]), float(c.epsilon[k])) for a, c in enumerate(model.components)
          for k, kind in enumerate(c.kinds) if kind == "lj"]
    for a, sa, ea in lj:
        for b, sb, eb in lj:
            sigma, eps = model.eta[a, b] * 0.5 * (sa + sb), model.xi[a, b] * math.sqrt(ea * eb)
            if sigma > 0.0 and eps > 0.0:
                out = max(out, LennardJones(sigma=sigma, epsilon=eps, cutoff=model.cutoff).min_distance(precision))
    return out


def closest_sites(mols: Molecules, model: Model, r_check: float) -> tuple[int, int, float]:
    """The molecules of the closest two sites of different molecules, and their distance, where it is
    below r_check (else (-1, -1, inf)). Sites at one position within a molecule (an LJ centre and a
    charge) count once; r_check is capped at half the shortest distance between two distinct sites of
    one molecule, so that every pair found belongs to two molecules."""
    from .closest import closest_below

    body, intra = [], math.inf
    for c in model.components:
        p = np.unique(np.asarray(c.position, np.float64).reshape(-1, 3), axis=0)
        body.append(p)
        if len(p) > 1:
            d = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1)
            intra = min(intra, float(d[np.triu_indices(len(p), 1)].min()))
    r_check = min(r_check, 0.5 * intra)
    if not len(mols.centres) or r_check <= 0.0:
        return -1, -1, math.inf
    rot = rotation(mols.quaternions)
    counts = np.array([len(body[k]) for k in mols.components])
    owner = np.repeat(np.arange(len(mols.centres)), counts)
    local = np.concatenate([body[k] for k in mols.components])
    sites = mols.centres[owner] + np.einsum("sij,sj->si", rot[owner], local)
    i, j, r = closest_below(sites, mols.box.lengths, mols.box.periodic, r_check)
    return (-1, -1, math.inf) if i < 0 else (int(owner[i]), int(owner[j]), r)


def read(path: str | Path, model: Model) -> Molecules:
    """An .npz with positions (centres of mass), quaternions (w, x, y, z), components (names, or indices
    into component_names or the file's components), box and periodic."""
    p = Path(path)
    if p.suffix.lower() != ".npz":
        raise InputError(f"--input {p}: molecules come as .npz (positions, quaternions, components, box)")
    if not p.is_file():
        raise InputError(f"--input: no such file {p}")
    with np.load(p) as f:
        missing = [k for k in ("positions", "quaternions", "components", "box") if k not in f]
        if missing:
            raise InputError(f"--input {p}: missing key(s) {', '.join(missing)}")
        x = np.asarray(f["positions"], np.float64)
        comps = f["components"]
        names = [str(v) for v in f["component_names"]] if "component_names" in f else None
        box = Box.make(f["box"], f["periodic"] if "periodic" in f else True)
        q, off = unit_quaternions(f["quaternions"], f"--input {p}: quaternions")
    if x.ndim != 2 or x.shape[1] != 3 or not np.all(np.isfinite(x)):
        raise InputError(f"--input {p}: positions must be finite (M, 3), got shape {x.shape}")
    if len(q) != len(x) or len(comps) != len(x):
        raise InputError(f"--input {p}: {len(x)} positions, {len(q)} quaternions and {len(comps)} components")
    if comps.dtype.kind in "US":
        index = model.index(comps)
    elif names is not None:
        index = model.index([names[int(i)] for i in comps])
    else:
        index = np.asarray(comps, np.int32)
    out = Molecules(x, q, index, box, off)
    out.check(model)
    return out
