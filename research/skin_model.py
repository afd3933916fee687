"""Per-particle skins against one skin for all, modelled on a recorded NVE trajectory: how often each
Verlet list would be rebuilt and how long its rows would be (docs/decisions/verlet-adaptive-skin.md).

- uniform (the list now): every pair within cutoff + skin at the build; rebuilt once some particle
  has moved more than skin / 2 since.
- per particle: at each build every particle gets its own half-skin h_i = m + K |x_i - x_i'|, its
  displacement over the step before the build (x') taken K times, plus a margin m (--since-build:
  its displacement since the last build over the steps since, the first list uniform); the list holds
  every pair within cutoff + h_i + h_j, and is rebuilt once some particle has moved more than its
  own h_i. Exact as the uniform list is: a pair left out was at least cutoff + h_i + h_j apart, and
  each end has moved at most its own h since.

A fast particle gets a wide skin and a slow one a narrow one, so that the fastest particle no longer
sets every pair's buffer. Rows are counted on a sample of particles at every build (exact pairs, no
padding).

    python3 research/skin_model.py --n 1048576 --frames 200 --policy 0.15:u,0.05:8,0.06:8

A policy is m:K (K = u: the uniform list with skin 2 m). The frames come from harness.md.record
(the amortised column's trajectory: LJ liquid, T 0.72, dt 0.005, after 500 steps). Runs on the GPU
where CuPy has one, else on the CPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import md, scenarios  # noqa: E402
from mdcore.errors import InputError  # noqa: E402
from strategies.cuda import device_status  # noqa: E402

SAMPLE = 1500  # rows counted at each build
CHUNK = 100    # sample rows a distance block holds


def _xp():
    if device_status()[0]:
        import cupy

        return cupy
    return np


def parse_policies(text: str) -> list[tuple[float, float | None]]:
    """'m:K,...' -> [(m, K)], K None for 'u' (uniform, skin 2 m)."""
    out = []
    for item in filter(None, text.split(",")):
        m, sep, k = item.partition(":")
        try:
            mv = float(m)
            kv = None if k.strip() == "u" else float(k)
        except ValueError:
            raise InputError(f"skin_model: policy {item!r} is not m:K (K a number or u)") from None
        if not sep or not mv >= 0.0 or (kv is not None and not kv >= 0.0):
            raise InputError(f"skin_model: policy {item!r} needs m >= 0 and K >= 0 (or u)")
        out.append((mv, kv))
    if not out:
        raise InputError("skin_model: no policy given")
    return out


class Model:
    def __init__(self, xp, frames: np.ndarray, L: float, cutoff: float, sample: int, seed: int = 0):
        self.xp, self.L, self.cutoff = xp, L, cutoff
        self.x = [xp.asarray(f) for f in frames]
        n = len(frames[0])
        rng = np.random.default_rng(seed)
        self.sample = xp.asarray(np.sort(rng.choice(n, size=min(n, sample), replace=False)))

    def pbc(self, d):
        return d - self.L * self.xp.rint(d / self.L)

    def norm(self, d):
        return self.xp.sqrt((d * d).sum(axis=1))

    def row_mean(self, x, h) -> float:
        """Mean row length over the sample: partners j != i within cutoff + h_i + h_j."""
        xp, tot = self.xp, 0
        for a in range(0, len(self.sample), CHUNK):
            idx = self.sample[a:a + CHUNK]
            d = self.pbc(x[idx, None, :] - x[None, :, :])
            reach = self.cutoff + h[idx, None] + h[None, :]
            inside = (d * d).sum(axis=2) < reach * reach
            inside[xp.arange(len(idx)), idx] = False
            tot += int(inside.sum())
        return tot / len(self.sample)

    def run(self, m: float, k: float | None, since_build: bool = False, first: float = 0.15,
            cap: float | None = None) -> dict:
        """Builds from frame 1 on (frame 0 gives the first displacement), rebuilt by the policy's trigger;
        since_build: the move since the last build over its age (the first list uniform, half-skin `first`)."""
        xp, frames = self.xp, len(self.x)
        f, builds, rows, hmax, last = 1, 0, [], [], None
        while True:
            if k is None:
                h = xp.full(len(self.x[f]), m)
            elif not since_build:
                h = m + k * self.norm(self.pbc(self.x[f] - self.x[f - 1]))
            elif last is None:
                h = xp.full(len(self.x[f]), first)
            else:
                h = m + k * self.norm(self.pbc(self.x[f] - self.x[last])) / (f - last)
            if cap is not None and k is not None:  # verlet_thread_padded's adapt: at most skin / 2
                h = xp.minimum(h, cap)
            last = f
            rows.append(self.row_mean(self.x[f], h))
            hmax.append(float(h.max()))
            g = f + 1
            while g < frames and not bool((self.norm(self.pbc(self.x[g] - self.x[f])) > h).any()):
                g += 1
            if g >= frames:
                break
            builds, f = builds + 1, g
        return {"m": m, "K": k, "steps": frames - 2, "rebuilds": builds, "row": float(np.mean(rows)),
                "h_max": float(np.mean(hmax))}


def model(n: int, frames: int, policies, sample: int = SAMPLE, since_build: bool = False,
          cap: float | None = None) -> list[dict]:
    xp = _xp()
    p = scenarios.make("lj_liquid", n, precision="fp64" if xp is np else "mixed")
    got = md.record(p, frames + 1)
    m = Model(xp, got, float(p.box.lengths[0]), float(p.potential.cutoff), sample)
    return [m.run(mv, kv, since_build, cap=cap) for mv, kv in policies]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=32000, help="particles (LJ liquid; default 32000)")
    ap.add_argument("--frames", type=int, default=200, help="consecutive steps (default 200)")
    ap.add_argument("--policy", default="0.15:u,0.05:8", help="m:K,... (K = u: uniform, skin 2 m)")
    ap.add_argument("--sample", type=int, default=SAMPLE, help=f"rows counted at each build (default {SAMPLE})")
    ap.add_argument("--skin", type=float, help="per-particle half-skins at most half of this (adapt's cap; default: none)")
    ap.add_argument("--since-build", action="store_true",
                    help="K times the move since the last build over its age (the first list uniform, skin 0.3)")
    a = ap.parse_args(argv)
    try:
        if a.frames < 3 or a.sample < 1 or a.n < 2 or (a.skin is not None and not a.skin > 0.0):
            raise InputError("skin_model: --frames must be at least 3, --sample and --n at least 1 and 2, --skin > 0")
        pols = parse_policies(a.policy)
        res = model(a.n, a.frames, pols, a.sample, a.since_build, None if a.skin is None else 0.5 * a.skin)
    except InputError as e:
        print(e, file=sys.stderr)
        return 2
    for r in res:
        what = f"uniform skin {2 * r['m']:g}" if r["K"] is None else f"per particle m {r['m']:g} K {r['K']:g}"
        every = f"every {r['steps'] / r['rebuilds']:.1f} steps" if r["rebuilds"] else "none"
        print(f"LJ {a.n:,}, {what}: {r['rebuilds']} rebuilds in {r['steps']} steps ({every}), "
              f"rows {r['row']:.1f} entries, largest half-skin {r['h_max']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
