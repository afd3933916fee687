"""Rigid molecules: the molecule traversals' ranking (`harness bench --scenario spce_water ...`) beside the
same traversals' ranking on points, and the molecules' NVE drift per precision (`md --nve-report` on
molecules). Does a heavy pair body (every site of one molecule against every site of the other) change
the order the point benchmarks give?"""
from __future__ import annotations

from collections import defaultdict

from ..render import Section
from .common import _all_outputs, _device_ms, _fmt, _ok


PORT = ("parity_thread_csr", "parity_block_csr", "parity_warpblock_twopass_atomic", "parity_warpblock_shared_atomic")
TWOPASS, SHARED = PORT[2], PORT[3]


def _point_order(bench: list[dict], names: set[str]) -> tuple[list[str], str]:
    """The traversals of `names` measured on points, fastest first, at the LJ liquid's largest size where
    at least two of them ran in fp32 (else any scenario's), and where that is."""
    times, where = _point_times(bench, names)
    return sorted(times, key=times.get), where


def _with_list_ms(r: dict) -> float:
    """A point row's time as the molecule bench measures its traversals: a list strategy's evaluation over
    its list already built (with_list), everything else's whole evaluation."""
    return r.get("with_list_graph_ms") or r.get("with_list_ms") or _device_ms(r)


def _point_times(bench: list[dict], names: set[str]) -> tuple[dict, str]:
    """_point_order's point: the traversals' milliseconds there (_with_list_ms), and where that is."""
    rows = [r for r in _all_outputs(_ok(bench)) if r["strategy"] in names and r.get("precision") == "fp32"]
    by = defaultdict(dict)
    for r in rows:
        key = (r["scenario"] == "lj_liquid", r["n"], r["scenario"])
        t = _with_list_ms(r)
        if r["strategy"] not in by[key] or t < by[key][r["strategy"]]:
            by[key][r["strategy"]] = t
    keys = [k for k, v in by.items() if len(v) >= 2]
    if not keys:
        return {}, ""
    best = max(keys)
    return by[best], f"{best[2]} N = {best[1]:,}"


def _port(groups: dict, bench: list[dict]) -> str:
    """The seed's question of the ls1-MarDyn port's processors (PORT): their order on points and on each
    molecule system, and the two-pass form's time over the shared form's (two-pass computes every pair body
    twice, shared once and commits B's side from shared memory)."""
    times, where = _point_times(bench, set(PORT))
    order = sorted(times, key=times.get)
    ratio = lambda t: (f"; two-pass over shared {t[TWOPASS] / t[SHARED]:.2f}x"  # noqa: E731
                       if TWOPASS in t and SHARED in t and t[SHARED] > 0 else "")
    lines = []
    for (case, p), rs in sorted(groups.items()):
        mol = {r["strategy"]: r["compute_ms"] for r in rs if r["strategy"] in PORT}
        if len(mol) < 2:
            continue
        here = sorted(mol, key=mol.get)
        same = [x for x in order if x in mol] == [x for x in here if x in times]
        verdict = "" if len(set(order) & set(mol)) < 2 else (" (their order on points)" if same else
                                                               " (not their order on points)")
        lines.append(f"{case} {p}: " + ", ".join(here) + verdict + ratio(mol) + ".")
    if not lines:
        return ""
    head = "The ls1-MarDyn port's processors on the heavy molecule body: "
    if order:
        head += f"on points ({where}, fp32) they rank " + ", ".join(order) + ratio(times) + ". On molecules, "
    return head + " ".join(lines)


def molecules(sec: Section, docs: list[dict], bench: list[dict], nve: list[dict]) -> None:
    rows = [dict(r, _gpu=d.get("device", {}).get("gpu") or "CPU") for d in docs for r in d.get("rows", [])]
    ok = [r for r in rows if r.get("status") == "ok" and isinstance(r.get("compute_ms"), (int, float))]
    if not ok and not nve:
        return sec.empty("Run `python -m harness bench --scenario spce_water,stockmayer,two_centre_lj_quadrupole "
                         "--n small --precision fp32,mixed,fp64` and `python -m harness md --scenario spce_water "
                         "--nve-report ...`, and give their JSON to the report.")
    commits = sorted({str(d.get("device", {}).get("commit")) for d in docs + nve
                      if isinstance(d.get("device"), dict) and d["device"].get("commit")})
    if commits:  # a results folder may hold molecule runs of another commit than its other results
        sec.text("Measured at commit " + ", ".join(commits) + ".")
    if ok:
        sec.text("Time per evaluation of each molecule traversal (ms; a GPU traversal's kernels by CUDA events, a CPU "
                 "traversal's whole evaluation by the host clock) and site pairs per second; rank in brackets, per "
                 "system and precision. 'body': the GPU traversals' pair body, unrolled for a system of one component "
                 "of Lennard-Jones centres and charges (NL+NQ of them) or the general loops; every GPU traversal of a "
                 "system takes the same one.")
        groups = defaultdict(list)
        for r in ok:
            groups[(r["scenario"], r["precision"])].append(r)
        table = []
        for (case, p), rs in sorted(groups.items()):
            rs.sort(key=lambda r: r["compute_ms"])
            for k, r in enumerate(rs):
                table.append([case, p, f"{r['strategy']} ({k + 1})", r.get("backend", ""), r.get("body", ""),
                              _fmt(r["compute_ms"]), _fmt(r.get("site_pairs_per_s"), 3), _fmt(r.get("molecules"))])
        sec.table(["system", "precision", "traversal (rank)", "backend", "body", "ms", "site pairs/s", "molecules"],
                  table)
        names = {r["strategy"] for r in ok}
        order, where = _point_order(bench, names)
        lines = []
        for (case, p), rs in sorted(groups.items()):
            mol = [r for r in rs if r["strategy"] in order]
            if len(mol) < 2:
                continue
            pts = [s for s in order if s in {r["strategy"] for r in mol}]
            swaps, ties = [], []
            for i, a in enumerate(mol):
                for b in mol[i + 1:]:
                    if pts.index(a["strategy"]) > pts.index(b["strategy"]):  # a ahead here, behind on points
                        clear = (a.get("compute_q3_ms") or a["compute_ms"]) < (b.get("compute_q1_ms") or b["compute_ms"])
                        (swaps if clear else ties).append(f"{a['strategy']} ahead of {b['strategy']}")
            what = ("the same order as on points" if not swaps else "the order changes from points: " + ", ".join(swaps))
            if ties:
                what += f" ({', '.join(ties)} within their interquartile ranges: a tie)"
            lines.append(f"{case} {p}: {what}.")
        port = _port(groups, bench)
        if port:
            sec.text(port)
        if order:
            sec.text(f"On points ({where}, fp32; the lists already built, as the molecule bench times them) the "
                     "traversals that also take molecules rank " + ", ".join(order)
                     + ". " + (" ".join(lines) if lines else "No system ran two of them."))
        else:
            sec.text("No point benchmark in the inputs measured two of these traversals: give a bench result of the "
                     "points (e.g. the default suite) to compare the orders.")
    runs = [d for d in nve if d.get("rows")]
    if runs:
        sec.text("NVE of rigid molecules from one start per system (`md --nve-report`): drift of the total energy per "
                 "molecule per time unit of the components file, and the largest deviation from the start.")
        table = []
        for d in runs:
            for r in d["rows"]:
                if r.get("status") == "ok":
                    table.append([d.get("system", ""), d.get("molecules", ""), r["strategy"], r["precision"],
                                  f"{r['drift']:+.2e}", f"{r['max_deviation']:.2e}", _fmt(r.get("ms_per_step"), 3)])
                else:
                    table.append([d.get("system", ""), d.get("molecules", ""), r["strategy"], r["precision"],
                                  r.get("status", ""), r.get("detail", ""), ""])
        sec.table(["system", "molecules", "traversal", "precision", "drift", "max |E-E0|", "ms/step"], table,
                  as_text=True)
