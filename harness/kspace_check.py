"""The reciprocal strategies' checks: `verify`'s kspace section (`--kspace`; by default every one this
machine runs, with the whole default matrix as `make verify` runs it), the same at every --size.

  madelung   a rock-salt crystal of 512 unit charges (nearest neighbours 1 apart, a box of 8): the
             total Ewald energy (the float64 real-space sum, the strategy's reciprocal part, the self
             term) is -N M / 2 with Madelung's constant M = 1.747564594633..., for two alphas (the
             total must not depend on alpha)
  ions       1,000 random charges (a fifth uncharged) in a 10 x 11 x 12 box against the float64
             reference's reciprocal energy, forces and virial (reference.ewald)
  fd         (fp64) the strategy's forces against central differences of its own energy, three charges
             along three axes

Errors are relative: the energy to |E|, the forces' largest deviation to the largest reference force,
the virial's largest entry to the largest reference entry. The tolerances below are the rounding of
each precision with a margin: the phases are fractions of a turn rounded in the compute type, and
the sums run over up to 45,562 wave vectors.
"""
from __future__ import annotations

import functools
import math

import numpy as np

MADELUNG_ROCKSALT = 1.747564594633182190636212
TOLERANCE = {"fp64": {"madelung": 1e-10, "energy": 1e-11, "forces": 1e-10, "virial": 1e-11, "fd": 1e-6},
             "mixed": {"madelung": 2e-6, "energy": 1e-5, "forces": 1e-4, "virial": 1e-5},
             "fp32": {"madelung": 2e-6, "energy": 1e-5, "forces": 1e-4, "virial": 1e-5}}
PRECISIONS = ("fp32", "mixed", "fp64", "fixed")


def rocksalt(cells: int = 4, d: float = 1.0) -> tuple[np.ndarray, np.ndarray, float]:
    """Positions, charges (+1, -1) and box side of cells^3 conventional rock-salt cells, neighbours d apart."""
    a = 2.0 * d
    fcc = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    corners = np.array([[i, j, k] for i in range(cells) for j in range(cells) for k in range(cells)], np.float64)
    plus = (corners[:, None, :] + fcc[None, :, :]).reshape(-1, 3) * a
    minus = plus + np.array([d, 0.0, 0.0])
    x = np.empty((2 * len(plus), 3))
    x[0::2], x[1::2] = plus, minus
    q = np.tile([1.0, -1.0], len(plus))
    return x, q, cells * a


def _forcefield(types, cutoff: float, alpha: float, kmax):
    from mdcore import forcefield

    return forcefield.parse({"types": types, "electrostatics": {"method": "ewald", "cutoff": cutoff, "alpha": alpha,
                                                                "kmax": kmax}})


@functools.cache
def cases() -> list[dict]:
    """The checks' systems, with their float64 expectations (built once per process)."""
    import reference.forcefield as rf
    from mdcore.ewald import Ewald
    from reference.ewald import reciprocal

    out = []
    x, q, L = rocksalt()
    for alpha, kmax in ((1.375, 22), (1.6, 26)):
        ff = _forcefield(["Na", "Cl"], L / 2.0, alpha, kmax)
        ewald = Ewald.make(ff, (L, L, L), (True, True, True))
        real = rf.compute(x, (L, L, L), (True, True, True), np.zeros(len(x), np.int64), q, ff, method="direct")
        out.append({"case": f"madelung:alpha={alpha:g}", "kind": "madelung", "x": x, "q": q, "ewald": ewald,
                    "rest": real["energy"] + ewald.self_energy(q), "want": -0.5 * len(x) * MADELUNG_ROCKSALT})
    x, q, ewald = ions()
    out.append({"case": "ions", "kind": "ions", "x": x, "q": q, "ewald": ewald, "ref": reciprocal(x, q, ewald)})
    return out


def ions() -> tuple[np.ndarray, np.ndarray, "Ewald"]:
    """1,000 random charges ±1 in a 10 x 11 x 12 box, a fifth of them uncharged, made neutral, with
    kmax (8, 9, 10): positions, charges and their Ewald parameters."""
    from mdcore.ewald import Ewald

    rng = np.random.default_rng(7)
    L3 = (10.0, 11.0, 12.0)
    x = rng.random((1000, 3)) * np.array(L3)
    q = rng.choice([-1.0, 1.0], 1000)
    q[rng.random(1000) < 0.2] = 0.0
    q[0] = -float(np.sum(q[1:]))  # neutral
    return x, q, Ewald.make(_forcefield(["X"], 4.0, 0.9, [8, 9, 10]), L3, (True, True, True))


def _rel(a, b) -> float:
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / scale


def check(strategy, precision: str, case: dict) -> list[dict]:
    """The rows of one strategy, precision and case: status pass, FAIL or n/a, error and tolerance."""
    base = {"kspace": strategy.name, "case": case["case"], "precision": precision}
    ok, why = strategy.supports(precision)
    if not ok:
        return [{**base, "check": case["kind"], "status": "n/a", "error": None, "tolerance": None, "detail": why}]
    tol = TOLERANCE[precision]
    try:
        r = strategy.evaluate(case["x"], case["q"], case["ewald"], precision)
    except Exception as e:  # a strategy that fails is a FAIL row, not a stopped matrix
        return [{**base, "check": case["kind"], "status": "FAIL", "error": None, "tolerance": None,
                 "detail": f"{type(e).__name__}: {e}"}]
    errors: dict[str, float] = {}
    if case["kind"] == "madelung":
        errors["madelung"] = abs((case["rest"] + r.energy) / case["want"] - 1.0)
    else:
        ref = case["ref"]
        errors["energy"] = abs(r.energy / ref["energy"] - 1.0)
        errors["forces"] = _rel(r.forces, ref["forces"])
        errors["virial"] = _rel(r.virial, ref["virial"])
        if precision == "fp64":
            errors["fd"] = _finite_differences(strategy, case, r.forces)
    rows = []
    for k, e in errors.items():
        good = math.isfinite(e) and e <= tol[k]
        rows.append({**base, "check": k, "status": "pass" if good else "FAIL", "error": e, "tolerance": tol[k],
                     "detail": ""})
    return rows


def _finite_differences(strategy, case: dict, forces: np.ndarray, h: float = 1e-5) -> float:
    x, q, ewald = case["x"], case["q"], case["ewald"]
    charged = np.flatnonzero(q)[:3]
    plan = strategy.prepare(q, ewald, "fp64")
    worst = 0.0
    for j in charged:
        for a in range(3):
            e = []
            for step in (h, -h):
                y = x.copy()
                y[j, a] += step
                plan.upload(y)
                plan.run()
                e.append(plan.output().energy)
            fd = -(e[0] - e[1]) / (2.0 * h)
            worst = max(worst, abs(fd - forces[j, a]))
    return worst / (float(np.max(np.abs(forces))) or 1.0)


def run(strategies_, precisions, progress=None) -> list[dict]:
    built = cases()
    rows = []
    for s in strategies_:
        for p in precisions:
            for c in built:
                rows += check(s, p, c)
            if progress:
                bad = [r for r in rows if r["kspace"] == s.name and r["precision"] == p and r["status"] == "FAIL"]
                progress(f"  {s.name} {p}: {'FAIL' if bad else 'done'}")
    return rows


def table(rows: list[dict]) -> str:
    from .verify import check_table

    return check_table(rows, "kspace", "kspace strategy", (22, 22, 9))


def selection(spec: str | None, launch: dict | None = None) -> list:
    """--kspace: all (default: every reciprocal strategy this machine runs), none, or a comma list; each
    created with `launch` (every strategy named must take its parameters)."""
    from strategies import kspace

    launch = launch or {}
    if spec == "none":
        return []
    if spec in (None, "all"):
        return [kspace.create(n, **launch) for n in kspace.names() if kspace.create(n).available()[0]]
    out = []
    for name in spec.split(","):
        s = kspace.create(name.strip(), **launch)
        ok, why = s.available()
        if not ok:
            from mdcore import InputError

            raise InputError(f"--kspace {name.strip()}: {why}")
        out.append(s)
    return out
