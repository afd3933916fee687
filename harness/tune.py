"""`python -m harness tune`: which strategy, with which launch parameters, for this input.

The user's question in one command, answered like AutoPas's tuner answers it:

1. Every strategy that applies to the problem (and runs on this machine) is timed once at its
   default launch parameters; those clearly slower than the best (PRUNE x its time) are timed
   twice more and dropped when the median of the three is still that slow (one sample taken while
   the machine was busy elsewhere does not drop a strategy).
2. The survivors' tunable launch parameters (TUNE_SPACE: block sizes, threads per particle,
   layouts, cell sizes, the list strategies' skin) are varied one at a time around the defaults,
   each variant timed once and dropped by the same rule.
3. The close ones (within CLOSE x the best) are timed again, round by round, until the budget is
   spent; the ranking is by median.
4. The winner is checked against the float64 reference before it is recommended (a failing
   candidate is set aside, named, and the next one checked).

What is timed is the cost of one MD step on the user's particles: a short NVE trajectory of the
input is recorded once and replayed through each candidate (bench.time_amortised: list upkeep,
displacement checks and rebuilds included), so that the list strategies' skin is tuned on real
motion. Where the MD loop does not apply (open boundaries, no cutoff), it is one evaluation from
scratch (build + force + reduce), timed as the sweep times its device time: a CUDA-graph replay
after an L2 flush (bench's graph_ms). `--metric scratch` asks for that on any input (the sweep's
own column, for a code that does not reuse lists); `--metric step` insists on the MD step.

Results are cached per machine (GPU model, or CPU), particle count, density and inhomogeneity
(all within a few percent), potential, precision and outputs: a second call for a similar input
answers at once and says it used the cache.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

import reference
import strategies
from mdcore import InputError, Problem, StrategyError

from . import bench, device
from .timing import time_cpu, time_gpu
from .gate import budgets, gate
from .verify import compare

PRUNE = 1.5    # dropped when slower than this times the best (a single sample: the median of three)
CLOSE = 1.15   # timed again, round by round, while within this of the best
PROBE = 10.0   # dropped before the search when one evaluation from scratch takes this times the fastest's
FRAMES = 40    # frames of the trajectory a step is timed on (after EQUILIBRATE steps)
EQUILIBRATE = 100
SCHEMA = 2  # 2: from-scratch samples are graph replays after an L2 flush (as the sweep); earlier cache entries are not reused
# launch parameters worth tuning, with the values tried (each strategy tries those it has)
# (public ones only: threads per particle, register caps and the list build are the code's choice)
TUNE_SPACE: dict[str, tuple] = {
    "block": (64, 128, 256, 512),
    "warps": (1, 2, 4, 8),
    "layout": ("aos4", "aos3", "soa", "packed"),
    "cell_factor": (1.0, 0.5),
    "skin": (0.2, 0.3, 0.4, 0.6),
}


def parse_budget(text: str) -> float:
    """'60', '60s', '2m' or '1.5min' -> seconds (> 0)."""
    t = str(text).strip().lower()
    scale = 1.0
    for suffix, s in (("min", 60.0), ("ms", 1e-3), ("m", 60.0), ("s", 1.0)):
        if t.endswith(suffix):
            t, scale = t[: -len(suffix)], s
            break
    try:
        v = float(t) * scale
    except ValueError:
        raise InputError(f"--budget: expected seconds such as 60, 60s or 2m, got {text!r}") from None
    if not math.isfinite(v) or v <= 0.0:
        raise InputError(f"--budget must be a positive time, got {text!r}")
    return v


@dataclass
class Candidate:
    name: str
    launch: dict
    samples: list = field(default_factory=list)   # ms per step (or per evaluation)
    status: str = "timed"                          # timed | pruned | failed | error
    note: str = ""

    @property
    def label(self) -> str:
        return strategies.create(self.name, **self.launch).label

    @property
    def median(self) -> float:
        return float(np.median(self.samples)) if self.samples else math.inf

    @property
    def q1(self) -> float:
        return float(np.percentile(self.samples, 25)) if self.samples else math.inf

    @property
    def q3(self) -> float:
        return float(np.percentile(self.samples, 75)) if self.samples else math.inf

    @property
    def spread(self) -> float:
        """(max - min) / median of the samples (0 for one sample)."""
        return (max(self.samples) - min(self.samples)) / self.median if len(self.samples) > 1 else 0.0

    def as_dict(self) -> dict:
        return {"strategy": self.name, "label": self.label, "launch": self.launch, "status": self.status,
                "note": self.note, "samples_ms": [round(s, 6) for s in self.samples],
                "median_ms": None if not self.samples else round(self.median, 6),
                "spread": round(self.spread, 4)}


def signature(problem: Problem) -> dict:
    """What makes two inputs similar for the cache: particle count, number density and the
    inhomogeneity (coefficient of variation of the occupancy of cells of side ~cutoff), with
    the box's periodicity, potential and precision."""
    L = problem.box.array
    side = problem.potential.cutoff or float(L.max()) / 8.0
    dims = np.clip(np.floor(L / side), 1, 64).astype(np.int64)
    idx = np.minimum((problem.positions / L * dims).astype(np.int64), dims - 1)
    counts = np.bincount((idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2], minlength=int(np.prod(dims)))
    mean = counts.mean() if len(counts) else 0.0
    cv = float(counts.std() / mean) if mean > 0 else 0.0
    return {"n": problem.n, "density": problem.n / problem.box.volume, "inhomogeneity": cv,
            "periodic": list(problem.box.periodic), "potential": problem.potential.spec(),
            "precision": problem.precision}


def _bucket(sig: dict, outputs: str, names: list[str], metric: str) -> str:
    """The cache key: n and density within ~5% (log buckets), inhomogeneity within 0.1 (or 10%
    above 1), everything else exact."""
    key = {"machine": machine(), "n": round(math.log(max(sig["n"], 1)) / math.log(1.05)),
           "density": round(math.log(max(sig["density"], 1e-300)) / math.log(1.05)),
           "inhomogeneity": round(sig["inhomogeneity"] * 10) if sig["inhomogeneity"] < 1 else
           10 + round(math.log(sig["inhomogeneity"]) / math.log(1.1)),
           "periodic": sig["periodic"], "potential": sig["potential"], "precision": sig["precision"],
           "outputs": outputs, "strategies": sorted(names), "metric": metric, "space": TUNE_SPACE, "schema": SCHEMA}
    return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]


def machine() -> str:
    info = device.gpu_info()
    if info:
        return f"gpu:{info.get('name', '?')}"
    import platform

    return f"cpu:{platform.processor() or platform.machine()}:{os.cpu_count()}"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "md-harness" / "tune.json"


def _load_cache(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
        return doc if isinstance(doc, dict) and doc.get("schema") == SCHEMA else {"schema": SCHEMA, "entries": {}}
    except (OSError, ValueError):
        return {"schema": SCHEMA, "entries": {}}


def _save_cache(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)  # whole or not at all


def variants(name: str) -> list[dict]:
    """One-at-a-time variations of the strategy's tunable launch parameters around its defaults
    (the defaults themselves not repeated)."""
    cls = strategies.REGISTRY[name]
    out = []
    for key, values in TUNE_SPACE.items():
        if key not in cls.launch_defaults:
            continue
        allowed = cls.launch_choices.get(key)
        for v in values:
            if v == cls.launch_defaults[key] or (allowed is not None and v not in allowed):
                continue
            try:
                strategies.create(name, **{key: v})
            except InputError:
                continue
            out.append({key: v})
    return out


class Tuner:
    """The search. measure(candidate) -> ms (one sample) is the only contact with the device, so
    that the rules can be tested with made-up times."""

    def __init__(self, names: list[str], budget_s: float, measure: Callable[[Candidate], float],
                 progress: Callable[[str], None] | None = None, bar=None, clock=time.monotonic):
        self.names, self.budget, self.measure = names, budget_s, measure
        self.progress, self.bar, self.clock = progress, bar, clock
        self.all: list[Candidate] = []
        self.rounds = 0

    def _say(self, text: str) -> None:
        if self.progress:
            self.progress(text)

    def _time(self, c: Candidate, counted: bool = True) -> None:
        try:
            c.samples.append(float(self.measure(c)))
        except StrategyError as e:  # e.g. a list capacity overflow on the trajectory: a result
            c.status, c.note = "error", str(e)
        if self.bar is not None and counted:
            self.bar.update(1)

    def _prune(self, cands: list[Candidate]) -> list[Candidate]:
        alive = [c for c in cands if c.status == "timed" and c.samples]
        if not alive:
            return []
        best = min(c.median for c in alive)
        for c in alive:  # two more samples before a strategy is dropped on its first
            if len(c.samples) == 1 and c.median > PRUNE * best:
                self._time(c, counted=False)
                if c.status == "timed":
                    self._time(c, counted=False)
        alive = [c for c in alive if c.status == "timed"]
        if not alive:
            return []
        best = min(c.median for c in alive)
        for c in alive:
            if c.median > PRUNE * best:
                c.status, c.note = "pruned", f"{c.median / best:.2f}x the best after {len(c.samples)} samples"
        return [c for c in alive if c.status == "timed"]

    def run(self, t0: float | None = None) -> list[Candidate]:
        """t0: when the budget started (default now, on self.clock)."""
        t0 = self.clock() if t0 is None else t0
        first = [Candidate(n, {}) for n in self.names]
        self.all += first
        for c in first:
            self._time(c)
            self._say(f"  {c.label:44s} {c.median:10.4f} ms" if c.status == "timed" else f"  {c.label}: {c.note}")
        alive = self._prune(first)
        # the survivors' launch parameters, one at a time
        # the most promising strategy's parameters first: the budget may end before the others'
        more = [Candidate(c.name, v) for c in sorted(alive, key=lambda c: c.median) for v in variants(c.name)]
        for c in more:
            if self.clock() - t0 > self.budget:
                c.status, c.note = "pruned", "not timed: the budget was spent"
                continue
            self._time(c)
        self.all += more
        alive = self._prune(alive + [c for c in more if c.status == "timed"])
        # the close ones, round by round, while the budget lasts (at least two rounds)
        while True:
            best = min(c.median for c in alive)
            close = [c for c in alive if c.median <= CLOSE * best]
            if len(close) < 2 and self.rounds >= 1:
                break
            if self.rounds >= 2 and self.clock() - t0 > self.budget:
                break
            if self.rounds >= 50:
                break
            for c in close:
                self._time(c)
            self.rounds += 1
            alive = [c for c in alive if c.status == "timed"]
            if not alive:
                break
        for c in alive:
            if c.median > CLOSE * min(a.median for a in alive) and c.status == "timed":
                c.note = c.note or "outside the close ones"
        return sorted([c for c in self.all if c.status == "timed" and c.samples], key=lambda c: c.median)


def probe(name: str, problem: Problem, outputs: str) -> float:
    """ms of one evaluation from scratch (after a first one that compiles and warms up)."""
    s = strategies.create(name)
    plan = s.prepare(problem, outputs)
    plan.upload()
    s.compute(plan).to_host()
    plan.synchronize()
    t = time.perf_counter()
    s.compute(plan)
    plan.synchronize()
    return (time.perf_counter() - t) * 1e3


def verdict(ranked: list[Candidate]) -> dict:
    """Winner, runner-up, margin, and whether it is a tie (the winner's upper quartile reaches the
    runner-up's lower quartile)."""
    w = ranked[0]
    out = {"winner": w.as_dict()}
    if len(ranked) > 1:
        r = next((c for c in ranked[1:] if c.name != w.name), ranked[1])
        out["runner_up"] = r.as_dict()
        out["margin"] = r.median / w.median if w.median > 0 else None
        out["tie"] = bool(w.q3 >= r.q1) or (out["margin"] or 1.0) < 1.02
    return out


def answer_line(v: dict, ms_unit: str) -> str:
    w = v["winner"]
    params = ", ".join(f"{k}={x}" for k, x in w["launch"].items()) or "its defaults"
    line = f"use {w['strategy']} with {params}: {w['median_ms']:.4g} ms {ms_unit}"
    if "runner_up" in v:
        r = v["runner_up"]
        word = "tie with" if v["tie"] else f"{v['margin']:.2f}x ahead of"
        line += (f", {word} the runner-up {r['label']} ({r['median_ms']:.4g} ms; spreads {w['spread']:.0%} and "
                 f"{r['spread']:.0%})")
    return line


METRICS = ("auto", "step", "scratch")


def tune(problem: Problem, names: list[str], budget_s: float, outputs: str = "forces", cache: Path | None = None,
         use_cache: bool = True, progress: Callable[[str], None] | None = None, bar_factory=None,
         frames: int = FRAMES, metric: str = "auto") -> dict:
    """The whole command: a document with the answer, every candidate and where it came from.
    metric: 'step' (per MD step on a recorded trajectory), 'scratch' (one evaluation from scratch,
    the sweep's graph_ms), or 'auto': per step where the MD loop applies, else from scratch."""
    if metric not in METRICS:
        raise InputError(f"tune: metric must be one of {', '.join(METRICS)}, got {metric!r}")
    md_applies = all(problem.box.periodic) and problem.potential.cutoff is not None
    if metric == "step" and not md_applies:
        raise InputError("--metric step: the MD loop needs a periodic box and a cutoff; this input has "
                         + ("no cutoff" if problem.potential.cutoff is None else "open boundaries")
                         + " (use --metric scratch or auto)")
    t_start = time.monotonic()
    sig = signature(problem)
    ok_names = []
    refused = {}
    for n in names:  # applicable, and within bench's distance-check budget (all-pairs at 1M is not)
        ok, why, _ = gate(strategies.create(n), problem, budgets("bench"), "bench")
        (ok_names.append(n) if ok else refused.__setitem__(n, why))
    if not ok_names:
        raise InputError("tune: no strategy applies to this input here: "
                         + "; ".join(f"{n}: {w}" for n, w in list(refused.items())[:4]))
    doc_cache = _load_cache(cache) if cache is not None else {"schema": SCHEMA, "entries": {}}

    def cached(metric: str) -> dict | None:
        hit = doc_cache["entries"].get(_bucket(sig, outputs, ok_names, metric)) if use_cache else None
        if hit is None:
            return None
        return {**hit, "cached": True, "cached_input": hit["input"], "input": problem.label, "signature": sig,
                "seconds": round(time.monotonic() - t_start, 3)}

    traj = None
    if md_applies and metric != "scratch":
        hit = cached("step")  # before recording the trajectory: a hit answers at once
        if hit is not None:
            return hit
        traj = bench.trajectory(problem, frames, EQUILIBRATE)
        if isinstance(traj, str):
            if metric == "step":
                raise InputError(f"--metric step: no trajectory for this input ({traj.removeprefix('n/a: ')})")
            if progress:
                progress(f"no trajectory ({traj.removeprefix('n/a: ')}): timing evaluations from scratch")
            traj = None
    metric = "step" if traj is not None else "scratch"
    hit = cached(metric)
    if hit is not None:
        return hit
    key = _bucket(sig, outputs, ok_names, metric)
    unit = "per MD step" if metric == "step" else "per evaluation from scratch"
    if progress:
        progress(f"tune {problem.describe()}: {len(ok_names)} strategies, metric: ms {unit}, budget {budget_s:g} s")
    gpu_any = any(strategies.REGISTRY[n].backend == "cuda" for n in ok_names)

    def measure(c: Candidate) -> float:
        s = strategies.create(c.name, **c.launch)
        if traj is not None:
            info = bench.time_amortised(s, problem, traj, outputs)
            c.note = f"{info.get('rebuilds', 0)} rebuilds over {info.get('amortised_frames')} steps" \
                if info.get("rebuilds") is not None else ""
            return info["amortised_ms"]
        plan = s.prepare(problem, outputs)
        plan.upload()
        s.compute(plan).to_host()  # compiled
        if s.backend == "cuda":
            # the sweep's device time (bench: graph_ms), so that tune and `make bench` rank alike:
            # the evaluation replayed as a CUDA graph, the L2 flushed before each sample; eager
            # launches where the strategy cannot be captured
            flush = bench._flush()
            g, _ = bench.time_graph(lambda: s.compute(plan), warmup=1, repeat=5, min_time=0.02, before=flush)
            if g is not None:
                return g.median
            return time_gpu(lambda: s.compute(plan), warmup=2, repeat=5, min_time=0.02, before=flush).median
        return time_cpu(lambda: s.compute(plan), warmup=0, repeat=3, min_time=0.0).median

    # one evaluation from scratch of each strategy first: the order of the search (fastest first)
    # and the ones an order of magnitude behind, dropped before a trajectory is replayed through them
    probes = {n: probe(n, problem, outputs) for n in ok_names}
    fastest = min(probes.values())
    early = [Candidate(n, {}, status="pruned", note=f"one evaluation from scratch took {ms:.4g} ms, {ms / fastest:.0f}x "
                                                    f"the fastest's") for n, ms in probes.items() if ms > PROBE * fastest]
    ok_names = sorted((n for n in ok_names if probes[n] <= PROBE * fastest), key=probes.get)
    if progress and early:
        progress(f"  dropped after one evaluation: {', '.join(c.name for c in early)}")
    total = len(ok_names) + sum(len(variants(n)) for n in ok_names)
    bar = bar_factory(total) if bar_factory else None
    tuner = Tuner(ok_names, budget_s, measure, progress, bar)
    ranked = tuner.run(t_start)  # the budget counts from the command's start (trajectory and probes included)
    tuner.all += early
    if bar is not None:
        bar.close()
    if not ranked:
        raise StrategyError("tune: no candidate could be timed: "
                            + "; ".join(f"{c.label}: {c.note}" for c in tuner.all[:4]))
    # the winner against the float64 reference before it is recommended; where it fails, the
    # next fastest of every candidate timed (the pruned ones included) is checked
    ranked = sorted((c for c in tuner.all if c.samples and c.status in ("timed", "pruned")), key=lambda c: c.median)
    ref = reference.compute(problem)
    failed = []
    while ranked:
        w = ranked[0]
        s = strategies.create(w.name, **w.launch)
        m = compare(s.evaluate(problem, "all"), ref, problem)
        if not m["failures"]:
            break
        w.status, w.note = "failed", "; ".join(m["failures"])
        failed.append(w.as_dict())
        ranked = ranked[1:]
    if not ranked:
        raise StrategyError("tune: every timed candidate failed verification: "
                            + "; ".join(f"{f['label']}: {f['note']}" for f in failed[:3]))
    v = verdict(ranked)
    doc = {"schema_version": SCHEMA, "kind": "tune", "input": problem.label, "signature": sig, "metric": metric,
           "unit": unit, "outputs": outputs, "budget_s": budget_s, "frames": None if traj is None else len(traj),
           **v, "answer": answer_line(v, unit), "verified": {"strategy": ranked[0].label, "against": "float64 reference"},
           "failed_verification": failed, "refused": refused, "rounds": tuner.rounds,
           "candidates": [c.as_dict() for c in tuner.all], "cached": False, "machine": machine(),
           "device": device.header() if gpu_any else None}
    doc["seconds"] = round(time.monotonic() - t_start, 3)
    if cache is not None:
        doc_cache["entries"][key] = {k: v for k, v in doc.items() if k not in ("seconds",)}
        _save_cache(cache, doc_cache)
    return doc
