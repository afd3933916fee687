"""The amortised column of `harness bench`: the cost of an MD step on a real trajectory, list upkeep
and rebuilds included (harness.md records the trajectory once per problem)."""
from __future__ import annotations

import time

import numpy as np

import strategies
from mdcore import MODES, Problem
from mdcore.fixed import snap_positions
from strategies import graphs as conditional


def time_amortised(strategy: strategies.Strategy, problem: Problem, frames, outputs: str = "forces") -> dict:
    """The cost of a step on a real trajectory: the frames (harness.md.record) replayed one by one
    into the plan's positions, each followed by the strategy's step (list upkeep: displacement
    checks and every rebuild; force; reduce), divided by the frames. The copies of the frames
    are timed alone and taken off. GPU: the whole replay captured as one CUDA graph where the
    strategy allows (as in the MD loop), timed with events from frame 0's list AMORTISED_REPEATS
    times (the median, and the spread in amortised_spread), so that the host's launches do not
    bound a small system's figure."""
    from . import md

    if strategy.launch.get("headroom") == 0.0:  # padded cells: room for particles that move in
        strategy = type(strategy)(**{**strategy.launch, "headroom": md.HEADROOM})
    p0 = Problem.make(frames[0], problem.box, problem.potential, problem.precision, label=problem.label)
    gpu = strategy.backend == "cuda"
    plan = strategy.prepare(p0, outputs)
    L = plan.problem.box.array  # fixed: the snapped box, and the frames snapped to its grid (mdcore.fixed)
    if MODES[problem.precision].fixed:
        frames = snap_positions(frames, L, plan.problem.box.periodic)
    centred = frames - 0.5 * L
    centred -= L * np.floor(centred / L + 0.5)
    n, k = problem.n, len(frames)
    info = {"amortised_frames": k - 1, "skin": strategy.launch.get("skin")}
    # adapt: each frame's velocities from the recorded steps (md.FrameVelocities), copied in with the frame
    # (and timed off with it); frame 0's list knows none, as the MD loop's first list
    feed = md.FrameVelocities(plan) if md.feeds_velocities(strategy, plan) else None
    if feed is not None:
        info["amortised_velocities"] = "from the frames"
    if gpu:
        import cupy

        dev = cupy.asarray(centred.astype(plan.real))
        vdev = None
        if feed is not None:
            vdev = cupy.zeros((k, n, 3), feed.v.dtype)
            for i in range(1, k):
                vdev[i] = cupy.asarray(md.FrameVelocities.of(frames, i, L).astype(feed.v.dtype))
        stream = cupy.cuda.Stream(non_blocking=True)
        cupy.cuda.Device().synchronize()
        with stream:
            plan.upload()
            strategy.compute(plan)  # the list of frame 0
            if feed is not None:
                plan.use_velocities(feed)

            def copy(i):
                plan.pos[:n, :3] = dev[i]
                if vdev is not None:
                    feed.set(vdev[i])
            copy(1)
            strategy.step(plan)  # every kernel compiled before the capture
            # the whole replay as one CUDA graph (and the copies alone as another): timed on the
            # device, so that a small system's step is not hidden behind the host's launches
            nodes = dict(conditional.NODES)
            replay, note = _capture_replay(strategy, plan, stream, copy, k)
            copies_only, _ = _capture_replay(None, plan, stream, copy, k)
            info["amortised_graph"] = note
            if note == "graph" and strategy.list_reuse:  # how the list upkeep was recorded
                info["amortised_upkeep"] = conditional.recorded(nodes)
            t0, t1 = cupy.cuda.Event(), cupy.cuda.Event()
            samples = []
            for _ in range(AMORTISED_REPEATS):
                copy(0)
                if feed is not None:
                    plan.use_velocities(None)
                strategy.compute(plan)  # frame 0's list again: every repeat replays the same steps
                if feed is not None:
                    plan.use_velocities(feed)
                before, pruned_before = plan.rebuild_count(), plan.prune_count()
                t0.record(stream)
                replay()
                t1.record(stream)
                t1.synchronize()
                total = cupy.cuda.get_elapsed_time(t0, t1)
                t0.record(stream)
                copies_only()
                t1.record(stream)
                t1.synchronize()
                samples.append(max(total - cupy.cuda.get_elapsed_time(t0, t1), 0.0))
            samples.sort()
            total, copies = samples[len(samples) // 2], 0.0
            info["amortised_spread"] = (samples[-1] - samples[0]) / total if total > 0 else 0.0
    else:
        host = centred.astype(plan.real)
        vels = None
        if feed is not None:
            vels = np.zeros((k, n, 3), feed.v.dtype)
            for i in range(1, k):
                vels[i] = md.FrameVelocities.of(frames, i, L)
        plan.upload()
        strategy.compute(plan)
        if feed is not None:
            plan.use_velocities(feed)

        def copy(i):
            plan.pos[:] = host[i]
            if vels is not None:
                feed.set(vels[i])
        copy(1)
        strategy.step(plan)
        before, pruned_before = plan.rebuild_count(), plan.prune_count()
        t = time.perf_counter()
        for i in range(1, k):
            copy(i)
            strategy.step(plan)
        total = 1e3 * (time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(1, k):
            copy(i)
        copies = 1e3 * (time.perf_counter() - t)
    info["amortised_ms"] = max(total - copies, 0.0) / (k - 1)
    if before is not None:
        info["rebuilds"] = plan.rebuild_count() - before  # over the replayed frames
        if pruned_before is not None:
            info["prunes"] = plan.prune_count() - pruned_before  # the inner list's, over the same frames
        info["list_bytes"] = plan.launch_info.get("list_bytes")
    listed = plan.listed_pairs()
    if listed is not None:
        info["listed_pairs"] = listed  # the last frame's list: the force phase's checks
        info["list_visits"] = plan.visits_per_pair  # 2: every pair in both rows (full list), 1: once
    return info


AMORTISED_REPEATS = 3  # replays of the whole trajectory on the GPU (the median is reported)


def _capture_replay(strategy, plan, stream, copy, k):
    """(a function that replays frames 1..k-1: each copied into the plan, then the strategy's step
    (strategy None: the copies alone), "graph" or why it runs eagerly)."""
    def run():
        for i in range(1, k):
            copy(i)
            if strategy is not None:
                strategy.step(plan)
    try:
        stream.begin_capture()
        try:
            run()
        finally:
            g = stream.end_capture()
        return (lambda: g.launch(stream)), "graph"
    except Exception as e:
        try:
            import cupy

            cupy.cuda.Device().synchronize()
        except Exception:
            pass
        return run, f"eager ({type(e).__name__}; the host's launches may bound it)"

