"""`python -m harness compare OLD.json NEW.json [--threshold 5%]`: regression detection between
two bench results.

Per point (strategy with its launch parameters, scenario, N, precision, outputs) the change of
the median time of one phase (compute by default; graph, with_list, force) and each side's
noise, its interquartile range / median over its samples ((max - min) / median for results
written before quartiles were kept: far more conservative, one outlier widens it). A change
counts only when it is larger than the threshold and larger than the noise, the larger of the
two: a 6% change between points that each move by 10% from sample to sample is noise, not a
regression. A point that ran before and now errors or is n/a counts as a regression too.

Exit status: 0 no regression, 1 at least one, 2 bad input (files, no common point, different
devices unless --any-device).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from mdcore import InputError

METRICS = ("compute", "graph", "with_list", "force", "device")
# device: what the report's verdict ranks by, the CUDA-graph replay from scratch where a row has
# one (GPU strategies), else the compute time (CPU strategies; eager GPU rows)


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0.0 < v < 10.0):
        raise InputError(f"--threshold: expected a fraction such as 5% or 0.05, got {text!r}")
    return v


def point_key(r: dict) -> tuple:
    """The label names the launch parameters that differ from the defaults: a parameter added
    with its default later keeps the point's identity."""
    return r["strategy"], r.get("scenario"), int(r.get("n", 0)), r.get("precision"), r.get("outputs", "all")


def _label(r: dict) -> str:
    return f"{r['strategy']} {r.get('scenario')} N={r.get('n')} {r.get('precision')} {r.get('outputs', 'all')}"


def _stats(r: dict, metric: str) -> tuple[float, float, bool] | None:
    """(median, noise, from quartiles) of the metric; peers time only their force."""
    m = "force" if r.get("backend") == "peer" else metric
    if m == "device":
        m = "graph" if r.get("graph_ms") else "compute"
    med = r.get(f"{m}_ms")
    if med is None or not isinstance(med, (int, float)) or not med > 0:
        return None
    q1, q3 = r.get(f"{m}_q1_ms"), r.get(f"{m}_q3_ms")
    if q1 is not None and q3 is not None:
        return float(med), (float(q3) - float(q1)) / med, True
    lo, hi = r.get(f"{m}_min_ms"), r.get(f"{m}_max_ms")
    lo, hi = (med if lo is None else lo), (med if hi is None else hi)
    return float(med), (float(hi) - float(lo)) / med, False


@dataclass
class Change:
    point: str
    verdict: str             # regression, improvement, same, new, gone, n/a
    old_ms: float | None = None
    new_ms: float | None = None
    change: float | None = None   # new / old - 1
    noise: float | None = None    # the larger spread of the two
    note: str = ""

    def line(self) -> str:
        if self.change is None:
            return f"{self.verdict:11s} {self.point}  {self.note}"
        return (f"{self.verdict:11s} {self.point}  {self.old_ms:.4g} -> {self.new_ms:.4g} ms  {self.change:+.1%} "
                f"(noise {self.noise:.1%}){'  ' + self.note if self.note else ''}")


def _load(path: Path) -> dict:
    from .report.load import load

    if not Path(path).is_file():
        raise InputError(f"compare: {path} does not exist")
    data = load([Path(path)], command="compare")
    if len(data["bench"]) != 1:
        raise InputError(f"compare: {path} is not a bench result (compare reads the JSON of `harness bench`)")
    return data["bench"][0]


def _device(doc: dict) -> str:
    d = doc.get("device") or {}
    return d.get("gpu") or f"CPU {d.get('cpu')}"


def compare(old_path: Path, new_path: Path, threshold: float = 0.05, metric: str = "compute",
            any_device: bool = False) -> tuple[list[Change], dict]:
    if metric not in METRICS:
        raise InputError(f"--metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    return compare_docs(_load(old_path), _load(new_path), old_path, new_path, threshold, metric, any_device)


def compare_docs(old: dict, new: dict, old_path, new_path, threshold: float = 0.05, metric: str = "compute",
                 any_device: bool = False) -> tuple[list[Change], dict]:
    """compare() on two loaded bench results (harness.report.load)."""
    if _device(old) != _device(new) and not any_device:
        raise InputError(f"compare: {old_path} was measured on {_device(old)}, {new_path} on {_device(new)}; times "
                         f"of two devices say nothing about a change in the code (--any-device compares them anyway)")
    a = {point_key(r): r for r in old["rows"]}
    b = {point_key(r): r for r in new["rows"]}
    if not set(a) & set(b):
        raise InputError(f"compare: {old_path} and {new_path} have no point in common")
    out: list[Change] = []
    for k in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(k), b.get(k)
        if ra is None:
            out.append(Change(_label(rb), "new", note=f"only in {new_path}"))
            continue
        if rb is None:
            out.append(Change(_label(ra), "gone", note=f"only in {old_path}"))
            continue
        sa, sb = (_stats(r, metric) if r.get("status") == "ok" else None for r in (ra, rb))
        if sa is None and sb is None:
            out.append(Change(_label(ra), "n/a", note=f"{ra.get('status')} before and {rb.get('status')} now"))
            continue
        if sb is None:
            out.append(Change(_label(ra), "regression", old_ms=None,
                              note=f"ran before, now {rb.get('status')}: {rb.get('detail', 'no ' + metric + ' time')}"))
            continue
        if sa is None:
            out.append(Change(_label(rb), "new", note=f"{ra.get('status')} before, runs now"))
            continue
        (ma, na, qa), (mb, nb, qb) = sa, sb
        change = mb / ma - 1.0
        noise = max(na, nb)
        notes = []
        if ra.get("single_sample") or rb.get("single_sample"):
            notes.append("one sample: no spread measured")
        elif not (qa and qb):
            notes.append("noise from min..max (no quartiles in the older result)")
        if abs(change) > max(threshold, noise):
            verdict = "regression" if change > 0 else "improvement"
        else:
            verdict = "same"
        out.append(Change(_label(ra), verdict, ma, mb, change, noise, "; ".join(notes)))
    meta = {"old": str(old_path), "new": str(new_path), "metric": metric, "threshold": threshold,
            "old_device": _device(old), "new_device": _device(new),
            "old_commit": (old.get("device") or {}).get("commit"), "new_commit": (new.get("device") or {}).get("commit")}
    return out, meta


def report(changes: list[Change], meta: dict) -> str:
    order = {"regression": 0, "improvement": 1, "same": 2, "new": 3, "gone": 4, "n/a": 5}
    counts = {v: sum(c.verdict == v for c in changes) for v in order}
    lines = [f"{meta['metric']} time, {meta['old']} ({meta['old_commit']}) -> {meta['new']} ({meta['new_commit']}) "
             f"on {meta['new_device']}; a change counts above {meta['threshold']:.0%} and above the noise"]
    lines += [c.line() for c in sorted(changes, key=lambda c: (order[c.verdict], -(abs(c.change or 0.0))))]
    lines.append("  ".join(f"{k}: {v}" for k, v in counts.items() if v))
    return "\n".join(lines)


def write_json(path: Path, changes: list[Change], meta: dict) -> None:
    Path(path).write_text(json.dumps({"kind": "compare", "meta": meta, "points": [asdict(c) for c in changes]},
                                     indent=1))
