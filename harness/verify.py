"""The correctness matrix: strategy x scenario x precision, each cell against float64.

Every cell poisons the strategy's outputs, runs one whole evaluation, and compares forces,
energy, virial and pair count with the reference (harness.tolerances says how); then it runs the
forces-only flavour of the same plan (poisoned again) and compares its forces, and that it
returns no energy, virial or pair count. A cell is pass, FAIL (with the reasons and the worst
particle), ERROR (the strategy raised), or n/a with the strategy's reason.

In the fixed-point mode every strategy of a backend must also return the same bits for a case
(mdcore.fixed): each cell records a digest of its outputs (and its forces-only forces must be
the all-outputs forces' bits), and `same_bits` fails the cells that differ from the rest. The CPU
and GPU strategies form two groups: the GPU's reciprocal (MUFU.RCP) is not the CPU's division.
"""
from __future__ import annotations

import hashlib
import math
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

import reference
import strategies
from mdcore import MODES, PRECISIONS, Forces, InputError, Problem
from mdcore.fixed import snap_positions

from . import device, results, scenarios
from .gate import budgets, gate
from .tolerances import TOLERANCES, accumulation, kappa

COLUMNS = ["strategy", "backend", "scenario", "n", "precision", "force_rms", "force_max", "energy", "virial",
           "pairs_diff", "pairs_allowed", "forces_only_rms", "kappa", "accum", "digest", "status", "detail"]


def _rel(num: float, den: float) -> float:
    if den > 0.0:
        return num / den
    return 0.0 if num == 0.0 else math.inf


def compare(out: Forces, ref: reference.Reference, problem: Problem) -> dict:
    """Metrics of a host result against the reference, and the verdict.

    Pairs within rounding of the cutoff may legitimately be in or out, so each particle's
    error is first reduced by (its ambiguous partners) x |F(rc)|. The totals are reduced by
    |pair-count difference| x the pair's energy and virial at the cutoff: pairs that flip in
    and out at r ~ rc carry nearly equal terms and cancel, so only the net flips count.
    Returns metric values (see harness.tolerances), kappa, accum, the tolerances used, the
    worst particle, and 'failures': human-readable reasons (empty = pass). A forces-only result
    (energy None) is judged on its forces, and must carry no energy, virial or pair count."""
    precision = problem.precision
    m = {"kappa": kappa(precision, problem.box.array, ref.r_min),
         "accum": accumulation(precision, ref.interactions_per_particle)}
    tol = TOLERANCES[precision].values(m["kappa"], m["accum"])
    m["tolerance"] = tol
    failures = _compare_forces(out, ref, precision, m)
    if failures is None:
        return {"failures": [f"forces have shape {np.shape(out.forces)}, expected ({len(ref.forces)}, 3)"]}
    forces_only = out.energy is None
    if forces_only:
        if out.virial is not None or out.pairs is not None:
            failures.append("a forces-only result carries a virial or a pair count")
    else:
        failures += _compare_totals(out, ref, precision, m)
    for key in ("force_rms", "force_max") if forces_only else tuple(tol):
        value, limit = m[key], tol[key]
        if not value <= limit:  # catches NaN too
            where = f" (worst particle {m['worst_particle']})" if key == "force_max" else ""
            failures.append(f"{key} {value:.3g} > {limit:.3g}{where}")
    m["failures"] = failures
    return m


def _compare_forces(out: Forces, ref: reference.Reference, precision: str, m: dict) -> list[str] | None:
    f = np.asarray(out.forces, dtype=np.float64).reshape(-1, 3)
    n = len(ref.forces)
    if f.shape != (n, 3):
        return None
    failures = []
    bad = ~np.isfinite(f).all(axis=1)
    if bad.any():
        failures.append(f"{int(bad.sum())} particle(s) with non-finite or unwritten force, first index {int(np.argmax(bad))}")
        f = np.where(np.isfinite(f), f, 0.0)
    diff = f - ref.forces
    err = np.sqrt((diff * diff).sum(axis=1))
    err = np.maximum(0.0, err - ref.near_each(precision) * ref.cutoff_jump["force"])
    ref_norm = float(np.sqrt((ref.forces * ref.forces).sum()))
    rms_ref = ref_norm / math.sqrt(n) if n else 0.0
    worst = int(np.argmax(err)) if n else -1
    m.update({"force_rms": _rel(float(np.sqrt((err * err).sum())), ref_norm),
              "force_max": _rel(float(err[worst]), rms_ref) if n else 0.0, "worst_particle": worst})
    return failures


def _compare_totals(out: Forces, ref: reference.Reference, precision: str, m: dict) -> list[str]:
    failures = []
    jump = ref.cutoff_jump
    near = ref.near(precision)
    flips = min(near, abs(int(out.pairs) - ref.pairs))
    energy = float(out.energy)
    virial = np.asarray(out.virial, dtype=np.float64).reshape(3, 3)
    if not math.isfinite(energy):
        failures.append(f"energy is {energy}")
        energy = math.inf
    if not np.isfinite(virial).all():
        failures.append("virial has non-finite entries")
    de = abs(energy - ref.energy)
    dw = float(np.linalg.norm(virial - ref.virial))
    m.update({"energy": _rel(max(0.0, de - flips * jump["energy"]), ref.energy_abs),
              "virial": _rel(max(0.0, dw - flips * jump["virial"]), ref.virial_abs),
              "energy_rel": _rel(de, abs(ref.energy)),
              "virial_rel": _rel(dw, float(np.linalg.norm(ref.virial))),
              "pairs_diff": int(out.pairs) - ref.pairs, "pairs_allowed": near})
    if abs(m["pairs_diff"]) > near:
        failures.append(f"pair count {int(out.pairs)} vs reference {ref.pairs}: off by {m['pairs_diff']}, "
                        f"only {near} pair(s) lie within rounding of the cutoff")
    return failures


@dataclass
class Case:
    """One scenario of the matrix: a problem (float64 positions) and its reference."""

    scenario: str
    problem: Problem
    ref: reference.Reference | None = None
    seconds: float = 0.0


def _row(strategy: strategies.Strategy, case: Case, precision: str) -> dict:
    return {"strategy": strategy.label, "name": strategy.name, "backend": strategy.backend, "scenario": case.scenario,
            "n": case.problem.n, "precision": precision, "status": "", "detail": "",
            "box": case.problem.box.describe(), "potential": case.problem.potential.spec(),
            "cutoff": case.problem.potential.cutoff, "label": case.problem.label}


def _in_precision(case: Case, precision: str, row: dict) -> Problem | None:
    """The case's problem in `precision`, or None with the row n/a where the input lies outside
    what the precision holds (fixed point's range: mdcore.fixed)."""
    try:
        return case.problem.with_precision(precision)
    except InputError as e:
        row.update(status="n/a", detail=f"the input is outside precision {precision}: {e}")
        return None


def run_cell(strategy: strategies.Strategy, case: Case, precision: str, max_checks: dict) -> dict:
    row = _row(strategy, case, precision)
    problem = _in_precision(case, precision, row)
    if problem is None:
        return row
    ok, why, _ = gate(strategy, problem, max_checks, "verify")
    if not ok:
        row.update(status="n/a", detail=why)
        return row
    t0 = time.perf_counter()
    try:
        plan = strategy.prepare(problem)
        plan.poison()
        plan.upload()
        out = strategy.compute(plan).to_host()
        # the forces-only flavour: the same forces, and no energy, virial or pair count
        plan.set_outputs("forces")
        plan.poison()
        forces_only = strategy.compute(plan).to_host()
    except Exception as e:  # a strategy bug must not stop the matrix
        row.update(status="ERROR", detail=f"{type(e).__name__}: {e}",
                   traceback="".join(traceback.format_exception(e)))
        return row
    row["seconds"] = round(time.perf_counter() - t0, 4)
    assert case.ref is not None
    m = compare(out, case.ref, problem)
    failures = m.pop("failures")
    row.update(m)
    mf = compare(forces_only, case.ref, problem)
    failures += [f"forces only: {f}" for f in mf.pop("failures")]
    row.update({"forces_only_rms": mf.get("force_rms"), "forces_only_max": mf.get("force_max")})
    if MODES[precision].fixed:
        row["digest"] = digest(out)
        if digest(forces_only) != digest(out, forces_only=True):
            failures.append("fixed point: the forces-only flavour's forces are not the same bits")
    if failures:
        row.update(status="FAIL", detail="; ".join(failures) + f" [reproduce: {problem.label} {precision} "
                                                              f"strategy {strategy.label}]")
    else:
        row.update(status="pass")
    return row


def digest(out: Forces, forces_only: bool = False) -> str:
    """The bits of an evaluation's forces, energy, virial and pair count (forces only: its forces)."""
    h = hashlib.sha1(np.ascontiguousarray(out.forces, dtype=np.float64).tobytes())
    if out.energy is not None and not forces_only:
        h.update(np.float64(out.energy).tobytes())
        h.update(np.ascontiguousarray(out.virial, dtype=np.float64).tobytes())
        h.update(str(out.pairs).encode())
    return h.hexdigest()[:16]


def _fixed_groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """The fixed-point rows that passed, per (backend, scenario, n, potential)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("digest") and r["status"] == "pass":
            groups.setdefault((r["backend"], r["scenario"], r["n"], r["potential"]), []).append(r)
    return groups


def same_bits(rows: list[dict]) -> list[dict]:
    """The fixed-point rows that passed, grouped by case and backend: where their digests differ,
    the rows outside the largest group of equal digests FAIL (all of them on a tie). Returns the
    rows it failed."""
    failed = []
    for members in _fixed_groups(rows).values():
        by: dict[str, list[dict]] = {}
        for r in members:
            by.setdefault(r["digest"], []).append(r)
        if len(by) < 2:
            continue
        sizes = sorted((len(v) for v in by.values()), reverse=True)
        keep = max(by, key=lambda d: len(by[d])) if sizes[0] > sizes[1] else None
        for d, rs in by.items():
            if d == keep:
                continue
            others = [r["strategy"] for r in members if r["digest"] != d]
            for r in rs:
                r.update(status="FAIL", detail=f"fixed point: not the same bits as {', '.join(others[:4])}"
                                              + (f" and {len(others) - 4} more" if len(others) > 4 else "")
                                              + f" [reproduce: {r['label']} fixed strategy {r['strategy']}]")
                failed.append(r)
    return failed


def replay_cell(strategy: strategies.Strategy, case: Case, precision: str, frames, every: int = 1,
                refs: dict | None = None) -> dict:
    """A list strategy along a recorded trajectory (harness.md.record): its list built on the
    first frame, then each later frame copied into its plan and evaluated with `step` (the list
    rebuilt only where its trigger says so), every `every`-th frame compared with the float64
    reference of that frame. A stale list (a trigger that fires too late, or rebuild=never)
    misses pairs: the exact pair count and the forces fail. refs: the references by frame,
    shared by the strategies of one case."""
    from . import md

    row = _row(strategy, case, precision)
    row["scenario"] = f"{case.scenario}@replay"
    problem = _in_precision(case, precision, row)
    if problem is None:
        return row
    ok, why = strategy.supports(problem)
    if not ok:
        row.update(status="n/a", detail=why)
        return row
    if strategy.launch.get("headroom") == 0.0:
        strategy = type(strategy)(**{**strategy.launch, "headroom": md.HEADROOM})
    refs = {} if refs is None else refs
    box, pot = problem.box, problem.potential
    t0 = time.perf_counter()
    worst: dict = {}
    checked, failures = 0, []
    try:
        p0 = Problem.make(frames[0], box, pot, precision, label=problem.label)
        plan = strategy.prepare(p0, "all")
        plan.upload()
        strategy.compute(plan)
        L = plan.problem.box.array  # fixed: the snapped box (mdcore.fixed), as the plan has it
        fixed = MODES[precision].fixed
        # adapt: each frame's velocities from the recorded steps, as the MD loop's rebuilds see them
        feed = md.FrameVelocities(plan) if md.feeds_velocities(strategy, plan) else None
        if feed is not None:
            plan.use_velocities(feed)
        for k in range(1, len(frames)):
            pk = Problem.make(frames[k], box, pot, precision, label=f"{problem.label} frame {k}")
            c = (snap_positions(frames[k], L, box.periodic) if fixed else frames[k]) - 0.5 * L
            c -= L * np.floor(c / L + 0.5)
            v = None if feed is None else md.FrameVelocities.of(frames, k, L).astype(feed.v.dtype)
            if strategy.backend == "cuda":
                plan.pos[: problem.n, :3] = plan.cp.asarray(c.astype(plan.real))
                if v is not None:
                    feed.set(plan.cp.asarray(v))
            else:
                plan.pos[:] = c.astype(plan.real)
                if v is not None:
                    feed.set(v)
            out = strategy.step(plan)
            if k % every and k != len(frames) - 1:
                continue
            out = out.to_host()
            if k not in refs:
                refs[k] = reference.compute(pk)
            m = compare(out, refs[k], pk)
            checked += 1
            for key in ("force_rms", "force_max", "energy", "virial"):
                if m.get(key) is not None and m[key] > worst.get(key, -1.0):
                    worst[key] = m[key]
            if m["failures"]:
                failures.append(f"frame {k}: " + "; ".join(m["failures"]))
                break
    except Exception as e:
        row.update(status="ERROR", detail=f"{type(e).__name__}: {e}", traceback="".join(traceback.format_exception(e)))
        return row
    row.update(worst)
    row.update(seconds=round(time.perf_counter() - t0, 4), frames_checked=checked,
               rebuilds=plan.rebuild_count())
    if failures:
        row.update(status="FAIL", detail=failures[0] + f" [reproduce: {problem.label} {precision} strategy "
                                                       f"{strategy.label}, replay]")
    else:
        row.update(status="pass", detail=f"{checked} frame{'s' if checked != 1 else ''} checked, list rebuilt {row['rebuilds']} "
                                             f"time{'s' if row['rebuilds'] != 1 else ''}")
    return row


def run_replay(strategy_list: Iterable[strategies.Strategy], cases: Iterable[Case], precisions: Iterable[str],
               frames: int, every: int = 1, progress: Callable[[str], None] | None = None,
               shard=None) -> list[dict]:
    """The list strategies along a recorded trajectory of each periodic case (replay_cell); shard:
    only its share of the cells (as run_matrix)."""
    from . import md

    rows = []
    strategy_list, precisions = list(strategy_list), list(precisions)
    for case in cases:
        p = case.problem
        if not all(p.box.periodic) or p.potential.cutoff is None:
            continue
        mine = [(s, prec) for s in strategy_list if s.list_reuse for prec in precisions
                if shard is None or shard.take()]
        if not mine:
            continue
        recorded = md.record(p, frames)
        refs: dict = {}
        for s, prec in mine:
            row = replay_cell(s, case, prec, recorded, every, refs)
            rows.append(row)
            if progress:
                progress(f"  {row['strategy']:18s} {prec:5s} replay {row['status']}")
    return rows


def run_matrix(strategy_list: Iterable[strategies.Strategy], cases: Iterable[Case], precisions: Iterable[str],
               max_checks: dict | None = None, progress: Callable[[str], None] | None = None,
               shard=None) -> list[dict]:
    """Run every strategy x case x precision; references are computed once per case. shard
    (bench.Shard): only its share of the cells, in this order (a case none of whose cells is in
    it computes no reference)."""
    limits = budgets("verify", max_checks)
    strategy_list, precisions = list(strategy_list), list(precisions)
    rows = []
    for case in cases:
        mine = [(s, p) for s in strategy_list for p in precisions if shard is None or shard.take()]
        if not mine:
            continue
        if case.ref is None:
            t0 = time.perf_counter()
            case.ref = reference.compute(case.problem)
            case.seconds = time.perf_counter() - t0
            if progress:
                progress(f"reference {case.problem.label}: {case.ref.pairs} pairs, {case.ref.method}, {case.seconds:.1f} s")
        for s, p in mine:
            row = run_cell(s, case, p, limits)
            rows.append(row)
            if progress and row["status"] != "n/a":  # the n/a cells: one line per reason at the end
                progress(f"  {row['strategy']:18s} {p:5s} {row['status']}")
    for r in same_bits(rows):
        if progress:
            progress(f"  {r['strategy']:18s} fixed FAIL: {r['detail']}")
    return rows


def build_cases(specs: Iterable[str], size: str | int, seed: int) -> list[Case]:
    return [Case(spec, scenarios.make(spec, size, seed=seed)) for spec in specs]


# --- output -------------------------------------------------------------------------

def _fmt(v, kind: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if kind == "e":
        return f"{v:.2e}"
    return str(v)


def table(rows: list[dict], group_na: bool = False) -> str:
    """Fixed-width table for the terminal and the markdown report."""
    head = ["strategy", "backend", "scenario", "N", "precision", "force_rms", "force_max", "energy", "virial",
            "pairs", "status"]
    lines = []
    for r in rows:
        pairs = "" if "pairs_diff" not in r else f"{r['pairs_diff']:+d} (<= {r['pairs_allowed']})"
        status = r["status"] if r["status"] == "pass" else f"{r['status']}: {r['detail']}"
        lines.append([r["strategy"], r["backend"], r["scenario"], str(r["n"]), r["precision"],
                      _fmt(r.get("force_rms"), "e"), _fmt(r.get("force_max"), "e"), _fmt(r.get("energy"), "e"),
                      _fmt(r.get("virial"), "e"), pairs, status])
    widths = [max([len(h)] + [len(l[i]) for l in lines]) for i, h in enumerate(head[:-1])]
    out = ["  ".join(h.ljust(w) for h, w in zip(head[:-1], widths)) + "  status"]
    out += ["  ".join(c.ljust(w) for c, w in zip(l[:-1], widths)) + "  " + l[-1] for l in lines]
    return "\n".join(out)


def grouped(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """(the rows that ran, one line per reason of the n/a rows: how many cells, which strategies)."""
    ran = [r for r in rows if r["status"] != "n/a"]
    reasons: dict[str, list[dict]] = {}
    for r in rows:
        if r["status"] == "n/a":
            reasons.setdefault(r["detail"], []).append(r)
    lines = []
    for why, rs in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        names = list(dict.fromkeys(r["strategy"] for r in rs))
        who = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        lines.append(f"n/a  {len(rs)} cell{'s' if len(rs) != 1 else ''} ({who}): {why}")
    return ran, lines


def summary(rows: list[dict]) -> dict:
    counts = {k: sum(r["status"] == k for r in rows) for k in ("pass", "FAIL", "ERROR", "n/a")}
    worst = {}
    for p in PRECISIONS:
        sel = [r for r in rows if r["precision"] == p and r["status"] in ("pass", "FAIL")]
        if sel:
            worst[p] = {k: max(r[k] for r in sel) for k in ("force_rms", "force_max", "energy", "virial")}
    return {"counts": counts, "worst_by_precision": worst, "ok": counts["FAIL"] + counts["ERROR"] == 0,
            "fixed_same_bits": fixed_agreement(rows)}


def fixed_agreement(rows: list[dict]) -> dict:
    """Per backend: the fixed-point cases where at least two strategies passed with equal bits,
    and the strategies that took part (what the same-bits check covered)."""
    out: dict[str, dict] = {}
    for (backend, *_), members in _fixed_groups(rows).items():
        names = {r["strategy"] for r in members}
        if len(names) >= 2:
            b = out.setdefault(backend, {"cases": 0, "strategies": set()})
            b["cases"] += 1
            b["strategies"] |= names
    return {k: {"cases": v["cases"], "strategies": sorted(v["strategies"])} for k, v in out.items()}


def check_table(rows: list[dict], key: str, label: str, widths: tuple[int, int, int]) -> str:
    """The table of a section of checks (kspace, molecules): one line per row that ran, its name (row[key],
    headed `label`), case, precision, check, status, error and tolerance; widths of the first, second and
    fourth columns."""
    wn, wc, wk = widths
    lines = [f"{label:{wn}s} {'case':{wc}s} {'precision':9s} {'check':{wk}s} {'status':6s} {'error':>9s} "
             f"{'tolerance':>9s}"]
    for r in rows:
        if r["status"] == "n/a":
            continue
        e = "" if r["error"] is None else f"{r['error']:.2e}"
        t = "" if r["tolerance"] is None else f"{r['tolerance']:.0e}"
        lines.append(f"{r[key]:{wn}s} {r['case']:{wc}s} {r['precision']:9s} {r['check']:{wk}s} {r['status']:6s} "
                     f"{e:>9s} {t:>9s}" + (f"  {r['detail']}" if r["detail"] else ""))
    return "\n".join(lines)


def write_reports(rows: list[dict], meta: dict, device_header: dict, out_dir: Path,
                  json_path: Path | None = None, kspace_rows: list[dict] | None = None,
                  molecule_rows: list[dict] | None = None) -> list[Path]:
    """verify.csv, verify.json and verify.md in out_dir (and the JSON at json_path too); the reciprocal
    strategies' checks (harness.kspace_check) under the JSON's "kspace", the molecule traversals'
    (harness.molecule_check) under "molecules", both in the markdown."""
    extra = {"kspace": kspace_rows} if kspace_rows else {}
    if molecule_rows:
        extra["molecules"] = molecule_rows
    doc = results.document("verify", rows, device_header, meta, summary=summary(rows),
                           tolerances={p: t.as_dict() for p, t in TOLERANCES.items()}, **extra)
    s = doc["summary"]
    lines = ["# Verification matrix", "", *[f"- {l}" for l in device.header_lines(device_header)],
             f"- command: `{meta['command']}`", f"- {meta['date']}", "",
             "| " + " | ".join(f"{k}: {v}" for k, v in s["counts"].items()) + " |", "| --- " * len(s["counts"]) + "|", "",
             "```", table(rows), "```", "",
             "Metrics and tolerances: see harness/tolerances.py (energy and virial relative to the sum of pair-term "
             "magnitudes; pairs may differ by the pairs within rounding of the cutoff)."]
    if kspace_rows:
        from .kspace_check import table as ktable

        lines += ["", "## Ewald reciprocal part (kspace strategies)", "", "```", ktable(kspace_rows), "```"]
    if molecule_rows:
        from .molecule_check import table as mtable

        lines += ["", "## Rigid molecules (molecule traversals)", "", "```", mtable(molecule_rows), "```"]
    return results.write(doc, out_dir, "verify", COLUMNS, drop=("tolerance", "traceback"),
                         markdown="\n".join(lines) + "\n", copy_to=json_path)


def meta(argv: list[str] | None = None) -> dict:
    return {"command": " ".join(["python -m harness"] + (argv if argv is not None else sys.argv[1:])),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
