"""Selected raw metrics of `harness profile` results (the <stem>.csv that ncu's raw page wrote), one
line per kernel launch: time, warp instructions, issue slots, L1 requests, sectors and data-pipe
wavefronts of global loads, and what they give per request. For comparing two variants of a
kernel in one device call:

    python3 research/ncu_metrics.py reports/profile/*.csv [--match REGEX] [--stalls]

--stalls adds, per kernel, every warp-stall reason the run measured (ncu's WarpStateStats section:
smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio), as warps waiting per issued
instruction, largest first.
"""
from __future__ import annotations

import argparse
import csv
import re
import sys

# label -> the raw metric names to try, first found wins (they differ between ncu versions)
WANT = {
    "us": ("gpu__time_duration.sum",),
    "inst": ("smsp__inst_executed.sum",),
    "issue%": ("smsp__issue_active.avg.pct_of_peak_sustained_active",),
    "lanes": ("smsp__thread_inst_executed_per_inst_executed.ratio",),
    "ld_req": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",),
    "ld_sect": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",),
    "wavefr": ("l1tex__data_pipe_lsu_wavefronts_mem_lg.sum", "l1tex__data_pipe_lsu_wavefronts.sum"),
    "l1_pct": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "hit%": ("l1tex__t_sector_hit_rate.pct",),
    "regs": ("launch__registers_per_thread",),
    "occ%": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    # warp states (where measured: STALL_METRICS in research/gpu_benches.sh): warps eligible a cycle, and warps
    # waiting on a long-scoreboard dependency (a global or local load) and not selected, per issue
    "elig": ("smsp__warps_eligible.avg.per_cycle_active",),
    "lsb/issue": ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",),
    "nsel/issue": ("smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",),
    # the SMs' cycles with work against the kernel's elapsed cycles (where measured: CYCLE_METRICS in
    # research/gpu_benches.sh): sm_act% says how much of the kernel's time the average SM had a block resident
    "cyc_act": ("sm__cycles_active.avg",),
    "cyc_el": ("sm__cycles_elapsed.avg",),
    "MHz": ("sm__cycles_elapsed.avg.per_second",),
}


def _num(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def stalls(names: list[str], row: list[str]) -> str:
    """'stalls per issue: reason v, ...' (largest first, those of 0.05 or more), or ''."""
    found = []
    for i, n in enumerate(names):
        m = _STALL.match(n)
        if m and i < len(row):
            v = _num(row[i])
            if v is not None and v >= 0.05:
                found.append((v, m.group(1)))
    return ("  stalls per issue: " + ", ".join(f"{k} {v:.2f}" for v, k in sorted(found, reverse=True))) if found else ""


def rows(path: str, match: str | None, with_stalls: bool = False) -> list[str]:
    with open(path, newline="") as fh:
        data = [r for r in csv.reader(fh) if r and not r[0].startswith("==")]
    if len(data) < 3:
        return [f"{path}: no kernel rows"]
    names, units = data[0], data[1]
    col = {n: i for i, n in enumerate(names)}
    out = []
    for r in data[2:]:
        kernel = r[col["Kernel Name"]] if "Kernel Name" in col else "?"
        if match and not re.search(match, kernel):
            continue
        vals = {}
        for label, metrics in WANT.items():
            for m in metrics:
                if m in col and col[m] < len(r):
                    v = _num(r[col[m]])
                    if v is not None and label == "us":
                        unit = units[col[m]]
                        v *= {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(
                            unit, float("nan"))
                    vals[label] = v
                    break
        if vals.get("MHz") is not None:
            vals["MHz"] = vals["MHz"] * {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3, "cycle/nsecond": 1e3,
                                         "cycle/usecond": 1.0, "cycle/second": 1e-6}.get(
                units[col["sm__cycles_elapsed.avg.per_second"]].lower(), float("nan"))
        if vals.get("cyc_act") is not None and vals.get("cyc_el"):
            vals["sm_act%"] = 100.0 * vals["cyc_act"] / vals["cyc_el"]
        per = ""
        if vals.get("ld_req"):
            per = (f" sect/req {vals.get('ld_sect', 0) / vals['ld_req']:.2f}"
                   f" wf/req {vals.get('wavefr', 0) / vals['ld_req']:.2f}")
        text = " ".join(f"{k} {v:.4g}" for k, v in vals.items() if v is not None)
        out.append(f"{kernel.split('(')[0][:48]:48s} {text}{per}" + (stalls(names, r) if with_stalls else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--match", help="only kernels whose name matches this regular expression")
    ap.add_argument("--stalls", action="store_true", help="every warp-stall reason measured, per issue")
    a = ap.parse_args(argv)
    for path in a.csv:
        try:
            lines = rows(path, a.match, a.stalls)
        except OSError as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 2
        print(f"# {path}")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
