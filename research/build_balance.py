"""A CPU model of the strip build's lane balance (kernels/verlet_build.cu, verlet_build with WINDOW): for each
row (slot order: cells, then z) and each of the 9 neighbour columns, the candidates in the row's z-window
(its lateral gap to the column taken off r_list), walked 8 a step. A warp runs, column by column, the
longest walk of its 32 lanes. Prints the lanes' busy share now, with each column walked together with its
opposite (the pair's windows' lengths add to a near-constant), and with all nine walked as one stream.

    python3 research/build_balance.py --n 256000 [--alternatives]

A flattened walk of all nine columns lost the L1 (lanes spread over nine columns); the pairs keep two
columns in flight. ncu's SourceCounters of the build give 21 of 32 lanes active in its candidate loop,
the model's "now". The pairs, built (build=opposite), reached 21.4 lanes against 20.1 over the whole
kernel at LJ 1M (H200), not the model's quarter more: the model counts full steps of 8 in the candidate
loop only, not the short rounds at a segment's end or the per-lane hit pushes. They win on crowded
inputs (8-10%), not on the liquid (docs/decisions/verlet-build.md).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.scenarios import SCENARIOS  # noqa: E402

OFFSETS = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]  # the build's column order
OPPOSITE = [(0, 8), (1, 7), (2, 6), (3, 5)]                 # column c and 8 - c; 4 is the row's own


def window_steps(n: int, rlist: float, step: int = 8, seed: int = 1) -> np.ndarray:
    """(rows, 9) steps of `step` candidates each row walks in each column (LJ liquid, periodic)."""
    pos, box, _ = SCENARIOS["lj_liquid"].build(n, np.random.default_rng(seed))
    L = float(box.lengths[0])
    nc = int(L // rlist)
    side = L / nc
    c = np.floor(pos / side).astype(int) % nc
    cell = (c[:, 0] * nc + c[:, 1]) * nc + c[:, 2]
    order = np.lexsort((pos[:, 2], cell))
    p, cs = pos[order], c[order]
    column = cs[:, 0] * nc + cs[:, 1]
    zs = [np.sort(p[column == k, 2]) for k in range(nc * nc)]
    inside = p[:, :2] - cs[:, :2] * side
    counts = np.zeros((len(p), 9), int)
    for j, (ox, oy) in enumerate(OFFSETS):
        gx = np.where(ox < 0, inside[:, 0], np.where(ox > 0, side - inside[:, 0], 0.0))
        gy = np.where(oy < 0, inside[:, 1], np.where(oy > 0, side - inside[:, 1], 0.0))
        w2 = rlist * rlist - gx * gx - gy * gy
        w = np.sqrt(np.maximum(w2, 0.0))
        target = ((cs[:, 0] + ox) % nc) * nc + (cs[:, 1] + oy) % nc
        for k in np.unique(target):
            m = np.where(target == k)[0]
            z = np.concatenate([zs[k] - L, zs[k], zs[k] + L])
            counts[m, j] = np.where(w2[m] > 0, np.searchsorted(z, p[m, 2] + w[m]) - np.searchsorted(z, p[m, 2] - w[m]), 0)
    return -(-counts // step)


def balance(steps: np.ndarray) -> tuple[float, float, float, float]:
    """(steps a lane walks, a warp's steps now, with opposite columns paired, as one stream), means over
    the warps of 32 consecutive rows."""
    w = len(steps) // 32
    s = steps[: w * 32].reshape(w, 32, 9)
    paired = s[:, :, 4].max(1) + sum((s[:, :, i] + s[:, :, j]).max(1) for i, j in OPPOSITE)
    return float(s.sum(2).mean()), float(s.max(1).sum(1).mean()), float(paired.mean()), float(s.sum(2).max(1).mean())


def _binned(n: int, rlist: float, split: int, seed: int = 1):
    """The LJ liquid binned as the strip build bins it, its columns `split` times narrower (side about
    r_list / split): (sorted positions, their column coordinates, box side, columns a side, column side,
    the z-sorted positions of each column)."""
    pos, box, _ = SCENARIOS["lj_liquid"].build(n, np.random.default_rng(seed))
    L = float(box.lengths[0])
    nc = int(L // (rlist / split))
    side = L / nc
    c = np.floor(pos / side).astype(int) % nc
    order = np.lexsort((pos[:, 2], (c[:, 0] * nc + c[:, 1]) * nc + c[:, 2]))
    p, cs = pos[order], c[order]
    column = cs[:, 0] * nc + cs[:, 1]
    return p, cs, L, nc, side, [np.sort(p[column == k, 2]) for k in range(nc * nc)]


def _windows(p, cs, L, nc, side, zs, rlist, ox, oy):
    """Each row's z-window in column (ox, oy) of its own, as index ranges of that column's z-sorted
    positions (lo, hi; hi == lo where the column is out of reach) and the column's index."""
    inside = p[:, :2] - cs[:, :2] * side
    gx = np.where(ox < 0, inside[:, 0] + (-ox - 1) * side, np.where(ox > 0, ox * side - inside[:, 0], 0.0))
    gy = np.where(oy < 0, inside[:, 1] + (-oy - 1) * side, np.where(oy > 0, oy * side - inside[:, 1], 0.0))
    w2 = rlist * rlist - gx * gx - gy * gy
    w = np.sqrt(np.maximum(w2, 0.0))
    target = ((cs[:, 0] + ox) % nc) * nc + (cs[:, 1] + oy) % nc
    lo, hi = np.zeros(len(p), int), np.zeros(len(p), int)
    for k in np.unique(target):
        m = np.where(target == k)[0]
        z = np.concatenate([zs[k] - L, zs[k], zs[k] + L])
        lo[m], hi[m] = np.searchsorted(z, p[m, 2] - w[m]), np.searchsorted(z, p[m, 2] + w[m])
    hi = np.where(w2 > 0, hi, lo)
    return lo, hi, target


def alternatives(n: int, rlist: float) -> dict[str, float]:
    """Two builds weighed against the strip build (docs/decisions/verlet-build.md), means
    per row or per warp of 32 consecutive rows: columns a row visits, candidates a row tests, and the
    candidate slots a warp's longest lane walks (steps of 8), with columns of side r_list (split 1, the
    strip build) and r_list / 2 (split 2); and the slots a warp walks if its lanes shared one walk over
    the union of their windows, 32 candidates a step (union)."""
    out: dict[str, float] = {}
    for split in (1, 2):
        p, cs, L, nc, side, zs = _binned(n, rlist, split)
        reach = int(np.ceil(rlist / side))
        w = len(p) // 32
        cols, cand, longest, union = np.zeros(len(p)), np.zeros(len(p)), np.zeros(w), np.zeros(w)
        for ox in range(-reach, reach + 1):
            for oy in range(-reach, reach + 1):
                lo, hi, target = _windows(p, cs, L, nc, side, zs, rlist, ox, oy)
                count = hi - lo
                cols += count > 0
                cand += count
                longest += (8 * -(-count // 8))[: w * 32].reshape(w, 32).max(1)
                if split == 1:  # the union of a warp's windows in each column it reaches, in steps of 32
                    lo2, hi2, tg = (a[: w * 32].reshape(w, 32) for a in (lo, hi, target))
                    live = hi2 > lo2
                    for k in range(w):
                        for t in np.unique(tg[k][live[k]]):
                            m = live[k] & (tg[k] == t)
                            union[k] += 32 * -(-(hi2[k][m].max() - lo2[k][m].min()) // 32)
        out[f"columns_{split}"], out[f"candidates_{split}"] = float(cols.mean()), float(cand.mean())
        out[f"longest_{split}"] = float(longest.mean())
        if split == 1:
            out["union"] = float(union.mean())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256000, help="particles (LJ liquid; default 256000)")
    ap.add_argument("--rlist", type=float, default=2.8, help="cutoff + skin (default 2.8)")
    ap.add_argument("--alternatives", action="store_true",
                    help="also weigh columns half as wide and a warp walking its lanes' union (alternatives())")
    a = ap.parse_args(argv)
    if a.n < 32 * 4 or not a.rlist > 0:
        print("build_balance: --n must be at least 128 and --rlist positive", file=sys.stderr)
        return 2
    if a.alternatives:
        f = alternatives(a.n, a.rlist)
        for split, what in ((1, "columns of side r_list (the strip build)"), (2, "columns of side r_list / 2")):
            print(f"{what}: {f[f'columns_{split}']:.1f} columns and {f[f'candidates_{split}']:.1f} candidates a row; "
                  f"a warp's longest lane walks {f[f'longest_{split}']:.0f} candidate slots")
        print(f"a warp walking the union of its lanes' windows (32 a step): {f['union']:.0f} candidate slots")
    busy, now, paired, flat = balance(window_steps(a.n, a.rlist))
    print(f"steps a lane walks {busy:.1f}; a warp runs {now:.1f} now (lanes busy {busy / now:.2f}), "
          f"{paired:.1f} with opposite columns paired ({busy / paired:.2f}), {flat:.1f} as one stream ({busy / flat:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
