"""pytest, for tests/ and research/tests/: tests marked gpu skip with the reason where no CUDA device is
found (CI has none; the GPU machine runs them). The longest modules are collected first, so that
make test's two processes (pytest-xdist hands out a module at a time, in collection order) do not
end with one of them running a long module alone."""
from pathlib import Path

import pytest

from strategies.cuda import device_status

# the modules that take longest on a 2-core machine (nvcc compiles, verify runs, Dask clusters), longest first
LONG_FIRST = ("tests/test_kernels.py", "tests/test_potentials.py", "tests/test_coordination.py", "tests/test_verlet.py",
              "tests/test_report.py", "tests/test_cluster.py", "tests/test_tolerances.py", "tests/test_fixed.py",
              "tests/test_campaign.py", "research/tests/test_models.py", "tests/test_verlet_adapt.py")


def _rank(item) -> int:
    try:
        rel = Path(str(item.fspath)).resolve().relative_to(Path(__file__).resolve().parent).as_posix()
    except ValueError:
        return len(LONG_FIRST)
    return LONG_FIRST.index(rel) if rel in LONG_FIRST else len(LONG_FIRST)


def pytest_collection_modifyitems(config, items):
    items[:] = sorted(items, key=_rank)  # stable: each module's own order kept
    ok, why = device_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
