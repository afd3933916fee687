"""Heavier pair bodies: does the ranking of strategies change from single-type Lennard-Jones to typed
particles and charges? (`make bench SUITE=bodies`)"""
from __future__ import annotations

from collections import defaultdict

from ..render import Plots, Section
from .common import _all_outputs, _device_ms, _fmt, _ok, _style, _strategy_family

# the pair bodies from lightest to heaviest: the scenario, and what its pair does
BODIES = (("lj_liquid", "LJ"), ("typed_lj", "LJ, 2 types"), ("typed_lj:types=8", "LJ, 8 types"),
          ("typed_lj:types=64", "LJ, 64 types"), ("kob_andersen", "Kob-Andersen"),
          ("charged_lj", "LJ + reaction field"), ("charged_lj_ewald", "LJ + Ewald real space"))


def _ms(r: dict) -> float:
    """A list strategy's force with its list built (what an MD step costs between rebuilds), else
    the device time of a whole evaluation."""
    return r.get("with_list_graph_ms") or r.get("with_list_ms") or _device_ms(r)


def bodies(sec: Section, plots: Plots, bench: list[dict]) -> None:
    order = [s for s, _ in BODIES]
    rows = [r for r in _all_outputs(_ok(bench)) if r["scenario"] in order and r["precision"] == "fp32"
            and r.get("pairs")]
    sizes = defaultdict(set)
    for r in rows:
        sizes[r["n"]].add(r["scenario"])
    n = max((k for k, v in sizes.items() if len(v) >= 2), default=None)
    if n is None:
        return sec.empty("Run `make bench SUITE=bodies` (the GPU's cell and list strategies on each pair body at 1M).")
    ps = defaultdict(dict)  # strategy -> scenario -> picoseconds per interacting pair
    fam = {}
    for r in rows:
        if r["n"] != n:
            continue
        t = _ms(r) * 1e9 / r["pairs"]
        if r["scenario"] not in ps[r["strategy"]] or t < ps[r["strategy"]][r["scenario"]]:
            ps[r["strategy"]][r["scenario"]] = t
        fam[r["strategy"]] = _strategy_family(r)
    present = [s for s in order if any(s in v for v in ps.values())]
    names = dict(BODIES)
    ranks = {s: sorted((k for k in ps if s in ps[k]), key=lambda k: ps[k][s]) for s in present}
    sec.text(f"Time per interacting pair (picoseconds; a list strategy's force with its list built, the others' whole "
             f"evaluation), fp32, N = {n:,}, all outputs; rank in brackets. The pairs are the same in the LJ and "
             f"typed columns (the same positions and cutoff); Kob-Andersen is denser (density 1.2).")
    table = []
    for k in sorted(ps, key=lambda k: ps[k].get(present[0], float("inf"))):
        table.append([k, *[f"{_fmt(ps[k][s], 3)} ({ranks[s].index(k) + 1})" if s in ps[k] else "" for s in present]])
    sec.table(["strategy", *[names[s] for s in present]], table)
    first = ranks[present[0]]
    swaps = []  # (column, the strategy now ahead, the one it overtook)
    for s in present[1:]:
        for a in ranks[s]:
            for b in ranks[s][ranks[s].index(a) + 1:]:
                if a in first and b in first and first.index(a) > first.index(b):
                    swaps.append(f"{names[s]}: {a} ahead of {b}")
    if swaps:
        sec.text(f"Against the {names[present[0]]} column the ranking changes; " + "; ".join(swaps) + ".")
    else:
        sec.text("The ranking is the same in every column: a heavier pair body slows every strategy, none overtakes.")
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    for i, k in enumerate(sorted(ps, key=lambda k: (fam[k], k))):
        xs = [j for j, s in enumerate(present) if s in ps[k]]
        ax.plot(xs, [ps[k][present[j]] for j in xs], label=k, **_style(i))
    ax.set_xticks(range(len(present)), [names[s] for s in present], rotation=20, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("ps per interacting pair")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"pair bodies from light to heavy, fp32, N = {n:,}: lines that cross change rank", fontsize=9)
    sec.image(plots.save(fig, "pair-bodies"), "time per pair against the pair body, one line per strategy")
