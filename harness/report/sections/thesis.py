"""The sections that repeat the source documents' measurements: the thesis's figures, CPU against GPU, the MarDyn processors, precision."""
from __future__ import annotations

import math
from collections import defaultdict


from mdcore import PRECISIONS

from ..render import Plots, Section
from .common import NOISE_NOTE, THESIS, _all_outputs, _device_ms, _errorbar_line, _family, _fmt, _fp32_first, _ok, _param, _range, _scaling_plot, _style


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
