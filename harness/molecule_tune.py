"""`python -m harness tune` on rigid molecules: which molecule traversal for these molecules, in this
precision, on this machine (the GPU's traversals where there is a GPU, else the CPU's).

As tune does for points (harness/tune.py), without the launch-parameter search (the molecule
traversals have none to tune):
1. every traversal that applies is timed once (one evaluation from scratch: the sites turned, the
   cells built, forces, torques, energy and virial; a GPU traversal's kernels by CUDA events, a CPU
   traversal's call by the host clock), and those slower than PRUNE x the best are timed twice more
   and dropped when the median of the three is still that slow;
2. the ones within CLOSE x the best are timed again, round by round, until the budget is spent, and
   ranked by median;
3. the winner is checked against float64 forces and torques (the reference up to REFERENCE_MOLECULES
   molecules, which visits every pair of molecules, else the fp64 full-shell CPU traversal, itself
   checked against the reference in CI) within verify's bound (harness/molecule_check.py); one that
   fails is set aside, named, and the next one checked.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from mdcore import InputError

from .tune import CLOSE, PRUNE

REFERENCE_MOLECULES = 4096


def _timer(name: str, mols, model, precision: str):
    """sample() -> one evaluation's milliseconds, and result() -> the last evaluation's output."""
    from strategies import molecules as traversals

    if traversals.backend(name) == "cuda":
        import cupy as cp

        from strategies.molecules_cuda import MoleculePlan

        plan = MoleculePlan(name, mols, model, precision)
        plan.upload(mols.centres, mols.quaternions)
        plan.run()  # compiled, warm

        def sample() -> float:
            a, b = cp.cuda.Event(), cp.cuda.Event()
            if hasattr(plan, "stale"):  # a list traversal: built again, as every evaluation here is from scratch
                plan.stale = True
            a.record()
            plan.run()
            b.record()
            b.synchronize()
            return cp.cuda.get_elapsed_time(a, b)
        return sample, plan.result
    out: dict = {}
    out.update(traversals.evaluate(name, mols, model, precision))  # compiled, warm

    def sample() -> float:
        t0 = time.perf_counter()
        out.update(traversals.evaluate(name, mols, model, precision))
        return 1e3 * (time.perf_counter() - t0)
    return sample, (lambda: out)


def _truth(mols, model) -> tuple[dict, str]:
    if len(mols.centres) <= REFERENCE_MOLECULES:
        from reference.molecules import compute

        return compute(mols, model), "the float64 reference"
    from strategies import molecules_cpu

    return molecules_cpu.evaluate("fullshell_thread_cpu", mols, model, "fp64"), "fullshell_thread_cpu in fp64"


def _errors(got: dict, want: dict) -> dict:
    out = {k: float(np.abs(got[k] - want[k]).max() / max(np.abs(want[k]).max(), 1e-300))
           for k in ("forces", "torques", "virial")}
    scale = want.get("energy_scale", abs(want["energy"]))  # the fp64 CPU traversal's truth has none: |E|
    out["energy"] = abs(got["energy"] - want["energy"]) / max(scale, 1e-300)
    return out


def tune(mols, model, names: list[str], precision: str, budget: float, progress=None) -> dict:
    """The candidates (timed, pruned, n/a or failed, with their samples), the winner and how it was
    checked."""
    from strategies import molecules as traversals

    from . import molecule_check

    t_end = time.monotonic() + budget
    cands = []
    for name in names:
        ok, why = traversals.applicable(name, mols, model)
        c = {"strategy": name, "backend": traversals.backend(name), "status": "n/a" if not ok else "timed",
             "detail": why, "samples_ms": []}
        if ok:
            c["_sample"], c["_result"] = _timer(name, mols, model, precision)
            c["samples_ms"].append(c["_sample"]())
            if progress:
                progress(f"  {name}: {c['samples_ms'][-1]:.4g} ms")
        cands.append(c)
    timed = [c for c in cands if c["status"] == "timed"]
    if not timed:
        raise InputError("tune: no molecule traversal runs these molecules here: "
                         + "; ".join(f"{c['strategy']}: {c['detail']}" for c in cands))
    best = min(c["samples_ms"][0] for c in timed)
    for c in timed:  # as tune does for points: two more samples before one drops a traversal
        if c["samples_ms"][0] > PRUNE * best:
            c["samples_ms"] += [c["_sample"](), c["_sample"]()]
    best = min(statistics.median(c["samples_ms"]) for c in timed)
    for c in timed:
        if statistics.median(c["samples_ms"]) > PRUNE * best:
            c["status"] = "pruned"
    rounds = 0
    while time.monotonic() < t_end:
        close = [c for c in cands if c["status"] == "timed"]
        meds = {c["strategy"]: statistics.median(c["samples_ms"]) for c in close}
        lead = min(meds.values())
        close = [c for c in close if meds[c["strategy"]] <= CLOSE * lead]
        if len(close) < 2 and rounds >= 2:
            break
        for c in close:
            c["samples_ms"].append(c["_sample"]())
        rounds += 1
    ranked = sorted((c for c in cands if c["status"] == "timed"), key=lambda c: statistics.median(c["samples_ms"]))
    truth, against = _truth(mols, model)
    tol = molecule_check.tolerance(precision, mols, model)
    winner = None
    for c in ranked:
        errors = _errors(c["_result"](), truth)
        c["errors"] = errors
        if all(np.isfinite(v) and v <= tol for v in errors.values()):
            winner = c
            break
        c["status"] = "failed"
        c["detail"] = f"beyond {tol:.1e} of {against}: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
    for c in cands:
        c.pop("_sample", None)
        c.pop("_result", None)
        if c["samples_ms"]:
            c["median_ms"] = statistics.median(c["samples_ms"])
    return {"kind": "tune-molecules", "molecules": len(mols.centres), "precision": precision, "rounds": rounds,
            "budget_s": budget, "candidates": cands, "winner": winner["strategy"] if winner else None,
            "checked_against": against, "tolerance": tol}
