"""Monte-Carlo moves in Ewald's reciprocal space (`python -m harness mc`): the time per trial move of each
reciprocal strategy, in a batch and in the Metropolis loop, against the work of a move (moved atoms x
k-vectors), with the special-function units' bound of a sincos per (atom, k) and the DRAM bound of
reading S and A once per move drawn."""
from __future__ import annotations

from collections import defaultdict

from ..render import Plots, Section
from .common import _fmt, _style, loglog_axes, word_bytes


def moved_atoms(doc: dict) -> float:
    """Atoms a move computes the phases of, on average: the charged ones where the strategy sends only
    those (the uncharged are left out), every atom of the molecule otherwise."""
    only = (doc.get("launch") or {}).get("charged", "only") == "only"
    atoms = doc["atoms"] - (doc.get("uncharged") or 0 if only else 0)
    return atoms / max(doc["molecules"], 1)


def bounds_us(doc: dict) -> tuple[float | None, float | None]:
    """Per move: the SFU bound of a sincos (two SFU operations, 16 per SM and clock) per moved atom and k
    for the old and the new position, in float only; the DRAM bound of reading S (two accumulation words)
    and A (one compute word) for every k once. None where the result names no GPU."""
    dev = doc.get("device") or {}
    if not dev.get("gpu") or not dev.get("sms") or not dev.get("sm_clock_mhz"):
        return None, None
    k = doc["kvectors"]
    sfu = None
    if doc["precision"] == "fp32":
        sfu = 1e6 * 2 * 2 * moved_atoms(doc) * k / (16.0 * dev["sms"] * dev["sm_clock_mhz"] * 1e6)
    real, acc = word_bytes(doc["precision"])
    dram = 1e6 * k * (2 * acc + real) / (dev["peak_dram_gbs"] * 1e9) if dev.get("peak_dram_gbs") else None
    return sfu, dram


def mc(sec: Section, plots: Plots, docs: list[dict]) -> None:
    docs = [d for d in docs if d.get("batch_us_per_move") and d.get("kvectors")]
    if not docs:
        return sec.empty("Run `python -m harness mc --system water --kspace NAME --json F.json` for each reciprocal "
                         "strategy (`make results` runs them: the mc-* stages) and give the JSON to the report.")
    sec.text("The energy change of trial moves of one molecule in Ewald's reciprocal space (the GOMC report's "
             "kernel): a batch of independent moves from one state, and the Metropolis loop, each move's "
             "ΔE, decision and S update where the strategy runs (on the GPU, no host round trip). Times per "
             "move; `check` is the largest relative error "
             "of the ΔE (and the loop's final S) against full float64 recomputations. The bounds are per move: "
             "a sincos (two special-function operations) per moved atom and k for the old and the new "
             "position, in float; S and A read once from DRAM (they fit in the L2, so it marks how far a move "
             "is from streaming them, not a limit).")
    table = []
    for d in sorted(docs, key=lambda d: (d.get("input", ""), d["precision"], d["batch_us_per_move"])):
        sfu, dram = bounds_us(d)
        worst = max((c.get("error", 0.0) for c in d.get("check") or []), default=None)
        loop = d.get("loop", "block") + (f" ({d['loop_blocks']} blocks)" if (d.get("loop_blocks") or 1) > 1 else "")
        table.append([d.get("input", ""), f"{moved_atoms(d):.2g}", f"{d['kvectors']:,}", d["kspace"], d["precision"],
                      (d.get("launch") or {}).get("charged", ""), _fmt(d["batch_us_per_move"], 3),
                      _fmt(d.get("loop_us_per_move"), 3), loop,
                      f"{100.0 * d['acceptance']:.0f} %" if d.get("acceptance") is not None else "",
                      _fmt(sfu, 2), _fmt(dram, 2), f"{worst:.1e}" if worst is not None else ""])
    sec.table(["system", "atoms a move", "k-vectors", "strategy", "precision", "charged", "batch µs/move",
               "loop µs/move", "loop", "accepted", "SFU bound µs", "DRAM bound µs", "check"], table)
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    lines = defaultdict(list)
    sfus, drams = [], defaultdict(list)
    for d in docs:
        work = moved_atoms(d) * d["kvectors"]
        key = (d["kspace"], d["precision"], (d.get("launch") or {}).get("charged", "only"))
        lines[key].append((work, d["batch_us_per_move"], d.get("loop_us_per_move")))
        sfu, dram = bounds_us(d)
        if sfu:
            sfus.append((work, sfu))
        if dram:
            drams[d["precision"]].append((work, dram))
    for i, (key, pts) in enumerate(sorted(lines.items())):
        pts.sort()
        style = _style(i)
        label = f"{key[0]} {key[1]}" + (" charged=all" if key[2] == "all" else "")
        ax.plot([a for a, _, _ in pts], [b for _, b, _ in pts], label=f"{label}, batch", **style)
        loop = [(a, c) for a, _, c in pts if c]
        if loop:
            ax.plot([a for a, _ in loop], [c for _, c in loop], color=style["color"], marker="x", ls="none",
                    label=f"{label}, loop")
    for pts, fmt, label in [(sfus, "k--", "SFU bound, fp32")] + [(v, "k:", f"DRAM bound, {p}") for p, v in
                                                                 sorted(drams.items())]:
        if pts:
            pts = sorted(set(pts))
            ax.plot([a for a, _ in pts], [b for _, b in pts], fmt, lw=1, marker="", label=label)
    loglog_axes(ax, "moved atoms x k-vectors (one move)", "µs per move",
                "Monte-Carlo moves in reciprocal space: time per move")
    sec.image(plots.save(fig, "mc-moves"), "time per trial move against moved atoms x k-vectors")
