"""The rigid-molecule MD step on the device (strategies/rigid_cuda.py DeviceRigid) four ways, on SPC/E water
with verlet_warp_padded in fp32: the list's build decided by the host each step (upkeep=host: the flag read
back, a synchronisation a step) against the device flag (upkeep=device), launched step by step and replayed
as CUDA graphs, kicks fused and apart. Milliseconds per step over N steps after 50 (CUDA events on the step's
stream, and the host's wall clock), and the list builds among them; two rounds, alternating.

    python3 research/molecule_step.py [--size medium] [--steps 400] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import time

WAYS = (("host", False, True), ("device", False, True), ("device", True, True), ("device", True, False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="medium", help="the scenario size (medium: 32,768 molecules)")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import cupy as cp

    from harness import molecule_scenarios as S
    from harness import rigid_md
    from strategies import molecules_cuda as mc
    from strategies.rigid_cuda import DeviceRigid

    mols, model = S.make("spce_water", args.size, seed=1)
    rows = []
    print(f"{len(mols.centres)} molecules of SPC/E water, verlet_warp_padded fp32, dt 0.01")
    for rnd in range(2):
        for upkeep, graphs, fused in WAYS:
            state = rigid_md.start(mols, model, 2.494, 1)
            plan = mc.MoleculePlan("verlet_warp_padded", mols, model, "fp32")
            dev = DeviceRigid(plan, state, fused=fused, upkeep=upkeep)
            if graphs:
                dev.capture(0.01)
            dev.steps(0.01, 50, graphs=graphs)
            dev.settle()
            b0 = plan.rebuilds
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            t0 = time.perf_counter()
            e0.record(dev.stream)
            dev.steps(0.01, args.steps, graphs=graphs)
            e1.record(dev.stream)
            dev.settle()
            wall = (time.perf_counter() - t0) / args.steps * 1e3
            ms = cp.cuda.get_elapsed_time(e0, e1) / args.steps
            dev.check()
            row = {"round": rnd, "upkeep": upkeep, "graphs": graphs, "fused": fused, "ms_per_step": ms,
                   "wall_ms_per_step": wall, "builds": plan.rebuilds - b0, "steps": args.steps}
            rows.append(row)
            print(f"round {rnd} upkeep={upkeep:6s} graphs={graphs!s:5s} fused={fused!s:5s} {ms:.4f} ms/step "
                  f"(events), {wall:.4f} (wall), {row['builds']} builds in {args.steps} steps")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"molecules": len(mols.centres), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
