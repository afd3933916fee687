"""The Verlet force kernel's gathers replayed on the CPU through the L1 rule research/l1_probe.py
measured (H100): a 128-bit gather costs, per quarter-warp (lanes 8k..8k+7), as many
data-pipe wavefronts as the most distinct 16-byte chunks its lanes read in one bank group
(slot % 8); lanes reading the same chunk share it. The misses the GPU adds (~1.4 wavefronts per
request at LJ 1M) are not modelled: compare orders with one another, not with ncu.

Rows: the full list of r_list = 2.8 around each particle of a harness scenario, in the strip
build's order (cells of side >= r_list, a column's particles sorted by z; the 9 columns in order,
slots ascending), one thread per row, 32 consecutive rows a warp. Orders of each row's entries:

  built      as the build stores them
  rotate     banks=2 (kernels/verlet.cu, verlet_rotate): entry t of row s in bank group (s + t) % 8
             where the row has one there, the rest in the positions left free, in order
  colour     each quarter-warp's 8 rows scheduled jointly: an entry at the first step where its
             lane is free and its bank group unused (rows stay dense: leftovers fill free steps)
  broadcast  the same, an entry first joining a step where another lane reads the same slot
  anchor     a row copies lane 0's step for every slot it shares with lane 0; the rest take
             bank group (lane 0's + lane) % 8 where they can (a pass per row, no joint step)

    python3 research/l1_model.py [--scenario lj_liquid] [--n 32000] [--rows 16384]

  group_rotate  each whole group's gathers rotated in the force kernel (no pass)
  group_place   each whole group's entries placed by bank group (banks=1's rule, per group)

Modelled (LJ 32,000): built 9.51, rotate 5.24, colour 5.17, broadcast 4.09, anchor 5.07 wavefronts per
gather; group_rotate 9.32, group_place 7.67: what a group of 8 can give is small beside a row-wide
order (docs/decisions/verlet-bank-orders.md).
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
from numba import njit

RL = 2.8


@njit(cache=False)
def _rows(sp, cell, start, dims, box, rl2, cap):
    """Row s: the slots within rl of slot s, columns in order (x, then y), slots ascending."""
    n = sp.shape[0]
    nbr = np.full((n, cap), -1, np.int64)
    ln = np.zeros(n, np.int64)
    for s in range(n):
        c = cell[s]
        cz, cy, cx = c % dims[2], (c // dims[2]) % dims[1], c // (dims[2] * dims[1])
        m = 0
        for ox in range(-1, 2):
            for oy in range(-1, 2):
                x, y = (cx + ox) % dims[0], (cy + oy) % dims[1]
                for oz in range(-1, 2):
                    nb = (x * dims[1] + y) * dims[2] + (cz + oz) % dims[2]
                    for q in range(start[nb], start[nb + 1]):
                        if q == s:
                            continue
                        d2 = 0.0
                        for a in range(3):
                            d = sp[s, a] - sp[q, a]
                            d -= box[a] * np.rint(d / box[a])
                            d2 += d * d
                        if d2 < rl2 and m < cap:
                            nbr[s, m] = (ox + 1) * 3 + (oy + 1)  # column, replaced by the slot below
                            nbr[s, m] = nbr[s, m] * (1 << 32) + q
                            m += 1
        row = np.sort(nbr[s, :m])
        for k in range(m):
            nbr[s, k] = row[k] & ((1 << 32) - 1)
        ln[s] = m
    return nbr, ln


def rows_of(scenario: str, n: int, seed: int = 1):
    """(rows as an (n, cap) array of slots, -1 beyond each row's length; lengths) for a scenario."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from harness import scenarios

    p = scenarios.make(scenario, n, seed=seed, precision="fp64")
    box = np.asarray(p.box.array, np.float64)
    pos = np.asarray(p.positions, np.float64) % box
    dims = np.maximum(np.floor(box / RL).astype(np.int64), 1)
    idx = np.minimum((pos / (box / dims)).astype(np.int64), dims - 1)
    cell = (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    order = np.lexsort((pos[:, 2], cell))
    start = np.zeros(int(dims.prod()) + 1, np.int64)
    np.cumsum(np.bincount(cell[order], minlength=int(dims.prod())), out=start[1:])
    return _rows(pos[order], cell[order], start, dims, box, RL * RL, 256)


@njit(cache=False)
def wavefronts(nbr, ln):
    """(wavefronts, gather requests) of a thread per row: at step t lane s reads slot nbr[s, t]."""
    wav = 0
    req = 0
    for w in range(nbr.shape[0] // 32):
        steps = 0
        for a in range(32):
            steps = max(steps, ln[32 * w + a])
        for t in range(steps):
            req += 1
            for qq in range(4):
                most = 0
                for g in range(8):
                    seen = np.full(8, -1, np.int64)
                    k = 0
                    for a in range(8):
                        s = 32 * w + 8 * qq + a
                        if t < ln[s] and nbr[s, t] % 8 == g:
                            q = nbr[s, t]
                            new = True
                            for i in range(k):
                                new = new and seen[i] != q
                            if new:
                                seen[k] = q
                                k += 1
                    most = max(most, k)
                wav += most
    return wav, req


@njit(cache=False)
def _by_group(row, s, out):
    """row's slots placed into out (as long): slot q at position t = (q % 8 - s) % 8 + 8 r, r the
    slots of its bank group before it, where that lies inside; the rest in the free positions in
    order."""
    m = row.shape[0]
    busy = np.zeros(m, np.bool_)
    rank = np.zeros(8, np.int64)
    left = np.empty(m, np.int64)
    nl = 0
    for k in range(m):
        q = row[k]
        t = ((q % 8 - s) % 8) + 8 * rank[q % 8]
        if t < m:
            out[t] = q
            busy[t] = True
            rank[q % 8] += 1
        else:
            left[nl] = q
            nl += 1
    t = 0
    for i in range(nl):
        while busy[t]:
            t += 1
        out[t] = left[i]
        busy[t] = True


@njit(cache=False)
def rotate(nbr, ln):
    out = np.full_like(nbr, -1)
    for s in range(nbr.shape[0]):
        _by_group(nbr[s, :ln[s]], s, out[s, :ln[s]])
    return out


@njit(cache=False)
def colour(nbr, ln, broadcast):
    out = np.full_like(nbr, -1)
    for base in range(0, nbr.shape[0] - 7, 8):
        used = np.full((8, nbr.shape[1]), -1, np.int64)  # slot read in bank group g at step t
        for a in range(8):
            s = base + a
            m = ln[s]
            busy = np.zeros(m, np.bool_)
            left = np.empty(m, np.int64)
            nl = 0
            for k in range(m):
                q = nbr[s, k]
                g = q % 8
                at = -1
                if broadcast:
                    for t in range(m):
                        if not busy[t] and used[g, t] == q:
                            at = t
                            break
                if at < 0:
                    for t in range(m):
                        if not busy[t] and used[g, t] == -1:
                            at = t
                            used[g, t] = q
                            break
                if at < 0:
                    left[nl] = q
                    nl += 1
                else:
                    busy[at] = True
                    out[s, at] = q
            t = 0
            for i in range(nl):
                while busy[t]:
                    t += 1
                busy[t] = True
                out[s, t] = left[i]
    return out


@njit(cache=False)
def anchor(nbr, ln):
    out = np.full_like(nbr, -1)
    for base in range(0, nbr.shape[0] - 7, 8):
        m0 = ln[base]
        out[base, :m0] = nbr[base, :m0]
        for a in range(1, 8):
            s = base + a
            m = ln[s]
            busy = np.zeros(m, np.bool_)
            pool = np.full((8, m), -1, np.int64)
            npool = np.zeros(8, np.int64)
            for k in range(m):
                q = nbr[s, k]
                t = -1
                for u in range(m0):
                    if nbr[base, u] == q:
                        t = u
                        break
                if 0 <= t < m and not busy[t]:
                    busy[t] = True
                    out[s, t] = q
                else:
                    pool[q % 8, npool[q % 8]] = q
                    npool[q % 8] += 1
            taken = np.zeros(8, np.int64)
            for t in range(m):
                if busy[t]:
                    continue
                w = (nbr[base, t] % 8 + a) % 8 if t < m0 else (a + t) % 8
                if taken[w] == npool[w]:  # none left there: the group with most left
                    w = 0
                    for g in range(8):
                        if npool[g] - taken[g] > npool[w] - taken[w]:
                            w = g
                out[s, t] = pool[w, taken[w]]
                taken[w] += 1
    return out


@njit(cache=False)
def group_rotate(nbr, ln):
    """In the force kernel, no pass: each whole group's 8 gathers rotated so that gather v reads
    the entry whose class (q - s) % 8 would be v if the group were consecutive slots (the rotation
    from its first entry's class)."""
    out = nbr.copy()
    for s in range(nbr.shape[0]):
        for g in range(ln[s] // 8):
            c = (nbr[s, 8 * g] - s) % 8
            for v in range(8):
                out[s, 8 * g + v] = nbr[s, 8 * g + (v - c) % 8]
    return out


@njit(cache=False)
def group_place(nbr, ln):
    """Each whole group's entries placed by class ((q - s) % 8 at position v where free, the rest in
    the free positions in order): banks=1's rule, here as the force kernel could do it per group."""
    out = nbr.copy()
    for s in range(nbr.shape[0]):
        for g in range(ln[s] // 8):
            _by_group(nbr[s, 8 * g:8 * g + 8], s, out[s, 8 * g:8 * g + 8])
    return out


ORDERS = {"built": lambda r, n: r, "rotate": rotate, "colour": lambda r, n: colour(r, n, False),
          "broadcast": lambda r, n: colour(r, n, True), "anchor": anchor, "group_rotate": group_rotate,
          "group_place": group_place}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="lj_liquid")
    ap.add_argument("--n", type=int, default=32000)
    ap.add_argument("--rows", type=int, default=16384, help="the first ROWS rows (whole warps) are replayed")
    a = ap.parse_args(argv)
    nbr, ln = rows_of(a.scenario, a.n)
    m = min(a.rows, a.n) // 32 * 32
    nbr, ln = nbr[:m], ln[:m]
    print(f"{a.scenario} {a.n:,}: {m:,} rows, {ln.mean():.1f} entries a row (longest {ln.max()})")
    for name, order in ORDERS.items():
        w, r = wavefronts(order(nbr, ln), ln)
        print(f"  {name:10s} {w / r:5.2f} wavefronts per gather ({r:,} gathers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
