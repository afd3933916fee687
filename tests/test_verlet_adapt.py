"""The Verlet list's per-particle skins (launch parameter adapt, strategies/verlet/): each particle's
half-skin m + K dt |v| from its velocity at a rebuild of the MD loop (fused or plain steps), a pair listed where
r < cutoff + h_i + h_j, each particle's trigger its own h. The list must stay exact (every pair inside
the cutoff listed at every step), and where no velocity is known it is the uniform list."""
from dataclasses import replace

import numpy as np
import pytest

import reference
import strategies
from harness import md, scenarios, verify
from mdcore import InputError, Problem
from strategies.verlet import parse_adapt


def _problem(n=8000, precision="fp32"):
    p = scenarios.make("lj_liquid", n, seed=2, precision=precision)
    return replace(p, potential=replace(p.potential, shift=True))


# --- CPU (CI) -------------------------------------------------------------------------------

@pytest.mark.parametrize("value, want", [("off", None), ("0.08:6", (0.08, 6.0)), ("0.05:0", (0.05, 0.0))])
def test_adapt_values(value, want):
    assert parse_adapt("x", value) == want


@pytest.mark.parametrize("value", ["0.08", "0:6", "-0.1:6", "0.1:-1", "a:b", "0.1:inf", "nan:2", 3])
def test_bad_adapt_values_are_refused_with_one_line(value):
    with pytest.raises(InputError, match=r"adapt must be 'off' or m:K"):
        strategies.create("verlet_thread_padded", adapt=value)


def test_adapt_refuses_the_inner_list_and_the_other_builds():
    with pytest.raises(InputError, match="take prune=off"):
        strategies.create("verlet_thread_padded", adapt="0.08:6", prune=0.1)
    for build in ("cell", "warp"):
        with pytest.raises(InputError, match="adapt needs the strip build"):
            strategies.create("verlet_thread_padded", adapt="0.08:6", build=build)
    s = strategies.create("verlet_thread_padded", adapt="0.08:6", build="opposite")
    assert s.adapt == (0.08, 6.0) and "adapt=0.08:6" in s.label


def test_the_cpu_list_takes_adapt_too():
    s = strategies.create("verlet_thread_cpu", adapt="0.08:6")
    assert s.adapt == (0.08, 6.0)
    with pytest.raises(InputError, match=r"adapt must be 'off' or m:K"):
        strategies.create("verlet_thread_cpu", adapt="fast")
    with pytest.raises(InputError, match="unknown launch parameter"):
        strategies.create("verlet_thread_pairrows", adapt="0.08:6")


def test_adapt_builds_are_compiled_in_ci():
    exprs = strategies.create("verlet_thread_padded").data_expressions()["verlet_build.cu"]
    assert "verlet_build<float, false, true, false, true>" in exprs
    assert "verlet_build<float, false, true, true, true>" in exprs
    assert "verlet_build<double, true, false, false, true>" in exprs


def test_the_cpu_list_with_adapted_skins_keeps_the_reference_energies():
    """verlet_thread_cpu with adapt (the plain MD loop gives it the velocities): every sample's total
    energy is the full shell's (float64), its rows are shorter than the uniform list's, and the last
    list holds every pair within the cutoff now and only pairs within cutoff + h_i + h_j at its build."""
    p = _problem(500, "fp64")

    def run(name, **launch):
        return md.run(strategies.create(name, **launch), p, steps=200, dt=0.005, sample=50, seed=3)

    ref, adapted = run("fullshell_thread_cpu"), run("verlet_thread_cpu", skin=0.4, adapt="0.03:4")
    for a, b in zip(ref.samples, adapted.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)
    assert adapted.rebuilds > 1
    # the list itself, on a plan stepped as md.run steps it
    from strategies.integrate import Integrator

    s = strategies.create("verlet_thread_cpu", skin=0.4, adapt="0.03:4")
    plan = s.prepare(p, "all")
    integ = Integrator.create(plan, p.positions, md.maxwell_boltzmann(p.n, 0.72, np.random.default_rng(3)), 0.005)
    out = md._evaluate(s, plan, "all")
    steps_, why = md._stepper(s, plan, integ, out.forces, False)
    steps_.open()
    for q in range(60):
        steps_.step("forces", last=q == 59)
    assert plan.rebuild_count() > 2
    h = plan.h.astype(np.float64)
    assert 0.0 < h.min() < h.max() <= 0.2 and np.unique(h).size > p.n // 2  # adapted: each its own
    L, rc = p.box.array, float(p.potential.cutoff)
    now = plan.pos[:, :3].astype(np.float64)
    built = plan.ref[:, :3].astype(np.float64)
    rows = {int(plan.order[k]): set(plan.nbr[k, :plan.length[k]].tolist()) for k in range(p.n)}
    for i in range(p.n):
        d = now[i] - now
        d -= L * np.rint(d / L)
        want = set(np.flatnonzero(np.sqrt((d * d).sum(axis=1)) < rc - 1e-9).tolist()) - {i}
        assert want <= rows[i], (i, sorted(want - rows[i]))
        e = built[i] - built[sorted(rows[i])]
        e -= L * np.rint(e / L)
        assert np.all(np.sqrt((e * e).sum(axis=1)) < rc + h[i] + h[sorted(rows[i])] + 1e-9), i
    assert plan.listed_pairs() / p.n < 4.0 / 3.0 * np.pi * (rc + 0.3) ** 3 * 0.8442  # shorter than skin 0.3's


def test_frame_velocities_take_the_minimum_image():
    """A replay's velocities (md.FrameVelocities): (x_k - x_{k-1}) / dt, across a periodic face too."""
    L = np.array([10.0, 10.0, 10.0])
    frames = np.array([[[9.99, 5.0, 0.002]], [[0.01, 5.0, 9.998]]])
    v = md.FrameVelocities.of(frames, 1, L, dt=0.005)
    assert np.allclose(v, [[4.0, 0.0, -0.8]])


def _replayed(n=1500, frames=81):
    p = _problem(n, "fp64")
    case = verify.Case("lj_liquid", p)
    return case, md.record(p, frames=frames, equilibrate=40)


def test_replayed_frames_size_the_cpu_lists_half_skins():
    """verify's replayed frames and bench's amortised column hand an adapted list each frame's velocities
    (the recorded steps' differences over dt): a margin of 0.02 rebuilds more often than the uniform list,
    every frame still matches the float64 reference, and a trigger switched off still fails."""
    from harness import bench

    case, frames = _replayed()
    uniform = verify.replay_cell(strategies.create("verlet_thread_cpu"), case, "fp64", frames)
    adapted = verify.replay_cell(strategies.create("verlet_thread_cpu", adapt="0.02:4"), case, "fp64", frames)
    assert uniform["status"] == "pass" and adapted["status"] == "pass", adapted.get("detail")
    assert adapted["rebuilds"] > uniform["rebuilds"] + 2
    bad = verify.replay_cell(strategies.create("verlet_thread_cpu", adapt="0.02:4", rebuild="never"), case, "fp64",
                             frames)
    assert bad["status"] == "FAIL"
    for precision in ("fp32", "fixed"):  # fixed point: the velocities in the compute type, not the integer sums
        got = verify.replay_cell(strategies.create("verlet_thread_cpu", adapt="0.02:4"), case, precision, frames)
        assert got["status"] == "pass" and got["rebuilds"] > uniform["rebuilds"] + 2, (precision, got.get("detail"))
    a = bench.time_amortised(strategies.create("verlet_thread_cpu", adapt="0.02:4"), case.problem, frames, "forces")
    u = bench.time_amortised(strategies.create("verlet_thread_cpu"), case.problem, frames, "forces")
    assert a["amortised_velocities"] == "from the frames" and "amortised_velocities" not in u
    assert a["rebuilds"] > u["rebuilds"] and a["listed_pairs"] < u["listed_pairs"]


# --- GPU --------------------------------------------------------------------------------------

def _at(p: Problem, x: np.ndarray) -> Problem:
    return Problem.make(np.mod(x, p.box.array), p.box, p.potential, p.precision, label=p.label)


@pytest.mark.gpu
def test_adapted_fused_steps_list_every_pair():
    """A narrow margin (many rebuilds, short rows): after every tenth fused step the pairs, energy and
    forces of the adapted list are the reference's at the same positions (the fused steps keep the
    closing kick's forces in slot order, FusedSteps.fs: read back through the list's order)."""
    from strategies.integrate import Integrator

    p = _problem()
    s = strategies.create("verlet_thread_padded", adapt="0.02:4", tpp=1)
    plan = s.prepare(p, "all")
    integ = Integrator.create(plan, p.positions, md.maxwell_boltzmann(p.n, 0.72, np.random.default_rng(3)), 0.005)
    out = md._evaluate(s, plan, "all")
    steps_, why = md._stepper(s, plan, integ, out.forces, "always")
    assert why == "on"
    for _ in range(8):
        steps_.open()
        for q in range(10):
            got = steps_.step("all" if q == 9 else "forces", last=q == 9)
        forces = np.empty((p.n, 3))
        forces[plan.binning.order[: p.n].get()] = steps_.fs.get().reshape(p.n, 3)
        got = replace(got.to_host(), forces=forces)
        now = _at(p, steps_.positions())
        ref = reference.compute(now)
        # verify's verdict: the pair count exact but for pairs within fp32 rounding of the cutoff
        assert verify.compare(got, ref, now)["failures"] == []
    assert plan.rebuild_count() > 4
    rows = plan.listed_pairs() / p.n
    assert rows < 70.0, rows  # the uniform list of skin 0.3 holds about 75.6 a row; h ~ 0.05 gives ~62
    # the last list itself: each row holds every partner within the cutoff now (a band of 1e-4 left to
    # rounding), and only partners within cutoff + h_i + h_j at the build, h the build's (ref's w)
    from test_verlet_prune import _rows

    n, L, rc = p.n, p.box.array, float(p.potential.cutoff)
    listed = _rows(plan.nbr, plan.len, plan.cap, n)
    cur = plan.cur.get()[:n, :3].astype(np.float64)
    ref4 = plan.ref.get()[:n].astype(np.float64)
    h = ref4[:, 3]
    assert 0.0 < h.min() < h.max() <= 0.15 + 1e-7 and np.unique(h).size > n // 2
    for a in range(0, n, 500):
        d = cur[a:a + 500, None, :] - cur[None, :, :]
        d -= L * np.rint(d / L)
        near = np.sqrt((d * d).sum(axis=2)) < rc - 1e-4
        e = ref4[a:a + 500, None, :3] - ref4[None, :, :3]
        e -= L * np.rint(e / L)
        built = np.sqrt((e * e).sum(axis=2))
        for k in range(near.shape[0]):
            s = a + k
            row = set(listed[s][0]) | set(listed[s][1])
            want = set(np.flatnonzero(near[k]).tolist()) - {s}
            assert want <= row, (s, sorted(want - row))
            reach = rc + h[s] + h[sorted(row)] + 1e-4
            assert np.all(built[k, sorted(row)] < reach), s


@pytest.mark.gpu
def test_adapt_without_velocities_is_the_uniform_list():
    """Where no velocity is known (the benchmark's columns: a plan evaluated outside the MD loop) every
    half-skin is skin / 2: the same pairs inside the cutoff in the same order, the uniform list's bits."""
    p = _problem(4000)
    a = strategies.create("verlet_thread_padded", tpp=1).evaluate(p)
    b = strategies.create("verlet_thread_padded", tpp=1, adapt="0.08:6").evaluate(p)
    assert np.array_equal(a.forces, b.forces) and a.energy == b.energy and a.pairs == b.pairs
    assert np.array_equal(a.virial, b.virial)


@pytest.mark.gpu
def test_plain_adapted_steps_give_the_fused_steps_bits():
    """The plain steps hand the plan their integrator (use_velocities): each rebuild writes the half-skins
    from the velocities (verlet_half_skins) as the fused steps' verlet_stage does, so both loops take the
    same lists at the same steps: the same bits, and rebuilds at other steps than the uniform list's."""
    p = _problem(4000)

    def run(fuse, **launch):
        return md.run(strategies.create("verlet_thread_padded", tpp=1, **launch), p, steps=200, dt=0.005,
                      sample=50, fuse=fuse)

    plain, fused = run(False, adapt="0.02:4"), run("always", adapt="0.02:4")
    assert plain.fused == "off" and fused.fused == "on"
    assert [vars(s) for s in plain.samples] == [vars(s) for s in fused.samples]
    assert plain.rebuilds == fused.rebuilds
    uniform = run(False)
    assert plain.rebuilds > uniform.rebuilds  # margins of 0.02 (at most 0.15): more builds than skin / 2's
    for a, b in zip(uniform.samples, plain.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-4)


@pytest.mark.gpu
def test_plain_adapted_steps_size_each_half_skin():
    """After plain steps with adapt, the last build's half-skins (ref's w) are the velocities' at that
    build, each its own, and the list holds every pair within the cutoff at the positions of now."""
    from strategies.integrate import Integrator

    p = _problem()
    s = strategies.create("verlet_thread_padded", adapt="0.02:4", tpp=1)
    plan = s.prepare(p, "all")
    integ = Integrator.create(plan, p.positions, md.maxwell_boltzmann(p.n, 0.72, np.random.default_rng(3)), 0.005)
    out = md._evaluate(s, plan, "all")
    steps_, why = md._stepper(s, plan, integ, out.forces, False)
    assert why == "off"
    steps_.open()
    for q in range(40):
        got = steps_.step("all" if q == 39 else "forces", last=q == 39)
    assert plan.rebuild_count() > 2
    h = plan.ref.get()[: p.n, 3]
    assert 0.0 < h.min() < h.max() <= 0.15 + 1e-7 and np.unique(h).size > p.n // 2
    now = _at(p, integ.positions())
    assert verify.compare(got.to_host(), reference.compute(now), now)["failures"] == []


@pytest.mark.gpu
def test_replayed_frames_size_the_gpu_lists_half_skins():
    """The same on the GPU: verify's replay of an adapted list passes every frame with more builds than the
    uniform list's, and the amortised column (a captured replay) counts the builds the replay made."""
    from harness import bench

    case, frames = _replayed(8000, 61)
    uniform = verify.replay_cell(strategies.create("verlet_thread_padded", tpp=1), case, "fp32", frames)
    adapted = verify.replay_cell(strategies.create("verlet_thread_padded", tpp=1, adapt="0.02:4"), case, "fp32",
                                 frames)
    assert uniform["status"] == "pass" and adapted["status"] == "pass", adapted.get("detail")
    assert adapted["rebuilds"] > uniform["rebuilds"] + 2
    for precision in ("mixed", "fixed"):  # fixed point: the velocities in float, not the integer sums
        got = verify.replay_cell(strategies.create("verlet_thread_padded", tpp=1, adapt="0.02:4"), case, precision,
                                 frames)
        assert got["status"] == "pass" and got["rebuilds"] > uniform["rebuilds"] + 2, (precision, got.get("detail"))
    a = bench.time_amortised(strategies.create("verlet_thread_padded", tpp=1, adapt="0.02:4"), _problem(8000), frames,
                             "forces")  # fp32 as the replay above, the same positions
    assert a["amortised_velocities"] == "from the frames"
    assert a["rebuilds"] == adapted["rebuilds"] - 1  # the replay's builds, frame 0's list not counted

