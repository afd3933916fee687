"""The report's sections, each a function of the loaded results (harness.report.load) that
fills one render.Section; strategies are picked by their attributes (traversal, processor,
storage), never by name prefix."""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

from mdcore import PRECISIONS

from .render import Plots, Section

SECTIONS = [
    ("correctness", "Correctness"),
    ("wins", "Which strategy wins where"),
    ("timings", "From scratch, with a built list, amortised per MD step"),
    ("thesis", "The thesis's measurements on this GPU"),
    ("cpu_gpu", "CPU (numba) against GPU"),
    ("parity", "Parity-plane traverser: the MarDyn cell processors"),
    ("precision", "Precision modes"),
    ("claims", "The seed documents' claims"),
    ("peers", "Peers"),
    ("roofline", "Roofline"),
    ("method", "Device, commands and method"),
]
THESIS = {  # scenario family -> (figure, what is swept)
    "allpairs_cube": ("10.1", "all pairs without cutoff"),
    "uniform": ("10.2", "nested vs 2D views at constant density"),
    "one_per_cell": ("10.3", "one particle per cell"),
    "k_per_cell": ("10.4", "9 particles per cell"),
    "lj_liquid": ("", "LJ liquid"),
}
METHOD = ("Forces, energy, virial and pair count of every strategy are compared with a float64 CPU reference "
          "(numba; direct and cell-list, checked against each other); a cell passes when every error is within "
          "its tolerance from an error model of coordinate rounding and accumulation length. Device phases are "
          "timed with CUDA events after warm-up, each sample after an L2 flush, as medians with min, max and "
          "spread; compute = build + force + reduce (no transfers), the device-resident work of an MD step. Device time "
          "is that phase replayed as a CUDA graph (GPU strategies) or the host time (CPU strategies). "
          "GFLOP/s use AutoPas's counts (8 per distance check, 15 per interaction without Newton3, 18 with); "
          "effective bandwidth counts positions in and forces out. Times compare within one run on one GPU.")


# --- helpers -----------------------------------------------------------------------------

def _family(scenario: str) -> str:
    return scenario.split(":")[0]


def _param(scenario: str, key: str) -> float | None:
    _, _, rest = scenario.partition(":")
    for item in rest.split(","):
        k, _, v = item.partition("=")
        if k == key:
            return float(v)
    return None


def _ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok" and r.get("compute_ms") is not None]


def _all_outputs(rows: list[dict]) -> list[dict]:
    """The rows that computed everything (forces, energy, virial, pairs): what the sections
    comparing strategies compare, so that a forces-only row never meets a full one."""
    return [r for r in rows if r.get("outputs", "all") == "all"]


def _fmt(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


# --- sections -----------------------------------------------------------------------------

def correctness(sec: Section, plots: Plots, verify: list[dict]) -> None:
    rows = [r for d in verify for r in d["rows"]]
    if not rows:
        return sec.empty("Run `make verify` (reports/verify/verify.json).")
    plt = plots.plt
    counts = defaultdict(int)
    for r in rows:
        counts[r["status"]] += 1
    sec.text("Matrix cells: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
             ". Colour: the largest error over its tolerance (force RMS, worst particle, energy, virial); "
             "below 1 passes. n/a cells carry their reason below.")
    reasons = {}
    for prec in sorted({r["precision"] for r in rows}, key=PRECISIONS.index):
        sub = [r for r in rows if r["precision"] == prec]
        strats = list(dict.fromkeys(r["strategy"] for r in sub))
        scens = list(dict.fromkeys(r["scenario"] for r in sub))
        grid = [[math.nan] * len(scens) for _ in strats]
        label = [[""] * len(scens) for _ in strats]
        for r in sub:
            i, j = strats.index(r["strategy"]), scens.index(r["scenario"])
            if r["status"] == "n/a":
                label[i][j] = "n/a"
                reasons[(r["strategy"], r["scenario"])] = r.get("detail", "")
                continue
            tol = r.get("tolerance") or {}
            ratios = [r[k] / tol[k] for k in ("force_rms", "force_max", "energy", "virial")
                      if r.get(k) is not None and tol.get(k)]
            worst = max(ratios) if ratios else math.nan
            grid[i][j] = worst if math.isnan(grid[i][j]) else max(grid[i][j], worst)
            label[i][j] = "FAIL" if r["status"] != "pass" else f"{grid[i][j]:.2g}"
        import numpy as np

        fig, ax = plt.subplots(figsize=(1.1 * len(scens) + 3, 0.32 * len(strats) + 1.6))
        data = np.log10(np.clip(np.array(grid, dtype=float), 1e-4, 1e2))
        im = ax.imshow(np.ma.masked_invalid(data), cmap="RdYlGn_r", vmin=-4, vmax=1, aspect="auto")
        ax.set_xticks(range(len(scens)), scens, rotation=30, ha="right")
        ax.set_yticks(range(len(strats)), strats)
        for i in range(len(strats)):
            for j in range(len(scens)):
                ax.text(j, i, label[i][j], ha="center", va="center", fontsize=6)
        fig.colorbar(im, ax=ax, label="log10(error / tolerance)")
        ax.set_title(f"Verification matrix, {prec}")
        sec.image(plots.save(fig, f"verify-{prec}"), f"Verification matrix ({prec}): error over tolerance per "
                                                     "strategy and scenario")
    if reasons:
        sec.table(["strategy", "scenario", "why n/a"], [[s, c, w] for (s, c), w in sorted(reasons.items())])


def _device_ms(r: dict) -> float:
    """What a strategy costs the device per evaluation: the CUDA-graph replay of the compute
    phase for GPU strategies (their kernels without Python's launch overhead), the host time
    for CPU strategies; the eager compute time where a GPU strategy could not be captured."""
    return r.get("graph_ms") or r["compute_ms"]


def _one_per_label(rows: list[dict], key=_device_ms) -> list[dict]:
    """A strategy measured twice at one point (two suites share it): its faster row."""
    best: dict[str, dict] = {}
    for r in rows:
        if r["strategy"] not in best or key(r) < key(best[r["strategy"]]):
            best[r["strategy"]] = r
    return list(best.values())


def wins(sec: Section, bench: list[dict]) -> None:
    rows = _ok(bench)
    if not rows:
        return sec.empty("Run `make bench`.")
    groups = defaultdict(list)
    for r in rows:  # the two outputs flavours are ranked apart: forces only is an MD step's usual cost
        groups[(r["scenario"], r["n"], r["precision"], r.get("outputs", "all"))].append(r)
    table = []
    for (scen, n, prec, outputs), rs in sorted(groups.items(), key=lambda kv: kv[0]):
        rs = sorted(_one_per_label(rs), key=_device_ms)
        first = rs[0]
        second = rs[1] if len(rs) > 1 else None
        eager = min(rs, key=lambda r: r["compute_ms"])
        table.append([scen, n, prec, outputs, first["strategy"], _fmt(_device_ms(first)),
                      second["strategy"] if second else "", _fmt(_device_ms(second)) if second else "",
                      f"{_device_ms(second) / _device_ms(first):.2f}x" if second else "",
                      eager["strategy"], _fmt(eager["compute_ms"])])
    sec.text("Fastest strategy per point by device time (build + force + reduce, median ms): for GPU strategies the "
             "CUDA-graph replay of that phase, the kernels an MD code launching from C++ or a graph pays; for CPU "
             "strategies the host time. The runner-up and the margin follow. The last two columns rank by eager "
             "compute instead, each kernel launched from Python: below about 0.3 ms that is mostly launch overhead "
             "on the host, which the graph removes.")
    sec.table(["scenario", "N", "precision", "outputs", "fastest", "ms", "next", "ms", "margin", "fastest eager", "ms"],
              table)


def timings(sec: Section, bench: list[dict]) -> None:
    """The three columns that make list and cell strategies comparable."""
    rows = [r for r in _ok(bench) if r.get("amortised_ms") is not None or r.get("amortised_note")]
    if not rows:
        return sec.empty("Run `harness bench` on a periodic scenario (amortised column: `--amortised 200`, the default).")
    sec.text("Per strategy, median ms: *from scratch* (build + force + reduce, CUDA-graph replay on the GPU), *with a "
             "built list* (force + reduce on positions unchanged since the build: the cell strategies' force phase) and "
             "*amortised per MD step* (a recorded NVE trajectory replayed frame by frame, each step's list upkeep, "
             "displacement checks and rebuilds included, divided by the frames). A cell strategy rebuilds its cells "
             "every step, so its amortised cost is its from-scratch cost; a list strategy pays its build only when a "
             "particle has moved more than half its skin.")
    table = []
    key = lambda r: (r["scenario"], r["n"], r["precision"], r.get("outputs", "all"), r.get("amortised_ms") or 1e99)
    for r in sorted(rows, key=key):
        table.append([r["scenario"], r["n"], r["precision"], r.get("outputs", "all"), r["strategy"],
                      _fmt(_device_ms(r)), _fmt(r.get("with_list_graph_ms") or r.get("with_list_ms")),
                      _fmt(r.get("amortised_ms")) if r.get("amortised_ms") is not None else r.get("amortised_note", ""),
                      "" if r.get("rebuilds") is None else f"{r['rebuilds']} / {r.get('amortised_frames', '')}",
                      "" if r.get("skin") is None else _fmt(r["skin"], 3),
                      "" if r.get("list_checks_per_interaction") is None else f"{r['list_checks_per_interaction']:.2f}",
                      "" if r.get("list_bytes") is None else f"{r['list_bytes'] / 2**20:.1f}"])
    sec.table(["scenario", "N", "precision", "outputs", "strategy", "from scratch", "with list", "amortised",
               "rebuilds / frames", "skin", "list checks per interaction", "list MiB"], table)


def repeat_check(rows: list[dict]) -> tuple[int, int, float] | None:
    """Points timed twice in one run (two suites share them): how many pairs, how many agree
    (each median inside the other's [min, max] of compute), and the largest median ratio."""
    by = defaultdict(list)
    for r in _ok(rows):
        by[(r["strategy"], r["scenario"], r["n"], r["precision"], r.get("_file"))].append(r)
    pairs = [(a, b) for rs in by.values() if len(rs) > 1 for a, b in zip(rs, rs[1:])]
    if not pairs:
        return None
    agree = sum(a["compute_min_ms"] <= b["compute_ms"] <= a["compute_max_ms"] and
                b["compute_min_ms"] <= a["compute_ms"] <= b["compute_max_ms"] for a, b in pairs)
    worst = max(max(a["compute_ms"], b["compute_ms"]) / min(a["compute_ms"], b["compute_ms"]) for a, b in pairs)
    return len(pairs), agree, worst


MARKERS = "osD^v<>pPX*h"


def _style(i: int) -> dict:
    """Distinct colour, marker and dash for line i (20 colours x 3 dashes)."""
    import matplotlib

    return {"color": matplotlib.colormaps["tab20"](i % 20), "marker": MARKERS[i % len(MARKERS)],
            "ls": ("-", "--", ":")[(i // 20) % 3]}


def _fp32_first(rows: list[dict]) -> list[dict]:
    """One precision per plot: fp32 where the rows have it."""
    precs = {r["precision"] for r in rows}
    keep = "fp32" if "fp32" in precs else (sorted(precs)[0] if precs else None)
    return [r for r in rows if r["precision"] == keep]


def _scaling_plot(plots: Plots, rows: list[dict], title: str, name: str, guide: bool = False) -> str | None:
    rows = _fp32_first(rows)
    by = defaultdict(list)
    for r in rows:
        by[r["strategy"]].append((r["n"], _device_ms(r)))
    by = {k: sorted(v) for k, v in by.items() if len({n for n, _ in v}) >= 2}
    if not by:
        return None
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (k, pts) in enumerate(sorted(by.items())):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=k, **_style(i))
    if guide:
        ns = sorted({r["n"] for r in rows})
        ref = min(rows, key=lambda r: _device_ms(r) if r["n"] == ns[-1] else math.inf)
        ax.plot(ns, [_device_ms(ref) * (n / ns[-1]) ** 2 for n in ns], "k--", lw=1, label="O(N^2) guide")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles N")
    ax.set_ylabel("device time per evaluation (ms)")
    ax.set_title(f"{title}, {rows[0]['precision']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return plots.save(fig, name)


def thesis(sec: Section, plots: Plots, bench: list[dict]) -> None:
    rows = _all_outputs(_ok(bench))
    done = False
    for fam, (fig_no, what) in THESIS.items():
        sub = [r for r in rows if r["scenario"] == fam and r["backend"] in ("cuda", "cpu")]
        f = _scaling_plot(plots, sub, f"{what}" + (f" (thesis fig. {fig_no})" if fig_no else ""), f"scaling-{fam}",
                          guide=fam == "allpairs_cube")
        if f:
            sec.image(f, f"{what}: device time (graph replay; CPU: host time) against N, every strategy timed (GPU and CPU)" +
                      (f" (thesis figure {fig_no})" if fig_no else ""))
            done = True
        if fam == "uniform":
            done |= _views(sec, plots, sub)
    done |= _gaussian(sec, plots, rows)
    if not done:
        sec.empty("Run `make bench SUITE=full` (or SUITE=allpairs, views, one_per_cell, nine_per_cell, gaussian).")


def _views(sec: Section, plots: Plots, rows: list[dict]) -> bool:
    """Nested against 2D storage, per GPU traversal and processor that has both."""
    out = []
    kinds = sorted({(r["traversal"], r["processor"]) for r in rows if r.get("storage") in ("nested", "2d")
                    and r["backend"] == "cuda"})
    for trav, proc in kinds:
        pick = lambda st: {r["n"]: r for r in rows if (r.get("traversal"), r.get("processor"), r.get("storage"))  # noqa: E731
                           == (trav, proc, st) and "[" not in r["strategy"]}
        nested, flat = pick("nested"), pick("2d")
        for n in sorted(set(nested) & set(flat)):
            out.append((f"{trav}_{proc}", n, nested[n]["setup_ms"] / flat[n]["setup_ms"],
                        _device_ms(nested[n]) / _device_ms(flat[n])))
    if not out:
        return False
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for trav in sorted({o[0] for o in out}):
        pts = [o for o in out if o[0] == trav]
        ax.plot([p[1] for p in pts], [p[2] for p in pts], marker="o", label=f"{trav}: set-up nested / 2d")
        ax.plot([p[1] for p in pts], [p[3] for p in pts], marker="s", ls="--", label=f"{trav}: evaluation nested / 2d")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles N")
    ax.set_ylabel("time ratio, nested / 2D views")
    ax.set_title("Nested vs 2D views (thesis fig. 10.2)")
    ax.legend(fontsize=7)
    sec.image(plots.save(fig, "views-ratio"), "Nested vs 2D views: set-up and evaluation time ratios (thesis figure 10.2)")
    return True


def _gaussian(sec: Section, plots: Plots, rows: list[dict]) -> bool:
    sub = [r for r in _fp32_first(rows) if _family(r["scenario"]) == "gaussian"
           and _param(r["scenario"], "sigma") is not None]
    by = defaultdict(list)
    for r in sub:
        by[r["strategy"]].append((_param(r["scenario"], "sigma"), _device_ms(r)))
    by = {k: sorted(v) for k, v in by.items() if len(v) >= 2}
    if not by:
        return False
    plt = plots.plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (k, pts) in enumerate(sorted(by.items())):
        a.plot([p[0] for p in pts], [p[1] for p in pts], label=k, **_style(i))
        b.plot([p[0] for p in pts], [p[1] / pts[-1][1] for p in pts], label=k, **_style(i))
    a.set_yscale("log")
    a.set_xlabel("sigma of the Gaussian blob")
    a.set_ylabel("device time per evaluation (ms)")
    b.set_yscale("log")
    b.set_xlabel("sigma of the Gaussian blob")
    b.set_ylabel("time / time at the largest sigma (most homogeneous)")
    a.legend(fontsize=6)
    a.set_title("Gaussian sweep (thesis fig. 10.5)")
    b.set_title("Ratio to the most homogeneous case")
    sec.image(plots.save(fig, "gaussian-sweep"), "Gaussian blob: time against sigma, and the ratio to the most "
                                                 "homogeneous case (thesis figure 10.5)")
    return True


def cpu_gpu(sec: Section, bench: list[dict]) -> None:
    rows = _all_outputs(_ok(bench))
    groups = defaultdict(lambda: {"cpu": None, "cuda": None})
    for r in rows:
        g = groups[(r["scenario"], r["n"], r["precision"])]
        if r["backend"] in g and (g[r["backend"]] is None or _device_ms(r) < _device_ms(g[r["backend"]])):
            g[r["backend"]] = r
    table = [[s, n, p, g["cpu"]["strategy"], _fmt(_device_ms(g["cpu"])), g["cuda"]["strategy"],
              _fmt(_device_ms(g["cuda"])), f"{_device_ms(g['cpu']) / _device_ms(g['cuda']):.1f}x"]
             for (s, n, p), g in sorted(groups.items()) if g["cpu"] and g["cuda"]]
    if not table:
        return sec.empty("Run a suite with CPU and GPU strategies on one machine (`make bench`).")
    cores = {d.get("cpu_cores") for d in [r.get("_device", {}) for r in rows]} - {None}
    sec.text("Best CPU strategy (numba, this machine's cores" + (f": {', '.join(map(str, cores))}" if cores else "") +
             ") against the best GPU strategy, device time per evaluation (GPU: graph replay of build + force + "
             "reduce; CPU: host time).")
    sec.table(["scenario", "N", "precision", "best CPU", "ms", "best GPU", "ms", "GPU speed-up"], table)


def parity(sec: Section, plots: Plots, bench: list[dict]) -> None:
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("traversal") == "parity"]
    if not rows:
        return sec.empty("Run `make bench SUITE=mardyn` (and the Gaussian and one-per-cell suites).")
    plt = plots.plt
    lj = [r for r in _fp32_first(rows) if r["scenario"] == "lj_liquid"]
    top = max((r["n"] for r in lj), default=0)
    lj = [r for r in lj if r["n"] == top]  # the sweeps at the largest LJ system
    block = sorted({(r["launch_params"].get("block"), r["force_ms"]) for r in lj if r.get("processor") == "block"
                    and r["launch_params"].get("block")})
    warpblock = defaultdict(list)
    for r in lj:
        if r.get("processor") == "warpblock" and r["launch_params"].get("warps"):
            warpblock[(r["name"], r["launch_params"].get("commit", "not recorded"))].append(
                (r["launch_params"].get("warps"), r["force_ms"]))
    if len({b for b, _ in block}) > 1 or any(len(v) > 1 for v in warpblock.values()):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        if block:
            a.plot([t[0] for t in block], [t[1] for t in block], marker="o", label="parity_block_csr")
        a.set_xscale("log", base=2)
        a.set_xlabel("threads per block (thread-block processor)")
        a.set_ylabel("force phase (ms)")
        a.set_title(f"Thread-block processor: block size (LJ, N={top})")
        for i, ((name, commit), pts) in enumerate(sorted(warpblock.items(), key=str)):
            pts = sorted(pts)
            b.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{name} commit={commit}", **_style(i))
        b.set_xscale("log", base=2)
        b.set_yscale("log")
        b.set_xlabel("warps per block")
        b.set_ylabel("force phase (ms)")
        b.set_title(f"Warp-block processor: warps per block (LJ, N={top})")
        b.legend(fontsize=6)
        a.legend(fontsize=6)
        sec.image(plots.save(fig, "parity-launch"), "Parity-plane processors on the LJ liquid: block size and warps "
                                                    "per block sweeps (force phase)")
    table = []
    names = [n for n in ("parity_block_csr", "parity_warpblock_twopass_atomic", "parity_warpblock_shared_atomic",
                         "parity_warpblock_twopass_mutex", "parity_warpblock_shared_mutex", "parity_thread_csr")]
    points = sorted({(r["scenario"], r["n"], r["precision"]) for r in rows})
    for scen, n, prec in points:
        sub = {r["strategy"]: r for r in rows if (r["scenario"], r["n"], r["precision"]) == (scen, n, prec)}
        table.append([scen, n, prec] + [_fmt(sub[k]["force_ms"]) if k in sub else "" for k in names])
    sec.text("Force phase (ms) at the default launch parameters: thread-block vs warp-block processors, two-pass vs "
             "shared-cache Newton3, atomic vs mutex scheduler, and the reference processor (one thread per cell pair).")
    sec.table(["scenario", "N", "precision", "block", "warp-block two-pass atomic", "warp-block shared atomic",
               "warp-block two-pass mutex", "warp-block shared mutex", "thread (reference)"], table)
    _per_cell_plot(sec, plots, bench)


def _per_cell_plot(sec: Section, plots: Plots, bench: list[dict]) -> None:
    """Processors against particles per cell, at one size: the k_per_cell:k=... sweep of the
    mardyn suite where it exists (every strategy in it, the full shell and c08 for scale), else
    the homogeneous scenarios at their largest N. Particles per cell = N / cells of the launch."""
    rows = [r for r in _fp32_first(_all_outputs(_ok(bench))) if not r["strategy"].count("[")
            and isinstance(r.get("launch"), dict) and r["launch"].get("cells")]
    sweep = [r for r in rows if r["scenario"].startswith("k_per_cell:k=")]
    if not sweep:
        homogeneous = [r for r in rows if r.get("traversal") == "parity"
                       and _family(r["scenario"]) in ("k_per_cell", "one_per_cell", "lj_liquid", "uniform")]
        top = max((r["n"] for r in homogeneous), default=0)
        sweep = [r for r in homogeneous if r["n"] >= top / 2]
    per_cell = defaultdict(list)
    for r in sweep:
        per_cell[r["strategy"]].append((r["n"] / math.prod(r["launch"]["cells"]), r["force_ms"] / r["n"] * 1e6))
    if not any(len(v) > 1 for v in per_cell.values()):
        return
    fig, ax = plots.plt.subplots(figsize=(7, 4.2))
    for i, (k, pts) in enumerate(sorted(per_cell.items())):
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=k, **_style(i))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles per cell (N / cells)")
    ax.set_ylabel("force phase per particle (ns)")
    sizes = sorted({r["n"] for r in sweep})
    ax.set_title(f"Cell processors against particles per cell (N {sizes[0]:,} to {sizes[-1]:,})")
    ax.legend(fontsize=6)
    sec.image(plots.save(fig, "parity-per-cell"), "Thread-block vs warp-block processors (and the full shell and c08 "
                                                  "for scale) against particles per cell, force phase per particle")


def precision(sec: Section, plots: Plots, bench: list[dict], verify: list[dict]) -> None:
    vrows = [r for d in verify for r in d["rows"] if r["status"] == "pass"]
    brows = _all_outputs(_ok(bench))
    if not vrows and not brows:
        return sec.empty("Run `make verify` and `make bench SUITE=precision`.")
    err = defaultdict(dict)
    for r in vrows:
        err[r["strategy"]][r["precision"]] = max(err[r["strategy"]].get(r["precision"], 0.0), r["force_rms"])
    t = defaultdict(dict)
    for r in brows:
        key = (r["strategy"], r["scenario"], r["n"])
        t[key][r["precision"]] = _device_ms(r)
    precs = list(PRECISIONS)
    if err:
        sec.text("Largest relative RMS force error over the verify matrix, per strategy and precision mode.")
        sec.table(["strategy", *precs], [[s, *[_fmt(e.get(p), 2) for p in precs]] for s, e in sorted(err.items())])
    multi = {k: v for k, v in t.items() if len(v) > 1}
    if multi:
        sec.text("Device time (ms, graph replay on the GPU) per precision mode where a run timed more than one.")
        sec.table(["strategy", "scenario", "N", *precs], [[k[0], k[1], k[2], *[_fmt(v.get(p)) for p in precs]]
                                                          for k, v in sorted(multi.items())])


def peers(sec: Section, bench: list[dict]) -> None:
    rows = [r for r in bench if r.get("backend") == "peer"]
    if not rows:
        return sec.empty("Run `make bench ARGS=\"--peers openmm,jaxmd\"` with the peers installed "
                         "(`make setup EXTRAS=test,bench,peers`).")
    mine = {(r["scenario"], r["n"], r["precision"]): r for r in sorted(_all_outputs(_ok(bench)), key=lambda r: -_device_ms(r))}
    table = []
    for r in rows:
        best = mine.get((r["scenario"], r["n"], r["precision"]))
        if r["status"] != "ok":
            table.append([r["strategy"], r["scenario"], r["n"], r["precision"], r["status"], "", "", "", r.get("detail", "")])
            continue
        table.append([r["strategy"], r["scenario"], r["n"], r["precision"], r.get("platform", ""),
                      _fmt(r.get("force_ms")), _fmt(r.get("step_ms") or r.get("update_ms")),
                      f"{best['strategy']} {_device_ms(best):.4g} ms" if best else "",
                      f"force err {r['force_rms_err']:.1e}; {r.get('includes', '')}"])
    sec.text("Peers on exactly the same positions, box and cutoff, checked against the reference; what each time "
             "includes is in the last column.")
    sec.table(["peer", "scenario", "N", "precision", "platform", "force ms", "step/update ms",
               "fastest strategy here", "notes"], table)


def roofline(sec: Section, plots: Plots, bench: list[dict], devices: list[dict], profiles: list[dict]) -> None:
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("gflops") and r.get("eff_bandwidth_gbs") and r["backend"] == "cuda"]
    dev = next((d for d in devices if d.get("peak_fp32_tflops")), None)
    if rows and dev:
        plt = plots.plt
        fig, ax = plt.subplots(figsize=(12, 5.5))
        peak = dev["peak_fp32_tflops"] * 1e3
        bw = dev.get("peak_dram_gbs") or 1.0
        xs = [r["gflops"] / r["eff_bandwidth_gbs"] for r in rows]
        lo, hi = min(xs) / 3, max(xs) * 3
        grid = [lo * (hi / lo) ** (i / 50) for i in range(51)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], "k-", lw=1.2, label=f"ceilings: FP32 {peak:.0f} GFLOP/s, "
                                                                            f"DRAM {bw:.0f} GB/s")
        largest = {}
        for r in rows:
            key = (r["strategy"], r["scenario"])
            if key not in largest or r["n"] > largest[key]["n"]:
                largest[key] = r
        for (s, scen), r in sorted(largest.items()):
            ax.scatter(r["gflops"] / r["eff_bandwidth_gbs"], r["gflops"], s=18, label=f"{s} ({scen}, N={r['n']})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (flop per byte of positions in + forces out)")
        ax.set_ylabel("achieved GFLOP/s (AutoPas flop counts)")
        ax.set_title(f"Roofline, {dev.get('gpu')}")
        ax.legend(fontsize=5, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        sec.image(plots.save(fig, "roofline"), "Each strategy's compute phase against the GPU's FP32 and DRAM ceilings "
                                               "(largest N per strategy and scenario)")
    if profiles:
        table = []
        for d in profiles:
            k = d["ncu"]["heaviest"]
            c = d.get("crosscheck") or {}  # a peer's profile has no event timing to check against
            table.append([d["strategy"], d["scenario"], d.get("n", d.get("size")), _fmt(d["ncu"]["total_duration_ms"]),
                          _fmt(k.get("achieved_occupancy_pct"), 3), _fmt(k.get("sm_throughput_pct"), 3),
                          _fmt(k.get("dram_throughput_pct"), 3), _fmt(k.get("l1_hit_pct"), 3), _fmt(k.get("l2_hit_pct"), 3),
                          _fmt(k.get("registers_per_thread")), ", ".join(n for n, _ in k.get("top_stalls", [])),
                          f"{c['ratio']:.3f}" if c.get("ratio") else ""])
        sec.text("Nsight Compute summaries (heaviest kernel of the force phase) and the timing cross-check "
                 "(sum of kernel durations / event-timed force phase).")
        sec.table(["strategy", "scenario", "N", "ncu ms", "occupancy %", "SM %", "DRAM %", "L1 hit %", "L2 hit %",
                   "regs", "top stalls", "ncu/events"], table)
    if not rows and not profiles:
        sec.empty("Run `make bench` on a GPU, and `make profile` for ncu summaries.")


def claims(sec: Section, paths: list) -> None:
    """The seeds' claims answered from this report's inputs (harness.claims: rows of one run
    compared, verdicts computed)."""
    from .. import claims as C

    rows = C.evaluate(C.load([Path(p) for p in paths]))
    measured = [r for r in rows if r["verdict"] != C.UNMEASURED]
    sec.text(f"Each claim the seed documents make that this harness can test, with the measurement that tests it and "
             f"a verdict computed from this report's inputs ({len(measured)} of {len(rows)} measured here; rows are "
             f"compared only within one run, a tie is within 5% or the rows' interquartile range). "
             f"`python -m harness claims FOLDER` answers them from every result in a folder.")
    sec.table(["claim", "seed", "measurement", "verdict", "why", "reproduce"],
              [[r["text"], r["seed"], f"{r['measure']}: {r['measured']}" if r["measured"] else r["measure"],
                r["verdict"], r["why"], r["command"]] for r in rows])


def method(sec: Section, data: dict, bench: list[dict]) -> None:
    devices = [d["device"] for d in data["bench"]] + [d.get("device", {}) for d in data["verify"]]
    seen = set()
    commits = sorted({str(d.get("commit")) for d in devices if d and d.get("commit")})
    for dev in devices:
        key = json.dumps({k: v for k, v in dev.items() if k != "commit"}, sort_keys=True, default=str)
        if dev and key not in seen:
            seen.add(key)
            gpu = dev.get("gpu") or "no GPU"
            sec.text(f"Device: {gpu}" + (f" (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
                                         f"{dev.get('sm_clock_mhz', 0):.0f} MHz, driver {dev.get('driver')}, CUDA "
                                         f"{dev.get('cuda_runtime')}, CuPy {dev.get('cupy')})" if dev.get("gpu") else "")
                     + f"; CPU {dev.get('cpu')} ({dev.get('cpu_cores')} cores).")
    if commits:
        sec.text("Commits of the results: " + ", ".join(commits) + ".")
    cmds = [[d.get("meta", {}).get("date", ""), d.get("meta", {}).get("command", "(not recorded)")]
            for d in data["bench"] + data["verify"]]
    cmds += [["", d.get("command", "")] for d in data["profile"]]
    sec.table(["date", "command"], cmds)
    if data.get("renamed"):
        sec.text("Results of an earlier schema name strategies by their first-release names; shown under the current "
                 "names: " + ", ".join(f"{a} as {b}" for a, b in sorted(data["renamed"].items())) + ".")
    resumed = [d.get("meta", {}).get("resumed") for d in data["bench"] if d.get("meta", {}).get("resumed")]
    if resumed:
        sec.text(f"Resumed runs: {', '.join(map(str, resumed))} points were taken from the partial file of an "
                 f"interrupted run on a machine of the same GPU, CPU and commit (`--resume` checks these).")
    rep = repeat_check(bench)
    if rep:
        n, agree, worst = rep
        sec.text(f"Timing repeatability: {n} points were timed twice in one run; in {agree} of them each median "
                 f"lies inside the other's min..max; the largest ratio of the two medians is {worst:.2f}.")
    sec.text(METHOD)
    sec.text("Inputs: " + ", ".join(data["files"]))


