"""`python -m harness bench`: time strategies on one scenario at several sizes.

Per point: set-up (a second prepare: allocation, first binning, layout; compilation in the
first) with the host clock; upload, bin, force, reduce and compute (= bin + force + reduce, the
device-resident evaluation an MD step pays) with CUDA events; download and the whole
evaluation (upload + compute + download) with the host clock; medians after warm-up.

A point whose first evaluation takes longer than SLOW_S is timed with one sample per phase
(marked single_sample): the spread of such points is not measured.

Throughput uses AutoPas's flop counts: 8 flops per distance check, 15 per interaction without
Newton3 (every pair computed from both sides: 2 interactions per pair), 18 with. The floor is
those flops at the device's peak rate (FP32, or FP64 in fp64 mode): no kernel doing this work
can be faster.
"""
from __future__ import annotations

import time
from typing import Callable

import strategies

from . import device, scenarios
from .problem import Problem
from .timing import Stats, time_cpu, time_gpu

FLOPS_CHECK, FLOPS_NO_N3, FLOPS_N3 = 8, 15, 18
SLOW_S = 0.5  # a first evaluation slower than this is timed with one sample per phase


def flops(checks: int, pairs: int, newton3: bool) -> float:
    return FLOPS_CHECK * checks + (FLOPS_N3 * pairs if newton3 else FLOPS_NO_N3 * 2 * pairs)


def bench_point(strategy: strategies.Strategy, problem: Problem, warmup: int, repeat: int, min_time: float) -> dict:
    row = {"strategy": strategy.label, "backend": strategy.backend, "scenario": problem.label.split(" ")[0],
           "n": problem.n, "precision": problem.precision}
    ok, why = strategy.supports(problem)
    if not ok:
        return {**row, "status": "n/a", "detail": why}
    gpu = strategy.backend == "cuda"
    # set-up of a second prepare(): the first compiles kernels (ours and CuPy's own sort and
    # scan), which a set-up time must not include
    strategy.prepare(problem).synchronize()
    t0 = time.perf_counter()
    plan = strategy.prepare(problem)
    plan.synchronize()
    row["setup_ms"] = (time.perf_counter() - t0) * 1e3

    def timer(fn: Callable[[], object]) -> Stats:
        if gpu:
            return time_gpu(fn, warmup=warmup, repeat=repeat, min_time=min_time)
        return time_cpu(fn, warmup=min(warmup, 1), repeat=max(min(repeat, 3), repeat // 4), min_time=min_time)

    plan.upload()
    t0 = time.perf_counter()
    out = strategy.compute(plan).to_host()  # first run: the pair count, and how slow a run is
    if time.perf_counter() - t0 > SLOW_S:  # one sample per phase: a slow point is slow enough
        warmup, repeat, min_time = 0, 1, 0.0
        row["single_sample"] = True
    t = {"upload": timer(plan.upload), "bin": timer(plan.bin), "force": timer(plan.force),
         "reduce": timer(plan.reduce), "compute": timer(lambda: strategy.compute(plan))}
    done = strategy.compute(plan)
    plan.synchronize()
    t["download"] = time_cpu(done.to_host, warmup=1, repeat=5, min_time=0.0)
    t["evaluate"] = time_cpu(lambda: (plan.upload(), strategy.compute(plan).to_host()), warmup=min(warmup, 1),
                             repeat=min(repeat, 3), min_time=min_time / 2, sync=plan.synchronize)
    work = strategy.work(problem)
    checks = work.get("distance_checks")
    sec = t["compute"].median / 1e3
    row.update({f"{k}_ms": v.median for k, v in t.items()})
    row.update({"compute_min_ms": t["compute"].min, "compute_max_ms": t["compute"].max,
                "compute_spread": t["compute"].spread, "repeats": t["compute"].repeats, "pairs": out.pairs,
                "pairs_per_s": out.pairs / sec if sec else None,
                "particles_per_s": problem.n / sec if sec else None})
    if checks is not None:
        fl = flops(checks, out.pairs, strategy.newton3)
        interactions = out.pairs * (1 if strategy.newton3 else 2)
        row.update({"checks_per_interaction": checks / interactions if interactions else None,
                    "gflops": fl / sec / 1e9 if sec else None})
        info = device.gpu_info() if gpu else None
        peak = None
        if info:
            peak = info["peak_fp64_tflops"] if problem.precision == "fp64" else info["peak_fp32_tflops"]
        if peak:
            row["floor_ms"] = fl / (peak * 1e12) * 1e3
            row["pct_of_peak"] = 100.0 * row["floor_ms"] / t["compute"].median
    row["launch"] = getattr(plan, "launch_info", None)
    row["device_bytes"] = getattr(plan, "device_bytes", None)
    row["status"] = "ok"
    return row


def run(names: list[str], scenario: str | None, sizes: list, precision: str, seed: int = 1, warmup: int = 3,
        repeat: int = 20, min_time: float = 0.3, launch: dict | None = None, problem: Problem | None = None,
        progress: Callable[[str], None] | None = None) -> list[dict]:
    rows = []
    problems = [problem.with_precision(precision)] if problem is not None else \
        [scenarios.make(scenario, n, seed=seed, precision=precision) for n in sizes]
    for p in problems:
        for name in names:
            s = strategies.create(name, **(launch or {}))
            row = bench_point(s, p, warmup, repeat, min_time)
            rows.append(row)
            if progress:
                progress(format_row(row))
    return rows


def format_row(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} n/a: {r['detail']}"
    s = (f"{r['strategy']:16s} N={r['n']:<9d} {r['precision']:5s} compute {r['compute_ms']:9.4f} ms "
         f"[{r['compute_min_ms']:.4f}..{r['compute_max_ms']:.4f}, n={r['repeats']}]  bin {r['bin_ms']:.4f}  "
         f"force {r['force_ms']:.4f}  reduce {r['reduce_ms']:.4f}  upload {r['upload_ms']:.4f}  "
         f"download {r['download_ms']:.4f}  evaluate {r['evaluate_ms']:.4f} ms  setup {r['setup_ms']:.1f} ms  "
         f"{r['pairs_per_s'] / 1e9:8.3f} Gpairs/s")
    if r.get("device_bytes") is not None:
        s += f"  {r['device_bytes'] / 2**20:.1f} MiB"
    if r.get("floor_ms") is not None:
        s += f"  {r['gflops']:.0f} GFLOP/s, floor {r['floor_ms']:.4f} ms ({r['pct_of_peak']:.1f}% of peak)"
    if r.get("launch"):
        s += "  launch " + ",".join(f"{k}={v}" for k, v in r["launch"].items())
    return s
