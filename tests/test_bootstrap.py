"""The set-up: what each target installs, and an offline node without a wheelhouse."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bootstrap  # noqa: E402


def test_verify_needs_only_the_base_requirements():
    base = [bootstrap.distribution(r) for r in bootstrap.requirements(bootstrap.requirement_files([]))]
    assert base == ["numpy", "numba", "pandas"]
    bench = [bootstrap.distribution(r) for r in bootstrap.requirements(bootstrap.requirement_files(["bench"]))]
    assert {"asv", "asv-runner", "tqdm", "matplotlib"} <= set(bench)
    assert bootstrap.module_of("asv-runner>=0.2") == "asv_runner" and bootstrap.module_of("cupy-cuda13x") == "cupy"


def test_offline_without_a_wheelhouse_stops_in_seconds_with_one_line(tmp_path):
    """A dead package index, no wheelhouse, an isolated venv (numpy missing): one line naming the
    packages and the command that fetches them, exit 2, within seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "bootstrap.py"), "venv", "--venv", str(tmp_path / "v"),
                        "--gpu", "no", "--isolated", "--wheelhouse", str(tmp_path / "none")],
                       capture_output=True, text=True, env=env, timeout=120)
    took = time.perf_counter() - t0
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot install numpy,numba,pandas" in lines[0] and "make wheelhouse" in lines[0]
    assert "Traceback" not in r.stdout + r.stderr
    if took > 30:
        pytest.fail(f"took {took:.0f} s (creating the venv included): an offline node must not wait on retries")
