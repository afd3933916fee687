"""The report's sections, each a function of the loaded results (harness.report.load) that
fills one render.Section; strategies are picked by their attributes (traversal, processor,
storage), never by name prefix."""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd

from mdcore import PRECISIONS, InputError

from . import verdict as V
from .render import Plots, Section

SECTIONS = [
    ("verdict", "The verdict: which strategy wins, by how much, and why"),
    ("correctness", "Correctness"),
    ("wins", "Which strategy wins where, point by point"),
    ("timings", "From scratch, with a built list, amortised per MD step"),
    ("changes", "Before and after"),
    ("thesis", "The thesis's measurements on this GPU"),
    ("cpu_gpu", "CPU (numba) against GPU"),
    ("parity", "Parity-plane traverser: the MarDyn cell processors"),
    ("precision", "Precision modes"),
    ("drift", "Energy drift in NVE, per precision"),
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

def verdict(sec: Section, bench: list[dict], profiles: list[dict], verify: list[dict]) -> list[str]:
    """The answer first (harness.report.verdict): returns the page's headline lines."""
    v = V.table(bench, profiles)
    lines = [V.correctness_line(verify)]
    if v.empty:
        sec.empty("Run `make bench` (two or more strategies at a point) for a verdict.")
        return lines
    lines.insert(0, V.headline(v))
    sec.text("Per device, scenario family, size range, precision, outputs and time measured: the strategy first at "
             "most points, its margin over the runner-up (runner-up time / winner time; the median over the points it "
             "wins, with the range), and the noise of both (the wider of 5% and the relative interquartile range, or "
             "half the min..max range per MD step). A margin inside the noise is a tie. 'per MD step': a recorded NVE "
             "trajectory replayed with list upkeep and rebuilds (where every strategy at the point has it); 'from "
             "scratch': build + force + reduce every evaluation. The why column comes from the rows (distance checks "
             "per interaction) and the Nsight Compute summaries given to the report. 'compared': the strategies timed at "
             "the row's points; runs that timed other strategies at the same points (a launch-parameter sweep of one "
             "processor) get their own row rather than a winner over strategies they never met.")
    shown = v.drop(columns="device") if v["device"].nunique() == 1 else v
    sec.table(shown, highlight=~v["_tie"], winner="winner")
    side = V.devices_side_by_side(v)
    if side is not None:
        sec.text("The same groups on each device, side by side (winner, margin, verdict):")
        sec.table(side)
    return lines


def correctness(sec: Section, plots: Plots, verify: list[dict]) -> None:
    rows = [r for d in verify for r in d["rows"]]
    if not rows:
        return sec.empty("Run `make verify` (reports/verify/verify.json).")
    plt = plots.plt
    sec.text(V.correctness_line(verify).replace(" details in the Correctness section", " below"))
    reasons = {}
    figures = []
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

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

        fig, ax = plt.subplots(figsize=(1.1 * len(scens) + 3, 0.32 * len(strats) + 1.6))
        data = np.log10(np.clip(np.array(grid, dtype=float), 1e-4, 1e2))
        # centred on the pass line: error / tolerance = 1 is white, passes blue, failures red
        im = ax.imshow(np.ma.masked_invalid(data), cmap="RdBu_r", norm=TwoSlopeNorm(vmin=-4, vcenter=0, vmax=2),
                       aspect="auto")
        ax.set_xticks(range(len(scens)), scens, rotation=30, ha="right")
        ax.set_yticks(range(len(strats)), strats)
        for i in range(len(strats)):
            for j in range(len(scens)):
                ax.text(j, i, label[i][j], ha="center", va="center", fontsize=6)
        fig.colorbar(im, ax=ax, label="log10(error / tolerance); 0 is the pass line")
        ax.set_title(f"Verification matrix, {prec}")
        figures.append((plots.save(fig, f"verify-{prec}"), prec))
    with sec.details(f"Heatmaps of error over tolerance ({len(figures)} precision modes) and the n/a reasons"):
        sec.text("Colour: the largest error over its tolerance (force RMS, worst particle, energy, virial), centred "
                 "on the pass line (ratio 1): blue passes, red fails. n/a cells carry their reason below.")
        for f, prec in figures:
            sec.image(f, f"Verification matrix ({prec}): error over tolerance per strategy and scenario")
        if reasons:
            sec.table(["strategy", "scenario", "why n/a"], [[s, c, w] for (s, c), w in sorted(reasons.items())])


def _device_ms(r: dict) -> float:
    """What a strategy costs the device per evaluation: the CUDA-graph replay of the compute
    phase for GPU strategies (their kernels without Python's launch overhead), the host time
    for CPU strategies; the eager compute time where a GPU strategy could not be captured."""
    return r.get("graph_ms") or r["compute_ms"]


def _one_per_label(rows: list[dict], key=_device_ms, label=lambda r: r["strategy"]) -> list[dict]:
    """A strategy measured twice at one point (two suites share it): its faster row. label: what
    counts as one strategy (the name without launch parameters: its fastest launch)."""
    best: dict[str, dict] = {}
    for r in rows:
        if label(r) not in best or key(r) < key(best[label(r)]):
            best[label(r)] = r
    return list(best.values())


def wins(sec: Section, bench: list[dict]) -> None:
    pts = V.points(bench)
    if pts.empty:
        return sec.empty("Run `make bench`.")
    sec.text("Every point timed with two or more strategies: the fastest (its label, with the launch parameters that "
             "won), the runner-up, the margin and the noise band; 'tie' where the margin is inside it, 'noisy' where a "
             "row's min..max spread is above 25% of its median (compare with care). Times as in the verdict.")
    t = pd.DataFrame({"scenario": pts["scenario"], "N": pts["n"], "precision": pts["precision"],
                      "outputs": pts["outputs"], "time": pts["time"], "fastest": pts["winner_label"],
                      "fastest ms": pts["winner_ms"], "runner-up": pts["runner_up"], "runner-up ms": pts["runner_up_ms"],
                      "margin": pts["margin"].map(lambda m: f"{m:.2f}x"),
                      "noise": [f"±{100 * max(a, b):.0f}%" for a, b in zip(pts["winner_band"], pts["runner_up_band"])],
                      "tie": pts["tie"], "noisy": pts["noisy"]})
    if pts["device"].nunique() > 1:
        t.insert(0, "device", pts["device"])
    sec.table(t, highlight=~pts["tie"], noisy="noisy", winner="fastest")


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
                      "" if r.get("list_bytes") is None else f"{r['list_bytes'] / 2**20:.1f}", bool(r.get("noisy"))])
    sec.table(["scenario", "N", "precision", "outputs", "strategy", "from scratch", "with list", "amortised",
               "rebuilds / frames", "skin", "list checks per interaction", "list MiB", "noisy"], table, noisy="noisy")


def before_after(bench_docs: list[dict], bench_files: list[str], before_docs: list[dict],
                 before_files: list[str]) -> list[tuple]:
    """(Change, meta) for every point an earlier bench result (--before) shares with the bench
    inputs (harness.compare, metric device); raises InputError for a --before file that shares
    no point with them, or one of another device. Run before anything is written."""
    from ..compare import compare_docs, point_key

    found = []
    for old, old_file in zip(before_docs, before_files):
        old_keys = {point_key(r) for r in old["rows"]}
        pairs = [(new, f) for new, f in zip(bench_docs, bench_files)
                 if Path(f).resolve() != Path(old_file).resolve() and old_keys & {point_key(r) for r in new["rows"]}]
        if not pairs:
            raise InputError(f"report: --before {old_file} shares no point with the bench inputs")
        for new, new_file in pairs:
            cs, meta = compare_docs(old, new, old_file, new_file, metric="device")
            found += [(c, meta) for c in cs if c.verdict not in ("new", "gone")]
    return found


def changes(sec: Section, found: list[tuple], given: bool) -> None:
    """The points before_after() found: the time per evaluation as the verdict takes it (graph
    replay from scratch on the GPU, host time on the CPU) before and now, by harness compare's
    rule (a change counts above 5% and above the noise of both); per strategy the geometric mean
    of now / before over its points."""
    if not given:
        return sec.empty("Give an earlier bench result of the same device: `python -m harness report NEW.json "
                         "--before OLD.json` (e.g. the previous `make bench SUITE=full`).")
    counts = Counter(c.verdict for c, _ in found)
    metas = list({(m["old"], m["new"]): m for _, m in found}.values())
    sec.text("Time per evaluation, median of each run: the CUDA-graph replay from scratch for GPU strategies, the host "
             "time for CPU strategies (what the verdict ranks). A change counts above 5% and above the noise, the "
             "larger interquartile range / median of the two rows (`harness compare --metric device`). Compared: "
             + "; ".join(f"{Path(m['old']).name} ({m['old_commit']}) -> {Path(m['new']).name} ({m['new_commit']})"
                         for m in metas)
             + f". {len(found)} points in common: " + ", ".join(f"{counts[v]} {v}" for v in
                                                            ("improvement", "regression", "same", "n/a") if counts[v]) + ".")
    by = defaultdict(list)
    for c, _ in found:
        if c.change is not None:
            by[c.point.split(" ", 1)[0]].append(c)
    rows = []
    for strat, cs in by.items():
        ratios = [1.0 + c.change for c in cs]
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        rows.append([strat, len(cs), f"{gm:.3f}", f"{min(ratios):.3f}", f"{max(ratios):.3f}",
                     sum(c.verdict == "improvement" for c in cs), sum(c.verdict == "regression" for c in cs)])
    rows.sort(key=lambda r: float(r[2]))
    sec.table(["strategy", "points", "now / before (geometric mean)", "best", "worst", "faster", "slower"], rows)
    order = {"regression": 0, "improvement": 1, "same": 2, "n/a": 3}
    detail = sorted((c for c, _ in found), key=lambda c: (order.get(c.verdict, 9), -abs(c.change or 0.0)))
    with sec.details(f"Every point ({len(detail)})"):
        sec.table(["verdict", "point", "before ms", "now ms", "change", "noise", "note"],
                  [[c.verdict, c.point, _fmt(c.old_ms), _fmt(c.new_ms),
                    "" if c.change is None else f"{c.change:+.1%}", "" if c.noise is None else f"{c.noise:.0%}", c.note]
                   for c in detail])


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
    """Distinct colour, marker and dash for line i (10 colours, then markers and dashes)."""
    import matplotlib

    return {"color": matplotlib.colormaps["tab10"](i % 10), "marker": MARKERS[i % len(MARKERS)],
            "ls": ("-", "--", ":")[(i // 10) % 3]}


def _range(r: dict, phase: str = "device") -> tuple[float, float, float]:
    """(median, min, max) of a row's time: 'device' (graph replay, else compute) or 'force'."""
    if phase == "force":
        t = r["force_ms"]
        return t, r.get("force_min_ms") or t, r.get("force_max_ms") or t
    if r.get("graph_ms"):
        t = r["graph_ms"]
        return t, r.get("graph_min_ms") or t, r.get("graph_max_ms") or t
    t = r["compute_ms"]
    return t, r.get("compute_min_ms") or t, r.get("compute_max_ms") or t


def _errorbar_line(ax, pts: list[tuple], label: str, style: dict, x_of=lambda p: p[0]) -> None:
    """pts: (x, median, min, max, noisy); a line with min..max error bars, noisy points ringed red."""
    xs = [x_of(p) for p in pts]
    med = [p[1] for p in pts]
    yerr = [[max(p[1] - p[2], 0.0) for p in pts], [max(p[3] - p[1], 0.0) for p in pts]]
    ax.errorbar(xs, med, yerr=yerr, label=label, capsize=2, elinewidth=0.8, ms=4, **style)
    noisy = [(x, m) for x, m, p in zip(xs, med, pts) if p[4]]
    if noisy:
        ax.scatter([x for x, _ in noisy], [m for _, m in noisy], s=80, facecolors="none", edgecolors="red",
                   linewidths=1.0, zorder=5)


def _fp32_first(rows: list[dict]) -> list[dict]:
    """One precision per plot: fp32 where the rows have it."""
    precs = {r["precision"] for r in rows}
    keep = "fp32" if "fp32" in precs else (sorted(precs)[0] if precs else None)
    return [r for r in rows if r["precision"] == keep]


def _strategy_family(r: dict) -> str:
    return str(r.get("traversal") or r["strategy"].split("_")[0])


NOISE_NOTE = "error bars: min..max of the samples; a red ring marks a noisy point (spread above 25%)"


def _scaling_plot(plots: Plots, rows: list[dict], title: str, name: str, guide: bool = False):
    """Device time against N, one panel per strategy family (small multiples, shared axes), error
    bars from each point's min..max."""
    rows = _fp32_first(rows)
    by = defaultdict(list)
    fam = {}
    for r in rows:
        by[r["strategy"]].append((r["n"], *_range(r), bool(r.get("noisy"))))
        fam[r["strategy"]] = _strategy_family(r)
    by = {k: sorted(v) for k, v in by.items() if len({p[0] for p in v}) >= 2}
    if not by:
        return None
    families = sorted({fam[k] for k in by})
    cols = min(3, len(families))
    nrows = -(-len(families) // cols)
    plt = plots.plt
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.6 * nrows), sharex=True, sharey=True, squeeze=False)
    for ax, f in zip(axes.flat, families):
        mine = sorted(k for k in by if fam[k] == f)
        for i, k in enumerate(mine):
            _errorbar_line(ax, by[k], k, _style(i))
        if guide:
            ns = sorted({r["n"] for r in rows})
            ref = min(rows, key=lambda r: _device_ms(r) if r["n"] == ns[-1] else math.inf)
            ax.plot(ns, [_device_ms(ref) * (n / ns[-1]) ** 2 for n in ns], "k--", lw=1, label="O(N^2) guide")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes.flat[len(families):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("particles N")
    for ax in axes[:, 0]:
        ax.set_ylabel("device time (ms)")
    fig.suptitle(f"{title}, {rows[0]['precision']} ({NOISE_NOTE})", fontsize=9)
    return plots.save(fig, name)


def thesis(sec: Section, plots: Plots, bench: list[dict]) -> None:
    rows = _all_outputs(_ok(bench))
    done = False
    for fam, (fig_no, what) in THESIS.items():
        sub = [r for r in rows if r["scenario"] == fam and r["backend"] in ("cuda", "cpu")]
        f = _scaling_plot(plots, sub, f"{what}" + (f" (thesis fig. {fig_no})" if fig_no else ""), f"scaling-{fam}",
                          guide=fam == "allpairs_cube")
        if f:
            sec.image(f, f"{what}: device time (graph replay; CPU: host time) against N, one panel per strategy family" +
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
        by[r["strategy"]].append((_param(r["scenario"], "sigma"), *_range(r), bool(r.get("noisy"))))
    by = {k: sorted(v) for k, v in by.items() if len(v) >= 2}
    if not by:
        return False
    plt = plots.plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (k, pts) in enumerate(sorted(by.items())):
        _errorbar_line(a, pts, k, _style(i))
        last = pts[-1][1]
        _errorbar_line(b, [(p[0], p[1] / last, p[2] / last, p[3] / last, p[4]) for p in pts], k, _style(i))
    a.set_yscale("log")
    a.set_xlabel("sigma of the Gaussian blob")
    a.set_ylabel("device time per evaluation (ms)")
    b.set_yscale("log")
    b.set_xlabel("sigma of the Gaussian blob")
    b.set_ylabel("time / time at the largest sigma (most homogeneous)")
    a.legend(fontsize=6)
    a.set_title("Gaussian sweep (thesis fig. 10.5)")
    b.set_title("Ratio to the most homogeneous case")
    fig.suptitle(NOISE_NOTE, fontsize=8)
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
    sec.table(["scenario", "N", "precision", "best CPU", "CPU ms", "best GPU", "GPU ms", "GPU speed-up"], table)


def parity(sec: Section, plots: Plots, bench: list[dict]) -> None:
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("traversal") == "parity"]
    if not rows:
        return sec.empty("Run `make bench SUITE=mardyn` (and the Gaussian and one-per-cell suites).")
    plt = plots.plt
    lj = [r for r in _fp32_first(rows) if r["scenario"] == "lj_liquid"]
    top = max((r["n"] for r in lj), default=0)
    lj = [r for r in lj if r["n"] == top]  # the sweeps at the largest LJ system
    block = sorted({(r["launch_params"].get("block"), *_range(r, "force"), bool(r.get("noisy"))) for r in lj
                    if r.get("processor") == "block" and r["launch_params"].get("block")})
    warpblock = defaultdict(list)
    for r in lj:
        if r.get("processor") == "warpblock" and r["launch_params"].get("warps"):
            warpblock[(r["name"], r["launch_params"].get("commit", "not recorded"))].append(
                (r["launch_params"].get("warps"), *_range(r, "force"), bool(r.get("noisy"))))
    if len({b[0] for b in block}) > 1 or any(len(v) > 1 for v in warpblock.values()):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        if block:
            _errorbar_line(a, block, "parity_block_csr", _style(0))
        a.set_xscale("log", base=2)
        a.set_xlabel("threads per block (thread-block processor)")
        a.set_ylabel("force phase (ms)")
        a.set_title(f"Thread-block processor: block size (LJ, N={top})")
        for i, ((name, commit), pts) in enumerate(sorted(warpblock.items(), key=str)):
            _errorbar_line(b, sorted(pts), f"{name} commit={commit}", _style(i))
        b.set_xscale("log", base=2)
        b.set_yscale("log")
        b.set_xlabel("warps per block")
        b.set_ylabel("force phase (ms)")
        b.set_title(f"Warp-block processor: warps per block (LJ, N={top})")
        b.legend(fontsize=6)
        a.legend(fontsize=6)
        fig.suptitle(NOISE_NOTE, fontsize=8)
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
        scale = 1e6 / r["n"]
        t, lo, hi = _range(r, "force")
        per_cell[r["strategy"]].append((r["n"] / math.prod(r["launch"]["cells"]), t * scale, lo * scale, hi * scale,
                                        bool(r.get("noisy"))))
    if not any(len(v) > 1 for v in per_cell.values()):
        return
    fig, ax = plots.plt.subplots(figsize=(7, 4.2))
    for i, (k, pts) in enumerate(sorted(per_cell.items())):
        _errorbar_line(ax, sorted(pts), k, _style(i))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles per cell (N / cells)")
    ax.set_ylabel("force phase per particle (ns)")
    sizes = sorted({r["n"] for r in sweep})
    ax.set_title(f"Cell processors against particles per cell (N {sizes[0]:,} to {sizes[-1]:,})\n{NOISE_NOTE}",
                 fontsize=8)
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


def _drift_cell(r: dict | None) -> str:
    if r is None:
        return ""
    if r.get("status") != "ok" or not isinstance(r.get("drift"), (int, float)):
        return f"{r.get('status', '?')}: {r.get('detail', '')}".strip()
    return f"{r['drift']:+.1e}"


def drift(sec: Section, nve: list[dict]) -> None:
    """The NVE report's table (`harness md --nve-report`): per run (N, steps) and precision, the drift of
    the total energy per particle per tau of every strategy and of the peers on the same start, then,
    per run, fp64 and mixed against the peers' figures and fp32 against the fp64 runs."""
    runs = []  # (n, steps, dt, rows of that run)
    for d in nve:
        by_n = defaultdict(list)
        for r in d.get("rows", []):
            by_n[r.get("n")].append(r)
        runs += [(n, d.get("steps"), d.get("dt"), rows) for n, rows in by_n.items()]
    if not runs:
        return sec.empty("Run `python -m harness md --nve-report --n 4000 --steps 200000 --json nve.json` "
                         "(OpenMM beside it where installed) and give the JSON to the report.")
    runs.sort(key=lambda x: (x[0] or 0, x[1] or 0))
    names = list(dict.fromkeys(r["strategy"] for _, _, _, rows in runs for r in rows))
    names = [s for s in names if not s.startswith("peer:")] + [s for s in names if s.startswith("peer:")]
    precs = [p for p in PRECISIONS if any(r.get("precision") == p for _, _, _, rows in runs for r in rows)]
    sec.text("Drift = the least-squares slope of the total energy per particle per tau over the run (LJ shifted at "
             "the cutoff, every run from one equilibrated start); a peer's precision is its own nearest mode "
             "(OpenMM: single, mixed, double). The last column: the largest deviation of the total energy per particle "
             "from its start in any run of the row, the energy's own fluctuation, which a drift must outgrow to be "
             "seen.")
    table, lines = [], []
    for n, steps, dt, rows in runs:
        tau = f"{steps:,} ({steps * dt:g})" if steps and dt else (steps or "")
        at = {(r["strategy"], r.get("precision")): r for r in rows}
        for p in precs:
            got = [at.get((s, p)) for s in names]
            if not any(got):
                continue
            devs = [r["max_deviation"] for r in got if r and isinstance(r.get("max_deviation"), (int, float))]
            table.append([n, tau, p, *[_drift_cell(r) for r in got], f"{max(devs):.1e}" if devs else ""])
        ok = [r for r in rows if r.get("status") == "ok" and isinstance(r.get("drift"), (int, float))]
        peer = [abs(r["drift"]) for r in ok if r["strategy"].startswith("peer:")]
        own = lambda p: [r for r in ok if not r["strategy"].startswith("peer:") and r.get("precision") == p]
        f64 = [r["drift"] for r in ok if r.get("precision") == "fp64"]  # the peers' double included
        worst = max(own("fp64") + own("mixed"), key=lambda r: abs(r["drift"]), default=None)
        if peer and worst is not None:
            excess = abs(worst["drift"]) - max(peer)
            line = (f"N {n:,}, {tau} steps (tau): the largest fp64 / mixed drift here, {worst['strategy']} "
                    f"{worst['precision']} {worst['drift']:+.1e}, is {'within' if excess <= 0 else 'beyond'} the "
                    f"peers' largest, {max(peer):.1e}")
            if excess > 0 and len(f64) > 1:
                # the fp64 runs integrate the same equations, summed in different orders: the chaos of the
                # trajectories makes their drifts differ by the estimate's own scatter
                spread = max(f64) - min(f64)
                line += (f", by {excess:.1e}: {'inside' if excess <= spread else 'outside'} the spread of the fp64 "
                         f"runs' drifts ({spread:.1e}; the same equations summed in different orders, so the "
                         "estimate's own scatter)")
            lines.append(line + ".")
        if f64 and own("fp32"):
            floor = max(abs(d) for d in f64)
            worse = [r["strategy"] for r in own("fp32") if abs(r["drift"]) > 10.0 * floor]
            lines.append(f"N {n:,}: fp32 " + (f"drifts beyond 10x the largest fp64 drift ({floor:.1e}) for "
                                              f"{', '.join(worse)}" if worse else
                                              f"stays within 10x the largest fp64 drift ({floor:.1e}) for every "
                                              "strategy") + ".")
    sec.table(["N", "steps (tau)", "precision", *names, "largest deviation / particle"], table, as_text=True)
    for line in lines:
        sec.text(line)


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


def issue_bound_ms(profile: dict) -> float | None:
    """The least time the profiled phase's warp instructions take at one issue per scheduler per
    cycle (4 schedulers per SM on the GPUs this harness targets) at the device's reported clock."""
    dev = profile.get("device") or {}
    sms, mhz = dev.get("sms"), dev.get("sm_clock_mhz")
    inst = sum(k.get("inst_executed") or 0.0 for k in (profile.get("ncu") or {}).get("kernels", []))
    if not (sms and mhz and inst):
        return None
    return inst / (4.0 * sms * mhz * 1e6) * 1e3


PEER_FORCE_KERNELS = {"peer:openmm": "computeNonbonded"}  # the kernel of a peer's step that is its force kernel


def _peer_force_kernel(profile: dict) -> tuple[dict, float] | None:
    """(ncu summary, median ms) of the force kernel in a peer's profiled MD step: the launch
    whose duration is the median of that kernel's launches; None for a strategy's profile or a
    peer without that kernel."""
    name = PEER_FORCE_KERNELS.get(profile.get("strategy", ""))
    launches = [k for k in (profile.get("ncu") or {}).get("kernels", []) if k.get("kernel") == name]
    if not launches:
        return None
    launches.sort(key=lambda k: k.get("duration_ns") or 0.0)
    k = launches[(len(launches) - 1) // 2]
    return k, (k.get("duration_ns") or 0.0) / 1e6


def roofline(sec: Section, plots: Plots, bench: list[dict], devices: list[dict], profiles: list[dict]) -> None:
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("gflops") and r.get("eff_bandwidth_gbs") and r["backend"] == "cuda"]
    dev = next((d for d in devices if d.get("peak_fp32_tflops")), None)
    if rows and dev:
        plt = plots.plt
        fig, ax = plt.subplots(figsize=(10, 5.5))
        peak = dev["peak_fp32_tflops"] * 1e3
        bw = dev.get("peak_dram_gbs") or 1.0
        xs = [r["gflops"] / r["eff_bandwidth_gbs"] for r in rows]
        lo, hi = min(xs) / 3, max(xs) * 3
        grid = [lo * (hi / lo) ** (i / 50) for i in range(51)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], "k-", lw=1.2)
        largest = {}
        for r in rows:
            key = (r["strategy"], r["scenario"])
            if key not in largest or r["n"] > largest[key]["n"]:
                largest[key] = r
        # colour: strategy family (traversal); marker: scenario family; one legend entry for each
        fams = sorted({_strategy_family(r) for r in largest.values()})
        scens = sorted({_family(r["scenario"]) for r in largest.values()})
        import matplotlib

        colour = {f: matplotlib.colormaps["tab10"](i % 10) for i, f in enumerate(fams)}
        marker = {sc: MARKERS[i % len(MARKERS)] for i, sc in enumerate(scens)}
        for r in largest.values():
            ax.scatter(r["gflops"] / r["eff_bandwidth_gbs"], r["gflops"], s=22, color=colour[_strategy_family(r)],
                       marker=marker[_family(r["scenario"])], edgecolors="red" if r.get("noisy") else "none")
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color="k", lw=1.2, label=f"ceilings: FP32 {peak:.0f} GFLOP/s, DRAM {bw:.0f} GB/s")]
        handles += [Line2D([], [], ls="", marker="o", color=colour[f], label=f"strategy family: {f}") for f in fams]
        handles += [Line2D([], [], ls="", marker=marker[sc], color="0.4", label=f"scenario: {sc}") for sc in scens]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (flop per byte of positions in + forces out)")
        ax.set_ylabel("achieved GFLOP/s (AutoPas flop counts)")
        ax.set_title(f"Roofline, {dev.get('gpu')} (largest N per strategy and scenario; red edge: noisy)")
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        sec.image(plots.save(fig, "roofline"), "Each strategy's compute phase against the GPU's FP32 and DRAM ceilings, "
                                               "coloured by strategy family and marked by scenario")
    if profiles:
        floors = {(r["strategy"].split("[")[0], r["scenario"], r["n"], r.get("outputs", "all"), r["precision"]):
                  r["floor_ms"] for r in _ok(bench) if r.get("floor_ms") and r.get("backend") == "cuda"}
        table = []
        for d in profiles:
            k, label, ms, bound = d["ncu"]["heaviest"], d["strategy"], d["ncu"]["total_duration_ms"], issue_bound_ms(d)
            force = _peer_force_kernel(d)
            if force is not None:  # a peer's whole MD step was profiled: its nonbonded kernel, per evaluation
                k, ms = force
                label = f"{d['strategy']} ({k['kernel']})"
                bound = issue_bound_ms({**d, "ncu": {"kernels": [k]}})
            c = d.get("crosscheck") or {}  # a peer's profile has no event timing to check against
            floor = floors.get((d["strategy"], d["scenario"], d.get("n"), d.get("outputs", "all"), d.get("precision")))
            table.append([label, d["scenario"], d.get("n", d.get("size")), d.get("outputs", "all"),
                          _fmt(ms), _fmt(bound), _fmt(floor),
                          _fmt(k.get("issue_active_pct"), 3), _fmt(d.get("warp_inst_per_32_checks"), 3),
                          _fmt(k.get("achieved_occupancy_pct"), 3), _fmt(k.get("sm_throughput_pct"), 3),
                          _fmt(k.get("dram_throughput_pct"), 3), _fmt(k.get("l1_hit_pct"), 3), _fmt(k.get("l2_hit_pct"), 3),
                          _fmt(k.get("registers_per_thread")), ", ".join(n for n, _ in k.get("top_stalls", [])),
                          V._bound(k, V._sms(d)), f"{c['ratio']:.3f}" if c.get("ratio") else ""])
        sec.text("Nsight Compute summaries (heaviest kernel of the force phase; for a peer, whose whole MD step is "
                 "profiled, its nonbonded kernel: median duration over the evaluations) and the timing cross-check "
                 "(sum of kernel durations / event-timed force phase). 'issue bound': the phase's warp "
                 "instructions issued at one per scheduler per cycle (4 per SM) at the clock the device reports, "
                 "the least time those instructions can take; 'FP32 floor': the pair work's flops (AutoPas counts) "
                 "at the FP32 peak, from a bench row of the same point where one is given; 'warp instr. / 32 checks': "
                 "warp instructions per 32 distance checks; 'bound': named from the issue slots and DRAM "
                 "throughput, as in the verdict.")
        sec.table(["strategy", "scenario", "N", "outputs", "ncu ms", "issue bound ms", "FP32 floor ms", "issue %",
                   "warp instr. / 32 checks", "occupancy %", "SM %", "DRAM %", "L1 hit %", "L2 hit %", "regs",
                   "top stalls", "bound", "ncu/events"], table)
    _against_fastest(sec, bench, profiles)
    if not rows and not profiles:
        sec.empty("Run `make bench` on a GPU, and `make profile` for ncu summaries.")


FASTEST_FACTOR = 3.0  # issue 12: every strategy within 3x of the fastest, or its measured bound named
PROFILE_REACH = 8.0  # a profile this many times away in N still names a strategy's bound in that table (with its N)


def _base(r: dict) -> str:
    """The strategy's name without its launch parameters."""
    return r["strategy"].split("[")[0]


def _against_fastest(sec: Section, bench: list[dict], profiles: list[dict]) -> None:
    """At the largest LJ liquid point timed on the GPU (per device, fp32, all outputs): every
    strategy's best time against the fastest's, and for those more than FASTEST_FACTOR behind the
    bound its ncu summary names (a profile of that strategy near that N), or the command that
    would measure it."""
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("backend") == "cuda" and r.get("precision") == "fp32"
            and _family(r["scenario"]) == "lj_liquid"]
    for dev in sorted({r["_device"].get("gpu", "") for r in rows}):
        at = [r for r in rows if r["_device"].get("gpu", "") == dev]
        n = max(r["n"] for r in at)
        best = sorted(_one_per_label([r for r in at if r["n"] == n], label=_base), key=_device_ms)
        if len(best) < 2:
            continue
        fastest = _device_ms(best[0])
        table = []
        for r in best:
            base, ratio = _base(r), _device_ms(r) / fastest
            # a kernel's bound (its grid, its stalls) rarely changes within 8x in N; the row names the N
            prof = V._profile_for(profiles, base, "lj_liquid", n, "all", within=PROFILE_REACH)
            if prof is not None:
                why = f"{V._bound(prof['ncu']['heaviest'], V._sms(prof))}, ncu at N={prof.get('n', prof.get('size'))}"
            elif ratio > FASTEST_FACTOR:
                why = f"no profile given: `python -m harness profile --strategy {base} --scenario lj_liquid --n {n}`"
            else:
                why = ""
            table.append([base, r["strategy"], _fmt(_device_ms(r)), f"{ratio:.2f}x",
                          ratio <= FASTEST_FACTOR, why])
        named = sum(1 for t in table if not t[4] and not t[5].startswith("no profile"))
        behind = sum(1 for t in table if not t[4])
        sec.text(f"Every strategy against the fastest at the largest LJ liquid point ({dev}, N={n:,}, fp32, all "
                 f"outputs, the verdict's time; each strategy's fastest launch): {len(table) - behind} within "
                 f"{FASTEST_FACTOR:g}x, {behind} further behind, {named} of those with the bound a profile names.")
        sec.table(["strategy", "fastest launch", "ms", "x fastest", f"within {FASTEST_FACTOR:g}x",
                   "bound (ncu, force phase)"], table)


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


def method(sec: Section, data: dict, bench: list[dict], links: list[tuple[str, str]] | None = None) -> None:
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
    for d in data["bench"]:
        note = d.get("meta", {}).get("note")
        if note:
            sec.text(f"Note recorded with the results of `{d.get('meta', {}).get('command', '?')[:90]}...`: {note}")
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
    if links:
        sec.link_list("Copies beside this page", links)


