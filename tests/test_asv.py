"""The asv suite as CI can check it: benchmarks import and their signatures are valid."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("asv") is None,
                                reason="asv is not installed (requirements/bench.txt)")


def test_asv_check():
    r = subprocess.run([sys.executable, "-m", "asv", "check", "-E", "project:same"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "No problems found" in r.stdout, r.stdout + r.stderr


def test_results_are_filed_by_gpu_model_and_python_version_not_host_or_path():
    """The environment's name holds no path (tools/asv_environment.py), the machine's no host name."""
    sys.path.insert(0, str(ROOT))
    try:
        from asv import config, environment
        from asv.plugin_manager import plugin_manager

        conf = config.Config.load(str(ROOT / "asv.conf.json"))
        cwd = Path.cwd()
        import os

        os.chdir(ROOT)
        try:
            for p in conf.plugins:
                plugin_manager.import_plugin(p)
        finally:
            os.chdir(cwd)
        (env,) = environment.get_environments(conf, ["project:same"])
        assert env.name == "existing-py%d.%d" % sys.version_info[:2]
    finally:
        sys.path.remove(str(ROOT))
    from harness import device
    import socket

    name = device.machine_name()
    assert name and socket.gethostname().lower() not in name and "/" not in name


def test_full_grid_behind_the_environment_variable():
    code = "import benchmarks.common as c; print(len(c.SCENARIOS), len(c.SIZES), len(c.PRECISIONS))"
    small = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    full = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"MDFORCE_ASV_FULL": "1", "PATH": ""})
    assert small.stdout.split() == ["1", "1", "1"], small.stderr
    assert [int(v) for v in full.stdout.split()] > [1, 1, 1], full.stderr


def test_the_headline_points_are_tracked_by_default():
    """With list and amortised, each strategy of what the machine runs: small and large on a GPU, small
    without one (CPU strategies); one CPU point of each measured here."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import bench_headline as b
    finally:
        sys.path.remove(str(ROOT))
    import strategies

    gpu = strategies.create("allpairs_thread_tiled").available()[0]
    assert b.SIZES == (["small", "large"] if gpu else ["small"])
    assert set(b.LISTS) <= set(b.NAMES) and b.LISTS
    if gpu:
        return
    w = b.WithList()
    w.setup("verlet_thread_cpu", "small")
    assert w.track_with_list_ms("verlet_thread_cpu", "small") > 0.0
    a = b.Amortised()
    a.setup("verlet_thread_cpu", "small")
    assert a.track_amortised_ms("verlet_thread_cpu", "small") > 0.0


def test_the_reciprocal_mc_and_molecule_workloads_are_tracked():
    """bench_particles: every reciprocal strategy and molecule traversal of what the machine runs; without a
    GPU, one point of each class measured here (the CPU ones), and a precision a strategy does not
    compute in skipped with its reason."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import bench_particles as b
    finally:
        sys.path.remove(str(ROOT))
    from strategies import kspace
    from strategies import molecules as traversals

    assert set(b.KSPACE) == set(kspace.names("cuda" if b.GPU else "cpu"))
    assert set(b.TRAVERSALS) == {n for n in traversals.TRAVERSALS if traversals.backend(n) == ("cuda" if b.GPU else "cpu")}
    if b.GPU:
        return
    r = b.Reciprocal()
    r.setup("kspace_thread_cpu", "fp64")
    assert r.track_total_ms("kspace_thread_cpu", "fp64") > 0.0
    with pytest.raises(NotImplementedError, match="computes in fp64"):
        r.setup("kspace_thread_cpu", "fp32")
    m = b.MonteCarlo()
    m.setup("kspace_thread_cpu", "fp64")
    assert m.track_batch_us_per_move("kspace_thread_cpu", "fp64") > 0.0
    with pytest.raises(NotImplementedError, match="on the GPU"):
        m.track_loop_us_per_move("kspace_thread_cpu", "fp64")
    x = b.Molecules()
    x.setup("verlet_thread_cpu", "fp32")
    assert x.track_compute_ms("verlet_thread_cpu", "fp32") > 0.0
