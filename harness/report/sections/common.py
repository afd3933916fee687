"""The sections' shared pieces: the section list, helpers for rows and plots."""
from __future__ import annotations

import math
from collections import defaultdict



from ..render import Plots


SECTIONS = [
    ("verdict", "The verdict: which strategy wins, by how much, and why"),
    ("correctness", "Correctness"),
    ("wins", "Which strategy wins where, point by point"),
    ("timings", "From scratch, with a built list, amortised per MD step"),
    ("changes", "Before and after"),
    ("thesis", "The thesis's measurements, repeated here"),
    ("cpu_gpu", "CPU (numba) against GPU"),
    ("parity", "Parity-plane traverser: the MarDyn cell processors"),
    ("precision", "Precision modes"),
    ("bodies", "Heavier pair bodies: types and charges"),
    ("ewald", "Ewald's reciprocal part"),
    ("mc", "Monte-Carlo moves in reciprocal space"),
    ("molecules", "Rigid molecules: the traversals' order beside the points'"),
    ("drift", "Energy drift in NVE, per precision"),
    ("claims", "The source documents' claims"),
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


CHECKS = ("Forces, energy, virial and pair count of every strategy are compared with a float64 CPU reference "
          "(numba; direct and cell-list, checked against each other); a cell passes when every error is within "
          "its tolerance from an error model of coordinate rounding and accumulation length. ")
GPU_TIMING = ("Device phases are timed with CUDA events after warm-up, each sample after an L2 flush, as medians with "
              "min, max and spread; compute = build + force + reduce (no transfers), the device-resident work of an MD "
              "step. Device time is that phase replayed as a CUDA graph (GPU strategies) or the host time (CPU "
              "strategies). ")
CPU_TIMING = ("The CPU strategies (numba) are timed on the host clock after warm-up, as medians with min, max and "
              "spread; compute = build + force + reduce. ")
COUNTS = ("GFLOP/s use AutoPas's counts (8 per distance check, 15 per interaction without Newton3, 18 with); "
          "effective bandwidth counts positions in and forces out. Times compare within one run on one machine.")
METHOD = CHECKS + GPU_TIMING + COUNTS  # results with GPU points; method_text() picks


def method_text(gpu: bool) -> str:
    """The method paragraph: with the GPU timing where the results hold GPU points, else the CPU's."""
    return CHECKS + (GPU_TIMING if gpu else CPU_TIMING) + COUNTS


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


def loglog_axes(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Log scales on both axes, a grid, a small legend and the title of a time-against-work figure."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(title, fontsize=9)


def word_bytes(precision: str) -> tuple[int, int]:
    """Bytes of the compute and the accumulation type of a precision mode (8 and 8 for one unknown)."""
    import numpy as np

    from mdcore import MODES

    m = MODES.get(precision)
    return (np.dtype(m.compute).itemsize, np.dtype(m.accumulate).itemsize) if m else (8, 8)


def _fmt(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


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
