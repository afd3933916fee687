"""How often a Verlet list would be rebuilt on a recorded NVE trajectory under two exact triggers, as a
model of the rebuild's share of an MD step (docs/decisions/verlet-adaptive-skin.md):

- skin/2 (what the list does now): rebuild once some particle has moved more than skin / 2 since
  the build;
- cells: bin the build's positions into cells of side >= r_list (the list's own binning; --side:
  larger ones), take each cell's largest and second largest displacements D_C and D2_C, and
  rebuild once D_C + D2_C > skin in some cell, or D_C + D_C' > skin for two neighbouring cells, or
  some particle has moved more than (side - cutoff) / 2.

Both are exact. A pair left out of the list was at least r_list apart at the build. If both particles
lie in one cell, they have moved at most D_C + D2_C together; in neighbouring cells, at most D_C + D_C'.
Either way that is at most the skin, so they are still at least the cutoff apart. Otherwise a whole
cell lay between them, at least `side` wide, and they have moved at most side - cutoff. --check
asserts this on every frame by brute force (small N only). (A cell's largest displacement taken
twice would make the trigger skin/2's: the fastest particle's cell with itself.)

    python3 research/trigger_model.py --n 1048576 --frames 200 [--skin 0.3] [--side S] [--check]

The frames come from harness.md.record (the amortised column's trajectory: LJ liquid, T 0.72,
dt 0.005, after 500 steps). Runs on the GPU where CuPy has one, else on the CPU.
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

CHECK_MOST = 20000  # particles --check compares all pairs of


def _xp():
    """CuPy where it sees a device (strategies.cuda.device_status), else numpy."""
    if device_status()[0]:
        import cupy

        return cupy
    return np


class Triggers:
    """Both triggers over the frames of one box, rebuilding each list when its trigger fires."""

    def __init__(self, xp, L: float, rlist: float, cutoff: float, skin: float):
        self.xp, self.L, self.cutoff, self.skin = xp, L, cutoff, skin
        self.nc = int(L // rlist)
        if self.nc < 3:
            raise InputError(f"trigger_model: a box of side {L:.3g} holds fewer than 3 cells of side {rlist:g}")
        self.side = L / self.nc

    def moved(self, x, ref):
        d = x - ref
        d -= self.L * self.xp.rint(d / self.L)
        return self.xp.sqrt((d * d).sum(axis=1))

    def cells_of(self, ref):
        c = self.xp.floor(ref / self.side).astype(np.int64) % self.nc
        return (c[:, 0] * self.nc + c[:, 1]) * self.nc + c[:, 2]

    def fires_skin(self, d) -> bool:
        return bool(d.max() > 0.5 * self.skin)

    def _cell_max(self, d, cell):
        D = self.xp.zeros(self.nc ** 3)
        if self.xp is np:
            np.maximum.at(D, cell, d)
        else:
            import cupyx

            cupyx.scatter_max(D, cell, d)
        return D

    def fires_cells(self, d, cell) -> bool:
        xp = self.xp
        if float(d.max()) > 0.5 * (self.side - self.cutoff):
            return True
        D = self._cell_max(d, cell)
        top = d == D[cell]  # a cell's largest (ties: all of them)
        ties = xp.zeros(self.nc ** 3)
        if xp is np:
            np.add.at(ties, cell, top.astype(float))
        else:
            import cupyx

            cupyx.scatter_add(ties, cell, top.astype(float))
        D2 = xp.where(ties >= 2, D, self._cell_max(xp.where(top, 0.0, d), cell))  # the second largest
        if float((D + D2).max()) > self.skin:
            return True
        D = D.reshape(self.nc, self.nc, self.nc)
        near = xp.zeros_like(D)  # the 26 neighbours' largest
        for sx in (-1, 0, 1):
            for sy in (-1, 0, 1):
                for sz in (-1, 0, 1):
                    if sx or sy or sz:
                        near = xp.maximum(near, xp.roll(D, (sx, sy, sz), axis=(0, 1, 2)))
        return bool((D + near).max() > self.skin)


def _check(x, ref, L, rlist, cutoff) -> None:
    """Every pair within the cutoff at x was within r_list at ref (the list built at ref holds it)."""
    x, ref = np.asarray(x), np.asarray(ref)
    for a in range(0, len(x), 512):
        d = x[a:a + 512, None, :] - x[None, :, :]
        d -= L * np.rint(d / L)
        e = ref[a:a + 512, None, :] - ref[None, :, :]
        e -= L * np.rint(e / L)
        now, then = (d * d).sum(2), (e * e).sum(2)
        bad = (now < cutoff * cutoff) & (then >= rlist * rlist)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise AssertionError(f"pair ({a + i}, {j}) inside the cutoff but outside r_list at the build")


def model(n: int, frames: int, skin: float, check: bool = False, equilibrate: int = md.EQUILIBRATE,
          side: float | None = None) -> dict:
    """Rebuilds over `frames` consecutive steps under each trigger (the first frame is a build); the
    cells trigger's cells of side at least `side` (default r_list)."""
    xp = _xp()
    p = scenarios.make("lj_liquid", n, precision="fp64" if xp is np else "mixed")
    cutoff = float(p.potential.cutoff)
    L = float(p.box.lengths[0])
    rlist = cutoff + skin
    if side is not None and side < rlist:
        raise InputError(f"trigger_model: --side {side:g} is below r_list {rlist:g}")
    t = Triggers(xp, L, rlist if side is None else side, cutoff, skin)
    got = md.record(p, frames, equilibrate=equilibrate)
    ref_s = ref_c = xp.asarray(got[0])
    cell = t.cells_of(ref_c)
    builds = {"at_half_skin": 0, "by_cells": 0}
    for f in range(1, frames):
        x = xp.asarray(got[f])
        if t.fires_skin(t.moved(x, ref_s)):
            builds["at_half_skin"] += 1
            ref_s = x
        if t.fires_cells(t.moved(x, ref_c), cell):
            builds["by_cells"] += 1
            ref_c = x
            cell = t.cells_of(ref_c)
        elif check:
            _check(x, ref_c, L, rlist, cutoff)
    return {"n": n, "frames": frames, "skin": skin, "side": t.side, "cells_a_side": t.nc, **builds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256000, help="particles (LJ liquid; default 256000)")
    ap.add_argument("--frames", type=int, default=200, help="consecutive steps (default 200)")
    ap.add_argument("--skin", type=float, default=0.3, help="the list's skin (default 0.3)")
    ap.add_argument("--side", type=float, help="the cells trigger's cells at least this wide (default r_list)")
    ap.add_argument("--check", action="store_true", help=f"brute-force check of every frame (N <= {CHECK_MOST})")
    a = ap.parse_args(argv)
    if a.frames < 2 or not a.skin > 0 or (a.check and a.n > CHECK_MOST):
        print(f"trigger_model: --frames must be at least 2, --skin positive, and --check takes N <= {CHECK_MOST}",
              file=sys.stderr)
        return 2
    try:
        r = model(a.n, a.frames, a.skin, a.check, side=a.side)
    except InputError as e:
        print(f"trigger_model: {e}", file=sys.stderr)
        return 2
    steps = r["frames"] - 1
    half, cells = r["at_half_skin"], r["by_cells"]
    print(f"LJ {r['n']:,}, skin {r['skin']:g}, cells of side {r['side']:.3f} ({r['cells_a_side']} a side), "
          f"{steps} steps: rebuilds at skin/2 {half}, by cells {cells}"
          + (f" (a rebuild every {steps / half:.1f} against {steps / cells:.1f} steps)" if half and cells else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
