"""A force-field file: particle types with a Lennard-Jones pair table, and point charges with
reaction field or Ewald real space (`--forcefield FILE.json`).

    {"types": ["A", "B"],
     "lj": {"sigma": [1.0, 0.88], "epsilon": [1.0, 0.5], "mixing": "lorentz-berthelot",
            "cutoff": 2.5, "shift": false},
     "electrostatics": {"method": "reaction-field", "epsilon_rf": 78.3, "cutoff": 2.5},
     "coulomb_constant": 1.0}

lj takes per-type `sigma` and `epsilon` with `mixing` "lorentz-berthelot" (sigma_ij = (sigma_i +
sigma_j) / 2, epsilon_ij = sqrt(epsilon_i epsilon_j)) or "geometric" (both geometric means), or full
symmetric tables `pair_sigma` and `pair_epsilon` (Kob-Andersen is not Lorentz-Berthelot).
`cutoff` is in length units; with `"cutoff_in_sigma": true` each pair's cutoff is cutoff x
sigma_ij (Kob-Andersen's 2.5 sigma_ab). `shift` subtracts each pair's energy at its cutoff.

electrostatics.method:
  none            no charges (a file with charges and method none is refused)
  reaction-field  u = k q_i q_j (1/r + k_rf r^2 - c_rf), k_rf = (eps_rf - 1) / ((2 eps_rf + 1) r_c^3),
                  c_rf = 1/r_c + k_rf r_c^2 (eps_rf "inf": k_rf = 1 / (2 r_c^3))
  ewald           the real-space term u = k q_i q_j erfc(alpha r) / r; alpha given, or from
                  `tolerance` delta as alpha = sqrt(-ln(2 delta)) / r_c (OpenMM's choice). The pair
                  kernels compute this part; the reciprocal part (mdcore.ewald, the kspace
                  strategies) takes `kmax`, the largest |n| of the wave vectors (one integer or
                  three), or derives it from the tolerance (given, or the one alpha and r_c imply)
                  as OpenMM does. Ewald needs a box periodic in all three axes.

A file without `lj` describes point charges only (its electrostatics method is then required).

Units are the user's: positions, sigma and cutoffs in one length unit; k = coulomb_constant turns
q^2 / r into the energy unit (138.935457644 for OpenMM 8's nm, kJ/mol and e; 138.935456 before).

Every value is checked by name (ForceFieldError, an InputError: one line, exit 2).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

MIXING = ("lorentz-berthelot", "geometric")
METHODS = ("none", "reaction-field", "ewald")
NEUTRAL_TOLERANCE = 1e-9  # |sum q| / sum |q| below which a system counts as neutral


@dataclass(frozen=True, eq=False)
class ForceField:
    """The parsed file. Tables are (T, T) float64, symmetric; per-pair cutoffs in length units."""

    types: tuple[str, ...]
    pair_sigma: np.ndarray
    pair_epsilon: np.ndarray
    pair_cutoff: np.ndarray
    shift: bool
    method: str = "none"
    coulomb_cutoff: float | None = None
    epsilon_rf: float = math.inf
    alpha: float | None = None
    coulomb_constant: float = 1.0
    allow_net_charge: bool = False
    source: str = ""
    mixing: str = "table"
    extra: dict = field(default_factory=dict)
    kmax: tuple[int, int, int] | None = None  # ewald: |n| bound per axis, or None (from the tolerance)
    tolerance: float | None = None  # ewald: the given tolerance, or the one alpha and r_c imply
    lj: bool = True  # False: point charges only (no lj section; the tables are zero)

    @property
    def ntypes(self) -> int:
        return len(self.types)

    @property
    def cutoff(self) -> float:
        """The largest cutoff of any pair term: what a neighbour search must reach."""
        rc = float(self.pair_cutoff.max()) if self.pair_cutoff.size else 0.0
        return max(rc, self.coulomb_cutoff or 0.0)

    @property
    def k_rf(self) -> float:
        if self.method != "reaction-field" or self.coulomb_cutoff is None:
            return 0.0
        return reaction_field(self.epsilon_rf, self.coulomb_cutoff)[0]

    @property
    def c_rf(self) -> float:
        if self.method != "reaction-field" or self.coulomb_cutoff is None:
            return 0.0
        return reaction_field(self.epsilon_rf, self.coulomb_cutoff)[1]

    def lj_shift(self) -> np.ndarray:
        """U_ij(r_c,ij) per pair where shifting, else zeros."""
        if not self.shift:
            return np.zeros_like(self.pair_sigma)
        s6 = (self.pair_sigma / self.pair_cutoff) ** 6
        return 4.0 * self.pair_epsilon * s6 * (s6 - 1.0)

    def type_index(self, names) -> np.ndarray:
        """Per-particle type names -> indices; a name the file does not list is refused."""
        lookup = {t: k for k, t in enumerate(self.types)}
        out = np.empty(len(names), np.int32)
        for i, name in enumerate(names):
            k = lookup.get(str(name))
            if k is None:
                raise ForceFieldError(f"{self.where()}: particle {i} has type {name!r}, which the file does not list "
                                      f"(types: {', '.join(self.types)})")
            out[i] = k
        return out

    def where(self) -> str:
        return f"force field {self.source}" if self.source else "force field"

    def check_particles(self, types: np.ndarray, charges: np.ndarray | None, lengths, periodic) -> None:
        """Refuse what this file cannot compute for these particles: type indices outside the
        table, charges without a method (or a method without charges), a net charge with Ewald,
        a cutoff beyond half the shortest periodic side."""
        t = np.asarray(types)
        if t.size and (t.min() < 0 or t.max() >= self.ntypes):
            bad = int(np.argmax((t < 0) | (t >= self.ntypes)))
            raise ForceFieldError(f"{self.where()}: particle {bad} has type index {int(t[bad])}; the file lists "
                                  f"{self.ntypes} type(s) (0..{self.ntypes - 1})")
        if charges is not None and np.any(charges != 0.0) and self.method == "none":
            raise ForceFieldError(f"{self.where()}: the particles carry charges but electrostatics.method is none "
                                  "(give reaction-field or ewald, or drop the charges)")
        if self.method != "none" and charges is None:
            raise ForceFieldError(f"{self.where()}: electrostatics.method {self.method} needs charges (.npz key "
                                  "'charges', or an initial_charges / charge column in extended XYZ)")
        if self.method == "ewald" and charges is not None and not self.allow_net_charge:
            total, scale = float(np.sum(charges)), float(np.sum(np.abs(charges))) or 1.0
            if abs(total) > NEUTRAL_TOLERANCE * scale:
                raise ForceFieldError(f"{self.where()}: the system's net charge is {total:.6g}; Ewald needs a neutral "
                                      "system (set \"allow_net_charge\": true to compute it anyway)")
        if self.method == "ewald" and not all(bool(p) for p in periodic):
            open_axes = ", ".join(a for a, p in zip("xyz", periodic) if not p)
            raise ForceFieldError(f"{self.where()}: Ewald needs a box periodic in all three axes (open along "
                                  f"{open_axes}); take reaction-field for open boundaries")
        L = np.asarray(lengths, dtype=np.float64)
        for a, axis in enumerate("xyz"):
            if periodic[a] and self.cutoff > 0.5 * L[a]:
                raise ForceFieldError(f"{self.where()}: cutoff {self.cutoff:g} is beyond half the periodic side "
                                      f"along {axis} ({L[a]:g} / 2): minimum image would miss interactions")


class ForceFieldError(InputError):
    pass


def reaction_field(epsilon_rf: float, rc: float) -> tuple[float, float]:
    """(k_rf, c_rf) of a reaction field with dielectric constant epsilon_rf (inf allowed) at cutoff rc."""
    k_rf = 1.0 / (2.0 * rc ** 3) if math.isinf(epsilon_rf) else \
        (epsilon_rf - 1.0) / ((2.0 * epsilon_rf + 1.0) * rc ** 3)
    return k_rf, 1.0 / rc + k_rf * rc * rc


def epsilon_rf_value(v, bad) -> float:
    """electrostatics.epsilon_rf: a dielectric constant >= 1, or "inf"."""
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity"):
        return math.inf
    e = _number(v, "electrostatics.epsilon_rf", bad, allow_zero=False)
    if e < 1.0:
        raise bad(f"electrostatics.epsilon_rf must be >= 1 (a dielectric constant) or \"inf\", got {e:g}")
    return e


def to_json(ff: ForceField) -> dict:
    """The file that parses back to ff (the full tables; a cutoff per pair written as a multiple of
    sigma where the file gave it so, else one cutoff)."""
    T = ff.ntypes
    rc = ff.pair_cutoff
    if not ff.lj:
        lj_cut = None
    elif np.all(rc == rc[0, 0]):
        lj_cut = {"cutoff": float(rc[0, 0])}
    else:
        c = float(rc[0, 0] / ff.pair_sigma[0, 0])
        if not np.array_equal(rc, c * ff.pair_sigma):
            raise ForceFieldError(f"{ff.where()}: per-pair cutoffs that are neither one value nor a multiple of sigma "
                                  "have no form in the file")
        lj_cut = {"cutoff": c, "cutoff_in_sigma": True}
    out: dict = {"types": list(ff.types)}
    if ff.lj:
        out["lj"] = {"pair_sigma": [[float(ff.pair_sigma[i, j]) for j in range(T)] for i in range(T)],
                     "pair_epsilon": [[float(ff.pair_epsilon[i, j]) for j in range(T)] for i in range(T)],
                     **lj_cut, "shift": bool(ff.shift)}
    es: dict = {"method": ff.method}
    if ff.method != "none":
        es["cutoff"] = float(ff.coulomb_cutoff)
        if ff.method == "reaction-field":
            es["epsilon_rf"] = "inf" if math.isinf(ff.epsilon_rf) else float(ff.epsilon_rf)
        else:
            es["alpha"] = float(ff.alpha)
            if ff.kmax is not None:
                es["kmax"] = [int(v) for v in ff.kmax]
    out["electrostatics"] = es
    out["coulomb_constant"] = float(ff.coulomb_constant)
    if ff.allow_net_charge:
        out["allow_net_charge"] = True
    return out


def load(path: str | Path) -> ForceField:
    """Read and check a force-field file (JSON; YAML where PyYAML is installed)."""
    p = Path(path)
    if not p.is_file():
        raise ForceFieldError(f"--forcefield: no such file {p}")
    text = p.read_text()
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ForceFieldError(f"--forcefield {p}: reading YAML needs PyYAML; give the file as JSON") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ForceFieldError(f"--forcefield {p}: not valid YAML ({str(e).splitlines()[0]})") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ForceFieldError(f"--forcefield {p}: not valid JSON ({e})") from None
    return parse(data, source=str(p))


KEYS = {"types", "lj", "electrostatics", "coulomb_constant", "allow_net_charge"}
LJ_KEYS = {"sigma", "epsilon", "pair_sigma", "pair_epsilon", "mixing", "cutoff", "cutoff_in_sigma", "shift"}
ES_KEYS = {"method", "epsilon_rf", "cutoff", "alpha", "tolerance", "kmax"}


def parse(data: Any, source: str = "") -> ForceField:
    where = f"force field {source}" if source else "force field"

    def bad(msg: str) -> ForceFieldError:
        return ForceFieldError(f"{where}: {msg}")

    if not isinstance(data, dict):
        raise bad(f"expected an object with types, lj and electrostatics, got {type(data).__name__}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KEYS))}")
    types = data.get("types")
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types):
        raise bad("types must be a non-empty list of names")
    if len(set(types)) != len(types):
        dup = next(t for t in types if types.count(t) > 1)
        raise bad(f"type {dup!r} is listed twice")
    T = len(types)
    lj = data.get("lj")
    if lj is None:  # point charges only
        sigma, epsilon, pair_cutoff = np.ones((T, T)), np.zeros((T, T)), np.zeros((T, T))
        mixing, shift = "none", False
    else:
        if not isinstance(lj, dict):
            raise bad("lj must be an object (sigma, epsilon or pair_sigma, pair_epsilon; cutoff)")
        unknown = sorted(set(lj) - LJ_KEYS)
        if unknown:
            raise bad(f"lj: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(LJ_KEYS))}")
        sigma, epsilon, mixing = _pair_tables(lj, T, bad)
        cutoff = _number(lj.get("cutoff"), "lj.cutoff", bad)
        in_sigma = _flag(lj.get("cutoff_in_sigma", False), "lj.cutoff_in_sigma", bad)
        pair_cutoff = cutoff * sigma if in_sigma else np.full((T, T), cutoff)
        shift = _flag(lj.get("shift", False), "lj.shift", bad)

    es = data.get("electrostatics", {"method": "none"})
    if not isinstance(es, dict):
        raise bad("electrostatics must be an object with a method")
    unknown = sorted(set(es) - ES_KEYS)
    if unknown:
        raise bad(f"electrostatics: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(ES_KEYS))}")
    method = es.get("method", "none")
    if method not in METHODS:
        raise bad(f"electrostatics.method {method!r}; known: {', '.join(METHODS)}")
    kw: dict = {"lj": lj is not None}
    if lj is None and method == "none":
        raise bad("a file without lj describes point charges: electrostatics needs a method (reaction-field or ewald)")
    if method != "ewald" and "kmax" in es:
        raise bad("electrostatics: kmax belongs to ewald")
    if method != "none":
        rc = _number(es.get("cutoff"), "electrostatics.cutoff", bad)
        kw["coulomb_cutoff"] = rc
        if method == "reaction-field":
            if "alpha" in es or "tolerance" in es:
                raise bad("electrostatics: alpha and tolerance belong to ewald, not reaction-field")
            kw["epsilon_rf"] = epsilon_rf_value(es.get("epsilon_rf", "inf"), bad)
        else:
            if "epsilon_rf" in es:
                raise bad("electrostatics: epsilon_rf belongs to reaction-field, not ewald")
            if ("alpha" in es) == ("tolerance" in es):
                raise bad("electrostatics: ewald takes one of alpha (1 / length) and tolerance (the real-space "
                          "error, as OpenMM's ewaldErrorTolerance)")
            if "alpha" in es:
                kw["alpha"] = _number(es["alpha"], "electrostatics.alpha", bad)
                kw["tolerance"] = 0.5 * math.exp(-(kw["alpha"] * rc) ** 2)  # what alpha and r_c imply
            else:
                delta = _number(es["tolerance"], "electrostatics.tolerance", bad)
                if not delta < 0.5:
                    raise bad(f"electrostatics.tolerance must be in (0, 0.5), got {delta:g}")
                kw["alpha"] = math.sqrt(-math.log(2.0 * delta)) / rc
                kw["tolerance"] = delta
            if "kmax" in es:
                kw["kmax"] = _kmax(es["kmax"], bad)
    elif any(k in es for k in ("cutoff", "epsilon_rf", "alpha", "tolerance")):
        raise bad("electrostatics: method none takes no other key")
    k = data.get("coulomb_constant", 1.0)
    kw["coulomb_constant"] = _number(k, "coulomb_constant", bad)
    kw["allow_net_charge"] = _flag(data.get("allow_net_charge", False), "allow_net_charge", bad)
    return ForceField(tuple(types), sigma, epsilon, pair_cutoff, shift, method, source=source, mixing=mixing, **kw)


def _number(v, name: str, bad, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(f"{name} must be a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        raise bad(f"{name} must be finite and > 0, got {v:g}")
    return v


def _kmax(v, bad) -> tuple[int, int, int]:
    """electrostatics.kmax: one integer >= 1 for every axis, or three."""
    values = v if isinstance(v, list) else [v]
    if len(values) not in (1, 3) or not all(isinstance(x, int) and not isinstance(x, bool) for x in values):
        raise bad(f"electrostatics.kmax must be an integer or a list of three integers (the largest |n| per axis), "
                  f"got {v!r}")
    if any(x < 1 for x in values):
        raise bad(f"electrostatics.kmax must be at least 1 on every axis, got {v!r}")
    return tuple(values * 3) if len(values) == 1 else tuple(values)


def _flag(v, name: str, bad) -> bool:
    if not isinstance(v, bool):
        raise bad(f"{name} must be true or false, got {v!r}")
    return v


def _per_type(values, name: str, T: int, bad) -> np.ndarray:
    if not isinstance(values, list) or len(values) != T:
        raise bad(f"{name} must list one value per type ({T}), got {values!r}")
    return np.array([_number(v, f"{name}[{k}]", bad) for k, v in enumerate(values)], np.float64)


def _table(values, name: str, T: int, bad) -> np.ndarray:
    if not isinstance(values, list) or len(values) != T or not all(isinstance(r, list) and len(r) == T for r in values):
        raise bad(f"{name} must be a square table of {T} x {T} numbers (one row per type)")
    t = np.array([[_number(v, f"{name}[{i}][{j}]", bad) for j, v in enumerate(row)] for i, row in enumerate(values)])
    asym = np.argwhere(t != t.T)
    if len(asym):
        i, j = asym[0]
        raise bad(f"{name} is not symmetric: [{i}][{j}] = {t[i, j]:g} but [{j}][{i}] = {t[j, i]:g}")
    return t


def _pair_tables(lj: dict, T: int, bad) -> tuple[np.ndarray, np.ndarray, str]:
    tables = "pair_sigma" in lj or "pair_epsilon" in lj
    per_type = "sigma" in lj or "epsilon" in lj
    if tables and per_type:
        raise bad("lj: give either per-type sigma and epsilon (with mixing) or the tables pair_sigma and "
                  "pair_epsilon, not both")
    if tables:
        if "mixing" in lj:
            raise bad("lj: mixing applies to per-type sigma and epsilon, not to full tables")
        if "pair_sigma" not in lj or "pair_epsilon" not in lj:
            raise bad("lj: pair_sigma and pair_epsilon come together")
        return _table(lj["pair_sigma"], "lj.pair_sigma", T, bad), _table(lj["pair_epsilon"], "lj.pair_epsilon", T,
                                                                          bad), "table"
    if "sigma" not in lj or "epsilon" not in lj:
        raise bad("lj needs sigma and epsilon per type (or the tables pair_sigma and pair_epsilon)")
    s, e = _per_type(lj["sigma"], "lj.sigma", T, bad), _per_type(lj["epsilon"], "lj.epsilon", T, bad)
    mixing = lj.get("mixing", "lorentz-berthelot")
    if mixing not in MIXING:
        raise bad(f"lj.mixing {mixing!r}; known: {', '.join(MIXING)}")
    eps = np.sqrt(np.outer(e, e))
    sig = 0.5 * (s[:, None] + s[None, :]) if mixing == "lorentz-berthelot" else np.sqrt(np.outer(s, s))
    return sig, eps, mixing
