"""verify's molecule section: every molecule traversal in each precision on rigid molecules, against
the float64 reference (reference/molecules.py). The molecules are the scenarios (spce_water,
stockmayer, two_centre_lj_quadrupole) at verify's --size, capped at small (the reference visits every
pair of molecules), with the whole default matrix (make verify); or the user's with --molecules FILE
--input F.

Errors are relative: the forces', torques' and virial's largest deviation to the largest reference
entry, the energy's to the sum of the molecule pairs' |energy| (the reference's energy_scale, at least
|E|). A precision the molecule traversals do not compute (fixed: the point
strategies' mode) is n/a with its reason.

Beside the traversals, the reference itself is checked against OpenMM's Reference platform on an open
cluster of the case's molecules (oracle_rows), where OpenMM is installed and can hold them.

Tolerances (tolerance()): fp64 1e-10. In fp32 and mixed the float32 coordinates set the error (as
kappa does for points, harness/tolerances.py): a centre rounds to eps (L/2), which moves a site pair
at the closest approach r_ref by that much; so the bound is max(1e-5, 100 eps (L/2) / r_ref), eps the
float32 machine epsilon, L the longest side (the centres' extent on an open axis), r_ref the
smallest Lennard-Jones sigma of the model (the cutoff / 3 without one). Measured on the scenarios at
small (1,000 molecules, seed 1): 4e-6 (SPC/E, bound 6e-5), 1e-5 (Stockmayer, bound 6.4e-5) and
1.2e-5 (2CLJQ, bound 5e-5) at most over forces, torques, virial and energy, mixed no better than
fp32: the sums are not what limits them.
"""
from __future__ import annotations

import functools
import math

import numpy as np

CHECKS = ("forces", "torques", "virial", "energy")
FP64 = 1e-10
FLOAT32_FLOOR, FLOAT32_COEFFICIENT = 1e-5, 100.0
CAP = "small"
WALK_STEP = 0.02  # replay: the largest move of a centre per frame, a fraction of the cutoff (the skin: 0.1)


def tolerance(precision: str, mols, model) -> float:
    """The bound on each relative error (CHECKS) of a molecule traversal in `precision` on these molecules."""
    if precision == "fp64":
        return FP64
    c = np.asarray(mols.centres, np.float64)
    extent = [float(mols.box.lengths[a]) if mols.box.periodic[a] else float(np.ptp(c[:, a])) if len(c) else 0.0
              for a in range(3)]
    sigmas = [float(s) for cp in model.components for s, k in zip(cp.sigma, cp.kinds) if k == "lj"]
    r_ref = min(sigmas) if sigmas else model.cutoff / 3.0
    eps = float(np.finfo(np.float32).eps)
    return max(FLOAT32_FLOOR, FLOAT32_COEFFICIENT * eps * 0.5 * max(extent) / r_ref)


def near_cutoff(mols, cutoff: float, precision: str) -> int:
    """The molecule pairs whose centres' distance lies within rounding of the cutoff in `precision`'s
    compute type (float32 for fp32 and mixed): a traversal compares |d|^2 with rc^2 there, so either
    count of these pairs is right. The band is +-(4 eps L + 2 eps rc), L the largest box side."""
    from strategies import molecules_cpu

    eps = float(np.finfo(np.float64 if precision == "fp64" else np.float32).eps)
    band = 4.0 * eps * float(np.max(mols.box.lengths)) + 2.0 * eps * cutoff
    inner, outer = molecules_cpu.pairs_within(mols, [max(cutoff - band, 0.0), cutoff + band])
    return outer - inner


def pairs_agree(got: int, want: int, mols, cutoff: float, precision: str) -> bool:
    """The count of molecule pairs within the cutoff is the reference's, up to the pairs at the cutoff
    within rounding (near_cutoff)."""
    return got == want or abs(got - want) <= near_cutoff(mols, cutoff, precision)


def selection(spec: str | None) -> list[str]:
    """The molecule traversals to check: all (default) or a comma list of names."""
    from strategies import molecules as traversals

    if spec in (None, "all"):
        return list(traversals.TRAVERSALS)
    out = []
    for name in (x.strip() for x in spec.split(",") if x.strip()):
        err = traversals.refuse([name], "--molecule-strategies")
        if err:
            raise err
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


def _energy_error(got: dict, ref: dict) -> float:
    """|E - E_ref| over the sum of the molecule pairs' |energy| (the reference's energy_scale), which a
    total near zero does not shrink."""
    return abs(got["energy"] - ref["energy"]) / max(ref.get("energy_scale", abs(ref["energy"])), 1e-300)


def _errors(got: dict, ref: dict) -> dict:
    """The relative errors of CHECKS: forces, torques, virial (to the largest reference entry), energy."""
    return {"forces": _rel(got["forces"], ref["forces"]), "torques": _rel(got["torques"], ref["torques"]),
            "virial": _rel(got["virial"], ref["virial"]), "energy": _energy_error(got, ref)}


def _not_here(base: dict, name: str, precision: str, case: dict) -> list[dict]:
    """The n/a row where traversal `name` does not compute `precision` or run these molecules here; [] where
    it does."""
    from strategies import molecules as traversals

    if precision not in traversals.PRECISIONS:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None,
                 "detail": f"molecules compute in {', '.join(traversals.PRECISIONS)}; {precision} is for points"}]
    ok, why = traversals.applicable(name, case["mols"], case["model"])
    if not ok:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None, "detail": why}]
    return []


def _rel(a, b) -> float:
    scale = float(np.max(np.abs(b))) if np.size(b) else 0.0
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / (scale or 1.0) if np.size(b) else 0.0


def check(name: str, precision: str, case: dict) -> list[dict]:
    from strategies import molecules as traversals

    base = {"strategy": name, "case": case["case"], "precision": precision}
    skipped = _not_here(base, name, precision, case)
    if skipped:
        return skipped
    try:
        got = traversals.evaluate(name, case["mols"], case["model"], precision)
    except Exception as e:  # a traversal that fails is a FAIL row, not a stopped matrix
        return [{**base, "check": "all", "status": "FAIL", "error": None, "tolerance": None,
                 "detail": f"{type(e).__name__}: {e}"}]
    ref = case["ref"]
    errors = _errors(got, ref)
    rows = []
    tol = tolerance(precision, case["mols"], case["model"])
    for k, e in errors.items():
        good = math.isfinite(e) and e <= tol
        rows.append({**base, "check": k, "status": "pass" if good else "FAIL", "error": e, "tolerance": tol,
                     "detail": ""})
    if not pairs_agree(got["pairs"], ref["pairs"], case["mols"], case["model"].cutoff, precision):
        rows.append({**base, "check": "pairs", "status": "FAIL", "error": None, "tolerance": None,
                     "detail": f"{got['pairs']} molecule pairs, the reference {ref['pairs']}"})
    return rows


ORACLE = "openmm-reference"
ORACLE_MOLECULES = 64


def oracle_rows(case: dict) -> list[dict]:
    """The float64 reference itself against OpenMM's Reference platform (harness/molecule_peers.py) on
    the ORACLE_MOLECULES molecules of the case nearest its middle, as an open cluster without cutoff;
    n/a with the reason where OpenMM is missing or cannot hold the molecules (dipoles, quadrupoles)."""
    import importlib.util

    from mdcore import InputError

    from . import molecule_peers

    base = {"strategy": ORACLE, "case": f"{case['case'].split(' ')[0]} cluster of {ORACLE_MOLECULES}",
            "precision": "fp64"}
    if importlib.util.find_spec("openmm") is None:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None,
                 "detail": "openmm is not installed (optional: requirements/peers.txt)"}]
    mols, model = molecule_peers.cluster(case["mols"], case["model"], ORACLE_MOLECULES)
    try:
        got = molecule_peers.oracle(mols, model)
    except InputError as e:
        return [{**base, "check": "all", "status": "n/a", "error": None, "tolerance": None, "detail": str(e)}]
    return [{**base, "check": k, "status": "pass" if math.isfinite(got[k]) and got[k] <= FP64 else "FAIL",
             "error": got[k], "tolerance": FP64, "detail": ""} for k in ("forces", "torques", "energy")]


def walk(mols, model, frames: int, seed: int = 1, angle: float = 0.1):
    """`frames` frames of a random walk of the molecules, for the replay: each frame moves every centre
    by up to WALK_STEP x the cutoff (a uniform direction and length) and turns every molecule by up to
    `angle` radians about a random axis. Every centre moves every frame, so that a list kept across
    frames meets its skin within a few frames: a harder test of its upkeep than MD's motion."""
    from mdcore.molecules import Molecules

    rng = np.random.default_rng(seed)
    c = np.array(mols.centres, np.float64)
    q = np.array(mols.quaternions, np.float64)
    L = np.asarray(mols.box.lengths, np.float64)
    per = np.asarray(mols.box.periodic, bool)
    m = len(c)
    out = []
    for _ in range(frames):
        v = rng.normal(size=(m, 3))
        v *= (WALK_STEP * model.cutoff * rng.random(m) / np.maximum(np.linalg.norm(v, axis=1), 1e-300))[:, None]
        c = c + v
        c = np.where(per, np.mod(c, np.where(per, L, 1.0)), c)
        axis = rng.normal(size=(m, 3))
        axis /= np.maximum(np.linalg.norm(axis, axis=1), 1e-300)[:, None]
        half = 0.5 * angle * rng.random(m)
        dq = np.column_stack([np.cos(half), np.sin(half)[:, None] * axis])
        q = _quaternion_product(q, dq)
        q /= np.linalg.norm(q, axis=1)[:, None]
        out.append(Molecules(c.copy(), q.copy(), mols.components, mols.box))
    return out


def _quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a b for rows of (w, x, y, z)."""
    w1, x1, y1, z1 = a.T
    w2, x2, y2, z2 = b.T
    return np.column_stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def replay(name: str, precision: str, case: dict, frames: int, seed: int = 1) -> list[dict]:
    """The traversal along `frames` frames of a random walk (walk()), through a plan kept across them
    (strategies.molecules.Plan: the Verlet traversal keeps its list while the centres stay within the
    skin), every frame against the float64 reference: one row per check, the worst frame's error."""
    from reference.molecules import compute
    from strategies import molecules as traversals

    base = {"strategy": name, "case": f"{case['case']} replay of {frames}", "precision": precision}
    skipped = _not_here(base, name, precision, case)
    if skipped:
        return skipped
    model = case["model"]
    plan = traversals.Plan(name, case["mols"], model, precision)
    tol = tolerance(precision, case["mols"], model)
    worst = dict.fromkeys(CHECKS, 0.0)
    wrong_pairs = 0
    for mols in walk(case["mols"], model, frames, seed):
        try:
            got = plan.evaluate(mols)
        except Exception as e:  # a failing frame is a FAIL row, not a stopped matrix
            return [{**base, "check": "all", "status": "FAIL", "error": None, "tolerance": None,
                     "detail": f"{type(e).__name__}: {e}"}]
        ref = compute(mols, model)
        errors = _errors(got, ref)
        worst = {k: max(worst[k], v) if math.isfinite(v) else math.inf for k, v in errors.items()}
        wrong_pairs += not pairs_agree(got["pairs"], ref["pairs"], mols, model.cutoff, precision)
    detail = f"{plan.rebuilds} list build(s)" if plan.rebuilds else ""
    rows = [{**base, "check": k, "status": "pass" if math.isfinite(e) and e <= tol else "FAIL", "error": e,
             "tolerance": tol, "detail": detail} for k, e in worst.items()]
    if wrong_pairs:
        rows.append({**base, "check": "pairs", "status": "FAIL", "error": None, "tolerance": None,
                     "detail": f"{wrong_pairs} frame(s) with another count of molecule pairs than the reference's"})
    return rows


def run(names, precisions, cases, progress=None, oracle: bool = True) -> list[dict]:
    """Every traversal in every precision on every case; then, with `oracle`, the reference against
    OpenMM's on each case (oracle_rows)."""
    rows = []
    for name in names:
        for p in precisions:
            for c in cases:
                rows += check(name, p, c)
            if progress:
                bad = [r for r in rows if r["strategy"] == name and r["precision"] == p and r["status"] == "FAIL"]
                progress(f"  molecules {name} {p}: {'FAIL' if bad else 'done'}")
    if oracle:
        for c in cases:
            rows += oracle_rows(c)
    return rows


def table(rows: list[dict]) -> str:
    from .verify import check_table

    return check_table(rows, "strategy", "strategy", (22, 34, 8))
