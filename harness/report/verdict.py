"""The report's answer, computed from the results: per device, scenario family, size range,
precision, outputs and time measured, which strategy wins, by how much over the runner-up, with
the noise of both, and one line of why taken from the data.

Candidates at a point (one result file, i.e. one run on one device; scenario, N, precision,
outputs, potential) are strategies (a strategy timed with several launch parameters is
represented by its fastest label). Rows of different runs are never compared with each other. Two times
are measured where the rows have them:

  per MD step   amortised_ms: a recorded NVE trajectory replayed, list upkeep and rebuilds
                included (the cost an MD code pays), where every candidate at the point has it
  from scratch  the device time of build + force + reduce (graph replay on the GPU, host time
                on the CPU)

The margin is runner-up / winner. It is a tie when it is inside the noise band: 5%, or the
wider of the two rows' relative interquartile ranges (from scratch) or half their relative
min..max range (per MD step), whichever is largest (harness.claims uses the same 5% floor).
"""
from __future__ import annotations

import math

import pandas as pd

from ..claims import TIE  # the narrowest noise band, as the claims' verdicts use it

SIZES = ((0, 20_000, "< 20k"), (20_000, 300_000, "20k-300k"), (300_000, math.inf, ">= 300k"))
STEP, SCRATCH = "per MD step", "from scratch"
ISSUE_BOUND, DRAM_BOUND = 60.0, 60.0  # % of issue slots / of DRAM bandwidth that name a kernel's bound


def size_range(n: int) -> str:
    return next(label for lo, hi, label in SIZES if lo <= n < hi)


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _scratch(r: dict) -> tuple[float | None, float]:
    """(median ms, noise band) of the from-scratch device time."""
    if r.get("graph_ms"):
        t, q1, q3 = _num(r.get("graph_ms")), _num(r.get("graph_q1_ms")), _num(r.get("graph_q3_ms"))
    else:
        t, q1, q3 = _num(r.get("compute_ms")), _num(r.get("compute_q1_ms")), _num(r.get("compute_q3_ms"))
    band = TIE
    if t and q1 is not None and q3 is not None:
        band = max(TIE, (q3 - q1) / t)
    return t, band


def _step(r: dict) -> tuple[float | None, float]:
    t = _num(r.get("amortised_ms"))
    spread = _num(r.get("amortised_spread"))
    return t, max(TIE, 0.5 * spread) if spread is not None else TIE


def candidates(bench: list[dict]) -> pd.DataFrame:
    """One row per (point, strategy, time measured): the strategy's fastest label there."""
    recs = []
    for r in bench:
        if r.get("status") != "ok" or r.get("backend") == "peer" or r.get("compute_ms") is None:
            continue
        dev = r.get("_device") or {}
        base = {"device": dev.get("gpu") or f"CPU {dev.get('cpu', '?')}", "scenario": r["scenario"],
                "family": r["scenario"].split(":")[0], "n": int(r["n"]), "precision": r["precision"],
                "outputs": r.get("outputs", "all"), "potential": r.get("potential", ""),
                "strategy": r.get("name") or r["strategy"].split("[")[0], "label": r["strategy"],
                "backend": r.get("backend"), "run": r.get("_file", 0),
                "noisy": bool(r.get("noisy") or r.get("host_busy"))}
        # distance checks per interaction of what each time includes: the build's and the force's
        # from scratch; per MD step the force phase's over the list where there is one
        checks = {SCRATCH: _num(r.get("checks_per_interaction")),
                  STEP: _num(r.get("list_checks_per_interaction")) or _num(r.get("checks_per_interaction"))}
        for metric, fn in ((STEP, _step), (SCRATCH, _scratch)):
            t, band = fn(r)
            if t:
                recs.append({**base, "time": metric, "ms": t, "band": band, "checks": checks[metric]})
    if not recs:
        return pd.DataFrame()
    df = pd.DataFrame(recs)
    point = ["device", "run", "scenario", "n", "precision", "outputs", "potential", "time"]
    df = df.sort_values("ms").groupby(point + ["strategy"], sort=False, as_index=False).first()
    # per MD step only where every strategy timed at the point has it: a ranking of some of them
    # would name a winner the from-scratch ranking contradicts
    everyone = df[df["time"] == SCRATCH].groupby(point[:-1])["strategy"].nunique()
    stepped = df[df["time"] == STEP].groupby(point[:-1])["strategy"].nunique()
    complete = (stepped.reindex(everyone.index) == everyone).rename("complete")
    df = df.join(complete, on=point[:-1])
    return df[(df["time"] == SCRATCH) | df["complete"].fillna(False).astype(bool)].drop(columns="complete")


def points(bench: list[dict]) -> pd.DataFrame:
    """Per point and time measured: winner, runner-up, margin, bands, tie."""
    df = candidates(bench)
    if df.empty:
        return df
    point = ["device", "run", "family", "scenario", "n", "precision", "outputs", "potential", "time"]
    out = []
    for key, g in df.groupby(point, sort=True):
        g = g.sort_values("ms")
        if len(g) < 2:
            continue
        w, r = g.iloc[0], g.iloc[1]
        margin = r["ms"] / w["ms"]
        band = max(w["band"], r["band"])
        out.append({**dict(zip(point, key)), "winner": w["strategy"], "winner_label": w["label"], "winner_ms": w["ms"],
                    "winner_band": w["band"], "runner_up": r["strategy"], "runner_up_ms": r["ms"],
                    "runner_up_band": r["band"], "margin": margin, "tie": margin <= 1.0 + band,
                    "winner_checks": w["checks"], "runner_up_checks": r["checks"], "candidates": len(g),
                    "strategies": frozenset(g["strategy"]), "noisy": bool(w["noisy"] or r["noisy"])})
    res = pd.DataFrame(out)
    if not res.empty:
        res["sizes"] = res["n"].map(size_range)
    return res


def _bound(k: dict, sms: int | None = None) -> str:
    """What bounds a kernel, from its ncu summary k; sms (the profile's device) names a grid too
    small to give every SM a block, whatever its stalls say."""
    issue, dram = _num(k.get("issue_active_pct")), _num(k.get("dram_throughput_pct"))
    stalls = k.get("top_stalls") or []
    occ = _num(k.get("achieved_occupancy_pct"))
    tail = f", occupancy {occ:.0f}%" if occ is not None else ""
    grid, block = _num(k.get("grid_size")), _num(k.get("block_size"))
    if sms and grid is not None and grid < sms:
        threads = f" of {block:.0f} threads" if block else ""
        return (f"parallelism-bound (a grid of {grid:.0f} blocks{threads} for {sms} SMs, {issue or 0:.0f}% of issue "
                f"slots{tail})")
    if issue is not None and issue >= ISSUE_BOUND:
        return f"issue-bound ({issue:.0f}% of issue slots{tail})"
    if dram is not None and dram >= DRAM_BOUND:
        return f"DRAM-bound ({dram:.0f}% of bandwidth{tail})"
    top = stalls[0][0] if stalls else "?"
    return f"latency-bound ({top.replace('_', '-')} stalls, {issue or 0:.0f}% of issue slots{tail})"


def _sms(profile: dict) -> int | None:
    """The SM count of the device a profile ran on (None where it does not say)."""
    return (profile.get("device") or {}).get("sms")


def _profile_for(profiles: list[dict], strategy: str, family: str, n: int, outputs: str,
                 within: float = 4.0) -> dict | None:
    """The ncu summary of this strategy nearest in N on this scenario family (the same outputs
    preferred), None where it was not profiled or only more than `within` times away in N."""
    best = None
    for d in profiles:
        if d.get("strategy") != strategy or str(d.get("scenario", "")).split(":")[0] != family:
            continue
        dn = d.get("n") or 0
        score = (abs(math.log(max(dn, 1) / max(n, 1))), d.get("outputs", "all") != outputs)
        if best is None or score < best[0]:
            best = (score, d)
    if best is None or best[0][0] > math.log(within):  # too far away in N: not this point
        return None
    return best[1]


def why(p: dict, profiles: list[dict]) -> str:
    """One line from the data: checks per interaction, and each one's bound from ncu where profiled."""
    parts = []
    wc, rc = _num(p.get("winner_checks")), _num(p.get("runner_up_checks"))
    if wc and rc:
        parts.append(f"{wc:.2f} against {rc:.2f} distance checks per interaction")
    elif wc or rc:  # one side counts its checks (the cluster pairs do not)
        who, c = (p["winner"], wc) if wc else (p["runner_up"], rc)
        parts.append(f"{who} {c:.2f} distance checks per interaction")
    for role in ("winner", "runner_up"):
        d = _profile_for(profiles, p[role], p["family"], int(p["n"]), p["outputs"])
        if d and d.get("ncu", {}).get("heaviest"):
            other = d.get("outputs", "all")
            note = f" (profiled with outputs={other})" if other != p["outputs"] else ""
            parts.append(f"{p[role]} {_bound(d['ncu']['heaviest'], _sms(d))}{note}")
    if not parts:
        return "no checks or ncu summary for these rows"
    return "; ".join(parts)


def _band_text(b: float) -> str:
    return f"±{100 * b:.0f}%"


def comparisons(g: pd.DataFrame) -> list[pd.DataFrame]:
    """A group's points split into comparisons: points are joined when they timed two strategies in
    common (so their rankings can contradict each other), and points of runs with other strategies
    (a sweep of one processor's launch parameters beside a run of the main strategies) stay apart,
    each with its own verdict row, rather than one run's winner being named over strategies it
    never met (table() orders them, the broadest first)."""
    idx = list(g.index)
    parent = {i: i for i in idx}

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a_pos, a in enumerate(idx):
        for b in idx[a_pos + 1:]:
            if len(g.at[a, "strategies"] & g.at[b, "strategies"]) >= 2:
                parent[root(a)] = root(b)
    parts: dict = {}
    for i in idx:
        parts.setdefault(root(i), []).append(i)
    return [g.loc[members] for members in parts.values()]


def table(bench: list[dict], profiles: list[dict]) -> pd.DataFrame:
    """The verdict: one row per device, family, size range, precision, outputs and time
    measured (and comparison, where runs at those points timed different strategies). The
    group's winner is the strategy first at most of its points; the margin is over the runner-up
    at those points (median, and range where several)."""
    pts = points(bench)
    if pts.empty:
        return pts
    keys = ["device", "family", "sizes", "precision", "outputs", "time"]
    rows = []
    for key, g in ((k, c) for k, grp in pts.groupby(keys, sort=True) for c in comparisons(grp)):
        wins = g["winner"].value_counts()
        top = wins.index[0]
        mine = g[g["winner"] == top]
        rep = mine.sort_values("n").iloc[-1]  # the largest point it wins: the why line's point
        ties = int(mine["tie"].sum())
        ms = mine["margin"]
        margin = f"{ms.median():.2f}x" + (f" ({ms.min():.2f}-{ms.max():.2f}x)" if len(mine) > 1 else "")
        if ties == len(mine):
            verdict = "tie"
        elif ties:
            verdict = f"wins ({ties} of {len(mine)} within noise)"
        else:
            verdict = "wins"
        ns = sorted(g["n"].unique())
        rows.append({
            "device": key[0], "scenario": key[1], "N": f"{ns[0]:,}" if len(ns) == 1 else f"{ns[0]:,}-{ns[-1]:,}",
            "sizes": key[2], "precision": key[3], "outputs": key[4], "time": key[5],
            "winner": top, "first at": f"{len(mine)} of {len(g)}",
            "compared": len(frozenset().union(*g["strategies"])),
            "runner-up": mine["runner_up"].value_counts().index[0], "margin": margin,
            "noise (winner / runner-up)": f"{_band_text(mine['winner_band'].max())} / "
                                          f"{_band_text(mine['runner_up_band'].max())}",
            "verdict": verdict, "ms (winner, largest N)": round(float(rep["winner_ms"]), 5),
            "why": why(rep.to_dict(), profiles), "_tie": verdict == "tie", "_n": int(ns[-1])})
    out = pd.DataFrame(rows)
    order = {label: i for i, (_, _, label) in enumerate(SIZES)}
    out["_size"] = out["sizes"].map(order)
    out = out.sort_values(["device", "scenario", "_size", "precision", "outputs", "time", "compared"],
                          ascending=[True] * 6 + [False], kind="stable").drop(columns="_size")
    return out.reset_index(drop=True)


def headline(v: pd.DataFrame) -> str:
    """One sentence over the verdict table: who wins the most groups, and how many are ties."""
    if v.empty:
        return "No two strategies were timed at the same point: no verdict."
    counts = v[~v["_tie"]]["winner"].value_counts()
    ties = int(v["_tie"].sum())
    lead = ", ".join(f"{s} {c}" for s, c in counts.items())
    devices = v["device"].nunique()
    return (f"{len(v)} verdicts ({devices} device{'s' if devices > 1 else ''}); groups won: {lead or 'none'}"
            + (f"; {ties} tie{'s' if ties != 1 else ''} (margin inside the noise)" if ties else "") + ".")


def devices_side_by_side(v: pd.DataFrame) -> pd.DataFrame | None:
    """With results from more than one device: the winner and margin of each group per device, in
    columns (pandas pivot_table)."""
    if v.empty or v["device"].nunique() < 2:
        return None
    cell = v.assign(answer=v["winner"] + " " + v["margin"].str.split(" ").str[0] + " (" + v["verdict"] + ")")
    return cell.pivot_table(index=["scenario", "sizes", "precision", "outputs", "time", "compared"], columns="device",
                            values="answer", aggfunc="first").reset_index()


def _negative_control(r: dict) -> bool:
    """A list strategy with its rebuild trigger switched off (launch rebuild=never) on a replayed
    trajectory: verify's negative control, which must fail."""
    lp = r.get("launch_params") or {}
    never = lp.get("rebuild") == "never" or "rebuild=never" in str(r.get("strategy", ""))
    return never and str(r.get("scenario", "")).endswith("@replay")  # on static positions it must pass


def correctness_line(verify: list[dict]) -> str:
    rows = [r for d in verify for r in d["rows"]]
    if not rows:
        return "Correctness: no verify results in this report (`make verify`)."
    controls = [r for r in rows if _negative_control(r)]
    s = pd.Series([r.get("status") for r in rows if not _negative_control(r)], dtype=object).value_counts()
    passed, failed, na = int(s.get("pass", 0)), int(s.get("FAIL", 0) + s.get("ERROR", 0)), int(s.get("n/a", 0))
    other = int(s.sum()) - passed - failed - na
    caught = sum(r.get("status") == "FAIL" for r in controls)
    missed = sum(r.get("status") == "pass" for r in controls)
    failed += missed  # a negative control that passes is a check that cannot fail
    text = f"Correctness: {passed} pass, {failed} fail, {na} n/a" + (f", {other} other" if other else "")
    if controls:
        text += (f"; negative controls (rebuild trigger off on a replayed trajectory): {caught} of {len(controls)} "
                 f"failed as they must" + (f", {missed} passed (counted as failures)" if missed else ""))
    return text + " (each cell against the float64 reference; details in the Correctness section)."
