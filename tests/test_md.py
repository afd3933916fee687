"""The MD loop: velocity Verlet around a strategy (CPU strategies here; the GPU ones in test_gpu)."""
import json
import math

import numpy as np
import pytest

import strategies
from harness import cli, md, scenarios
from mdcore import InputError


def _problem(precision="fp64", n="tiny", spec="lj_liquid"):
    p = scenarios.make(spec, n, seed=2, precision=precision)
    from dataclasses import replace

    return replace(p, potential=replace(p.potential, shift=True))


def test_maxwell_boltzmann_start_has_zero_momentum_and_the_exact_temperature():
    v = md.maxwell_boltzmann(500, 0.72, np.random.default_rng(4))
    assert np.abs(v.sum(axis=0)).max() < 1e-12
    assert 2.0 * 0.5 * np.sum(v * v) / (3 * 500 - 3) == pytest.approx(0.72, rel=1e-12)
    assert not md.maxwell_boltzmann(10, 0.0, np.random.default_rng(1)).any()


def test_energy_is_conserved_and_halving_dt_quarters_the_fluctuation():
    """Velocity Verlet is second order: the total energy's excursion scales as dt^2."""
    s = strategies.create("fullshell_thread_cpu")
    p = _problem()
    dev = []
    for dt in (0.004, 0.002):
        r = md.run(s, p, steps=int(round(0.4 / dt)), dt=dt, sample=10, seed=5)
        assert r.samples[-1].step == r.steps and len(r.samples) == r.steps // 10 + 1
        dev.append(r.max_deviation)
    assert dev[0] < 2e-3
    assert 2.5 < dev[0] / dev[1] < 6.0, dev


def test_time_reversal_returns_to_the_start():
    """Run forward, reverse the velocities, run as long again: back at the start (fp64, to
    rounding), which a wrong half kick or a stale force would break."""
    s = strategies.create("fullshell_thread_cpu")
    p = _problem()
    v0 = md.maxwell_boltzmann(p.n, 0.72, np.random.default_rng(7))
    plan = s.prepare(p, "forces")
    from strategies.integrate import Integrator

    integ = Integrator.create(plan, p.positions, v0, 0.004)
    out = s.step(plan)
    for sign in (1, -1):
        if sign < 0:
            integ.v *= -1.0
        for _ in range(100):
            integ.kick_drift(out.forces)
            out = s.step(plan)
            integ.kick(out.forces)
    d = integ.positions() - p.positions
    L = p.box.array
    d -= L * np.rint(d / L)
    assert np.abs(d).max() < 1e-9
    assert np.abs(integ.velocities() + v0).max() < 1e-9


@pytest.mark.parametrize("name", ["allpairs_thread_cpu", "c08_thread_cpu"])
def test_every_cpu_strategy_gives_the_same_trajectory_in_fp64(name):
    p = _problem(n=500)  # 3 cells per axis: c08 applies
    ref = md.run(strategies.create("fullshell_thread_cpu"), p, steps=40, dt=0.005, sample=20)
    got = md.run(strategies.create(name), p, steps=40, dt=0.005, sample=20)
    for a, b in zip(ref.samples, got.samples):
        assert b.total == pytest.approx(a.total, rel=1e-10)
        assert b.pressure == pytest.approx(a.pressure, rel=1e-8, abs=1e-10)


def test_pressure_and_temperature_follow_their_definitions():
    s = strategies.create("fullshell_thread_cpu")
    p = _problem()
    r = md.run(s, p, steps=1, dt=0.001, sample=1, temperature=1.3)
    s0 = r.samples[0]
    import reference

    ref = reference.compute(p)
    assert s0.temperature == pytest.approx(1.3, rel=1e-12)
    assert s0.potential == pytest.approx(ref.energy, rel=1e-12)
    assert s0.pressure == pytest.approx((2.0 * s0.kinetic + np.trace(ref.virial)) / (3.0 * p.box.volume), rel=1e-10)


def test_trajectory_frames_and_json(tmp_path, capsys):
    out, js = tmp_path / "t.xyz", tmp_path / "r.json"
    rc = cli.main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "30", "--sample", "10",
                   "--frame-every", "15", "--out", str(out), "--json", str(js), "--precision", "fp64"])
    assert rc == 0
    text = out.read_text().splitlines()
    n = int(text[0])
    frames = [i for i, line in enumerate(text) if line.strip() == str(n)]
    assert len(frames) == 3  # steps 0, 15, 30
    assert "step=15" in text[frames[1] + 1] and "vel:R:3" in text[1]
    doc = json.loads(js.read_text())
    assert doc["kind"] == "md" and [s["step"] for s in doc["samples"]] == [0, 10, 20, 30]
    assert math.isfinite(doc["drift_per_particle_per_tau"])
    assert "ms per step" in capsys.readouterr().out


def test_a_blow_up_stops_with_the_step_and_keeps_the_trajectory(tmp_path, capsys):
    out = tmp_path / "t.xyz"
    rc = cli.main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "200", "--sample", "5",
                   "--dt", "0.5", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "the run blew up" in err[0] and "dt = 0.5" in err[0], err
    assert out.read_text().startswith("256\n")  # the frames before it are kept


@pytest.mark.parametrize("argv, message", [
    (["--dt", "0"], "--dt: expected a number > 0"),
    (["--dt", "nan"], "--dt: expected a number > 0"),
    (["--steps", "0"], "--steps: expected a whole number >= 1"),
    (["--temperature", "-1"], "--temperature: expected a number >= 0"),
    (["--sample", "0"], "--sample: expected a whole number >= 1"),
    (["--out", "/dev/null/t.xyz"], "--out: cannot create /dev/null/t.xyz: /dev/null is not a directory"),
    (["--out", "t.txt"], "must end in .xyz or .extxyz"),
    (["--scenario", "lj_liquid_open"], "md needs a box periodic on every axis"),
    (["--strategy", "nope"], "unknown strategy"),
])
def test_bad_md_inputs_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = ["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "2"]
    with pytest.raises(SystemExit) if argv[0] in ("--dt", "--steps", "--temperature", "--sample") else _nothing():
        rc = cli.main(base + argv)
        assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not list(tmp_path.iterdir())  # nothing written


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_check_run_names_what_is_wrong():
    with pytest.raises(InputError, match="dt must be a finite number > 0"):
        md.check_run(10, -0.1, 1)
    with pytest.raises(InputError, match="steps must be"):
        md.check_run(0, 0.1, 1)


GPU = strategies.select(backend="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU)
def test_gpu_trajectories_match_the_cpu_in_fp64(name):
    """Every GPU strategy drives the loop (positions and velocities on the device) along the CPU
    loop's fp64 trajectory; deterministic ones give the same bits with and without graph replay."""
    p = _problem(n=500)
    ref = md.run(strategies.create("fullshell_thread_cpu"), p, steps=40, dt=0.005, sample=20)
    got = md.run(strategies.create(name), p, steps=40, dt=0.005, sample=20)
    for a, b in zip(ref.samples, got.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)
        assert b.pressure == pytest.approx(a.pressure, rel=1e-8)
    if strategies.REGISTRY[name].deterministic:
        eager = md.run(strategies.create(name), p, steps=40, dt=0.005, sample=20, graph=False)
        assert [s.total for s in eager.samples] == [s.total for s in got.samples]
        assert eager.graph == "off"
        assert got.graph == "on" or got.graph.startswith("not"), got.graph


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_gpu_loop_conserves_energy(precision):
    p = _problem(precision, n=4000)
    r = md.run(strategies.create("fullshell_thread_csr"), p, steps=400, dt=0.005, sample=50)
    assert r.graph == "on"
    assert r.max_deviation < 2e-3, (precision, r.max_deviation)


def test_recorded_frames_are_one_trajectory_and_cached():
    from harness import md as M

    p = _problem("fp32", n=500)
    f = M.record(p, frames=5, equilibrate=3)
    assert f.shape == (5, 500, 3) and np.all((f >= 0) & (f < p.box.array))
    assert M.record(p, frames=5, equilibrate=3) is f  # once per problem
    d = f[1] - f[0]
    d -= p.box.array * np.rint(d / p.box.array)
    assert 0 < np.abs(d).max() < 0.05  # consecutive steps of dt 0.005


def test_amortised_column_counts_rebuilds_for_lists_only():
    from harness import bench, md as M

    p = _problem("fp32", n=500)
    frames = M.record(p, frames=40, equilibrate=20)
    lst = bench.time_amortised(strategies.create("verlet_thread_cpu"), p, frames, "forces")
    cells = bench.time_amortised(strategies.create("fullshell_thread_cpu"), p, frames, "forces")
    assert lst["amortised_ms"] > 0 and cells["amortised_ms"] > 0 and lst["amortised_frames"] == 39
    assert 1 <= lst["rebuilds"] < 39 and "rebuilds" not in cells
    assert lst["list_bytes"] > 0 and lst["listed_pairs"] > 0  # entries within cutoff + skin, each pair twice
    assert bench.trajectory(scenarios.make("lj_liquid_open", "tiny"), 10).startswith("n/a: the MD loop needs")


def test_nve_report_rows_and_json(tmp_path, capsys):
    """One equilibrated start for every strategy and precision; OpenMM's row says why it is n/a
    where the package is missing."""
    js = tmp_path / "nve.json"
    rc = cli.main(["md", "--nve-report", "--strategies", "fullshell_thread_cpu,verlet_thread_cpu", "--n", "tiny",
                   "--steps", "60", "--sample", "20", "--precision", "fp32,fp64", "--json", str(js)])
    assert rc == 0
    doc = json.loads(js.read_text())
    rows = doc["rows"]
    ok = [r for r in rows if r["status"] == "ok" and not r["strategy"].startswith("peer")]
    assert len(ok) == 4 and all(math.isfinite(r["drift"]) and r["max_deviation"] < 1e-2 for r in ok)
    same = {r["precision"]: r["drift"] for r in ok if r["strategy"] == "fullshell_thread_cpu"}
    lst = {r["precision"]: r["drift"] for r in ok if r["strategy"] == "verlet_thread_cpu"}
    assert lst["fp64"] == pytest.approx(same["fp64"], rel=1e-6)  # one start, one trajectory
    peer = [r for r in rows if r["strategy"] == "peer:openmm"]
    assert len(peer) == 2 and all(r["status"] in ("ok", "n/a", "error") for r in peer)
    assert "drift /particle/tau" in capsys.readouterr().out


def test_nve_report_refuses_a_trajectory_file(capsys):
    assert cli.main(["md", "--nve-report", "--out", "t.xyz", "--n", "tiny"]) == 2
    assert "the NVE report writes --json" in capsys.readouterr().err


def test_no_trajectory_is_recorded_where_the_cpu_would_take_long(monkeypatch):
    from harness import bench

    monkeypatch.setattr(bench, "CPU_RECORD_LIMIT", 1000)
    got = bench.trajectory(_problem("fp32", n=500), 10)
    if strategies.create("fullshell_thread_csr").available()[0]:
        assert not isinstance(got, str)  # a GPU records it
    else:
        assert isinstance(got, str) and "on the CPU would take long" in got and "--amortised 0" in got


def test_graph_chunks_stop_at_every_sample_and_frame():
    """The forces-only steps a multi-step graph may replay after `step`: none of them is a sample
    step or the last step, a frame step only at the end, and the run is as long as that allows."""
    from harness.md import _forces_only_run

    for steps in (1, 2, 7, 40, 101):
        for sample in (1, 3, 20, 500):
            for frame in (None, 1, 4, 20):
                for step in range(steps):
                    if (step + 1) % sample == 0 or step + 1 == steps:
                        continue  # the loop samples here; no run is asked for
                    run = _forces_only_run(step, steps, sample, frame)
                    assert run >= 1
                    covered = range(step + 1, step + run + 1)
                    assert all(s % sample and s < steps for s in covered), (steps, sample, frame, step, run)
                    if frame is not None:
                        assert all(s % frame for s in covered[:-1]), (steps, sample, frame, step, run)
                    last = step + run
                    assert (last + 1) % sample == 0 or last + 1 == steps or (frame and last % frame == 0)


def test_a_refused_capture_leaves_the_loop_on_its_last_run_forces():
    """A strategy that returns its forces in a new buffer each step cannot be replayed from a
    graph; the recorded (never run) steps must not leave the loop reading their buffer."""

    class Buffer:
        def __init__(self, ptr):
            self.data = type("D", (), {"ptr": ptr})()

    class Stream:
        def begin_capture(self):
            pass

        def end_capture(self):
            return "graph"

    class Fresh(md._PlainSteps):
        def __init__(self):
            self.forces, self.made = Buffer(1), 1

        def open(self):
            pass

        def step(self, outputs, last):
            self.made += 1
            self.forces = Buffer(self.made)

    s = Fresh()
    graphs, why = md._capture(s, Stream())
    assert graphs == {} and why.startswith("not captured: the strategy returns its forces in a new buffer")
    assert s.forces.data.ptr == 1
