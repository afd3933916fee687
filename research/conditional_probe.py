"""What a conditional graph node costs on this GPU (strategies/graphs.py), against the guarded
launches it replaces: chains of tiny kernels captured 200 times in one graph and replayed, in us
per link (step_parts.timed: CUDA events, median of 5 replays after 3 warm-ups).

    python3 research/conditional_probe.py [--json FILE]

Shapes (k: a one-block kernel that adds 1 to a counter; g: the same, guarded by a device flag,
returning at once where it is clear; grid: its blocks):
  base          k -> k
  if-clear      k -> gate -> IF{k} -> k, the flag clear (the body skipped)
  if-set        the same, the flag set (the body runs)
  inline-g      k -> {g (1 block)} -> k: upkeep_if's body in line, a child graph (the flag clear)
  guard-1       k -> g (1 block) -> k, the flag clear
  guard-1024    k -> g (1,024 blocks of 256) -> k, the flag clear
  guard-4x1024  k -> 4 x g (1,024 blocks) -> k, the flag clear
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_parts import timed  # noqa: E402  (a graph of the calls replayed, CUDA events, median)

REPS = 200


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import cupy

    from strategies import graphs

    ok, why = graphs.conditional_status()
    if not ok:
        print(f"conditional nodes unavailable: {why}", file=sys.stderr)
        return 2
    from strategies.cuda import kernel

    tick = kernel("graph.cu", "graph_tick<int>")
    c = cupy.zeros(1, np.int32)
    flag = cupy.zeros(1, np.int32)
    null = np.uint64(0)

    def k():
        tick((1,), (32,), (c, null))

    def g(blocks):
        tick((blocks,), (256,), (c, flag))

    shapes = {
        "base": lambda: (k(), k()),
        "inline-g": lambda: (k(), _inline(), k()),
        "if-clear": lambda: (k(), _if(), k()),
        "guard-1": lambda: (k(), g(1), k()),
        "guard-1024": lambda: (k(), g(1024), k()),
        "guard-4x1024": lambda: (k(), [g(1024) for _ in range(4)], k()),
    }

    def _if():
        with graphs.upkeep_if(flag, least=1):
            k()

    def _inline():
        with graphs.upkeep_if(flag, least=2):
            g(1)

    out = {}
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for name, fn in list(shapes.items()) + [("if-set", shapes["if-clear"])]:
            k()  # compiled before the capture
            flag.fill(1 if name == "if-set" else 0)
            stream.synchronize()
            try:
                out[name] = timed(cupy, fn, REPS, 1)
            except Exception as e:
                print(f"{name:14s} not captured: {type(e).__name__}: {e}")
                continue
            print(f"{name:14s} {out[name]:7.2f} us per link-chain ({REPS} in one graph)")
    base = out["base"]
    for name in out:
        if name != "base":
            print(f"{name:14s} {out[name] - base:+7.2f} us against base")
    if args.json:
        args.json.write_text(json.dumps({"us_per_chain": out, "reps": REPS}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
