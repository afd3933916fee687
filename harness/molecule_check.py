"""verify's molecule section: every molecule traversal in each precision on rigid molecules, against
the float64 reference (reference/molecules.py). The molecules are the scenarios (spce_water,
stockmayer, two_centre_lj_quadrupole) at verify's --size, capped at small (the reference visits every
pair of molecules), with the whole default matrix (make verify); or the user's with --molecules FILE
--input F.

Errors are relative: the forces', torques' and virial's largest deviation to the largest reference
entry, the energy to the sum of the pair energies' magnitudes bounded below by |E|. A traversal that
does not compute a precision is n/a with its reason.
"""
from __future__ import annotations

import functools
import math

import numpy as np

TOLERANCE = {"fp64": {"forces": 1e-10, "torques": 1e-10, "virial": 1e-10, "energy": 1e-10}}
CAP = "small"


def selection(spec: str | None) -> list[str]:
    """The molecule traversals to check: all (default) or a comma list of names."""
    from mdcore import InputError
    from strategies import molecules_cpu

    if spec in (None, "all"):
        return list(molecules_cpu.TRAVERSALS)
    out = []
    for name in (x.strip() for x in spec.split(",") if x.strip()):
        if name not in molecules_cpu.TRAVERSALS:
            raise InputError(f"--molecule-strategies: {name} has no molecule functor yet; molecules run in "
                             f"{', '.join(molecules_cpu.TRAVERSALS)}")
        out.append(name)
    return out


@functools.cache
def _scenario_case(name: str, size: str, seed: int) -> dict:
    from reference.molecules import compute

    from .molecule_scenarios import make

    mols, model = make(name, size, seed=seed)
    return {"case": f"{name} N={len(mols.centres)}", "mols": mols, "model": model, "ref": compute(mols, model)}


def scenario_cases(size, seed: int = 1) -> list[dict]:
    """The molecule scenarios at `size`, capped at small; their references built once per process."""
    from .molecule_scenarios import SCENARIOS, SIZES, parse_size

    n = parse_size(size)
    size = CAP if n > SIZES[CAP] else size
    return [_scenario_case(name, size, seed) for name in SCENARIOS]


def input_case(mols, model, label: str) -> dict:
    from reference.molecules import compute

    return {"case": label, "mols": mols, "model": model, "ref": compute(mols, model)}


def _rel(a, b) -> float:
    scale = float(np.max(np.abs(b))) if np.size(b) else 0.0
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / (scale or 1.0) if np.size(b) else 0.0


def check(name: str, precision: str, case: dict) -> list[dict]:
    from strategies import molecules_cpu

    base = {"strategy": name, "case": case["case"], "precision": precision}
    if precision not in TOLERANCE:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None,
                 "detail": f"{name} computes molecules in fp64 only"}]
    ok, why = molecules_cpu.applicable(name, case["mols"], case["model"])
    if not ok:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None, "detail": why}]
    try:
        got = molecules_cpu.evaluate(name, case["mols"], case["model"])
    except Exception as e:  # a traversal that fails is a FAIL row, not a stopped matrix
        return [{**base, "check": "all", "status": "FAIL", "error": None, "tolerance": None,
                 "detail": f"{type(e).__name__}: {e}"}]
    ref = case["ref"]
    errors = {"forces": _rel(got["forces"], ref["forces"]), "torques": _rel(got["torques"], ref["torques"]),
              "virial": _rel(got["virial"], ref["virial"]),
              "energy": abs(got["energy"] - ref["energy"]) / max(abs(ref["energy"]), 1e-300)}
    rows = []
    tol = TOLERANCE[precision]
    for k, e in errors.items():
        good = math.isfinite(e) and e <= tol[k]
        rows.append({**base, "check": k, "status": "pass" if good else "FAIL", "error": e, "tolerance": tol[k],
                     "detail": ""})
    if got["pairs"] != ref["pairs"]:
        rows.append({**base, "check": "pairs", "status": "FAIL", "error": None, "tolerance": None,
                     "detail": f"{got['pairs']} molecule pairs, the reference {ref['pairs']}"})
    return rows


def run(names, precisions, cases, progress=None) -> list[dict]:
    rows = []
    for name in names:
        for p in precisions:
            for c in cases:
                rows += check(name, p, c)
            if progress:
                bad = [r for r in rows if r["strategy"] == name and r["precision"] == p and r["status"] == "FAIL"]
                progress(f"  molecules {name} {p}: {'FAIL' if bad else 'done'}")
    return rows


def table(rows: list[dict]) -> str:
    from .verify import check_table

    return check_table(rows, "strategy", "strategy", (22, 34, 8))
