"""The L1 cost of 128-bit gathers by pattern, on the GPU (research/l1probe.cu): which
lanes' addresses the L1 serves in one data-pipe wavefront. Synthetic patterns (contiguous, one
line per lane with the quarter-warps' bank groups distinct or equal, ...) and the Verlet force
kernel's own gathers at LJ 1M (jittered fcc at rho 0.8442, cells of r_list = 2.8, the strip
order of the build) in three orders: as built, each group of 8 bank-ordered (banks=1), and each
quarter-warp's rows scheduled so that its 8 lanes read 8 distinct bank groups at every step (a
greedy edge colouring of the lanes x bank-groups multigraph; empty steps where a lane has none).

    python3 research/l1_probe.py [--warps 64] [--reps 20] [--paths ldg,tex,mix] [--json OUT]

--paths: the load paths timed per pattern: ldg (__ldg of 16 bytes, the force kernels' gathers),
ldg8 and ldg4 (__ldg of 8 and 4 bytes a particle from arrays of that stride: what a packed
position would cost), tex (tex1Dfetch on a linear float4 texture object), mix (even steps tex, odd
steps ldg).

Prints per pattern: steps, the event time per warp-step (median of 5), and under ncu
(l1tex__data_pipe_lsu_wavefronts.sum, l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum) the
wavefronts per gather request, the index loads' one wavefront per step taken off.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

N = 1 << 20
RHO, RL = 0.8442, 2.8


def lattice(seed: int = 1) -> tuple[np.ndarray, np.ndarray, float, int]:
    rng = np.random.default_rng(seed)
    box = (N / RHO) ** (1 / 3)
    m = round((N / 4) ** (1 / 3))
    a = box / m
    basis = np.array([[0, 0, 0], [.5, .5, 0], [.5, 0, .5], [0, .5, .5]])
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    x = ((g + basis[None]).reshape(-1, 3) * a + rng.normal(0, 0.15, (N, 3))) % box - box / 2
    nc = int(box // RL)
    c = np.floor((x + box / 2) / (box / nc)).astype(int) % nc
    key = (c[:, 0] * nc + c[:, 1]) * nc + c[:, 2]
    order = np.lexsort((x[:, 2].astype(np.float32), key))
    return x[order], c[order], box, nc


class Rows:
    """Rows of the full list in the strip build's order (9 columns, each its z-window)."""

    def __init__(self):
        self.xs, cs, self.box, self.nc = lattice()
        self.cx, self.cy = cs[:, 0], cs[:, 1]
        col = self.cx * self.nc + self.cy
        self.colstart = np.searchsorted(col, np.arange(self.nc * self.nc + 1))

    def row(self, s: int) -> list[int] | None:
        out: list[int] = []
        for k in range(9):
            x, y = self.cx[s] + k // 3 - 1, self.cy[s] + k % 3 - 1
            if not (0 <= x < self.nc and 0 <= y < self.nc):
                return None  # across the box: far entries, not modelled
            lo, hi = self.colstart[x * self.nc + y], self.colstart[x * self.nc + y + 1]
            z = self.xs[lo:hi, 2]
            a0, a1 = np.searchsorted(z, self.xs[s, 2] - RL), np.searchsorted(z, self.xs[s, 2] + RL)
            idx = np.arange(lo + a0, lo + a1)
            d = self.xs[idx] - self.xs[s]
            out.extend(idx[(np.einsum("ij,ij->i", d, d) < RL * RL) & (idx != s)].tolist())
        return out


def bank_groups(s: int, r: list[int]) -> list[int]:
    """verlet_banks: each whole group of 8, entry to the position whose lane-relative bank it has."""
    out: list[int] = []
    full = len(r) // 8
    for g in range(full):
        o: list[int | None] = [None] * 8
        left = []
        for q in r[8 * g:8 * g + 8]:
            w = (q - s) & 7
            if o[w] is None:
                o[w] = q
            else:
                left.append(q)
        free = [p for p in range(8) if o[p] is None]
        for q, p in zip(left, free):
            o[p] = q
        out += o
    return out + r[8 * full:]


def colour(rows: list[list[int]]) -> list[list[int]]:
    """A quarter-warp's 8 rows scheduled: at each step every lane takes an entry of a bank group no
    other lane takes (lanes with most left first, each the free group with most left overall)."""
    rem = [dict() for _ in rows]
    for li, r in enumerate(rows):
        for q in r:
            rem[li].setdefault(q & 7, []).append(q)
    out: list[list[int]] = [[] for _ in rows]
    while any(rem):
        colsum = np.zeros(8, int)
        for d in rem:
            for b, v in d.items():
                colsum[b] += len(v)
        used: set[int] = set()
        for li in sorted(range(len(rows)), key=lambda i: -sum(len(v) for v in rem[i].values())):
            cand = [b for b in rem[li] if b not in used]
            if not cand:
                out[li].append(-1)
                continue
            b = max(cand, key=lambda c: colsum[c])
            used.add(b)
            out[li].append(rem[li][b].pop(0))
            if not rem[li][b]:
                del rem[li][b]
    return out


def table(warps: list[list[list[int]]]) -> tuple[np.ndarray, int]:
    steps = max(max(len(r) for r in w) for w in warps)
    steps += steps & 1  # even: the texture replay takes two steps a turn (an empty step loads nothing)
    idx = np.full((len(warps), steps, 32), -1, np.int32)
    for wi, w in enumerate(warps):
        for li, r in enumerate(w):
            idx[wi, :len(r), li] = r
    return idx, steps


def patterns(n_warps: int) -> dict[str, np.ndarray]:
    lane = np.arange(32)
    base = (np.arange(n_warps) * 4096)[:, None, None]
    syn = {
        "contiguous": lane,
        "line per lane, quarter banks distinct": 8 * lane + (lane & 7),
        "line per lane, one bank": 8 * lane,
        "line per lane, bank = lane // 8": 8 * lane + (lane >> 3),
        "line per lane, bank = lane // 4": 8 * lane + (lane >> 2),
        "line per lane, bank = lane % 4": 8 * lane + (lane & 3),
        "pairs share a 16-byte chunk": 8 * (lane >> 1) + ((lane >> 1) & 7),
    }
    out = {k: np.broadcast_to(base + v[None, None, :], (n_warps, 64, 32)).astype(np.int32) for k, v in syn.items()}
    rng = np.random.default_rng(2)
    out["random in 64 KB"] = (base + rng.integers(0, 4096, (n_warps, 64, 32))).astype(np.int32)
    rows = Rows()
    plain, ordered, coloured = [], [], []
    s0 = N // 3
    while len(plain) < n_warps:
        ss = list(range(s0, s0 + 32))
        s0 += 32 * 97
        rr = [rows.row(s) for s in ss]
        if any(r is None for r in rr):
            continue
        plain.append(rr)
        ordered.append([bank_groups(s, r) for s, r in zip(ss, rr)])
        coloured.append(sum((colour(rr[8 * q:8 * q + 8]) for q in range(4)), []))
    for name, w in (("LJ 1M rows, as built", plain), ("LJ 1M rows, banks=1", ordered),
                    ("LJ 1M rows, quarter-coloured", coloured)):
        out[name] = table(w)[0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warps", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", help="run one pattern (index into the list), for ncu")
    ap.add_argument("--paths", default="ldg", help="comma list of ldg, ldg8, ldg4, tex, mix (default ldg)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    paths = a.paths.split(",")
    bad = [x for x in paths if x not in ("ldg", "ldg8", "ldg4", "tex", "mix")]
    if bad:
        print(f"l1_probe: unknown path {bad[0]!r} (ldg, ldg8, ldg4, tex, mix)", file=sys.stderr)
        return 2
    import cupy as cp

    src = (pathlib.Path(__file__).resolve().parent / "l1probe.cu").read_text()
    exprs = {"ldg": "l1_replay<float4>", "ldg8": "l1_replay<float2>", "ldg4": "l1_replay<float>",
             "tex": "l1_replay_tex<false>", "mix": "l1_replay_tex<true>"}
    mod = cp.RawModule(code=src, name_expressions=tuple(exprs.values()), options=("-std=c++17",))
    pos = cp.asarray(np.random.default_rng(3).random((N, 4), np.float32))
    from cupy.cuda import runtime, texture

    ch = texture.ChannelFormatDescriptor(32, 32, 32, 32, runtime.cudaChannelFormatKindFloat)
    res_desc = texture.ResourceDescriptor(runtime.cudaResourceTypeLinear, arr=pos, chDesc=ch, sizeInBytes=pos.nbytes)
    tex = texture.TextureObject(res_desc, texture.TextureDescriptor(readMode=runtime.cudaReadModeElementType))
    pats = patterns(a.warps)
    names = list(pats)
    if a.only is not None:
        names = [names[int(a.only)]]
    blocks, threads = 132 * 8, 256  # 8 warps a block, every pattern replayed by many warps
    out = cp.zeros(blocks * threads, cp.float32)
    res = []
    for name, path in ((nm, pa) for nm in names for pa in paths):
        kern = mod.get_function(exprs[path])
        idx = cp.asarray(np.ascontiguousarray(pats[name]))
        steps = idx.shape[1]
        args = (pos, idx, np.int32(idx.shape[0]), np.int32(steps), np.int32(a.reps), out)
        if path in ("tex", "mix"):
            args = (pos, tex) + args[1:]
        elif path in ("ldg8", "ldg4"):  # the same indices into an array of 8- or 4-byte elements
            args = (pos.ravel()[: N * (2 if path == "ldg8" else 1)],) + args[1:]
        kern((blocks,), (threads,), args)
        t = []
        for _ in range(5):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            kern((blocks,), (threads,), args)
            e1.record()
            e1.synchronize()
            t.append(cp.cuda.get_elapsed_time(e0, e1))
        ms = float(np.median(t))
        warp_steps = blocks * threads // 32 * steps * a.reps
        gathers = int((cp.asnumpy(idx) >= 0).any(axis=2).sum())
        line = {"pattern": name, "path": path, "steps": steps, "gather_steps_per_rep": gathers, "ms": ms,
                "ns_per_warp_step_per_sm": ms * 1e6 / (warp_steps / 132)}
        res.append(line)
        print(f"{name:40s} {path:3s} steps {steps:4d} {ms:8.3f} ms  {line['ns_per_warp_step_per_sm']:.3f} "
              "ns/warp-step/SM")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
