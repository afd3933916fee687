"""Where one kernel's instructions go, from ncu's source page: its SASS, each instruction with the
warp instructions it executed, the lanes active and the stall samples (Nsight Compute's
SourceCounters section), summed over straight runs of instructions executed the same number of
times (a basic block, or a loop's body: its count is the loop's steps). A run's share of the
kernel's instructions, its lanes active and its SASS a step say which loop to cut, and what a step
of it costs:

    ncu --nvtx --nvtx-include "build/verlet_thread_padded/" --section SourceCounters \\
        -k regex:verlet_build --launch-count 1 -o rep python3 -m harness profile --inner ...
    ncu -i rep.ncu-rep --page source --print-source sass --csv > build.csv
    python3 research/ncu_source.py build.csv [--min-share 0.4] [--show 412-465]

(with `--clock-control none` and more sections, on `--scenario lj_liquid --n large --precision fp32
--outputs forces`). --show prints the instructions of a range of indices as the runs' table numbers
them. On the H200 the strip build's candidate loop took 37% of its instructions at 13.5 SASS a
candidate, a hit's store 20 a hit (before the rework in docs/decisions/verlet-build.md).
"""
from __future__ import annotations

import argparse
import csv
import sys

NEED = ("Source", "Instructions Executed", "Thread Instructions Executed", "Warp Stall Sampling (All Samples)")


def _int(text: str) -> int:
    try:
        return int(float(text.replace(",", "")))
    except ValueError:
        return 0


def read(path: str) -> tuple[str, list[tuple[str, int, int, int]]]:
    """(kernel name, [(SASS text, warp instructions, thread instructions, stall samples)]) of the
    source page's CSV. Raises ValueError where the file is not such a page."""
    with open(path, newline="") as fh:
        lines = [r for r in csv.reader(fh) if r and not r[0].startswith("==")]
    at = next((i for i, r in enumerate(lines) if all(c in r for c in NEED)), None)
    if at is None:
        raise ValueError(f"{path}: not ncu's source page as CSV (no {NEED[1]!r} column); write it with "
                         "`ncu -i REP --page source --print-source sass --csv` from a report taken with "
                         "--section SourceCounters")
    head = lines[at]
    col = {c: head.index(c) for c in NEED}
    kernel = lines[at - 1][1] if at > 0 and len(lines[at - 1]) > 1 and lines[at - 1][0] == "Kernel Name" else "?"
    out = []
    for r in lines[at + 1:]:
        if len(r) < len(head):
            continue
        out.append((r[col["Source"]].strip(), _int(r[col[NEED[1]]]), _int(r[col[NEED[2]]]), _int(r[col[NEED[3]]])))
    if not out:
        raise ValueError(f"{path}: the source page lists no instructions")
    return kernel, out


def runs(instr: list[tuple[str, int, int, int]]) -> list[dict]:
    """Straight runs of instructions executed the same number of times, in address order."""
    out: list[dict] = []
    for i, (text, warp, thread, stall) in enumerate(instr):
        if out and out[-1]["count"] == warp:
            r = out[-1]
        else:
            r = {"first": i, "count": warp, "length": 0, "warp": 0, "thread": 0, "stall": 0, "text": text}
            out.append(r)
        r["last"] = i
        r["length"] += 1
        r["warp"] += warp
        r["thread"] += thread
        r["stall"] += stall
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --page source --print-source sass --csv output")
    ap.add_argument("--min-share", type=float, default=0.4, help="runs below this percentage of the instructions "
                                                                   "are left out of the table (default 0.4)")
    ap.add_argument("--show", metavar="FIRST-LAST", help="also print the instructions FIRST..LAST")
    a = ap.parse_args(argv)
    show = None
    if a.show is not None:
        lo, sep, hi = a.show.partition("-")
        if not (sep and lo.isdigit() and hi.isdigit() and int(lo) <= int(hi)):
            print(f"ncu_source: --show takes FIRST-LAST (two indices, FIRST <= LAST), got {a.show!r}", file=sys.stderr)
            return 2
        show = (int(lo), int(hi))
    try:
        kernel, instr = read(a.csv)
    except (OSError, ValueError) as e:
        print(f"ncu_source: {e}", file=sys.stderr)
        return 2
    total = sum(w for _, w, _, _ in instr)
    stalls = sum(s for _, _, _, s in instr) or 1
    print(f"{kernel}\n{total:,} warp instructions, {len(instr)} SASS instructions, {stalls:,} stall samples")
    print(f"{'instructions':>13} {'executed':>10} {'SASS':>5} {'warp instr':>11} {'share':>6} {'lanes':>6} {'stalls':>6}  first")
    for r in runs(instr):
        if total and 100.0 * r["warp"] / total < a.min_share:
            continue
        print(f"{r['first']:6d}-{r['last']:<6d} {r['count']:10,d} {r['length']:5d} {r['warp'] / 1e6:10.2f}M "
              f"{100.0 * r['warp'] / max(total, 1):5.1f}% {r['thread'] / max(r['warp'], 1):6.1f} "
              f"{100.0 * r['stall'] / stalls:5.1f}%  {r['text'][:60]}")
    if show is not None:
        for i in range(show[0], min(show[1], len(instr) - 1) + 1):
            text, warp, thread, stall = instr[i]
            print(f"{i:6d} {warp:10,d} {thread / max(warp, 1):5.1f} {stall:6d}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
