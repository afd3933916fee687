"""Sweeps of `harness bench`: a named suite or an explicit selection planned into parts, its points
timed one by one (harness.bench) with each row appended to a partial file as it ends, so that a
sweep cut short keeps what it measured and `--resume` continues it; then the CSV, the JSON and the
terminal table.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import strategies
from mdcore import InputError, Problem

from . import device, results, scenarios
from . import bench
from .bench import count_points, format_peer, in_precision, point_key, run

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
    peers = [r for r in rows if r.get("backend") == "peer" and r["status"] == "ok"]
    if peers:  # their own timings, which are not the strategies' columns: each says what it includes
        text += "\npeers (timed their own way, see includes):"
        for r in peers:
            times = [f"{k[:-3]} {r[k]:.4g} ms" for k in ("force_ms", "step_ms", "update_ms") if r.get(k) is not None]
            if r.get("force_min_ms") is not None:
                times[0] += f" (min {r['force_min_ms']:.4g}, max {r['force_max_ms']:.4g})"
            if r.get("force_rms_err") is not None:
                times.append(f"relative force error rms {r['force_rms_err']:.2e}")
            text += (f"\n  {r['strategy']} {r['scenario']} N={r['n']} {r['precision']}: {', '.join(times)}"
                     f"\n    includes: {r.get('includes', '')}")
    noisy = [f"{r['strategy']} {r['scenario']} N={r['n']} {r['precision']} ({r['compute_spread']:.0%})"
             for r in rows if r.get("noisy")]
    if noisy:
        text += (f"\nnoisy (spread (max - min) / median above {bench.NOISE:.0%}; compare medians with care): "
                 + "; ".join(noisy))
        if any(r.get("noisy") and r.get("backend") == "cpu" for r in rows):
            import numba

            threads = numba.get_num_threads()
            text += (f"\n  the CPU points ran on {threads} numba thread{'s' if threads > 1 else ''} of "
                     f"{os.cpu_count()} core(s): with few cores other work on the machine moves them"
                     + ("; --cpu-threads 1 times them steadier" if threads > 1 else ""))
    busy = [r for r in rows if r.get("host_busy")]
    if busy:
        text += (f"\nhost busy at {len(busy)} point{'s' if len(busy) > 1 else ''} (other processes used more of the "
                 f"{os.cpu_count()} cores than the point left free, up to "
                 f"{max(r['host_other_cores'] for r in busy):.1f}): their times may read slow however steady; "
                 f"time them with the host to itself: "
                 + "; ".join(f"{r['strategy']} {r['scenario']} N={r['n']} {r['precision']}" for r in busy[:4])
                 + ("; ..." if len(busy) > 4 else ""))
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


DEFAULT_GPU, DEFAULT_CPU = "allpairs_thread_tiled", "fullshell_thread_cpu"  # plain `bench`, with and without a GPU


def plan_sweep(suite: str | None = None, selection: str | None = None, specs: list[str] | None = None,
               sizes: list | None = None, precisions: list[str] | None = None, sweep: dict | None = None,
               launch: dict | None = None, problem: Problem | None = None, dry_run: bool = False,
               experimental: bool = False) -> Sweep:
    """A named suite, or an explicit selection (default: allpairs_thread_tiled on a GPU,
    fullshell_thread_cpu without one; on the LJ liquid, medium, fp32). Strategies named explicitly
    must run here, in a dry run too; a suite on a machine without GPU keeps its CPU strategies and
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
        default = DEFAULT_GPU if gpu_ok[0] else DEFAULT_CPU  # what this machine can run
        plan = [SweepPart(strategies.resolve(default if selection is None else selection, experimental),
                          specs or ["lj_liquid"], sizes or ["medium"], precisions or ["fp32"], sweep or {})]
        explicit = selection is not None
    for part in plan:
        strategies.check_launch_keys(part.names, launch or {})  # a parameter none of them has: a typo
        if explicit:  # a dry run says what the run would: the same refusal
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
              json_copy: Path | None = None, shard=None, cluster=None) -> tuple[list[dict], list[Path]]:
    """Time every point of the sweep (rows appended to <out>/<name>.partial.jsonl as they end;
    resume continues an interrupted run of that name), then the peers, then write CSV and JSON.
    A dry run plans the points and writes nothing. timing: seed, warmup, repeat, min_time,
    max_time, l2, graph. shard (bench.Shard): only its share of the points, the peers with share 1;
    `harness merge` joins the shares' files. cluster (harness.cluster.Cluster): the points as tasks
    on its workers (the peers here), the same rows in the same order."""
    import sys

    timing = {"seed": 1, "warmup": 3, "repeat": 20, "min_time": 0.3, "l2": "flush", "graph": True, "outputs": ["all"],
              "amortised": 0, **(timing or {})}
    if resume and not name:
        raise InputError("--resume continues the run named by --name; name it")
    header = device.header()
    if cluster is not None and not dry_run:  # the workers' device, not this client's
        headers = list(cluster.client.run(device.header).values())
        header = headers[0] if headers else header
    meta = {"command": "python -m harness " + " ".join(sys.argv[1:] if argv is None else argv),
            "suite": sw.suite, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "l2": timing["l2"], "graph": timing["graph"], **({"shard": str(shard)} if shard is not None else {})}
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
    if cluster is not None and not dry_run:
        from .cluster import BenchRun

        meta["cluster"] = {"where": cluster.what, "workers": cluster.workers,
                           "gpus": sorted({str(h.get("gpu")) for h in headers})}
        on = BenchRun(cluster, {k: timing.get(k) for k in ("warmup", "repeat", "min_time", "l2", "graph", "max_time")}
                      | {"max_checks": max_checks}, partial.done if partial else None, partial, progress, bar)
    try:
        for part in sw.parts:
            for prec in part.precisions:
                for outputs in part.outputs or timing["outputs"]:
                    if cluster is not None and not dry_run:
                        on.add(part.names, part.specs, part.sizes, prec, seed=timing["seed"], launch=sw.launch,
                               problem=sw.problem, sweep=part.sweep, amortised=timing.get("amortised", 0),
                               outputs=outputs, shard=shard,
                               potential=part.potential or timing.get("potentials", timing.get("potential")))
                        continue
                    rows += run(part.names, part.specs, part.sizes, prec, seed=timing["seed"], warmup=timing["warmup"],
                                repeat=timing["repeat"], min_time=timing["min_time"], launch=sw.launch,
                                problem=sw.problem, progress=progress, sweep=part.sweep, l2=timing["l2"],
                                graph=timing["graph"], bar=bar, max_checks=max_checks,
                                done=partial.done if partial else None, sink=partial, dry_run=dry_run,
                                check_device=sw.gpu or not dry_run, outputs=outputs,
                                amortised=timing.get("amortised", 0), max_time=timing.get("max_time"), shard=shard,
                                potential=part.potential or timing.get("potentials", timing.get("potential")))
        if cluster is not None and not dry_run:
            rows = on.rows()
        if dry_run:
            return rows, []
        if peer_names and (shard is None or shard.index == 1):
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

