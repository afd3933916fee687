"""`python -m harness bench`: sweeps of strategies x scenarios x sizes x precisions x launch
parameters, timed per phase. This module plans a sweep (suites, explicit selections, resume),
times its points and writes the results; harness/cli.py only parses the command line.

Per point: set-up (a second prepare: allocation, first binning, storage; compilation in the
first) with the host clock; upload, build, force, reduce, and the two device-resident
evaluations with CUDA events: compute = build + force + reduce ("from scratch": what a
strategy pays on new positions) and with_list = force + reduce ("force with a built list":
positions unchanged since the build; for the cell strategies, whose build is their binning,
the force phase and the reduction); download and the whole evaluation (upload + compute +
download) with the host clock; medians after warm-up.

A point whose first evaluation takes longer than SLOW_S is timed with one sample per phase
(marked single_sample): the spread of such points is not measured.

On the GPU every sample starts with a cold L2 (a buffer of twice the L2 is overwritten before
each sample, outside its events; l2="warm" leaves the cache as the previous sample left it), and
compute and with_list are also timed as CUDA-graph replays (graph_ms, with_list_graph_ms: the
same kernels without Python and launch overhead; "graph_note" says why where a strategy cannot
be captured).
Effective bandwidth counts the least traffic an evaluation needs: positions in, forces out.

Throughput uses AutoPas's flop counts: 8 flops per distance check, 15 per interaction without
Newton3 (every pair computed from both sides: 2 interactions per pair), 18 with. The floor is
those flops at the device's peak rate (FP32, or FP64 in fp64 mode): no kernel doing this work
can be faster.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

import strategies
from mdcore import MODES, InputError, Problem, StrategyError
from mdcore.fixed import snap_positions
from strategies import graphs as conditional

from . import device, results, scenarios
from .gate import budgets, gate
from .timing import Stats, time_cpu, time_gpu

FLOPS_CHECK, FLOPS_NO_N3, FLOPS_N3 = 8, 15, 18
SLOW_S = 0.5  # a first evaluation slower than this is timed with one sample per phase
NOISE = 0.25  # (max - min) / median of compute above this: the point is flagged noisy


def flops(checks: int, pairs: int, newton3: bool, energy: bool = True) -> float:
    """AutoPas's counts (with energy and virial); the forces-only flavour does the same count of
    distance checks and interactions, so the same count is its floor too (an upper bound)."""
    return FLOPS_CHECK * checks + (FLOPS_N3 * pairs if newton3 else FLOPS_NO_N3 * 2 * pairs)


class L2Flush:
    """Overwrites twice the L2's size on the device (enqueued, not waited for)."""

    def __init__(self) -> None:
        import cupy

        info = device.gpu_info() or {}
        self.buf = cupy.empty(int(2 * (info.get("l2_mib") or 64) * 2 ** 20) // 4, np.int32)

    def __call__(self) -> None:
        self.buf.fill(0)


_FLUSH: list = []


def _flush() -> L2Flush:
    if not _FLUSH:
        _FLUSH.append(L2Flush())
    return _FLUSH[0]


def min_bytes(problem: Problem) -> int:
    """Positions in (4 values of the compute type) and forces out (3 of the accumulation type)."""
    m = MODES[problem.precision]
    return problem.n * (4 * m.bytes_compute + 3 * m.bytes_accumulate)


def time_graph(fn: Callable[[], object], warmup: int, repeat: int, min_time: float,
               before: Callable[[], object] | None):
    """Capture fn (e.g. compute(plan)) into a CUDA graph on a side stream and time its replay;
    returns (Stats, "") or (None, why not)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        with stream:
            fn()  # allocations of the first run happen before the capture
            stream.synchronize()
            stream.begin_capture()
            try:
                fn()
            finally:
                graph = stream.end_capture()
            stats = time_gpu(lambda: graph.launch(stream), warmup=warmup, repeat=repeat, min_time=min_time,
                             before=before)
        return stats, ""
    except Exception as e:  # not capturable (host synchronisation, allocation during capture)
        try:
            cupy.cuda.Device().synchronize()
        except Exception:
            pass
        return None, f"not capturable: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def point_key(row: dict) -> tuple:
    """What identifies a point in a sweep (and in a partial file that --resume continues)."""
    return (row["strategy"], row["scenario"], int(row["n"]), row["precision"], row.get("outputs", "all"),
            row.get("potential"))


def plan_point(strategy: strategies.Strategy, problem: Problem, max_checks: dict | None = None,
               check_device: bool = True, outputs: str = "all") -> dict:
    """The point's row before timing: status "planned" with its distance checks, or "n/a" with
    the reason (not applicable, or over the distance-check budget). check_device=False plans a
    GPU point on a machine without a GPU (its device checks left out)."""
    row = {"strategy": strategy.label, "name": strategy.name, "backend": strategy.backend,
           "scenario": problem.label.split(" ")[0], "n": problem.n, "precision": problem.precision,
           "potential": problem.potential.spec(), "outputs": outputs, "launch_params": dict(strategy.launch),
           **{a: v for a, v in strategies.attributes(type(strategy)).items() if a not in ("backend", "precisions")}}
    ok, why, checks = gate(strategy, problem, budgets("bench", max_checks), "bench", check_device)
    if not ok:
        return {**row, "status": "n/a", "detail": why}
    return {**row, "status": "planned", "distance_checks": checks}


def bench_point(strategy: strategies.Strategy, problem: Problem, warmup: int, repeat: int, min_time: float,
                l2: str = "flush", graph: bool = True, max_checks: dict | None = None, outputs: str = "all",
                frames=None) -> dict:
    """One point's row. frames: a recorded trajectory (harness.md.record) for the amortised cost
    of a step (amortised_ms), or a string saying why there is none."""
    row = plan_point(strategy, problem, max_checks, outputs=outputs)
    if row.pop("status") != "planned":
        return {**row, "status": "n/a"}
    row.pop("distance_checks")
    gpu = strategy.backend == "cuda"
    # set-up of a second prepare(): the first compiles kernels (ours and CuPy's own sort and
    # scan), which a set-up time must not include
    strategy.prepare(problem, outputs).synchronize()
    t0 = time.perf_counter()
    plan = strategy.prepare(problem, outputs)
    plan.synchronize()
    row["setup_ms"] = (time.perf_counter() - t0) * 1e3

    before = _flush() if gpu and l2 == "flush" else None

    def timer(fn: Callable[[], object]) -> Stats:
        if gpu:
            return time_gpu(fn, warmup=warmup, repeat=repeat, min_time=min_time, before=before)
        return time_cpu(fn, warmup=min(warmup, 1), repeat=max(min(repeat, 3), repeat // 4), min_time=min_time)

    plan.upload()
    strategy.compute(plan).to_host()  # first run: just-in-time compilation (numba, CuPy's own kernels)
    plan.set_outputs("all")  # the pair count, for the throughput figures of either flavour
    pairs = strategy.compute(plan).to_host().pairs
    plan.set_outputs(outputs)
    t0 = time.perf_counter()
    strategy.compute(plan).to_host()  # how slow a run is
    if time.perf_counter() - t0 > SLOW_S:  # one sample per phase: a slow point is slow enough
        warmup, repeat, min_time = 0, 1, 0.0
        row["single_sample"] = True
    t = {"upload": timer(plan.upload), "build": timer(plan.build), "force": timer(plan.force),
         "reduce": timer(plan.reduce), "compute": timer(lambda: strategy.compute(plan)),
         "with_list": timer(lambda: strategy.compute_built(plan))}
    done = strategy.compute(plan)
    plan.synchronize()
    t["download"] = time_cpu(done.to_host, warmup=1, repeat=5, min_time=0.0)
    if gpu and graph:
        for key, fn in (("graph", lambda: strategy.compute(plan)), ("with_list_graph", lambda: strategy.compute_built(plan))):
            g, why = time_graph(fn, warmup, repeat, min_time, before)
            if g is not None:
                row.update({f"{key}_ms": g.median, f"{key}_min_ms": g.min, f"{key}_max_ms": g.max,
                            f"{key}_q1_ms": g.q1, f"{key}_q3_ms": g.q3})
            else:
                row["graph_note"] = why
    t["evaluate"] = time_cpu(lambda: (plan.upload(), strategy.compute(plan).to_host()), warmup=min(warmup, 1),
                             repeat=min(repeat, 3), min_time=min_time / 2, sync=plan.synchronize)
    work = strategy.work(problem)
    checks = work.get("distance_checks")
    sec = t["compute"].median / 1e3
    row.update({f"{k}_ms": v.median for k, v in t.items()})
    row.update({f"{k}_spread": v.spread for k, v in t.items()})
    row.update({"compute_min_ms": t["compute"].min, "compute_max_ms": t["compute"].max,
                "force_min_ms": t["force"].min, "force_max_ms": t["force"].max,
                "with_list_min_ms": t["with_list"].min, "with_list_max_ms": t["with_list"].max,
                **{f"{k}_{q}_ms": getattr(t[k], q) for k in ("compute", "force", "with_list") for q in ("q1", "q3")},
                "repeats": t["compute"].repeats, "pairs": pairs, "l2": l2 if gpu else None,
                "pairs_per_s": pairs / sec if sec else None,
                "particles_per_s": problem.n / sec if sec else None,
                "eff_bandwidth_gbs": min_bytes(problem) / sec / 1e9 if sec else None})
    if checks is not None:
        fl = flops(checks, pairs, strategy.newton3, energy=outputs == "all")
        interactions = pairs * (1 if strategy.newton3 else 2)
        row.update({"checks_per_interaction": checks / interactions if interactions else None,
                    "gflops": fl / sec / 1e9 if sec else None})
        info = device.gpu_info() if gpu else None
        peak = None
        if info:
            peak = info["peak_fp64_tflops"] if problem.precision == "fp64" else info["peak_fp32_tflops"]
        if peak:
            row["floor_ms"] = fl / (peak * 1e12) * 1e3
            row["pct_of_peak"] = 100.0 * row["floor_ms"] / t["compute"].median
        if info and info.get("peak_dram_gbs") and row.get("eff_bandwidth_gbs") is not None:
            row["pct_of_dram"] = 100.0 * row["eff_bandwidth_gbs"] / info["peak_dram_gbs"]
    if t["compute"].repeats > 1 and t["compute"].spread > NOISE:
        row["noisy"] = True  # NVBench's habit: say so rather than print a median that moved
    row["launch"] = plan.launch_info or None
    row["device_bytes"] = plan.device_bytes
    if isinstance(frames, str):
        row["amortised_note"] = frames
    elif frames is not None:
        del plan
        try:
            row.update(time_amortised(strategy, problem, frames, outputs))
            if row.get("listed_pairs") and pairs:  # checks per interaction of the list's force phase
                row["list_checks_per_interaction"] = row["listed_pairs"] / (row.get("list_visits", 2) * pairs)
        except StrategyError as e:  # e.g. a list that outgrew its capacity on the trajectory
            row["amortised_note"] = f"error: {e}"
    row["status"] = "ok"
    return row


def launch_variants(cls: type[strategies.Strategy], launch: dict, sweep: dict[str, list]) -> list[dict]:
    """`launch` (applied as given) times the product of the sweep values this strategy knows."""
    keys = [k for k in sweep if cls.knows(k)]
    combos = itertools.product(*[sweep[k] for k in keys]) if keys else [()]
    return [{**launch, **dict(zip(keys, values))} for values in combos]


def run(names: list[str], scenario: str | list[str] | None, sizes: list, precision: str, seed: int = 1,
        warmup: int = 3, repeat: int = 20, min_time: float = 0.3, launch: dict | None = None,
        problem: Problem | None = None, progress: Callable[[str], None] | None = None,
        sweep: dict[str, list] | None = None, l2: str = "flush", graph: bool = True, bar=None,
        max_checks: dict | None = None, done: dict | None = None, sink: Callable[[dict], None] | None = None,
        dry_run: bool = False, check_device: bool = True, outputs: str = "all", amortised: int = 0,
        potential: str | list | None = None) -> list[dict]:
    """One row per (scenario, size, strategy, launch variant) at this precision. amortised: frames
    of a recorded trajectory replayed for the amortised cost of a step (0: none). Points whose
    key is in `done` (rows of an earlier, interrupted run, a list per key, one row per occurrence,
    consumed in order) are taken from there, not timed;
    `sink` gets each new row as soon as it is measured; `dry_run` plans without timing."""
    rows = []
    specs = [scenario] if isinstance(scenario, str) or scenario is None else list(scenario)
    pots = [potential] if potential is None or isinstance(potential, str) else list(potential)
    problems = (in_precision(problem, precision) for _ in (0,)) if problem is not None else \
        (in_precision(scenarios.with_potential(base, pot), precision)
         for base in (scenarios.make(spec, n, seed=seed, precision="fp64") for spec in specs for n in sizes)
         for pot in pots)
    for p, outside in problems:  # one problem in memory at a time: the large ones are gigabytes
        frames = None  # recorded when the first point of this problem is timed
        for name in names:
            for lp in launch_variants(strategies.REGISTRY[name], launch or {}, sweep or {}):
                cls = strategies.REGISTRY[strategies.canonical(name)]
                s = strategies.create(name, **{k: v for k, v in lp.items() if cls.knows(k)})
                s.refused = strategies.lacking(name, lp)  # a --launch parameter it lacks: n/a with the reason
                key = (s.label, p.label.split(" ")[0], p.n, precision, outputs, p.potential.spec())
                if outside:  # the input lies outside this precision (fixed point's range)
                    row = {**plan_point(s, p, max_checks, False, outputs), "precision": precision, "status": "n/a",
                           "detail": outside}
                    row.pop("distance_checks", None)
                elif done and done.get(key):
                    row = done[key].pop(0)
                elif dry_run:
                    row = plan_point(s, p, max_checks, check_device, outputs)
                else:
                    try:
                        if amortised and frames is None and \
                                plan_point(s, p, max_checks, check_device, outputs)["status"] == "planned":
                            frames = trajectory(p, amortised)  # once per problem, for its first timed point
                        row = bench_point(s, p, warmup, repeat, min_time, l2=l2, graph=graph, max_checks=max_checks,
                                          outputs=outputs, frames=frames)
                    except StrategyError as e:  # e.g. a lock timeout or capacity overflow: a result, not a crash
                        row = {"strategy": s.label, "name": name, "backend": s.backend,
                               "scenario": p.label.split(" ")[0], "n": p.n, "precision": p.precision,
                               "potential": p.potential.spec(), "outputs": outputs, "status": "error",
                               "detail": str(e)}
                    if sink is not None:
                        sink(row)
                rows.append(row)
                if bar is not None:
                    bar.update(1)
                if progress:
                    progress(format_row(row))
    return rows


def in_precision(problem: Problem, precision: str) -> tuple[Problem, str]:
    """(the problem in `precision`, ""), or (the problem as it was, why not) where the input lies
    outside what the precision holds (fixed point's range: mdcore.fixed)."""
    try:
        return problem.with_precision(precision), ""
    except InputError as e:
        return problem, f"the input is outside precision {precision}: {e}"


CPU_RECORD_LIMIT = 5e7  # particle steps a CPU records a trajectory for (about a minute on two cores)


def trajectory(p: Problem, frames: int, equilibrate: int | None = None):
    """The recorded frames of p for the amortised column, or why there are none (a string).
    equilibrate: steps before the first frame (default md.EQUILIBRATE)."""
    from . import md

    equilibrate = md.EQUILIBRATE if equilibrate is None else equilibrate

    if not all(p.box.periodic) or p.potential.cutoff is None:
        return "n/a: the MD loop needs a periodic box and a cutoff"
    need = frames * p.n * 3 * 8 * 2  # the frames on the host, and a copy for the replay
    free = device.host_memory_available()
    if free is not None and need > free // 2:
        return f"n/a: {frames} frames of {p.n:,} particles need {need / 2**30:.1f} GiB of host memory"
    work = p.n * (equilibrate + frames)
    if not md.driver_available_on_gpu() and work > CPU_RECORD_LIMIT:
        return (f"n/a: recording {equilibrate + frames} steps of {p.n:,} particles on the CPU would take long "
                f"({work:.2g} particle steps, the limit is {CPU_RECORD_LIMIT:.0g}); --amortised 0 skips the column")
    try:
        return md.record(p, frames, equilibrate=equilibrate)
    except InputError as e:
        return f"n/a: {e}"


def count_points(names: list[str], n_problems: int, launch: dict | None, sweep: dict | None) -> int:
    return n_problems * sum(len(launch_variants(strategies.REGISTRY[n], launch or {}, sweep or {})) for n in names)


def format_peer(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} {r['status']}: {r['detail']}"
    extra = "".join(f"  {k.replace('_ms', '')} {r[k]:.4f} ms" for k in ("step_ms", "update_ms") if k in r)
    return (f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} force {r['force_ms']:9.4f} ms "
            f"[{r['force_min_ms']:.4f}..{r['force_max_ms']:.4f}, n={r['repeats']}]{extra}  on {r['platform']}, "
            f"force rms err {r['force_rms_err']:.2e}, energy err {r.get('energy_err', float('nan')):.2e}  "
            f"({r['includes']})")


def format_row(r: dict) -> str:
    if r["status"] == "planned":
        checks = r.get("distance_checks")
        lp = ",".join(f"{k}={v}" for k, v in (r.get("launch_params") or {}).items())
        return (f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} {r['scenario']:20s} planned"
                + (f", {checks:.3g} distance checks" if checks is not None else "") + (f"  ({lp})" if lp else ""))
    if r["status"] != "ok":
        return f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} {r['status']}: {r['detail']}"
    s = (f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} {r.get('outputs', 'all'):6s} compute {r['compute_ms']:9.4f} ms "
         f"[{r['compute_min_ms']:.4f}..{r['compute_max_ms']:.4f}, n={r['repeats']}]  build {r['build_ms']:.4f}  "
         f"force {r['force_ms']:.4f}  reduce {r['reduce_ms']:.4f}  with list {r['with_list_ms']:.4f}  "
         f"upload {r['upload_ms']:.4f}  "
         f"download {r['download_ms']:.4f}  evaluate {r['evaluate_ms']:.4f} ms  setup {r['setup_ms']:.1f} ms  "
         f"{r['pairs_per_s'] / 1e9:8.3f} Gpairs/s")
    if r.get("device_bytes") is not None:
        s += f"  {r['device_bytes'] / 2**20:.1f} MiB"
    if r.get("graph_ms") is not None:
        s += f"  graph {r['graph_ms']:.4f} ms"
    if r.get("floor_ms") is not None:
        s += f"  {r['gflops']:.0f} GFLOP/s, floor {r['floor_ms']:.4f} ms ({r['pct_of_peak']:.1f}% of peak)"
    if r.get("launch"):
        s += "  launch " + ",".join(f"{k}={v}" for k, v in r["launch"].items())
    return s


# --- tables and files --------------------------------------------------------------------

# what must match for --resume to add to earlier rows: the same machine, code and timing method
RESUME_MATCH = ("gpu", "sms", "cpu", "cpu_cores", "commit")


class Partial:
    """<name>.partial.jsonl beside the results: a first line with the device header and the
    command, then one row per measured point, written and flushed as the point ends, so that an
    interrupted sweep keeps what it measured and `--resume` continues it. Removed once the
    CSV and JSON are written."""

    def __init__(self, path, header: dict, meta: dict, resume: bool) -> None:
        import json
        from pathlib import Path


        self.path = Path(path)
        # point key -> rows in the order measured: a suite may time one point twice (two parts
        # share it), and each occurrence takes its own row, the second one is not a copy
        self.done: dict[tuple, list[dict]] = {}
        if resume and self.path.exists():
            lines = self.path.read_text().splitlines()
            try:
                first = json.loads(lines[0]) if lines else {}
            except json.JSONDecodeError:
                first = {}
            if "device" not in first:
                raise InputError(f"--resume: {self.path} is not a partial bench file (no device header)")
            for k in RESUME_MATCH:
                if first["device"].get(k) != header.get(k):
                    raise InputError(f"--resume: {self.path} was measured with {k} = {first['device'].get(k)!r}, "
                                     f"this run has {header.get(k)!r}; start afresh (another --name) instead of "
                                     f"mixing the two")
            kept = 1
            for line in lines[1:]:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # the last line, cut off by the interruption
                    break
                self.done.setdefault(point_key(row), []).append(row)
                kept += 1
            if kept < len(lines):  # the cut-off line goes, so that the rows appended next stay readable
                self.path.write_text("".join(ln + "\n" for ln in lines[:kept]))
            self.file = self.path.open("a")
        else:  # created with the first point: a run refused before it leaves no file or folder
            self.file = None
            self.head = {"device": header, "meta": meta}

    def _write(self, obj: dict) -> None:
        import json
        import os

        if self.file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = self.path.open("w")
            self._write(self.head)
        self.file.write(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else str(o)) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def __call__(self, row: dict) -> None:
        self._write(row)

    def finish(self) -> None:
        """The results are written: the partial file has served."""
        if self.file is not None:
            self.file.close()
            self.path.unlink()

    def abandon(self) -> None:
        """The run stopped early: keep the rows measured (for --resume), but a file holding
        only its header is no result and goes."""
        if self.file is None:
            return
        self.file.close()
        if self.path.exists() and len(self.path.read_text().splitlines()) <= 1:
            self.path.unlink()


COLUMNS = ["strategy", "scenario", "n", "precision", "outputs", "status", "compute_ms", "compute_spread", "repeats", "build_ms",
           "force_ms", "reduce_ms", "with_list_ms", "graph_ms", "with_list_graph_ms", "amortised_ms", "rebuilds",
           "prunes", "evaluate_ms", "setup_ms", "pairs_per_s", "particles_per_s",
           "checks_per_interaction", "gflops", "pct_of_peak", "eff_bandwidth_gbs", "device_bytes"]


def frame(rows: list[dict]):
    """The rows as a pandas DataFrame (nested fields as JSON text)."""
    return results.frame(rows, COLUMNS)


def terminal_table(rows: list[dict]) -> str:
    """A readable summary: one line per point, times in ms, rates in G/s; a closing line names
    the points whose compute spread stayed above NOISE."""
    df = frame(rows)
    show = df[[c for c in ("strategy", "scenario", "n", "precision", "outputs", "status", "compute_ms", "compute_spread",
                           "build_ms", "with_list_ms", "graph_ms", "with_list_graph_ms", "amortised_ms", "rebuilds",
                           "prunes", "pairs_per_s", "pct_of_peak")
               if c in df.columns]].copy()
    if "potential" in df.columns and df["potential"].nunique(dropna=True) > 1:  # the potential axis: which is which
        show.insert(2, "potential", df["potential"].astype(str).str.partition(":")[0])
    if "pairs_per_s" in show:
        show["pairs_per_s"] = show["pairs_per_s"] / 1e9
        show = show.rename(columns={"pairs_per_s": "Gpairs_per_s"})
    for c in show.columns:  # no "None" in the table
        if show[c].dtype == object:
            show[c] = show[c].map(lambda v: "" if v is None else v)
    text = show.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="")
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r["status"] != "ok":
            reasons.setdefault(f"{r['status']}: {r.get('detail', '')}", []).append(
                f"{r['strategy']} {r['scenario']} N={r['n']} {r['precision']}")
    for why, points in reasons.items():
        text += f"\n{why}  ({len(points)} point{'s' if len(points) > 1 else ''}: {'; '.join(points[:4])}" \
                f"{'; ...' if len(points) > 4 else ''})"
    noisy = [f"{r['strategy']} {r['scenario']} N={r['n']} {r['precision']} ({r['compute_spread']:.0%})"
             for r in rows if r.get("noisy")]
    if noisy:
        text += (f"\nnoisy (spread (max - min) / median above {NOISE:.0%}; compare medians with care): "
                 + "; ".join(noisy))
    return text


def write(rows: list[dict], header: dict, meta: dict, folder, name: str, copy_to=None) -> list:
    """<folder>/<name>.csv (one row per point) and <name>.json (device header, command, rows)."""
    return results.write(results.document("bench", rows, header, meta), folder, name, COLUMNS, copy_to=copy_to)


# --- sweeps: planning, resuming, running ---------------------------------------------------

@dataclass
class SweepPart:
    names: list[str]
    specs: list[str]
    sizes: list
    precisions: list[str]
    sweep: dict = field(default_factory=dict)
    potential: str | None = None  # a potential spec replacing the scenarios' (None: theirs, or --potential)
    outputs: tuple[str, ...] = ()  # the part's own output flavours (empty: --outputs)


@dataclass
class Sweep:
    """What one `harness bench` call times: parts of strategies x scenarios x sizes x
    precisions x launch sweeps, or one given problem (--input) in place of scenarios and sizes."""

    parts: list[SweepPart]
    launch: dict
    problem: Problem | None = None
    suite: str | None = None
    gpu: bool = True
    potentials: list = field(default_factory=lambda: [None])  # potential specs (None: the scenario's own)

    def points(self, flavours: int = 1) -> int:
        per = lambda p: (1 if self.problem is not None else len(p.specs) * len(p.sizes) * len(self.potentials)) \
            * len(p.precisions)  # noqa: E731
        return flavours * sum(count_points(p.names, per(p), self.launch, p.sweep) for p in self.parts)


def size_of(text: str) -> str | int:
    return scenarios.parse_size(text)


def plan_sweep(suite: str | None = None, selection: str | None = None, specs: list[str] | None = None,
               sizes: list | None = None, precisions: list[str] | None = None, sweep: dict | None = None,
               launch: dict | None = None, problem: Problem | None = None, dry_run: bool = False,
               experimental: bool = False) -> Sweep:
    """A named suite, or an explicit selection (default allpairs_thread_tiled on the LJ liquid,
    medium, fp32). Strategies named explicitly must run here (unless a dry run plans for a GPU
    elsewhere); a suite or the default on a machine without GPU keeps its CPU strategies and
    lists the GPU points as n/a with the reason. Experimental strategies come only by name or with
    `experimental`."""
    from . import suites

    gpu_ok = strategies.create("allpairs_thread_tiled").available()
    if suite:
        if selection or specs or sizes or sweep:
            raise InputError("--suite sets strategies, scenarios, sizes and sweeps; leave those out")
        _, parts = suites.get(suite)
        plan = [SweepPart(strategies.resolve(p.strategies, experimental), list(p.scenarios), [size_of(str(n)) for n in p.sizes],
                          list(p.precisions), p.sweep, p.potential, p.outputs) for p in parts]
        explicit = False
    else:
        plan = [SweepPart(strategies.resolve(selection or "allpairs_thread_tiled", experimental), specs or ["lj_liquid"],
                          sizes or ["medium"], precisions or ["fp32"], sweep or {})]
        explicit = bool(selection)
    for part in plan:
        strategies.check_launch_keys(part.names, launch or {})  # a parameter none of them has: a typo
        if explicit and not dry_run:
            for n in part.names:
                ok, why = strategies.create(n).available()
                if not ok:
                    raise InputError(f"strategy {n} cannot run on this machine: {why}")
        if problem is None:
            for spec in part.specs:  # unknown names, bad parameters and sizes fail before any work
                for n in part.sizes:
                    scenarios.check(spec, n)
    return Sweep(plan, launch or {}, problem, suite, gpu_ok[0])


def run_sweep(sw: Sweep, out: Path, name: str | None, resume: bool = False, dry_run: bool = False,
              timing: dict | None = None, max_checks: dict | None = None, peer_names: list[str] | None = None,
              argv: list[str] | None = None, progress: Callable[[str], None] | None = print, bar=None,
              json_copy: Path | None = None) -> tuple[list[dict], list[Path]]:
    """Time every point of the sweep (rows appended to <out>/<name>.partial.jsonl as they end;
    resume continues an interrupted run of that name), then the peers, then write CSV and JSON.
    A dry run plans the points and writes nothing. timing: seed, warmup, repeat, min_time, l2,
    graph."""
    import sys

    timing = {"seed": 1, "warmup": 3, "repeat": 20, "min_time": 0.3, "l2": "flush", "graph": True, "outputs": ["all"],
              "amortised": 0, **(timing or {})}
    if resume and not name:
        raise InputError("--resume continues the run named by --name; name it")
    header = device.header()
    meta = {"command": "python -m harness " + " ".join(sys.argv[1:] if argv is None else argv),
            "suite": sw.suite, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "l2": timing["l2"], "graph": timing["graph"]}
    name = name or (sw.suite or "bench") + "-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    partial = None
    if not dry_run:
        partial = Partial(Path(out) / f"{name}.partial.jsonl", header, meta, resume=resume)
        resumed = sum(map(len, partial.done.values()))
        if resumed:
            print(f"resume: {resumed} points measured earlier are taken from {partial.path}")
        if resumed:
            meta["resumed"] = resumed  # said in the JSON and the report
    rows: list[dict] = []
    try:
        for part in sw.parts:
            for prec in part.precisions:
                for outputs in part.outputs or timing["outputs"]:
                    rows += run(part.names, part.specs, part.sizes, prec, seed=timing["seed"], warmup=timing["warmup"],
                                repeat=timing["repeat"], min_time=timing["min_time"], launch=sw.launch,
                                problem=sw.problem, progress=progress, sweep=part.sweep, l2=timing["l2"],
                                graph=timing["graph"], bar=bar, max_checks=max_checks,
                                done=partial.done if partial else None, sink=partial, dry_run=dry_run,
                                check_device=sw.gpu or not dry_run, outputs=outputs,
                                amortised=timing.get("amortised", 0),
                                potential=part.potential or timing.get("potentials", timing.get("potential")))
        if dry_run:
            return rows, []
        if peer_names:
            rows += _peer_rows(sw, peer_names, timing, progress)
        if not rows:
            raise InputError("nothing to time: no strategy of this selection runs on this machine")
        paths = write(rows, header, meta, out, name, copy_to=json_copy)
    except BaseException:
        if partial is not None:
            partial.abandon()
        raise
    partial.finish()
    return rows, paths


def _peer_rows(sw: Sweep, peer_names: list[str], timing: dict, progress) -> list[dict]:
    import reference

    from . import peers

    out = []
    for part in sw.parts:
        problems = [in_precision(sw.problem, pr) for pr in part.precisions] if sw.problem is not None else \
            [in_precision(scenarios.make(sp, n, seed=timing["seed"], precision="fp64"), pr) for pr in part.precisions
             for sp in part.specs for n in part.sizes]
        for p, outside in problems:
            if outside:
                continue
            ref = reference.compute(p)
            for peer in peer_names:
                row = peers.run(peer, p, ref, min_time=timing["min_time"])
                out.append(row)
                if progress:
                    progress(format_peer(row))
    return out


def time_amortised(strategy: strategies.Strategy, problem: Problem, frames, outputs: str = "forces") -> dict:
    """The cost of a step on a real trajectory: the frames (harness.md.record) replayed one by one
    into the plan's positions, each followed by the strategy's step (list upkeep: displacement
    checks and every rebuild; force; reduce), divided by the frames. The copies of the frames
    are timed alone and taken off. GPU: the whole replay captured as one CUDA graph where the
    strategy allows (as in the MD loop), timed with events from frame 0's list AMORTISED_REPEATS
    times (the median, and the spread in amortised_spread), so that the host's launches do not
    bound a small system's figure."""
    from . import md

    if strategy.launch.get("headroom") == 0.0:  # padded cells: room for particles that move in
        strategy = type(strategy)(**{**strategy.launch, "headroom": md.HEADROOM})
    p0 = Problem.make(frames[0], problem.box, problem.potential, problem.precision, label=problem.label)
    gpu = strategy.backend == "cuda"
    plan = strategy.prepare(p0, outputs)
    L = plan.problem.box.array  # fixed: the snapped box, and the frames snapped to its grid (mdcore.fixed)
    if MODES[problem.precision].fixed:
        frames = snap_positions(frames, L, plan.problem.box.periodic)
    centred = frames - 0.5 * L
    centred -= L * np.floor(centred / L + 0.5)
    n, k = problem.n, len(frames)
    info = {"amortised_frames": k - 1, "skin": strategy.launch.get("skin")}
    # adapt: each frame's velocities from the recorded steps (md.FrameVelocities), copied in with the frame
    # (and timed off with it); frame 0's list knows none, as the MD loop's first list
    feed = md.FrameVelocities(plan) if md.feeds_velocities(strategy, plan) else None
    if feed is not None:
        info["amortised_velocities"] = "from the frames"
    if gpu:
        import cupy

        dev = cupy.asarray(centred.astype(plan.real))
        vdev = None
        if feed is not None:
            vdev = cupy.zeros((k, n, 3), feed.v.dtype)
            for i in range(1, k):
                vdev[i] = cupy.asarray(md.FrameVelocities.of(frames, i, L).astype(feed.v.dtype))
        stream = cupy.cuda.Stream(non_blocking=True)
        cupy.cuda.Device().synchronize()
        with stream:
            plan.upload()
            strategy.compute(plan)  # the list of frame 0
            if feed is not None:
                plan.use_velocities(feed)

            def copy(i):
                plan.pos[:n, :3] = dev[i]
                if vdev is not None:
                    feed.set(vdev[i])
            copy(1)
            strategy.step(plan)  # every kernel compiled before the capture
            # the whole replay as one CUDA graph (and the copies alone as another): timed on the
            # device, so that a small system's step is not hidden behind the host's launches
            nodes = dict(conditional.NODES)
            replay, note = _capture_replay(strategy, plan, stream, copy, k)
            copies_only, _ = _capture_replay(None, plan, stream, copy, k)
            info["amortised_graph"] = note
            if note == "graph" and strategy.list_reuse:  # how the list upkeep was recorded
                info["amortised_upkeep"] = conditional.recorded(nodes)
            t0, t1 = cupy.cuda.Event(), cupy.cuda.Event()
            samples = []
            for _ in range(AMORTISED_REPEATS):
                copy(0)
                if feed is not None:
                    plan.use_velocities(None)
                strategy.compute(plan)  # frame 0's list again: every repeat replays the same steps
                if feed is not None:
                    plan.use_velocities(feed)
                before, pruned_before = plan.rebuild_count(), plan.prune_count()
                t0.record(stream)
                replay()
                t1.record(stream)
                t1.synchronize()
                total = cupy.cuda.get_elapsed_time(t0, t1)
                t0.record(stream)
                copies_only()
                t1.record(stream)
                t1.synchronize()
                samples.append(max(total - cupy.cuda.get_elapsed_time(t0, t1), 0.0))
            samples.sort()
            total, copies = samples[len(samples) // 2], 0.0
            info["amortised_spread"] = (samples[-1] - samples[0]) / total if total > 0 else 0.0
    else:
        host = centred.astype(plan.real)
        vels = None
        if feed is not None:
            vels = np.zeros((k, n, 3), feed.v.dtype)
            for i in range(1, k):
                vels[i] = md.FrameVelocities.of(frames, i, L)
        plan.upload()
        strategy.compute(plan)
        if feed is not None:
            plan.use_velocities(feed)

        def copy(i):
            plan.pos[:] = host[i]
            if vels is not None:
                feed.set(vels[i])
        copy(1)
        strategy.step(plan)
        before, pruned_before = plan.rebuild_count(), plan.prune_count()
        t = time.perf_counter()
        for i in range(1, k):
            copy(i)
            strategy.step(plan)
        total = 1e3 * (time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(1, k):
            copy(i)
        copies = 1e3 * (time.perf_counter() - t)
    info["amortised_ms"] = max(total - copies, 0.0) / (k - 1)
    if before is not None:
        info["rebuilds"] = plan.rebuild_count() - before  # over the replayed frames
        if pruned_before is not None:
            info["prunes"] = plan.prune_count() - pruned_before  # the inner list's, over the same frames
        info["list_bytes"] = plan.launch_info.get("list_bytes")
    listed = plan.listed_pairs()
    if listed is not None:
        info["listed_pairs"] = listed  # the last frame's list: the force phase's checks
        info["list_visits"] = plan.visits_per_pair  # 2: every pair in both rows (full list), 1: once
    return info


AMORTISED_REPEATS = 3  # replays of the whole trajectory on the GPU (the median is reported)


def _capture_replay(strategy, plan, stream, copy, k):
    """(a function that replays frames 1..k-1: each copied into the plan, then the strategy's step
    (strategy None: the copies alone), "graph" or why it runs eagerly)."""
    def run():
        for i in range(1, k):
            copy(i)
            if strategy is not None:
                strategy.step(plan)
    try:
        stream.begin_capture()
        try:
            run()
        finally:
            g = stream.end_capture()
        return (lambda: g.launch(stream)), "graph"
    except Exception as e:
        try:
            import cupy

            cupy.cuda.Device().synchronize()
        except Exception:
            pass
        return run, f"eager ({type(e).__name__}; the host's launches may bound it)"
