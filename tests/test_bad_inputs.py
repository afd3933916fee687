"""Every bad input ends in one line naming what is wrong, exit 2, no traceback and no output
file (each tried as a user types it). Exit 1 is kept for a failed check, 3 for a
bug."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import reference
import strategies
from harness import cli, device, suites, sweep
from mdcore import InputError, LennardJones, Problem

ROOT = Path(__file__).resolve().parent.parent
CPU = [n for n in strategies.ordered() if strategies.REGISTRY[n].backend == "cpu"]
BOX = 'Lattice="10 0 0 0 10 0 0 0 10"'


def harness(capsys, *args):
    """Run the CLI in this process; (exit status, stdout, stderr)."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args, msg: str, cwd: Path | None = None) -> str:
    """The command exits 2 with one line on stderr that contains msg, and writes no file in cwd."""
    before = set(cwd.rglob("*")) if cwd else set()
    code, out, err = harness(capsys, *args)
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == 2, (code, out, err)
    assert lines and msg in lines[-1], err
    assert "Traceback" not in err and len(lines) <= 2, err  # at most a progress line before it
    if cwd:
        assert set(cwd.rglob("*")) == before, "a refused command wrote a file"
    return lines[-1]


def xyz(path: Path, rows: list[str], count: int | None = None, box: str = BOX) -> Path:
    path.write_text(f"{len(rows) if count is None else count}\n{box}\n" + "\n".join(rows) + "\n")
    return path


# --- coincident and too-close particles ------------------------------------------------------

@pytest.mark.parametrize("name", ["reference", *CPU])
def test_coincident_particles_are_refused_by_every_cpu_strategy_and_the_reference(tmp_path, capsys, name):
    conf = xyz(tmp_path / "c.xyz", ["Ar 1 1 1", "Ar 5 5 5", "Ar 1 1 1"])
    for precision in ("fp32", "mixed", "fp64"):
        line = refused(capsys, "forces", "--strategy", name, "--input", conf, "--precision", precision,
                       "--out", tmp_path / "f.npz", msg="particles 0 and 2 coincide (distance 0)", cwd=tmp_path)
        assert precision in line


def test_a_pair_closer_than_float_can_compute_is_refused_in_fp32_and_computed_in_fp64(tmp_path, capsys):
    conf = xyz(tmp_path / "c.xyz", ["Ar 0.0001 1 1", "Ar 9.9999 1 1"])  # 0.0002 apart through the boundary
    for name in ("reference", "allpairs_thread_cpu"):
        refused(capsys, "forces", "--strategy", name, "--input", conf, "--out", tmp_path / "f.npz",
                msg="particles 0 and 1 are 0.0002 apart; closer than 0.00411", cwd=tmp_path)
    code, _, err = harness(capsys, "forces", "--strategy", "allpairs_thread_cpu", "--input", conf, "--precision",
                           "fp64", "--out", tmp_path / "f.npz")
    assert code == 0, err
    f = np.load(tmp_path / "f.npz")
    assert np.isfinite(f["forces"]).all() and np.isfinite(f["energy"]) and f["energy"] > 1e40


def test_problem_refuses_in_every_precision_the_pairs_it_cannot_compute():
    box = [10.0] * 3
    pos = np.array([[1.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 1.0 + 1e-3]])
    with pytest.raises(InputError, match="particles 0 and 2 are 0.001 apart"):
        Problem.make(pos, box)
    p = Problem.make(pos, box, precision="fp64")  # 1e-3 is computable in double
    with pytest.raises(InputError, match=r"overflow float \(mixed\)"):
        p.with_precision("mixed")
    ref = reference.compute(p)
    assert np.isfinite(ref.forces).all()
    # every precision refuses coincident particles, also when they are periodic images
    image = np.array([[0.0, 5.0, 5.0], [10.0, 5.0, 5.0], [3.0, 3.0, 3.0]])
    for precision in ("fp32", "mixed", "fp64"):
        with pytest.raises(InputError, match="particles 0 and 1 coincide"):
            Problem.make(image, box, precision=precision)


def test_min_distance_is_where_the_pair_terms_overflow():
    lj = LennardJones()
    r32, r64 = lj.min_distance("fp32"), lj.min_distance("fp64")
    assert lj.min_distance("mixed") == r32  # float pair terms in both
    limit = float(np.finfo(np.float32).max) / 1024
    fr, _ = lj.reference_pair(r32 * r32, lj.reference_constants())
    assert fr < limit  # computable at the distance returned
    fr, _ = lj.reference_pair((r32 / 1.2) ** 2, lj.reference_constants())
    assert fr > limit  # and not much closer
    assert 1e-23 < r64 < 1e-21


# --- configuration files ---------------------------------------------------------------------

def test_xyz_with_more_particle_lines_than_its_header_is_refused(tmp_path, capsys):
    conf = xyz(tmp_path / "c.xyz", ["Ar 1 1 1", "Ar 2 2 2", "Ar 3 3 3"], count=2)
    refused(capsys, "forces", "--strategy", "reference", "--input", conf, "--out", tmp_path / "f.npz",
            msg="header says 2 particles but the file has 3 particle lines", cwd=tmp_path)
    two = f"2\n{BOX}\nAr 1 1 1\nAr 3 3 3\n"
    (tmp_path / "frames.xyz").write_text(two + two)
    refused(capsys, "forces", "--strategy", "reference", "--input", tmp_path / "frames.xyz", "--out",
            tmp_path / "f.npz", msg="line 5 starts another frame", cwd=tmp_path)
    (tmp_path / "blank.xyz").write_text(two + "\n\n")  # trailing blank lines are fine
    code, _, err = harness(capsys, "forces", "--strategy", "reference", "--input", tmp_path / "blank.xyz",
                           "--out", tmp_path / "f.npz")
    assert code == 0, err


# --- sizes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n, msg", [("0", "needs at least 2 particles (a pair), got 0"), ("1", "got 1"),
                                    ("-5", "got -5"), ("abc", "expected a particle count or a size name"),
                                    ("8", "N=8 gives a periodic box of side 1.68")])
def test_bad_particle_counts(tmp_path, capsys, n, msg):
    refused(capsys, "verify", "--size", n, "--strategies", "allpairs_thread_cpu", "--scenarios", "lj_liquid",
            "--out", tmp_path / "v", msg=msg, cwd=tmp_path)
    refused(capsys, "bench", "--n", n, "--strategies", "allpairs_thread_cpu", "--out", tmp_path / "b", msg=msg,
            cwd=tmp_path)


def test_a_size_beyond_memory_is_refused_at_once(tmp_path, capsys, monkeypatch):
    t0 = time.perf_counter()
    refused(capsys, "verify", "--size", "1000000000000", "--strategies", "allpairs_thread_cpu", "--scenarios",
            "lj_liquid", "--out", tmp_path / "v", msg="N=1,000,000,000,000 needs about", cwd=tmp_path)
    monkeypatch.setattr(device, "host_memory_available", lambda: 8 * 2 ** 30)
    refused(capsys, "bench", "--dry-run", "--n", "100000000", "--strategies", "allpairs_thread_cpu",
            msg="N=100,000,000 needs about 37.3 GiB of host memory", cwd=tmp_path)
    # a later size of the sweep is checked before the first is timed
    refused(capsys, "bench", "--n", "tiny,100000000", "--strategies", "allpairs_thread_cpu", "--out",
            tmp_path / "b", msg="needs about", cwd=tmp_path)
    assert time.perf_counter() - t0 < 10.0


# --- where results go ------------------------------------------------------------------------

def test_output_locations_are_checked_before_any_work(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    conf = xyz(tmp_path / "c.xyz", ["Ar 1 1 1", "Ar 3 3 3"])
    verify = ["verify", "--size", "tiny", "--strategies", "allpairs_thread_cpu", "--scenarios", "uniform"]
    refused(capsys, *verify, "--out", tmp_path / "afile" / "sub", msg="afile is not a directory", cwd=tmp_path)
    refused(capsys, *verify, "--out", tmp_path / "afile", msg="afile is a file, not a folder", cwd=tmp_path)
    refused(capsys, *verify, "--out", tmp_path / "v", "--json", tmp_path / "afile" / "v.json",
            msg="--json: cannot create", cwd=tmp_path)
    refused(capsys, *verify, "--out", tmp_path / "v", "--json", tmp_path / "v.txt", msg="must end in .json",
            cwd=tmp_path)
    refused(capsys, "bench", "--strategies", "allpairs_thread_cpu", "--n", "tiny", "--out", tmp_path / "afile" / "b",
            msg="afile is not a directory", cwd=tmp_path)
    forces = ["forces", "--strategy", "allpairs_thread_cpu", "--input", conf]
    refused(capsys, *forces, "--out", tmp_path, msg="is a folder; name a file (.npz)", cwd=tmp_path)
    refused(capsys, *forces, "--out", tmp_path / "name", msg="name must end in .npz", cwd=tmp_path)
    refused(capsys, "export", "--scenario", "uniform", "--n", "tiny", "--out", tmp_path / "c.txt",
            msg="must end in .xyz or .extxyz or .npz", cwd=tmp_path)
    refused(capsys, "report", conf, "--out", tmp_path / "afile", msg="afile is not a directory", cwd=tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_folder_is_refused(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        refused(capsys, "verify", "--size", "tiny", "--strategies", "allpairs_thread_cpu", "--out", ro,
                msg="no permission to write in", cwd=tmp_path)
    finally:
        ro.chmod(0o700)


# --- parameters by name ----------------------------------------------------------------------

@pytest.mark.parametrize("args, msg", [
    (["verify", "--scenarios", "gaussian:sigma=-4"], "scenario gaussian: sigma (width at N=1e6"),
    (["verify", "--scenarios", "k_per_cell:k=0"], "k (particles per cell) must be >= 1, got '0'"),
    (["verify", "--scenarios", "lj_liquid:density=-1"], "density (number density, particles per unit volume) must be > 0"),
    (["verify", "--scenarios", "lj_liquid:cutof=3"], "unknown parameter 'cutof'; it takes density, jitter, cutoff"),
    (["verify", "--seed", "-1"], "argument --seed: expected a whole number >= 0, got '-1'"),
    (["verify", "--cutoff", "abc"], "argument --cutoff: cutoff must be a number > 0 or 'none', got 'abc'"),
    (["verify", "--sigma", "-1"], "argument --sigma: expected a number > 0, got '-1'"),
    (["verify", "--max-checks-cpu", "0"], "argument --max-checks-cpu: expected a number > 0"),
    (["bench", "--repeat", "0"], "argument --repeat: expected a whole number >= 1, got '0'"),
    (["bench", "--warmup", "-1"], "argument --warmup: expected a whole number >= 0"),
    (["bench", "--min-time", "-0.5"], "argument --min-time: expected a number >= 0"),
    (["bench", "--noise", "0"], "argument --noise: expected a number > 0"),
    (["bench", "--repeat", "many"], "argument --repeat: expected a whole number >= 1, got 'many'"),
])
def test_parameters_are_checked_by_name(tmp_path, capsys, args, msg):
    extra = ["--size", "tiny"] if args[0] == "verify" else ["--n", "tiny"]
    refused(capsys, *args, *extra, "--strategies", "allpairs_thread_cpu", "--out", tmp_path / "o", msg=msg,
            cwd=tmp_path)


def test_report_on_a_malformed_result_creates_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": "x"}))
    refused(capsys, "report", bad, "--out", tmp_path / "reports", "--name", "r",
            msg="is neither a bench, a verify nor a profile result", cwd=tmp_path)


# --- exit statuses ---------------------------------------------------------------------------

def test_an_unexpected_error_exits_3_not_1(monkeypatch, capsys):
    def broken(args):
        raise KeyError("a bug")

    p = cli.parser()
    monkeypatch.setattr(cli, "parser", lambda: p)
    for sub in p._subparsers._group_actions[0].choices.values():
        if sub.get_default("fn") is not None and sub.prog.endswith(" list"):
            sub.set_defaults(fn=broken)
    code, _, err = harness(capsys, "list")
    assert code == 3 and "internal error (a bug in the harness" in err.splitlines()[-1] and "KeyError" in err


def test_a_command_line_error_is_one_line(capsys):
    code, out, err = harness(capsys, "verify", "--bogus")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "unrecognized arguments: --bogus" in err


def test_bad_input_as_a_user_runs_it_one_line_no_traceback(tmp_path):
    """The same through `python -m harness` in a fresh process (the exit status the shell sees)."""
    conf = xyz(tmp_path / "c.xyz", ["Ar 1 1 1", "Ar 1 1 1"])
    r = subprocess.run([sys.executable, "-m", "harness", "forces", "--strategy", "allpairs_thread_cpu", "--input",
                        str(conf), "--out", str(tmp_path / "f.npz")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: positions: particles 0 and 1 coincide (distance 0); closer than 0.00411 a pair has no direction or "
        "its lj terms overflow float (fp32): move or remove one of them"]
    assert not (tmp_path / "f.npz").exists()


# --- machines without a GPU ------------------------------------------------------------------

def test_without_a_gpu_the_reason_says_so_first():
    ok, why = strategies.create("allpairs_thread_tiled").available()
    if ok:
        pytest.skip("this machine has a GPU")
    assert why.startswith("no CUDA GPU found") or why.startswith("a GPU is present but CuPy")


def test_a_suite_without_a_gpu_lists_its_gpu_points_as_not_applicable(tmp_path, capsys, monkeypatch):
    ok, why = strategies.create("allpairs_thread_tiled").available()
    if ok:
        pytest.skip("this machine has a GPU")
    monkeypatch.setitem(suites.SUITES, "t", ("test", [suites.Part("allpairs_thread_tiled,allpairs_thread_cpu",
                                                                  ("uniform",), ("tiny",))]))
    code, out, err = harness(capsys, "bench", "--suite", "t", "--out", tmp_path, "--name", "t", "--repeat", "1",
                             "--warmup", "0", "--min-time", "0", "--no-graph", "--quiet")
    assert code == 0, err
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert {(r["strategy"], r["status"]) for r in rows} == {("allpairs_thread_tiled", "n/a"),
                                                            ("allpairs_thread_cpu", "ok")}
    assert f"n/a: {why}  (1 point: allpairs_thread_tiled uniform" in out
    assert sweep.terminal_table(rows).count("None") == 0


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be created")
def test_a_folder_that_takes_no_file_is_refused_before_any_step(tmp_path, capsys):
    """/proc takes no new file, whoever asks: for root os.access says yes there, so the check creates a
    file of its own. The MD loop's trajectory and a verify folder are refused before any work."""
    refused(capsys, "md", "--strategy", "verlet_thread_cpu", "--n", "500", "--steps", "10", "--out",
            "/proc/t.xyz", msg="--out: cannot create /proc/t.xyz", cwd=tmp_path)
    refused(capsys, "verify", "--size", "tiny", "--strategies", "allpairs_thread_cpu", "--out", "/proc",
            msg="--out: cannot write in /proc", cwd=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written where it ran


@pytest.mark.parametrize("args", [
    ["ewald", "--n", "20"],
    ["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "lj_liquid", "--n", "tiny"],
    ["bench", "--scenario", "spce_water", "--n", "tiny"],
    ["merge", "results.json"],
])
@pytest.mark.parametrize("name", ["a/b", "../up", ".hidden", ""])
def test_a_result_name_that_is_not_a_file_name_is_refused_before_any_work(tmp_path, capsys, args, name):
    refused(capsys, *args, "--out", tmp_path / "out", "--name", name, msg="a file name without folders", cwd=tmp_path)
