"""`python -m harness bench`: sweeps of strategies x scenarios x sizes x precisions x launch
parameters, timed per phase. This module times the points; harness/sweep.py plans a sweep (suites,
explicit selections, resume) and writes the results; harness/amortised.py replays a trajectory for
the amortised column; harness/cli/ only parses the command line.

Per point: set-up (a second prepare: allocation, first binning, storage; compilation in the
first) with the host clock; upload, build, force, reduce, and the two device-resident
evaluations with CUDA events: compute = build + force + reduce ("from scratch": what a
strategy pays on new positions) and with_list = force + reduce ("force with a built list":
positions unchanged since the build; for the cell strategies, whose build is their binning,
the force phase and the reduction); download and the whole evaluation (upload + compute +
download) with the host clock; medians after warm-up.

A point whose first evaluation takes longer than SLOW_S is timed with one sample per phase
(marked single_sample): the spread of such points is not measured. With max_time, a point whose
warm-up and samples would take longer than that per phase takes fewer samples, at least
MIN_SAMPLES, one warm-up, no minimum time (its row says how many: repeats).

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
from typing import Callable

import numpy as np

import strategies
from mdcore import MODES, InputError, Problem, StrategyError

from . import device, scenarios
from .amortised import time_amortised
from .gate import budgets, gate
from .timing import Stats, time_cpu, time_gpu

FLOPS_CHECK, FLOPS_NO_N3, FLOPS_N3 = 8, 15, 18
SLOW_S = 0.5  # a first evaluation slower than this is timed with one sample per phase
MIN_SAMPLES = 3  # the fewest samples a phase takes under max_time (a median and its quartiles)
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
                frames=None, max_time: float | None = None) -> dict:
    """One point's row. frames: a recorded trajectory (harness.md.record) for the amortised cost
    of a step (amortised_ms), or a string saying why there is none. max_time: seconds a phase's
    warm-up and samples should take at most (fewer samples for a slow point, at least MIN_SAMPLES)."""
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
    load = device.HostLoad()

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
    once = time.perf_counter() - t0
    if once > SLOW_S:  # one sample per phase: a slow point is slow enough
        warmup, repeat, min_time = 0, 1, 0.0
        row["single_sample"] = True
    elif max_time and once * (warmup + repeat) > max_time:
        warmup, repeat, min_time = min(warmup, 1), max(MIN_SAMPLES, min(repeat, int(max_time / once))), 0.0
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
    load.record(row, gpu)
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


class Shard:
    """One share of a sweep for a job array (`--shard i/n`): the sweep's points in their order, point
    k this shard's where k % n == i - 1 (round robin, so that each share holds some of every size).
    One object follows a whole sweep (take() once per point, in order)."""

    def __init__(self, index: int, count: int):
        if not 1 <= index <= count:
            raise InputError(f"--shard {index}/{count}: the share must be 1 to {count}")
        self.index, self.count, self.seen = index, count, 0

    @staticmethod
    def parse(text: str | None) -> "Shard | None":
        if text is None:
            return None
        try:
            i, n = (int(v) for v in text.split("/"))
        except ValueError:
            raise InputError(f"--shard {text!r} is not i/n (this job's share i of n, e.g. 2/4)") from None
        return Shard(i, n)

    def take(self) -> bool:
        mine = self.seen % self.count == self.index - 1
        self.seen += 1
        return mine

    def share(self, total: int) -> int:
        """How many of `total` points (numbered from this object's start) fall to this shard."""
        return len(range(self.index - 1, total, self.count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def problems(names: list[str], scenario, sizes: list, precision: str, seed: int, launch: dict | None,
             problem: Problem | None, sweep: dict | None, potential, shard: Shard | None):
    """The sweep's problems in order, one at a time (the large ones are gigabytes), each with the
    (strategy name, launch) points of it that are this shard's: ((problem, why outside the
    precision or ""), points). A problem with no point in the shard is not built."""
    specs = [scenario] if isinstance(scenario, str) or scenario is None else list(scenario)
    pots = [potential] if potential is None or isinstance(potential, str) else list(potential)
    variants = [(name, lp) for name in names for lp in launch_variants(strategies.REGISTRY[name], launch or {},
                                                                       sweep or {})]
    for what in ([None] if problem is not None else [(spec, n, pot) for spec in specs for n in sizes for pot in pots]):
        mine = [v for v in variants if shard is None or shard.take()]
        if not mine:
            continue
        if what is None:
            yield in_precision(problem, precision), mine
        else:
            spec, n, pot = what
            base = scenarios.make(spec, n, seed=seed, precision="fp64")
            yield in_precision(scenarios.with_potential(base, pot), precision), mine


def point_strategy(name: str, lp: dict) -> strategies.Strategy:
    """The strategy of a point: its launch values where it has them; a --launch parameter it
    lacks makes it n/a with the reason."""
    cls = strategies.REGISTRY[strategies.canonical(name)]
    s = strategies.create(name, **{k: v for k, v in lp.items() if cls.knows(k)})
    s.refused = strategies.lacking(name, lp)
    return s


def run(names: list[str], scenario: str | list[str] | None, sizes: list, precision: str, seed: int = 1,
        warmup: int = 3, repeat: int = 20, min_time: float = 0.3, launch: dict | None = None,
        problem: Problem | None = None, progress: Callable[[str], None] | None = None,
        sweep: dict[str, list] | None = None, l2: str = "flush", graph: bool = True, bar=None,
        max_checks: dict | None = None, done: dict | None = None, sink: Callable[[dict], None] | None = None,
        dry_run: bool = False, check_device: bool = True, outputs: str = "all", amortised: int = 0,
        potential: str | list | None = None, max_time: float | None = None, shard: Shard | None = None) -> list[dict]:
    """One row per (scenario, size, strategy, launch variant) at this precision. amortised: frames
    of a recorded trajectory replayed for the amortised cost of a step (0: none). Points whose
    key is in `done` (rows of an earlier, interrupted run, a list per key, one row per occurrence,
    consumed in order) are taken from there, not timed;
    `sink` gets each new row as soon as it is measured; `dry_run` plans without timing; shard: only
    its share of the points (a problem none of whose points is in it is not built)."""
    rows = []
    for (p, outside), mine in problems(names, scenario, sizes, precision, seed, launch, problem, sweep, potential,
                                       shard):
        frames = None  # recorded when the first point of this problem is timed
        for name, lp in mine:
            s = point_strategy(name, lp)
            key = (s.label, p.label.split(" ")[0], p.n, precision, outputs, p.potential.spec())
            if outside:  # the input lies outside this precision (fixed point's range)
                row = outside_row(s, p, precision, outputs, outside, max_checks)
            elif done and done.get(key):
                row = done[key].pop(0)
            elif dry_run:
                row = plan_point(s, p, max_checks, check_device, outputs)
            else:
                if amortised and frames is None and \
                        plan_point(s, p, max_checks, check_device, outputs)["status"] == "planned":
                    frames = trajectory(p, amortised)  # once per problem, for its first timed point
                row = measure(s, p, dict(warmup=warmup, repeat=repeat, min_time=min_time, l2=l2, graph=graph,
                                         max_checks=max_checks, outputs=outputs, max_time=max_time), frames)
                if sink is not None:
                    sink(row)
            rows.append(row)
            if bar is not None:
                bar.update(1)
            if progress:
                progress(format_row(row))
    return rows


def measure(s: strategies.Strategy, p: Problem, timing: dict, frames=None) -> dict:
    """A point's row (bench_point with `timing`: warmup, repeat, min_time, l2, graph, max_checks,
    outputs, max_time); a StrategyError (a lock timeout, a capacity overflow) is a result, an
    error row, not a crash."""
    try:
        return bench_point(s, p, timing["warmup"], timing["repeat"], timing["min_time"], l2=timing["l2"],
                           graph=timing["graph"], max_checks=timing["max_checks"], outputs=timing["outputs"],
                           frames=frames, max_time=timing["max_time"])
    except StrategyError as e:
        return error_row(s, p, p.precision, timing["outputs"], str(e))


def error_row(s: strategies.Strategy, p: Problem, precision: str, outputs: str, detail: str) -> dict:
    """A point that ended in an error (a StrategyError, a lost cluster worker), with the reason."""
    return {"strategy": s.label, "name": s.name, "backend": s.backend, "scenario": p.label.split(" ")[0], "n": p.n,
            "precision": precision, "potential": p.potential.spec(), "outputs": outputs, "status": "error",
            "detail": detail}


def outside_row(s: strategies.Strategy, p: Problem, precision: str, outputs: str, why: str,
                max_checks: dict | None) -> dict:
    """A point whose input lies outside the precision (fixed point's range): n/a with the reason."""
    row = {**plan_point(s, p, max_checks, False, outputs), "precision": precision, "status": "n/a", "detail": why}
    row.pop("distance_checks", None)
    return row


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


