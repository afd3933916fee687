"""The sections that answer first: the verdict, correctness, wins, the three timing columns, before and after."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd

from mdcore import PRECISIONS, InputError

from .. import verdict as V
from ..render import Plots, Section
from .common import _device_ms, _fmt, _ok


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
    from ...compare import compare_docs, point_key

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
