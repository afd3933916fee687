"""The command line as a user runs it: python -m harness ..."""
import json
import os

import numpy as np
import pytest

import reference
import strategies
from harness import cli, io, scenarios
from inprocess import harness



def run(*args):
    return harness(*args)


def test_list_json():
    r = run("list", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {s["name"] for s in doc["strategies"]} == set(strategies.REGISTRY)
    assert {s["name"] for s in doc["scenarios"]} == set(scenarios.SCENARIOS)
    assert set(doc["precisions"]) == {"fp32", "mixed", "fp64", "fixed"}


def test_list_text():
    r = run("list")
    assert r.returncode == 0 and "allpairs_thread_tiled" in r.stdout and "gaussian" in r.stdout


def test_verify_cpu_end_to_end(tmp_path):
    r = run("verify", "--strategies", "allpairs_thread_cpu", "--scenarios", "lj_liquid,allpairs_cube", "--size", "tiny",
            "--precision", "fp32,fp64", "--out", str(tmp_path), "--json", str(tmp_path / "x" / "v.json"), "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pass: 4" in r.stdout
    doc = json.loads((tmp_path / "x" / "v.json").read_text())
    assert len(doc["rows"]) == 4 and doc["summary"]["ok"]
    assert (tmp_path / "verify.csv").exists() and (tmp_path / "verify.md").exists()


def test_verify_lists_gpu_strategies_as_not_applicable_without_a_gpu(tmp_path):
    ok, why = strategies.create("allpairs_thread_tiled").available()
    if ok:
        pytest.skip("this machine has a GPU")
    code = cli.main(["verify", "--scenarios", "uniform", "--size", "tiny", "--precision", "fp32",
                     "--out", str(tmp_path), "--quiet"])
    assert code == 0
    doc = json.loads((tmp_path / "verify.json").read_text())
    gpu = [r for r in doc["rows"] if r["backend"] == "cuda"]
    assert gpu and all(r["status"] == "n/a" and "no CUDA GPU" in r["detail"] for r in gpu)


@pytest.mark.parametrize("args, msg", [
    (["verify", "--strategies", "allpairs_magic"], "unknown strategy 'allpairs_magic'"),
    (["verify", "--scenarios", "lj_gas"], "unknown scenario 'lj_gas'"),
    (["verify", "--precision", "fp16"], "unknown precision 'fp16'"),
    (["verify", "--size", "huge", "--strategies", "allpairs_thread_cpu"], "expected a particle count or a size name"),
    (["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "nothing"], "unknown scenario 'nothing'"),
    (["bench", "--strategies", "allpairs_thread_cpu", "--launch", "block"], "is not key=value"),
    (["bench", "--strategies", "allpairs_thread_cpu", "--launch", "block=64"], "unknown launch parameter"),
    (["forces", "--strategy", "reference", "--input", "/nonexistent.xyz", "--out", "x.npz"], "no such file"),
])
def test_bad_names_exit_2_with_a_message(args, msg):
    r = run(*args)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_gpu_strategy_named_without_gpu_is_an_error(tmp_path):
    ok, _ = strategies.create("allpairs_thread_tiled").available()
    if ok:
        pytest.skip("this machine has a GPU")
    for args in (["verify", "--strategies", "allpairs_thread_tiled", "--size", "tiny"],
                 ["bench", "--strategies", "allpairs_thread_naive", "--scenario", "uniform", "--n", "tiny"]):
        r = run(*args)
        assert r.returncode == 2 and "cannot run on this machine: no CUDA GPU" in r.stderr


@pytest.mark.parametrize("bad, msg", [("cutoff=0", "cutoff must be a number > 0 or 'none', got '0'"),
                                      ("cutoff=4", "shorter than twice the cutoff")])
def test_forces_bad_potential(tmp_path, bad, msg):
    p = scenarios.make("uniform", "tiny")
    io.write_configuration(tmp_path / "c.xyz", p.positions, p.box)
    r = run("forces", "--strategy", "reference", "--input", str(tmp_path / "c.xyz"), "--cutoff", bad.split("=")[1],
            "--out", str(tmp_path / "o.npz"))
    assert r.returncode == 2 and msg in r.stderr


def test_export_then_forces_from_file_matches_reference(tmp_path):
    conf = tmp_path / "c.xyz"
    assert run("export", "--scenario", "lj_liquid", "--n", "tiny", "--out", str(conf)).returncode == 0
    for strat in ("reference", "allpairs_thread_cpu"):
        out = tmp_path / f"{strat}.npz"
        r = run("forces", "--strategy", strat, "--input", str(conf), "--precision", "fp64", "--shift",
                "--out", str(out))
        assert r.returncode == 0, r.stderr
    a, b = np.load(tmp_path / "reference.npz"), np.load(tmp_path / "allpairs_thread_cpu.npz")
    assert set(a.files) == {"forces", "energy", "virial", "pairs"}
    np.testing.assert_allclose(b["forces"], a["forces"], atol=1e-10 * np.abs(a["forces"]).max())
    assert int(a["pairs"]) == int(b["pairs"])
    pos, box = io.read_configuration(conf)
    from mdcore import LennardJones, Problem
    ref = reference.compute(Problem.make(pos, box, LennardJones(shift=True)))
    assert float(a["energy"]) == pytest.approx(ref.energy, rel=1e-14)


def test_forces_no_cutoff_open_box(tmp_path):
    p = scenarios.make("allpairs_cube", "tiny")
    io.write_configuration(tmp_path / "c.npz", p.positions, p.box)
    r = run("forces", "--strategy", "reference", "--input", str(tmp_path / "c.npz"), "--cutoff", "none",
            "--out", str(tmp_path / "o.npz"))
    assert r.returncode == 0, r.stderr
    assert int(np.load(tmp_path / "o.npz")["pairs"]) == 125 * 124 // 2


def test_verify_from_input_file(tmp_path):
    p = scenarios.make("gaussian", "tiny")
    io.write_configuration(tmp_path / "g.npz", p.positions, p.box)
    r = run("verify", "--strategies", "allpairs_thread_cpu", "--input", str(tmp_path / "g.npz"), "--cutoff", "3.0",
            "--out", str(tmp_path), "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "input:g.npz" in r.stdout and "pass: 3" in r.stdout


def test_bench_cpu_prints_times(tmp_path):
    r = run("bench", "--strategies", "allpairs_thread_cpu", "--scenario", "lj_liquid", "--n", "tiny", "--repeat", "3",
            "--min-time", "0", "--out", str(tmp_path), "--name", "t")
    assert r.returncode == 0, r.stderr
    assert "allpairs_thread_cpu" in r.stdout and "Gpairs/s" in r.stdout and "compute" in r.stdout


def test_bench_sweep_writes_csv_and_json(tmp_path):
    """Two scenarios x two sizes x a launch sweep (applied where the strategy has the key)."""
    import pandas as pd

    r = run("bench", "--strategies", "allpairs_thread_cpu,c08_thread_cpu", "--scenario", "uniform", "--scenario",
            "gaussian:sigma=4", "--n", "tiny,400", "--repeat", "2", "--min-time", "0", "--warmup", "1",
            "--sweep", "cell_factor=1.0:1.2", "--out", str(tmp_path), "--name", "s", "--quiet")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(tmp_path / "s.csv")
    # allpairs_thread_cpu has no cell_factor: 1 variant; c08_thread_cpu: 2; per (scenario, size) -> 3 rows, 4 problems
    assert len(df) == 12 and set(df["scenario"]) == {"uniform", "gaussian:sigma=4"}
    assert (df[df["name"] == "c08_thread_cpu"]["strategy"].str.contains("cell_factor=1.2")).sum() == 4
    ok = df[df["status"] == "ok"]
    assert (ok["compute_ms"] > 0).all() and (ok["eff_bandwidth_gbs"] > 0).all()
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["device"]["commit"] and doc["meta"]["command"].startswith("python -m harness bench")
    assert len(doc["rows"]) == 12 and "compute_ms" in r.stdout  # the table at the end


def test_noisy_points_are_named_under_the_table():
    from harness import sweep

    rows = [{"strategy": "a", "scenario": "s", "n": 10, "precision": "fp32", "status": "ok", "compute_ms": 1.0,
             "compute_spread": 0.9, "noisy": True},
            {"strategy": "b", "scenario": "s", "n": 10, "precision": "fp32", "status": "ok", "compute_ms": 2.0,
             "compute_spread": 0.01}]
    text = sweep.terminal_table(rows)
    assert "noisy" in text and "a s N=10 fp32 (90%)" in text and "b s N=10" not in text.split("noisy")[1]


def test_the_host_s_other_load_is_read_from_proc_stat(tmp_path, monkeypatch):
    from harness import device

    stat = tmp_path / "stat"
    tck = os.sysconf("SC_CLK_TCK")

    def write(busy_s):  # user nice system idle iowait irq softirq steal guest guest_nice, in ticks
        ticks = int(busy_s * tck)
        stat.write_text(f"cpu  {ticks - 3 * tck} 0 {tck} 99999 7 {tck} 0 {tck} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
    write(100.0)
    assert device.host_cpu_seconds(str(stat)) == pytest.approx(100.0, abs=2.0 / tck)
    assert device.host_cpu_seconds(str(tmp_path / "none")) is None
    clock = {"wall": 50.0, "own": 3.0}
    monkeypatch.setattr(device.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(device.time, "process_time", lambda: clock["own"])
    load = device.HostLoad(str(stat))
    write(100.0 + 2.0 * 31.0)  # two seconds: 31 cores busy on the host, 1 of them this process
    clock.update(wall=52.0, own=5.0)
    assert load.other_cores() == pytest.approx(30.0, abs=0.05)
    assert device.host_busy(30.0, threads=32, cores=32) and not device.host_busy(16.0, threads=16, cores=32)
    assert device.host_busy(31.9, threads=1, cores=32) and not device.host_busy(None, threads=32, cores=32)


def test_a_point_timed_while_the_host_is_busy_says_so(monkeypatch):
    from harness import bench, device, sweep

    class Busy(device.HostLoad):
        def other_cores(self):
            return float(os.cpu_count() or 1)
    p = scenarios.make("lj_liquid", "tiny", precision="fp64")
    s = strategies.create("allpairs_thread_cpu")
    quiet = bench.bench_point(s, p, warmup=0, repeat=3, min_time=0.0, graph=False)
    assert quiet["host_other_cores"] is None or quiet["host_other_cores"] >= 0.0
    monkeypatch.setattr(device, "HostLoad", Busy)
    row = bench.bench_point(s, p, warmup=0, repeat=3, min_time=0.0, graph=False)
    assert row["host_busy"] is True and row["host_other_cores"] == float(os.cpu_count() or 1)
    text = sweep.terminal_table([row, {**quiet, "host_busy": False}])
    assert "host busy at 1 point" in text and "allpairs_thread_cpu lj_liquid" in text.split("host busy")[1]
    from harness.report import verdict

    assert bool(verdict.candidates([{**row, "_device": {}}])["noisy"].iloc[0]) is True


def test_bench_budget_skips_points_with_the_reason(tmp_path):
    r = run("bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform", "--n", "tiny", "--max-checks-cpu", "1000",
            "--out", str(tmp_path), "--name", "b")
    assert r.returncode == 0, r.stderr
    assert "over the bench budget of 1e+03 for cpu strategies (--max-checks-cpu)" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--suite", "nothing"], "unknown suite 'nothing'"),
    (["--suite", "default", "--strategies", "allpairs_thread_cpu"], "--suite sets strategies"),
    (["--strategies", "allpairs_thread_cpu", "--sweep", "block"], "is not key=value:value"),
])
def test_bench_bad_suite_or_sweep(args, message, capsys):
    assert cli.main(["bench", *args]) == 2
    assert message in capsys.readouterr().err


def test_suites_name_real_strategies_and_scenarios():
    from harness import suites

    for name, (what, parts) in suites.SUITES.items():
        assert what and parts
        for part in parts:
            assert strategies.resolve(part.strategies)
            for spec in part.scenarios:
                scenarios.parse_spec(spec)
            for key in part.sweep:
                assert any(strategies.REGISTRY[n].knows(key) for n in strategies.resolve(part.strategies))


def test_bench_resume_takes_measured_points_and_times_the_rest(tmp_path):
    """An interrupted sweep leaves <name>.partial.jsonl (header, one row per measured point, maybe a
    cut-off last line); --resume keeps those rows as they are and times only the others."""
    args = ["bench", "--strategies", "allpairs_thread_cpu,c08_thread_cpu", "--scenario", "uniform", "--n", "tiny,400", "--repeat", "2",
            "--min-time", "0", "--warmup", "1", "--amortised", "0", "--out", str(tmp_path), "--name", "r", "--quiet"]
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "r.partial.jsonl").exists()  # a finished run leaves no partial file
    doc = json.loads((tmp_path / "r.json").read_text())
    kept = [dict(row, compute_ms=12345.0) for row in doc["rows"][:2]]  # marked: must come back unchanged
    lines = [json.dumps({"device": doc["device"], "meta": doc["meta"]})] + [json.dumps(k) for k in kept]
    (tmp_path / "r.partial.jsonl").write_text("\n".join(lines) + '\n{"strategy": "c08_thread_cpu", "scen')
    r = run(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert "resume: 2 points measured earlier" in r.stdout
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert len(rows) == 4 and [x["compute_ms"] for x in rows[:2]] == [12345.0, 12345.0]
    assert all(x["compute_ms"] != 12345.0 for x in rows[2:]) and not (tmp_path / "r.partial.jsonl").exists()


def test_a_resumed_partial_file_drops_its_cut_off_line(tmp_path):
    """Rows appended after a resume must stay readable by the next resume: the cut-off line of the
    interruption is removed, not left in the middle of the file."""
    from harness.sweep import Partial

    header = {"gpu": None, "cpu": "x", "cpu_cores": 2, "commit": "abc"}
    row = {"strategy": "a", "name": "a", "scenario": "uniform", "n": 10, "precision": "fp32", "outputs": "all"}
    path = tmp_path / "r.partial.jsonl"
    path.write_text(json.dumps({"device": header, "meta": {}}) + "\n" + json.dumps(row) + '\n{"strategy": "b", "sc')
    p = Partial(path, header, {}, resume=True)
    p(dict(row, strategy="c", name="c"))
    p.file.close()
    lines = path.read_text().splitlines()
    assert [json.loads(ln).get("strategy") for ln in lines[1:]] == ["a", "c"]
    again = Partial(path, header, {}, resume=True)
    assert sum(map(len, again.done.values())) == 2


def test_bench_resume_refuses_another_machine_or_commit(tmp_path, capsys):
    from harness import device

    header = dict(device.header(), commit="0123abcd")
    (tmp_path / "r.partial.jsonl").write_text(json.dumps({"device": header, "meta": {}}) + "\n")
    argv = ["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform", "--n", "tiny", "--out", str(tmp_path),
            "--name", "r", "--resume"]
    assert cli.main(argv) == 2
    assert "was measured with commit = '0123abcd'" in capsys.readouterr().err
    assert cli.main(argv[:-3] + ["--resume"]) == 2
    assert "--resume continues the run named by --name" in capsys.readouterr().err


def test_bench_partial_file_grows_as_points_end(tmp_path):
    from harness import sweep

    part = sweep.Partial(tmp_path / "p.partial.jsonl", {"gpu": None}, {"command": "x"}, resume=False)
    part({"strategy": "a", "scenario": "s", "n": 1, "precision": "fp32", "status": "ok", "potential": "lj:cutoff=3"})
    part({"strategy": "a", "scenario": "s", "n": 1, "precision": "fp32", "status": "ok", "potential": "coordination"})
    lines = (tmp_path / "p.partial.jsonl").read_text().splitlines()  # readable before the run ends
    assert len(lines) == 3 and json.loads(lines[1])["strategy"] == "a"
    again = sweep.Partial(tmp_path / "p.partial.jsonl", {"gpu": None}, {}, resume=True)
    # outputs: all by default; the potential tells two points of the potential axis apart
    assert {k: len(v) for k, v in again.done.items()} == {("a", "s", 1, "fp32", "all", "lj:cutoff=3"): 1,
                                                          ("a", "s", 1, "fp32", "all", "coordination"): 1}
    again.finish()
    assert not (tmp_path / "p.partial.jsonl").exists()


def test_bench_dry_run_says_what_the_run_would_and_times_nothing(tmp_path):
    """A dry run plans the points the run would time (n/a with the reason where a strategy does not
    apply) and refuses what the run would refuse: GPU strategies named on a machine without one."""
    from strategies.cuda import device_status

    r = run("bench", "--strategies", "fullshell_thread_cpu,c08_thread_cpu", "--scenario", "one_per_cell", "--n",
            "8,1000", "--dry-run", "--out", str(tmp_path), "--name", "d")
    assert r.returncode == 0, r.stderr
    assert "4 points (dry run" in r.stdout and "3 of 4 points would be timed (1 n/a)" in r.stdout
    assert "needs at least 3 cells along a periodic axis" in r.stdout
    gpu = run("bench", "--strategies", "parity_block_csr", "--scenario", "one_per_cell", "--n", "1000", "--dry-run",
              "--out", str(tmp_path), "--name", "d")
    if device_status()[0]:
        assert gpu.returncode == 0 and "planned, 1.3e+04 distance checks" in gpu.stdout  # a half shell: 13.5 per particle
    else:
        assert gpu.returncode == 2 and "parity_block_csr cannot run on this machine" in gpu.stderr
    assert not list(tmp_path.iterdir())  # nothing written


def test_bench_resume_times_a_repeated_point_again(tmp_path):
    """A sweep may time one point twice (two suite parts share it): after an interruption the
    second occurrence is measured anew, not filled in with a copy of the first."""
    from harness import bench, device, scenarios, sweep

    p = scenarios.make("uniform", "tiny")
    part = sweep.Partial(tmp_path / "x.partial.jsonl", device.header(), {}, resume=False)
    first = bench.run(["allpairs_thread_cpu"], "uniform", ["tiny"], "fp32", warmup=1, repeat=2, min_time=0.0, sink=part)
    part.file.close()
    again = sweep.Partial(tmp_path / "x.partial.jsonl", device.header(), {}, resume=True)
    rows = bench.run(["allpairs_thread_cpu"], "uniform", ["tiny"], "fp32", warmup=1, repeat=2, min_time=0.0,
                     done=again.done, problem=None) + \
        bench.run(["allpairs_thread_cpu"], "uniform", ["tiny"], "fp32", warmup=1, repeat=2, min_time=0.0, done=again.done)
    assert rows[0] == json.loads(json.dumps(first[0], default=str)) and rows[1] is not rows[0]
    assert rows[1]["compute_ms"] != rows[0]["compute_ms"] or rows[1]["setup_ms"] != rows[0]["setup_ms"]
    assert p.n == rows[1]["n"]


def test_a_failed_bench_leaves_no_partial_file(tmp_path):
    """A bench that stops before any point is measured leaves no header-only partial file."""
    r = run("bench", "--strategies", "allpairs_thread_cpu", "--scenario", "lj_liquid", "--n", "tiny", "--launch",
            "block=64", "--out", str(tmp_path), "--name", "broken")
    assert r.returncode == 2 and "unknown launch parameter" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_max_time_takes_fewer_samples_of_a_slow_point_and_is_checked():
    """A point whose phases would take longer than --max-time takes MIN_SAMPLES samples a phase,
    no minimum time; without it the same point takes its repeats and min_time."""
    from harness import bench

    p = scenarios.make("lj_liquid", "tiny", precision="fp64")
    s = strategies.create("allpairs_thread_cpu")
    capped = bench.bench_point(s, p, warmup=3, repeat=20, min_time=0.2, max_time=1e-9, graph=False)
    plain = bench.bench_point(s, p, warmup=3, repeat=20, min_time=0.2, graph=False)
    assert capped["repeats"] == bench.MIN_SAMPLES and plain["repeats"] > bench.MIN_SAMPLES
    r = run("bench", "--strategies", "allpairs_thread_cpu", "--max-time", "0")
    assert r.returncode == 2 and "--max-time: expected a number > 0, got '0'" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
