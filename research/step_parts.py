"""Where one MD step of a GPU list strategy spends its time: each part of the step captured as a
CUDA graph of REPS copies, replayed, timed with events; then the whole step (kick_drift, list
upkeep, force, kick) as `harness md` replays it. On the GPU machine:

    python3 research/step_parts.py --strategy verlet_thread_padded --n 4000,large --json OUT.json

The parts run back to back as they do inside the step's graph, so launch gaps count as in the
step. The integrator's parts are timed with dt = 0 (the same kernels; nothing moves), the whole
step with dt = 0.005 (the list is rebuilt as it would be). 'bin' and 'rows' run unguarded (a rebuild's cost); 'update' is the step's guarded upkeep
with the flag the displacement check leaves (usually no rebuild). Where the plan offers fused
steps (the Verlet list's FusedSteps), their parts too: the opening kick and drift, the guarded
upkeep, the force kernel with the particles' update (dt = 0), a rebuild's own parts (the state to
input order and back, the packed copy; unguarded), and a whole fused step (dt = 0.005, inside a run
of steps: upkeep and force).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def timed(cp, fn, reps: int, replays: int) -> float:
    """us per call of fn, from a graph of `reps` calls replayed `replays` times (median of 5)."""
    stream = cp.cuda.get_current_stream()
    stream.begin_capture()
    try:
        for _ in range(reps):
            fn()
    finally:
        g = stream.end_capture()
    for _ in range(3):
        g.launch(stream)
    stream.synchronize()
    out = []
    for _ in range(5):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        for _ in range(replays):
            g.launch(stream)
        b.record(stream)
        b.synchronize()
        out.append(1e3 * cp.cuda.get_elapsed_time(a, b) / (replays * reps))
    return float(np.median(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="verlet_thread_padded")
    ap.add_argument("--n", default="4000")
    ap.add_argument("--launch", default="")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    import cupy as cp

    import strategies
    from harness import md, scenarios
    from harness.cli.common import launch_params
    from strategies.integrate import Integrator

    rows = []
    for size in a.n.split(","):
        problem = scenarios.make("lj_liquid", size, precision=a.precision)
        strategy = strategies.create(a.strategy, **launch_params(a.launch or None))
        plan = strategy.prepare(problem, "forces")
        integ = Integrator.create(plan, problem.positions, md.maxwell_boltzmann(problem.n, 0.72,
                                                                                np.random.default_rng(1)), 0.005)
        still = Integrator.create(plan, problem.positions, np.zeros((problem.n, 3)), 0.0)  # dt 0: nothing moves
        cp.cuda.Device().synchronize()
        stream = cp.cuda.Stream(non_blocking=True)
        n = problem.n
        replays = max(5, min(200, int(2e6 // max(n, 1))))
        with stream:
            plan.set_outputs("forces")
            strategy.step(plan)
            f = plan.forces
            parts = {
                "kick_drift": lambda: still.kick_drift(f),
                "check": lambda: plan._check(),
                "update (guarded)": lambda: plan.update(),
                "bin": lambda: plan.binning.run(),
                "rows": lambda: plan._rows(None),
                "force": lambda: plan.force(),
                "kick": lambda: still.kick(f),
            }
            res = {"n": n, "strategy": strategy.label, "build": getattr(plan, "build_kind", ""),
                   "binning": plan.binning.method}
            for name, fn in parts.items():
                res[name] = timed(cp, fn, a.reps, replays)

            def whole():
                integ.kick_drift(f)
                strategy.step(plan)
                integ.kick(f)
            r0 = plan.rebuild_count()
            res["step"] = timed(cp, whole, a.reps, replays)
            res["rebuilds_per_step"] = (plan.rebuild_count() - r0) / (a.reps * (3 + 5 * replays))
            if hasattr(plan, "md_steps"):  # the fused steps (strategies/integrate_fused.py, FusedSteps): their parts
                plan.set_outputs("forces")
                still.kick_drift(f)  # the plan's positions: the frozen state's (the parts above moved them)
                plan.build()  # its list from them: the frozen steps' guarded upkeep skips, as on most steps
                strategy.compute_built(plan)
                frozen, why = plan.md_steps(still, plan.forces, always=True)
                if frozen is not None:
                    one = cp.ones(2, np.int32)  # a flag that is always set: the rebuild's body, unguarded

                    grid, args = (frozen.guarded_blocks,), (np.int32(n), still.x, still.v)

                    def stage():
                        frozen.k_stage(grid, (256,), (plan.binning.order, frozen.xs, frozen.vs, plan.ref, *args,
                                                      plan.pos, frozen.inv, one, *frozen.adapt_args))

                    def resort():  # the state in the order it is in: its values do not change
                        frozen.k_resort(grid, (256,), (plan.binning.order, frozen.inv, still.x, still.v, np.int32(n),
                                                       frozen.xs, frozen.vs, one))
                    fused = {"fused open": frozen.open, "fused upkeep (guarded)": lambda: frozen.upkeep(0),
                             "fused force (MD 2)": lambda: (frozen.force(0, 2), frozen.force(1, 2)),
                             "fused unsort": frozen._unsort, "fused stage": stage,
                             "fused resort": resort}
                    if getattr(plan.layout, "pack", None) is not None and hasattr(plan.layout, "q"):
                        fused["pack"] = lambda: plan.layout.pack(plan.cur, n, one)
                    for name, fn in fused.items():
                        res[name] = timed(cp, fn, a.reps, replays) / (2 if "MD 2" in name else 1)
                    moving, _ = plan.md_steps(integ, plan.forces, always=True)
                    moving.open()
                    r0 = plan.rebuild_count()
                    res["fused step"] = timed(cp, lambda: moving.step("forces", last=False), a.reps, replays)
                    res["fused rebuilds_per_step"] = (plan.rebuild_count() - r0) / (a.reps * (3 + 5 * replays))
        rows.append(res)
        print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items()), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
