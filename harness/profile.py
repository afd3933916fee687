"""`python -m harness profile`: one point's force phase under Nsight Compute, a summary the
reports can show, and a cross-check of the harness's own timing.

1. Event timing (this process, no profiler): the force phase of the point timed twice with
   CUDA events (L2 flushed before each sample), so the two medians can be compared with the
   spread they report.
2. ncu on a child process that evaluates the point once, filtered by the strategy's NVTX range
   (`--nvtx --nvtx-include "force/<strategy>/"`), clocks left as they are (`--clock-control
   none`: the GPU's settings are not ours to change) and, by default, caches not flushed
   between kernels (`--cache-control none`: the phase's kernels share L2 as in an MD step;
   ncu's own default, `all`, makes every launch start cold, which overstates a phase of many
   short launches: 1.46x for parity_warpblock_shared_atomic's 34 at LJ 1M). The report goes to
   reports/profile/<stem>.ncu-rep, its raw metrics to <stem>.csv, the summary to <stem>.json.
3. Cross-check: the sum of the kernels' gpu__time_duration against the event-timed force phase
   (within 10% for a large system: launch gaps, and with cache=all the flush before every
   kernel, are the difference).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mdcore import InputError

from .results import SCHEMA_VERSION

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "WarpStateStats", "InstructionStats",
            "SchedulerStats")
# summary field -> raw metric (ncu --page raw column)
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_hit_pct": "l1tex__t_sector_hit_rate.pct",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_static_bytes_per_block": "launch__shared_mem_per_block_static",
    "shared_dynamic_bytes_per_block": "launch__shared_mem_per_block_dynamic",
    "block_size": "launch__block_size",
    "grid_size": "launch__grid_size",
    "inst_executed": "smsp__inst_executed.sum",                                  # warp instructions
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",   # issue slots used
    "threads_per_inst": "smsp__thread_inst_executed_per_inst_executed.ratio",    # active lanes (of 32)
}
# WarpStateStats: smsp__average_warp[s]_..._issue_stalled_<reason>[_per_issue_active].ratio
_STALL = __import__("re").compile(r"^smsp__average_warps?_\w*?issue_stalled_(\w+?)(?:_per_\w+)?\.ratio$")
CROSSCHECK_TOLERANCE = 0.10
# ncu picks a unit per report and metric by magnitude, long or short ("usecond" or "us",
# "msecond" or "ms", "Kbyte/block"): durations go to ns, sizes to bytes; an unknown unit is an
# error, never a silent factor of 1
_TIME = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTES = {"byte": 1.0, "B": 1.0, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9, "GB": 1e9,
          "Kibyte": 1024.0, "KiB": 1024.0, "Mibyte": 2.0 ** 20, "MiB": 2.0 ** 20}
# summary fields that carry a dimension (the rest are percentages and counts, taken as written)
_DIMENSION = {"duration_ns": _TIME, "shared_static_bytes_per_block": _BYTES, "shared_dynamic_bytes_per_block": _BYTES}


def _scale(field: str, unit: str) -> float:
    table = _DIMENSION.get(field)
    if table is None:
        return 1.0
    base = unit.split("/")[0].strip()
    if base not in table:
        raise RuntimeError(f"ncu export: unit {unit!r} of {METRICS[field]} is not one this summary knows "
                           f"({', '.join(table)}); refusing to guess its scale")
    return table[base]


# The longest an Nsight Compute run (or its export) may take: a profile of the heaviest point takes
# about 2 minutes on an H200, so a run past this has hung, and ends with that said instead of holding
# a campaign's slice until its budget.
NCU_TIMEOUT = 600.0


def ncu() -> str | None:
    return shutil.which("ncu")


def _bounded(cmd: list[str], env: dict | None, late: str) -> subprocess.CompletedProcess:
    """cmd run to completion in a process group of its own (ncu and the process it profiles); past
    NCU_TIMEOUT the whole group is killed and `late` raised as the one-line error."""
    import os
    import signal

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=NCU_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise InputError(late) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _number(text) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except (TypeError, ValueError):
        return None


def summarise(csv_text: str) -> dict:
    """Per-kernel rows and totals from `ncu --import R --csv --page raw` output (first row:
    metric names, second: units, then one row per kernel launch)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(csv_text)))
    rows = [r for r in rows if r and not r[0].startswith("==")]
    if len(rows) < 3:
        return {"kernels": [], "total_duration_ms": 0.0, "launches": 0}
    names, units, data = rows[0], rows[1], rows[2:]
    col = {n: i for i, n in enumerate(names)}
    kernels = []
    for r in data:
        k = {"kernel": r[col["Kernel Name"]] if "Kernel Name" in col else "?"}
        for field, metric in METRICS.items():
            i = col.get(metric)
            v = _number(r[i]) if i is not None and i < len(r) else None
            k[field] = v * _scale(field, units[i]) if v is not None else None
        stalls = {_STALL.match(n).group(1): _number(r[i]) for n, i in col.items() if _STALL.match(n) and i < len(r)}
        stalls = {n: v for n, v in stalls.items() if v}
        k["top_stalls"] = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
        kernels.append(k)
    total = sum(k["duration_ns"] or 0.0 for k in kernels) / 1e6
    heaviest = max(kernels, key=lambda k: k["duration_ns"] or 0.0)
    return {"kernels": kernels, "launches": len(kernels), "total_duration_ms": total,
            "heaviest": {k: v for k, v in heaviest.items()}}


def ranges_backend() -> None:
    from mdcore import ranges

    if ranges.backend() == "none":
        raise InputError("no NVTX binding (the nvtx package or CuPy's): ncu could not select the force phase")


PHASES = ("force", "build")


def event_times(name: str, spec: str, size, precision: str, launch: dict, outputs: str = "all",
                phase: str = "force") -> dict:
    """The phase (force or build) timed twice with events, L2 flushed before every sample."""
    import strategies

    from . import bench, scenarios
    from .timing import time_gpu

    s = strategies.create(name, **launch)
    p = scenarios.make(spec, size, seed=1, precision=precision)
    ok, why = s.supports(p)
    if not ok:
        raise InputError(f"{s.label} cannot run {p.describe()}: {why}")
    plan = s.prepare(p, outputs)
    plan.upload()
    for _ in range(2):
        s.compute(plan)
    flush = bench._flush()
    fn = plan.force if phase == "force" else plan.build
    runs = [time_gpu(fn, warmup=2, repeat=20, min_time=0.3, before=flush) for _ in range(2)]
    a, b = runs
    agree = abs(a.median - b.median) <= max(a.max - a.min, b.max - b.min)
    return {"n": p.n, "first": a.as_dict(), "second": b.as_dict(), "repeat_agrees_within_spread": agree,
            "median_ms": (a.median + b.median) / 2, "distance_checks": s.work(p).get("distance_checks")}


def inner(name: str, spec: str, size, precision: str, launch: dict, outputs: str = "all") -> int:
    """Under ncu: one evaluation of the point (its force range is what ncu selects)."""
    import strategies

    from . import scenarios

    s = strategies.create(name, **launch)
    p = scenarios.make(spec, size, seed=1, precision=precision)
    s.evaluate(p, outputs)
    return 0


PEER_RANGE = "force/peer-{}/"
PEER_EVALUATIONS = 3


def inner_peer(peer: str, spec: str, size, precision: str) -> int:
    """Under ncu: the peer's force computation, PEER_EVALUATIONS times inside its NVTX range
    (after a warm-up outside it: OpenMM compiles its kernels on first use)."""
    from mdcore.ranges import nvtx_range

    from . import peers, scenarios

    if peer != "openmm":
        raise InputError(f"profile --peer: only openmm launches kernels ncu can select; got {peer!r}")
    p = scenarios.make(spec, size, seed=1, precision=precision)
    context, integrator, platform, _ = peers.openmm_context(p)
    if platform != "CUDA":
        raise InputError(f"profile --peer openmm: OpenMM runs on {platform} here, not CUDA (plugin failures: "
                         f"{__import__('openmm').Platform.getPluginLoadFailures()})")
    for _ in range(3):
        context.getState(getForces=True, groups=peers.OPENMM_GROUPS)
    with nvtx_range(PEER_RANGE.format(peer).rstrip("/")):
        for _ in range(PEER_EVALUATIONS):
            context.getState(getForces=True, getEnergy=True, groups=peers.OPENMM_GROUPS)
    return 0


CACHE_CONTROL = ("none", "all")


def _ncu(exe: str, nvtx: str, cache: str, stem: Path, inner_args: list[str], env: dict | None = None):
    cmd = [exe, "--nvtx", "--nvtx-include", nvtx, "--clock-control", "none", "--cache-control", cache, "-f", "-o",
           str(stem)]
    for sec in SECTIONS:
        cmd += ["--section", sec]
    cmd += [sys.executable, "-m", "harness", "profile", "--inner", *inner_args]
    p = _bounded(cmd, env, f"ncu did not finish within {NCU_TIMEOUT:.0f} s ({nvtx}): the profiled process or "
                           f"ncu hung; both stopped, and {stem}.ncu-rep is not used")
    rep = Path(str(stem) + ".ncu-rep")
    if p.returncode != 0 or not rep.exists():
        raise InputError(f"ncu failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-800:]}")
    raw = _bounded([exe, "--import", str(rep), "--csv", "--page", "raw"], None,
                   f"ncu --import of {rep} did not finish within {NCU_TIMEOUT:.0f} s")
    unread = [line for line in (raw.stdout + raw.stderr).splitlines() if line.startswith("==ERROR==")]
    if raw.returncode != 0 or unread:
        raise InputError(f"ncu wrote {rep} but cannot read it back (exit {raw.returncode}): "
                         f"{' '.join(unread)[-400:] or raw.stderr.strip()[-400:]}")
    Path(str(stem) + ".csv").write_text(raw.stdout)
    summary = summarise(raw.stdout)
    if not summary["launches"]:
        raise InputError(f"ncu profiled no kernel inside {nvtx} (is the NVTX range there?): {p.stdout.strip()[-400:]}")
    return cmd, rep, summary


def run_peer(peer: str, spec: str, size, precision: str, out_dir: Path, say=print, cache: str = "none") -> dict:
    """Nsight Compute on a peer's force computation (its kernels, PEER_EVALUATIONS times), the
    same clock and cache control as the strategies; per kernel name, the median duration."""
    exe = ncu()
    if exe is None:
        raise InputError("ncu (Nsight Compute) not found on PATH")
    from . import device, peers

    ranges_backend()
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"peer-{peer}-{spec.replace(':', '-')}-{size}-{precision}"
    cmd, rep, summary = _ncu(exe, PEER_RANGE.format(peer), cache, stem,
                             ["--peer", peer, "--scenario", spec, "--n", str(size), "--precision", precision],
                             env=peers.child_env())
    by_kernel: dict = {}
    for k in summary["kernels"]:
        by_kernel.setdefault(k["kernel"].split("(")[0], []).append((k["duration_ns"] or 0.0) / 1e6)
    per_eval = {name: sorted(v)[len(v) // 2] for name, v in by_kernel.items()}
    doc = {"schema_version": SCHEMA_VERSION, "kind": "profile", "strategy": f"peer:{peer}", "scenario": spec, "size": size, "precision": precision,
           "device": device.header(), "command": " ".join(cmd), "report": rep.name, "cache": cache, "ncu": summary,
           "evaluations": PEER_EVALUATIONS, "median_ms_per_kernel": per_eval,
           "evaluation_ms": summary["total_duration_ms"] / PEER_EVALUATIONS}
    Path(str(stem) + ".json").write_text(json.dumps(doc, indent=1, default=str))
    return doc


def run(name: str, spec: str, size, precision: str, launch: dict, out_dir: Path, say=print,
        cache: str = "none", outputs: str = "all", phase: str = "force") -> dict:
    exe = ncu()
    if exe is None:
        raise InputError("ncu (Nsight Compute) not found on PATH")
    from . import device

    ranges_backend()
    out_dir.mkdir(parents=True, exist_ok=True)
    if phase not in PHASES:
        raise InputError(f"profile: phase {phase!r} unknown; use one of {', '.join(PHASES)}")
    tag = "-".join([name, spec.replace(":", "-").replace("=", "").replace(",", "-"), str(size), precision] +
                   ([] if outputs == "all" else [outputs]) + ([] if phase == "force" else [phase]) +
                   [f"{k}{v}" for k, v in sorted(launch.items())])
    stem = out_dir / tag
    if cache not in CACHE_CONTROL:
        raise InputError(f"profile: cache control {cache!r} unknown; use one of {', '.join(CACHE_CONTROL)}")
    say(f"event timing of {phase}/{name} ...")
    events = event_times(name, spec, size, precision, launch, outputs, phase)
    launch_arg = ",".join(f"{k}={v}" for k, v in launch.items())
    inner_args = ["--strategy", name, "--scenario", spec, "--n", str(size), "--precision", precision,
                  "--outputs", outputs] + (["--launch", launch_arg] if launch_arg else [])
    cmd, rep, summary = _ncu(exe, f"{phase}/{name}/", cache, stem, inner_args)
    doc = {"schema_version": SCHEMA_VERSION, "kind": "profile", "strategy": name, "scenario": spec, "size": size,
           "n": events["n"], "precision": precision,
           "outputs": outputs, "phase": phase, "launch": launch, "device": device.header(), "command": " ".join(cmd),
           "report": rep.name, "cache": cache, "events": events, "ncu": summary,
           "crosscheck": crosscheck(summary, events), **work_figures(summary, events)}
    Path(str(stem) + ".json").write_text(json.dumps(doc, indent=1, default=str))
    return doc


def work_figures(summary: dict, events: dict) -> dict:
    """Instructions against the work: the point's distance checks (the strategy's own count;
    None where it depends on the data) and the warp instructions per 32 of them (the cost of one
    warp-wide check step, pair bodies and loop overhead included)."""
    checks, inst = events.get("distance_checks"), sum(k.get("inst_executed") or 0 for k in summary["kernels"])
    out = {"distance_checks": checks, "inst_executed": inst or None}
    if checks and inst:
        out["warp_inst_per_32_checks"] = inst / (checks / 32)
    return out


def crosscheck(summary: dict, events: dict) -> dict:
    """ncu's kernel-duration sum against the event-timed force phase (within 10% passes)."""
    ratio = summary["total_duration_ms"] / events["median_ms"] if events["median_ms"] else None
    return {"ncu_sum_ms": summary["total_duration_ms"], "event_force_ms": events["median_ms"],
            "ratio": ratio, "within_10pct": ratio is not None and abs(ratio - 1) <= CROSSCHECK_TOLERANCE}


def resummarise(path: Path) -> dict:
    """Rebuild a stored profile's summary and cross-check from the raw CSV beside its JSON (after
    a fix to the summary; needs no GPU and no ncu). Rewrites the JSON; returns the document."""
    path = Path(path)
    raw = path.with_suffix(".csv")
    if not path.exists() or not raw.exists():
        raise InputError(f"--resummarise: needs {path} and the raw export {raw} beside it")
    doc = json.loads(path.read_text())
    if "events" not in doc or "ncu" not in doc:
        raise InputError(f"--resummarise: {path} is not a profile result (no events or ncu summary)")
    doc["ncu"] = summarise(raw.read_text())
    doc["crosscheck"] = crosscheck(doc["ncu"], doc["events"])
    path.write_text(json.dumps(doc, indent=1, default=str))
    return doc


def lines(doc: dict) -> list[str]:
    if "events" not in doc:  # a peer: its kernels per evaluation
        out = [f"{doc['strategy']} {doc['scenario']} {doc['size']} {doc['precision']}: {doc['ncu']['launches']} kernel "
               f"launches in {doc['evaluations']} evaluations, {doc['evaluation_ms']:.4f} ms of kernels per evaluation"]
        out += [f"  {ms * 1e3:9.2f} us  {k}" for k, ms in sorted(doc["median_ms_per_kernel"].items(), key=lambda kv: -kv[1])]
        return out
    s, c, e = doc["ncu"], doc["crosscheck"], doc["events"]
    out = [f"{doc['strategy']} {doc['scenario']} N={doc['n']} {doc['precision']} {doc.get('outputs', 'all')}: "
           f"{s['launches']} kernel launches in {doc.get('phase', 'force')}/{doc['strategy']}/"]
    if doc.get("warp_inst_per_32_checks"):
        out.append(f"  {doc['inst_executed']:.4g} warp instructions, {doc['distance_checks']:.4g} distance checks: "
                   f"{doc['warp_inst_per_32_checks']:.1f} warp instructions per 32 checks")
    for k in s["kernels"][:12]:
        stalls = ", ".join(f"{n} {v:.1f}" for n, v in k["top_stalls"])
        fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)  # noqa: E731
        out.append(f"  {fmt(k['duration_ns'] and k['duration_ns'] / 1e3, '{:.2f}'):>9s} us  occ {fmt(k['achieved_occupancy_pct'])}%  "
                   f"issue {fmt(k.get('issue_active_pct'))}%  lanes {fmt(k.get('threads_per_inst'))}  "
                   f"SM {fmt(k['sm_throughput_pct'])}%  DRAM {fmt(k['dram_throughput_pct'])}%  "
                   f"L1 {fmt(k['l1_hit_pct'])}%  L2 {fmt(k['l2_hit_pct'])}%  regs {fmt(k['registers_per_thread'], '{:.0f}')}  "
                   f"smem {fmt((k['shared_static_bytes_per_block'] or 0) + (k['shared_dynamic_bytes_per_block'] or 0), '{:.0f}')} B/block  "
                   f"stalls: {stalls or '-'}  {k['kernel'][:60]}")
    if len(s["kernels"]) > 12:
        out.append(f"  ... {len(s['kernels']) - 12} more launches")
    out.append(f"timing cross-check: ncu sum {c['ncu_sum_ms']:.4f} ms vs events {c['event_force_ms']:.4f} ms "
               f"(ratio {c['ratio']:.3f}, {'within' if c['within_10pct'] else 'OUTSIDE'} 10%); event timing twice: "
               f"{e['first']['median']:.4f} and {e['second']['median']:.4f} ms, "
               f"{'agree' if e['repeat_agrees_within_spread'] else 'DISAGREE'} within the spread")
    return out
