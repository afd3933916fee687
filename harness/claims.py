"""`python -m harness claims`: the claims the source documents make, answered from results on disk.

Each claim names its source (SOURCES), the measurement that tests it, and a rule that turns the measurement
into a verdict: holds, does not hold, depends (and on what), or not measured (no results on disk
for it yet). Nothing is typed in: the figures and verdicts come from the bench, NVE and verify
JSON files found under the folders given (default reports/), newest result per point.

Timings compare the force phase with cells or lists built (`with_list_graph_ms`, graph replay),
at the same point (scenario, N, precision, outputs, potential). Two timings are a tie when they
differ by less than the noise band: 5%, or the larger of the two interquartile ranges relative to
their medians where that is wider.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mdcore import InputError

TIE = 0.05  # the narrowest noise band: timings within 5% are a tie
HOLDS, FAILS, DEPENDS, UNMEASURED = "holds", "does not hold", "depends", "not measured"


@dataclass
class Data:
    """Rows from the result files: bench rows (timings), nve rows (MD drift), verify rows
    (accuracy), each with the file it came from and that file's date."""
    bench: list[dict] = field(default_factory=list)
    nve: list[dict] = field(default_factory=list)
    verify: list[dict] = field(default_factory=list)
    mc: list[dict] = field(default_factory=list)  # harness mc results, one per file
    files: int = 0


def _rows_of(path: Path) -> tuple[str, list[dict], str]:
    """(kind, rows, date) of a result file; kind '' for files that are not results."""
    text = path.read_text()
    if path.suffix == ".jsonl":  # an interrupted bench: a header line, then one row per line
        lines = [json.loads(x) for x in text.splitlines() if x.strip()]
        head = lines[0] if lines and "rows" not in lines[0] and "strategy" not in lines[0] else {}
        rows = [r for r in lines if isinstance(r, dict) and "strategy" in r]
        return "bench", rows, str(head.get("meta", {}).get("date", ""))
    doc = json.loads(text)
    if isinstance(doc, dict) and doc.get("kind") == "mc" and "batch_us_per_move" in doc:
        return "mc", [doc], str((doc.get("meta") or {}).get("date", ""))
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        return "", [], ""
    rows = [r for r in doc["rows"] if isinstance(r, dict) and "strategy" in r]
    kind = doc.get("kind", "")
    if not kind and rows and "drift" in rows[0]:
        kind = "nve"
    date = str((doc.get("meta") or {}).get("date", ""))
    return kind, rows, date


def load(folders: list[Path]) -> Data:
    data = Data()
    for folder in folders:
        if not folder.exists():
            raise InputError(f"results folder {folder} does not exist")
        paths = [folder] if folder.is_file() else sorted(folder.rglob("*.json")) + sorted(folder.rglob("*.jsonl"))
        for path in paths:
            try:
                kind, rows, date = _rows_of(path)
            except (OSError, ValueError):
                continue  # not a result file (or not JSON): nothing to read
            if not rows:
                continue
            data.files += 1
            for r in rows:
                r = {**r, "_file": str(path), "_date": date}
                if kind == "mc":
                    data.mc.append(r)
                elif kind == "bench" and r.get("status") == "ok":
                    data.bench.append(r)
                elif kind == "nve" or (kind == "md" and "drift" in r):
                    if r.get("status") == "ok":
                        data.nve.append(r)
                elif kind == "verify":
                    data.verify.append(r)
    return data


# --- bench rows ------------------------------------------------------------------------------

def _name(r: dict) -> str:
    return r.get("name") or r["strategy"].split("[")[0]


def _point(r: dict) -> tuple:
    return (r.get("scenario"), r.get("n"), r.get("precision"), r.get("outputs"), r.get("potential"))


def _time(r: dict) -> float | None:
    for k in ("with_list_graph_ms", "with_list_ms", "compute_ms"):
        v = r.get(k)
        if isinstance(v, (int, float)) and v > 0 and math.isfinite(v):
            return float(v)
    return None


def _band(r: dict) -> float:
    t = _time(r)
    q1, q3 = r.get("with_list_graph_q1_ms"), r.get("with_list_graph_q3_ms")
    if t and isinstance(q1, (int, float)) and isinstance(q3, (int, float)):
        return max(TIE, (q3 - q1) / t)
    return TIE


@dataclass
class Pair:
    """One point timed both ways in one run: ratio = time of the claim's slower row / time of its
    faster row (above 1 + band: as the claim says)."""
    label: str
    ratio: float
    band: float
    files: tuple

    @property
    def outcome(self) -> int:
        """+1: faster as the claim says (beyond the band), -1: slower, 0: a tie."""
        if self.ratio > 1.0 + self.band:
            return 1
        if self.ratio < 1.0 / (1.0 + self.band):
            return -1
        return 0


def _launch(r: dict, ignore: tuple) -> str:
    return json.dumps({k: v for k, v in (r.get("launch_params") or {}).items() if k not in ignore}, sort_keys=True)


def _pairs(data: Data, a: Callable[[dict], bool], b: Callable[[dict], bool], label: Callable[[dict, dict], str],
           match: Callable[[dict], object] | None = None, ignore: tuple = (),
           point: Callable[[dict], tuple] = None) -> list[Pair]:
    """Points where a row of kind a (the claim's faster one) and one of kind b (its slower one)
    were timed in the same run (the same result file: same GPU, clocks and commit), at the same
    point, with match(row) equal (default: the strategy name) and the same launch parameters but
    those in `ignore` (point: what makes the point, default scenario, N, precision, outputs,
    potential). A point timed in several runs: the newest."""
    match = match or _name
    point = point or _point
    by_file: dict[str, list[dict]] = {}
    for r in data.bench:
        if _time(r) is not None:
            by_file.setdefault(r["_file"], []).append(r)
    best: dict[str, tuple[str, Pair]] = {}
    for f, rows in by_file.items():
        fast = [r for r in rows if a(r)]
        slow = [r for r in rows if b(r)]
        for ra in fast:
            for rb in slow:
                if ra is rb or point(ra) != point(rb) or match(ra) != match(rb):
                    continue
                if _launch(ra, ignore) != _launch(rb, ignore) and _name(ra) == _name(rb):
                    continue
                lab = label(ra, rb)
                pair = Pair(lab, _time(rb) / _time(ra), max(_band(ra), _band(rb)), (f,))
                if lab not in best or ra["_date"] >= best[lab][0]:
                    best[lab] = (ra["_date"], pair)
    return sorted((p for _, p in best.values()), key=lambda p: p.label)


def _n(r: dict) -> str:
    n = r.get("n")
    return f"N={n:,}" if isinstance(n, int) else "N=?"


def _where(r: dict) -> str:
    return f"{r.get('scenario')} {_n(r)} {r.get('precision')}"


def _layout(r: dict) -> str:
    return (r.get("launch_params") or {}).get("layout", "aos4")


def _ratio_list(pairs: list[Pair], limit: int = 8) -> str:
    shown = ", ".join(f"{p.label} {p.ratio:.2f}x" for p in pairs[:limit])
    return shown + (f" (+{len(pairs) - limit} more)" if len(pairs) > limit else "")


def _pair_verdict(pairs: list[Pair], majority_holds: bool = True) -> tuple[str, str]:
    """holds: faster as claimed at most points (more than half) and never slower; does not hold:
    never faster; depends: some of each (named)."""
    if not pairs:
        return UNMEASURED, "no point on disk was timed both ways"
    up = [p for p in pairs if p.outcome > 0]
    down = [p for p in pairs if p.outcome < 0]
    ties = len(pairs) - len(up) - len(down)
    counts = f"{len(up)} faster, {ties} tie, {len(down)} slower of {len(pairs)} points"
    if up and not down and (len(up) * 2 > len(pairs) or not majority_holds):
        return HOLDS, counts
    if not up:
        return FAILS, counts
    return DEPENDS, (f"{counts}; faster at {', '.join(p.label for p in up[:4])}"
                     + (f"; slower at {', '.join(p.label for p in down[:4])}" if down else ""))


@dataclass
class Claim:
    key: str
    seed: str  # a key of SOURCES
    text: str
    measure: str
    command: str
    judge: Callable[[Data], tuple[str, str, str, list]]  # -> verdict, why, measurement, evidence files


def _judge_pairs(a, b, label, match=None, ignore=()):
    def judge(data: Data):
        pairs = _pairs(data, a, b, label, match, ignore)
        verdict, why = _pair_verdict(pairs)
        return verdict, why, _ratio_list(pairs), sorted({f for p in pairs for f in p.files})
    return judge


def _at(ra: dict, rb: dict) -> str:
    return f"{_name(ra)} {_where(ra)}"


def _words(r: dict) -> bool:
    """The particles carry a type or charge (a force field's pair table: pair_table.py)."""
    return str(r.get("potential", "")).startswith("ff:")


def _layout_pairs(data: Data, fast: str, slow: str, words: bool = False) -> list[Pair]:
    """Points timed in layouts `fast` and `slow`; words: of typed or charged particles (else of
    particles without per-particle data)."""
    return _pairs(data, lambda r: _layout(r) == fast and _words(r) == words,
                  lambda r: _layout(r) == slow and _words(r) == words, _at, ignore=("layout",))


def _layout_pair(fast: str, slow: str):
    def judge(data: Data):
        pairs = _layout_pairs(data, fast, slow)
        verdict, why = _pair_verdict(pairs)
        return verdict, why, _ratio_list(pairs), sorted({f for p in pairs for f in p.files})
    return judge


def _soa_unnecessary(data: Data):
    pairs = _layout_pairs(data, "aos4", "soa")
    if not pairs:
        return UNMEASURED, "no point timed in both layouts", "", []
    gains = [p for p in pairs if p.outcome < 0]  # SoA faster than AoS beyond the band
    big = [p for p in gains if p.ratio < 1.0 / 1.25]
    files = sorted({f for p in pairs for f in p.files})
    counts = f"SoA faster at {len(gains)} of {len(pairs)} points"
    text = ", ".join(f"{p.label} {1.0 / p.ratio:.2f}x" for p in pairs[:8])
    if not gains:
        return HOLDS, counts, "SoA speed-up over float4: " + text, files
    if big or len(gains) * 2 > len(pairs):
        where = ", ".join(f"{p.label} ({1.0 / p.ratio:.2f}x)" for p in gains[:4])
        return DEPENDS if len(gains) * 2 <= len(pairs) else FAILS, f"{counts}: {where}", \
            "SoA speed-up over float4: " + text, files
    return HOLDS, f"{counts}, none by more than 1.25x", "SoA speed-up over float4: " + text, files


def _charges_in_float4(data: Data):
    """Charged or typed particles: the word packed into the Vec4's fourth component (aos4) against
    float3 positions with the words in an array of their own (aos3). Holds where packing wins
    nowhere beyond the noise band."""
    pairs = _layout_pairs(data, "aos3", "aos4", words=True)
    if not pairs:
        return UNMEASURED, "no typed or charged point timed in both layouts", "", []
    wins = [p for p in pairs if p.outcome < 0]  # float4 with the word faster beyond the band
    files = sorted({f for p in pairs for f in p.files})
    text = "float4-with-word / float3-plus-array time: " + ", ".join(
        f"{p.label} {1.0 / p.ratio:.2f}x" for p in pairs[:8]) + (f" (+{len(pairs) - 8} more)" if len(pairs) > 8 else "")
    counts = f"packing faster at {len(wins)} of {len(pairs)} points"
    if not wins:
        return HOLDS, counts, text, files
    where = ", ".join(f"{p.label} ({p.ratio:.2f}x)" for p in wins[:4])
    return (FAILS if len(wins) * 2 > len(pairs) else DEPENDS), f"{counts}: {where}", text, files


def _no_precision(r: dict) -> tuple:
    return (r.get("scenario"), r.get("n"), r.get("outputs"), r.get("potential"))


def _by_precision(data: Data, fast: str, slow: str) -> list[Pair]:
    return _pairs(data, lambda r: r.get("precision") == fast, lambda r: r.get("precision") == slow,
                  lambda ra, rb: f"{_name(ra)} {ra.get('scenario')} {_n(ra)}", point=_no_precision)


def _quantization(data: Data):
    """Fixed point against mixed precision (the claim's comparison) decides the verdict; the
    time against fp32 is shown beside it (the "2-16x faster" of integer operations)."""
    fixed = [r for r in data.bench if r.get("precision") == "fixed"]
    if not fixed:
        return UNMEASURED, "no result with precision `fixed` on disk", "", []
    pairs = _by_precision(data, "fixed", "mixed")
    verdict, why = _pair_verdict(pairs)
    vs32 = _by_precision(data, "fixed", "fp32")
    text = "mixed / fixed time: " + _ratio_list(pairs)
    if vs32:
        text += "; fp32 / fixed time: " + _ratio_list(vs32)
        why += f"; against fp32 fixed point is {min(p.ratio for p in vs32):.2f}-{max(p.ratio for p in vs32):.2f}x " \
               "as fast (the claim's 2-16x would be 2.00 and above)"
    return verdict, why, text, sorted({f for p in pairs + vs32 for f in p.files})


def _nve_by(data: Data) -> dict[tuple, dict]:
    """Per (strategy, precision, n): the longest NVE run on disk (the newest of equal length)."""
    out: dict[tuple, dict] = {}
    for r in data.nve:
        if not isinstance(r.get("drift"), (int, float)):
            continue
        key = (r["strategy"], r.get("precision"), r.get("n"))
        old = out.get(key)
        if old is None or (r.get("steps", 0), r["_date"]) >= (old.get("steps", 0), old["_date"]):
            out[key] = r
    return out


def _single_precision_md(data: Data):
    runs = _nve_by(data)
    f64 = {(s, n): r for (s, p, n), r in runs.items() if p == "fp64"}
    rows = [(r, f64[(s, n)]) for (s, p, n), r in runs.items() if p == "fp32" and (s, n) in f64]
    if not rows:
        return UNMEASURED, "no NVE run in both fp32 and fp64 on disk", "", []
    rows.sort(key=lambda x: (-x[0].get("steps", 0), x[0]["strategy"]))
    steps = rows[0][0].get("steps", 0)
    rows = [x for x in rows if x[0].get("steps", 0) == steps]
    floor = max(abs(b["drift"]) for _, b in rows)  # the double-precision runs' own drift: the noise floor
    worse = [a for a, _ in rows if abs(a["drift"]) > 10.0 * floor]
    tau = steps * rows[0][0].get("dt", 0.0)
    text = "; ".join(f"{a['strategy']} fp32 {a['drift']:+.1e} vs fp64 {b['drift']:+.1e}" for a, b in rows)
    text = f"{steps:,} steps ({tau:g} tau), {_n(rows[0][0])}, drift per particle per tau: " + text
    files = sorted({x["_file"] for a, b in rows for x in (a, b)})
    if not worse:
        return FAILS, (f"every fp32 drift is within 10x of the largest fp64 drift ({floor:.1e}): no accumulated "
                       "error shows over this run"), text, files
    if len(worse) == len(rows):
        return HOLDS, "every fp32 run drifts more than 10x the fp64 runs", text, files
    return DEPENDS, f"fp32 drifts beyond 10x fp64 for {', '.join(a['strategy'] for a in worse)}", text, files


def _mixed_tradeoff(data: Data):
    pairs64 = _by_precision(data, "mixed", "fp64")
    pairs32 = _by_precision(data, "fp32", "mixed")
    # accuracy: the same verify case (file, strategy, scenario, N, potential) in mixed and in fp32
    cases: dict[tuple, dict[str, dict]] = {}
    for r in data.verify:
        if r.get("status") == "pass" and isinstance(r.get("force_rms"), (int, float)):
            key = (r["_file"], r["strategy"], r.get("scenario"), r.get("n"), r.get("potential"))
            cases.setdefault(key, {})[r.get("precision")] = r
    f_ratios, e_ratios = [], []
    for c in cases.values():
        m, f = c.get("mixed"), c.get("fp32")
        if m is None or f is None:
            continue
        if f["force_rms"] > 0:
            f_ratios.append(m["force_rms"] / f["force_rms"])
        if isinstance(m.get("energy"), (int, float)) and isinstance(f.get("energy"), (int, float)) and f["energy"] > 0:
            e_ratios.append(m["energy"] / f["energy"])
    if not pairs64 or not f_ratios:
        return UNMEASURED, "needs mixed timed beside fp64, and verify cases run in fp32 and mixed", "", []

    def med(v):
        v = sorted(v)
        return v[len(v) // 2] if v else math.nan

    speed = med([p.ratio for p in pairs64])
    cost = med([p.ratio for p in pairs32]) if pairs32 else math.nan
    f_ratio, e_ratio = med(f_ratios), med(e_ratios)
    text = (f"mixed is {speed:.2f}x faster than fp64 and {cost:.2f}x slower than fp32 (median over "
            f"{len(pairs64)} points); error against the float64 reference, mixed / fp32 (median over {len(f_ratios)} "
            f"verify cases): forces {f_ratio:.2f}, energy {e_ratio:.2g}")
    faster = speed > 1.0 + TIE
    sums_better = e_ratio < 0.5
    forces_same = f_ratio > 0.5
    files = sorted({f for p in pairs64 + pairs32 for f in p.files})
    if faster and sums_better and not forces_same:
        return HOLDS, "faster than fp64, and more accurate than fp32", text, files
    if faster and sums_better:
        return DEPENDS, ("on the quantity: the sums (energy, virial) gain accuracy over fp32, the forces do not (float "
                         "compute bounds them); faster than fp64"), text, files
    if not faster:
        return FAILS, "mixed is not faster than fp64 here", text, files
    return FAILS, (f"faster than fp64, but its errors are fp32's (forces {f_ratio:.2f}x, energy {e_ratio:.2f}x of "
                   f"fp32's) at {cost:.2f}x fp32's time: float compute bounds the accuracy"), text, files


def _c08_inhomogeneous(data: Data):
    def ratio_at(scen_pick):
        pairs = _pairs(data, lambda r: _name(r) == "fullshell_thread_csr" and scen_pick(r),
                       lambda r: _name(r) in ("c08_thread_csr", "c08_warp_csr") and scen_pick(r),
                       lambda ra, rb: f"{ra.get('scenario')} {_n(ra)} {_name(rb)}", match=lambda r: 0)
        return pairs
    homo = ratio_at(lambda r: r.get("scenario") == "lj_liquid")
    inhomo = ratio_at(lambda r: str(r.get("scenario", "")).startswith("gaussian"))
    if not homo or not inhomo:
        return UNMEASURED, "needs c08 and the full shell timed on the liquid and on a Gaussian", "", []
    # one ratio per scenario: the c08 variant nearest the full shell (its best)
    best = {}
    for p in homo + inhomo:
        where = p.label.rsplit(" ", 1)[0]
        best[where] = min(best.get(where, math.inf), p.ratio)
    h = min(v for k, v in best.items() if k.startswith("lj_liquid"))
    worst = max((v, k) for k, v in best.items() if k.startswith("gaussian"))
    text = "best c08 / full shell time: " + ", ".join(f"{k} {v:.1f}x" for k, v in sorted(best.items()))
    files = sorted({f for p in homo + inhomo for f in p.files})
    if worst[0] > 2.0 * h:
        return HOLDS, f"c08 falls {worst[0] / h:.0f}x further behind on {worst[1]} than on the liquid", text, files
    return FAILS, "c08 keeps its distance to the full shell on the Gaussian", text, files


def _view_label(ra, rb):
    return f"{_name(ra).rsplit('_', 1)[0]} {_where(ra)}"


# the documents the claims come from, by title (DESIGN's sources)
SOURCES = {"000": "ls1-MarDyn CUDA port notes", "001": "PLUMED CUDA coordination tutorial",
           "002": "Decker, Kokkos MD thesis (TUM)", "003": "GROMOS GPU design notes", "004": "GOMC GPU student report"}

# --- harness mc results (the GOMC report's per-move kernel) ---------------------------------------

def _mc_system(r: dict) -> tuple:
    """What two mc results must share to be compared: the system, the precision and the GPU and commit."""
    dev = r.get("device") or {}
    return (r.get("input"), r.get("atoms"), r.get("kvectors"), r.get("precision"), r.get("batch"), dev.get("gpu"),
            dev.get("commit"))


def _mc_noise(r: dict) -> float:
    """A batch timing's noise: its interquartile range over the median (batch_iqr), or in results written
    before that was recorded the (max - min) / median of their few batches."""
    return float(r["batch_iqr"] if r.get("batch_iqr") is not None else r.get("batch_spread") or 0.0)


def _mc_pairs(data: Data, fast, slow, label) -> list[Pair]:
    """Batch time per move of a result of kind `fast` (the claim's faster one) against one of kind
    `slow` on the same system, precision, GPU and commit: ratio = slow / fast."""
    out = []
    for a in data.mc:
        if not fast(a):
            continue
        for b in data.mc:
            if b is a or not slow(b, a) or _mc_system(a) != _mc_system(b):
                continue
            band = max(TIE, _mc_noise(a), _mc_noise(b))
            out.append(Pair(label(a), b["batch_us_per_move"] / a["batch_us_per_move"], band,
                            (a["_file"], b["_file"])))
    return out


def _mc_charged(r: dict) -> str:
    return (r.get("launch") or {}).get("charged", "only")


def _mc_label(r: dict) -> str:
    return f"{r.get('precision')} {r.get('atoms')} atoms {r.get('kvectors')} k"


def _mc_judge(fast, slow, label=_mc_label):
    def judge(data: Data):
        pairs = _mc_pairs(data, fast, slow, label)
        verdict, why = _pair_verdict(pairs)
        return verdict, why, _ratio_list(pairs), sorted({f for p in pairs for f in p.files})
    return judge


def _mc_command(system: str, a: str, b: str) -> str:
    """The two mc runs a GOMC claim compares, on a built-in system (the campaign's mc-<system>-* stages)."""
    return (f"python -m harness mc --system {system} {a} --batch 1000 --precision fp64 --json a.json, then the same "
            f"with {b} --json b.json (in make results: the mc-{system}-* stages)")


CLAIMS = [
    Claim("float3-vs-float4", "003", '"float3 is now about 25% faster than float4 in many cases"',
          "force phase, layout aos3 against aos4 (same kernel and point): the float4 / float3 time ratio",
          "python -m harness bench --strategies fullshell_thread_csr,allpairs_thread_tiled,allpairs_thread_naive --n 32000 --outputs forces --sweep layout=aos4:aos3:soa --precision fp32,fp64 (in make results: bench --suite claims)",
          _layout_pair("aos3", "aos4")),
    Claim("aos-soa-unnecessary", "003", '"reordering data from an AoS layout to SoA is generally unnecessary"',
          "force phase, layout soa against aos4: SoA's speed-up",
          "python -m harness bench --strategies fullshell_thread_csr,allpairs_thread_tiled,allpairs_thread_naive --n 32000 --outputs forces --sweep layout=aos4:aos3:soa --precision fp32,fp64 (in make results: bench --suite claims)", _soa_unnecessary),
    Claim("soa-cache-efficiency", "002", '"an SoA layout ... results in a higher cache efficiency" (6.3)',
          "force phase, layout soa against aos4: the float4 / SoA time ratio",
          "python -m harness bench --strategies fullshell_thread_csr,allpairs_thread_tiled,allpairs_thread_naive --n 32000 --outputs forces --sweep layout=aos4:aos3:soa --precision fp32,fp64 (in make results: bench --suite claims)", _layout_pair("soa", "aos4")),
    Claim("charges-in-float4", "003", '"Packing additional data (like atomic charges) to fill float4 is no longer '
          'beneficial"', "force phase, charged and typed particles: the charge or type in the position's fourth "
          "component (aos4) against float3 positions with the charges in an array of their own (aos3): the "
          "aos3 / aos4 time ratio (holds: packing is faster nowhere beyond the noise)",
          "python -m harness bench --strategies fullshell_thread_csr,verlet_thread_padded --scenario charged_lj "
          "--scenario typed_lj:types=8 --n large --outputs forces --sweep layout=aos4:aos3:soa (in make results: "
          "bench --suite claims)", _charges_in_float4),
    Claim("quantization-speed", "003", '"integer operations are 2-16x faster"; fixed point "offers better '
          'performance than mixed precision"', "force phase, precision fixed against mixed",
          "python -m harness bench --precision fixed,mixed,fp32", _quantization),
    Claim("single-precision-md", "003", '"Pure single precision ... performs poorly in MD due to accumulated '
          'numerical errors"', "NVE drift of the total energy per particle per tau, fp32 against fp64, longest run",
          "python -m harness md --nve-report --n 4000 --steps 200000 (in make results: the nve stage)",
          _single_precision_md),
    Claim("mixed-precision-trade", "003", '"compute ... in single precision, and accumulate results in double '
          'precision. This maintains accuracy while improving performance"',
          "force phase (all outputs) in mixed against fp64 and fp32; verify errors per precision",
          "python -m harness bench --strategies fullshell_thread_csr,clusterpair_warp_newton3 --n large "
          "--precision fp32,mixed,fp64 (in make results: bench --suite claims); make verify", _mixed_tradeoff),
    Claim("c08-inhomogeneous", "002", '"the running time to calculate all base steps of one color is at least as '
          'long as ... the base step with the most particles" (10.3.2)',
          "force phase of c08 against the CSR full shell, liquid against Gaussian blobs",
          "python -m harness bench --suite claims (in make results)", _c08_inhomogeneous),
    Claim("nested-vs-2d-views", "002", "two-dimensional views are faster than nested views on the GPU (10.2)",
          "force phase, *_2d against *_nested (same traversal and point): the nested / 2D time ratio",
          "python -m harness bench --suite claims (in make results)",
          _judge_pairs(lambda r: _name(r).endswith("_2d"), lambda r: _name(r).endswith("_nested"), _view_label,
                       match=lambda r: _name(r).rsplit("_", 1)[0])),
    Claim("shared-vs-twopass", "000", "two-pass Newton3 computes every interaction twice to avoid locks; the "
          "shared-cache variant computes it once", "force phase, warp-block shared against two-pass (same "
          "scheduler and point): the two-pass / shared time ratio", "python -m harness bench --suite claims (in make results)",
          _judge_pairs(lambda r: "_shared_" in _name(r), lambda r: "_twopass_" in _name(r),
                       lambda ra, rb: f"{_name(ra).rsplit('_', 1)[1]} {_where(ra)}",
                       match=lambda r: _name(r).rsplit("_", 1)[1])),
    Claim("global-mutex-cost", "000", '"To synchronize all thread blocks and warps a global mutex is used"',
          "force phase, warp-block scheduler with an atomic counter against the global mutex: the mutex / atomic "
          "time ratio (holds: the lock-free scheduler is faster, i.e. the mutex costs)",
          "python -m harness bench --suite claims (in make results)",
          _judge_pairs(lambda r: _name(r).endswith("_atomic") and "warpblock" in _name(r),
                       lambda r: _name(r).endswith("_mutex") and "warpblock" in _name(r),
                       lambda ra, rb: f"{_name(ra).split('_')[2]} {_where(ra)}",
                       match=lambda r: _name(r).split("_")[2])),
    Claim("table-on-chip", "000", "the molecule model's component parameters and mixing coefficients sit in "
          "constant memory (on chip)", "force phase with a typed pair table in shared memory (on chip; constant "
          "memory serialises the lanes' different entries) against global memory: the global / shared time ratio",
          "python -m harness bench --strategies verlet_thread_padded --scenario typed_lj --scenario typed_lj:types=64 "
          "--scenario kob_andersen --n large --sweep table=global:shared (in make results: bench --suite claims)",
          _judge_pairs(lambda r: (r.get("launch_params") or {}).get("table") == "shared",
                       lambda r: (r.get("launch_params") or {}).get("table", "global") == "global"
                       and str(r.get("potential")).startswith("ff:"), _at, ignore=("table",))),
    Claim("gomc-loop-order", "004", '"for each new and old atom, loop through each image" was faster than a thread '
          'per (atom, k-vector) with atomics, "because less threads are accessing the same memory location at once"',
          "time per trial move in a batch, kspace_thread_kloop (a thread per k over the molecule) against "
          "kspace_thread_atomic: the atomic / loop time ratio", _mc_command("water", "--kspace kspace_thread_kloop", "--kspace kspace_thread_atomic"),
          _mc_judge(lambda r: r["kspace"] == "kspace_thread_kloop",
                    lambda b, a: b["kspace"] == "kspace_thread_atomic" and _mc_charged(b) == _mc_charged(a))),
    Claim("gomc-shared-staging", "004", "the moved molecule's coordinates and charges staged in dynamic shared "
          "memory", "time per trial move in a batch, kspace_block_staged against kspace_thread_kloop (the molecule "
          "read from global memory): the global / shared time ratio",
          _mc_command("water", "--kspace kspace_block_staged", "--kspace kspace_thread_kloop"),
          _mc_judge(lambda r: r["kspace"] == "kspace_block_staged",
                    lambda b, a: b["kspace"] == "kspace_thread_kloop" and _mc_charged(b) == _mc_charged(a))),
    Claim("gomc-skip-uncharged", "004", "only charged atoms sent to the GPU (uncharged ones skipped)",
          "time per trial move in a batch with charged=only against charged=all (same strategy), on systems with "
          "uncharged atoms: the all / only time ratio", _mc_command("water4", "--kspace kspace_thread_kloop --launch charged=only",
                      "--launch charged=all"),
          _mc_judge(lambda r: _mc_charged(r) == "only" and (r.get("uncharged") or 0) > 0,
                    lambda b, a: _mc_charged(b) == "all" and b["kspace"] == a["kspace"],
                    lambda r: f"{r['kspace']} {_mc_label(r)}")),
    Claim("one-thread-per-atom", "001", "the coordination kernel with one thread per atom against all others "
          "(getSelfCoord)", "force phase with the coordination potential: allpairs_thread_naive against the tiled "
          "kernel and the cell list (holds: nothing beats it)", "python -m harness bench --suite claims (in make results)",
          _judge_pairs(lambda r: _name(r) == "allpairs_thread_naive" and "coordination" in str(r.get("potential")),
                       lambda r: _name(r) != "allpairs_thread_naive" and "coordination" in str(r.get("potential")),
                       lambda ra, rb: f"against {_name(rb)} {_where(ra)}", match=lambda r: 0)),
]


def evaluate(data: Data) -> list[dict]:
    rows = []
    for c in CLAIMS:
        verdict, why, measured, files = c.judge(data)
        rows.append({"claim": c.key, "seed": SOURCES.get(c.seed, c.seed), "text": c.text, "measure": c.measure, "verdict": verdict,
                     "why": why, "measured": measured, "command": c.command, "evidence": files})
    return rows


def markdown(rows: list[dict], root: Path | None = None) -> str:
    def rel(f):
        try:
            return str(Path(f).resolve().relative_to(root.resolve())) if root else f
        except ValueError:
            return f
    lines = ["| claim | source | measurement | verdict | reproduce |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        ev = "; ".join(f"`{rel(f)}`" for f in r["evidence"][:4]) + (" ..." if len(r["evidence"]) > 4 else "")
        measured = f"{r['measure']}: {r['measured']}" if r["measured"] else r["measure"]
        lines.append(f"| {r['text']} | {r['seed']} | {measured} | **{r['verdict']}**: {r['why']} | "
                     f"`{r['command']}`{' (data: ' + ev + ')' if ev else ''} |")
    return "\n".join(lines) + "\n"
