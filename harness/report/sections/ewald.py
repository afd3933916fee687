"""Ewald's reciprocal part (`python -m harness ewald`): the kspace strategies' times against the number of
(charge, k) pairs, the special-function units' bound of a sincos per pair and the DRAM bound drawn,
OpenMM's Ewald beside."""
from __future__ import annotations

from collections import defaultdict

from ..render import Plots, Section
from .common import _fmt, _style, loglog_axes, word_bytes


def dram_floor_ms(r: dict, device: dict) -> float | None:
    """The DRAM bound of one evaluation: each charge's position and charge read by both passes and its
    force written; S written and read, A read, the weights written and read, once per k-vector (half
    space). None where the result names no GPU or a CPU strategy."""
    if r.get("backend") != "cuda" or not device.get("peak_dram_gbs"):
        return None
    real, acc = word_bytes(r["precision"])
    n, k = r["n"], r["kvectors"]
    nbytes = n * (2 * 4 * real + 3 * acc) + k * (2 * 2 * acc + real + 2 * 2 * real)
    return 1e3 * nbytes / (device["peak_dram_gbs"] * 1e9)


def ewald(sec: Section, plots: Plots, docs: list[dict]) -> None:
    rows = [dict(r, dram_floor_ms=dram_floor_ms(r, d.get("device") or {}))
            for d in docs for r in d["rows"] if r.get("status") == "ok"]
    if not rows:
        return sec.empty("Run `python -m harness ewald --peers openmm` (the reciprocal strategies on 10,000 and "
                         "100,000 charges, OpenMM's Ewald beside).")
    sec.text("Structure factors, energy and forces of Ewald's reciprocal part on N charges at 100 per nm³ with "
             "OpenMM's α and kmax for the tolerance; CUDA events between the kernels, the median of the repeats "
             "(OpenMM: the wall time of its reciprocal force group's getState). The fastest of each size and "
             "precision first; the SFU bound is a sincos (two special-function operations) per (charge, k) "
             "and pass in float; the DRAM bound moves each charge's position twice and its force once, and "
             "S, A and the weights once per k-vector.")
    by = defaultdict(list)
    for r in rows:
        by[(r["n"], r["precision"])].append(r)
    table = []
    for (n, p), rs in sorted(by.items()):
        rs.sort(key=lambda r: r["total_ms"])
        best = rs[0]["total_ms"]
        for r in rs:
            table.append([f"{n:,}", p, f"{r['kvectors']:,}", r["strategy"], _fmt(r["total_ms"], 4),
                          _fmt(r.get("structure_ms"), 3), _fmt(r.get("forces_ms"), 3),
                          f"{r['total_ms'] / best:.2f}x", _fmt(r.get("sfu_floor_ms"), 3),
                          _fmt(r.get("dram_floor_ms"), 2),
                          f"{r['energy_error']:.1e}" if isinstance(r.get("energy_error"), float) else ""])
    sec.table(["N", "precision", "k-vectors", "strategy", "total ms", "structure ms", "forces ms", "vs fastest",
               "SFU bound ms", "DRAM bound ms", "energy vs fp64"], table)
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    lines = defaultdict(list)
    floor, dram = [], defaultdict(set)
    for r in rows:
        pairs = r["n"] * r["kvectors"]
        lines[(r["strategy"], r["precision"])].append((pairs, r["total_ms"]))
        if r.get("sfu_floor_ms"):
            floor.append((pairs, r["sfu_floor_ms"]))
        if r.get("dram_floor_ms"):
            dram[r["precision"]].add((pairs, r["dram_floor_ms"]))
    for i, (key, pts) in enumerate(sorted(lines.items())):
        pts.sort()
        ax.plot([a for a, _ in pts], [b for _, b in pts], label=f"{key[0]} {key[1]}", **_style(i))
    if floor:
        floor = sorted(set(floor))
        ax.plot([a for a, _ in floor], [b for _, b in floor], "k--", lw=1, label="SFU bound, a sincos per pair (fp32)")
    for p, pts in sorted(dram.items()):
        pts = sorted(pts)
        ax.plot([a for a, _ in pts], [b for _, b in pts], "k:", lw=1, label=f"DRAM bound ({p})")
    loglog_axes(ax, "charges x k-vectors", "ms", "Ewald's reciprocal part: time against (charge, k) pairs")
    sec.image(plots.save(fig, "ewald-reciprocal"), "time of the reciprocal part against charges x k-vectors")
