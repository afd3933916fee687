from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

try:  # hypothesis keeps its files in a temporary folder, not in .hypothesis/ of the checkout
    import tempfile

    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tempfile.mkdtemp(prefix="mdforce-hypothesis-"))
    settings.register_profile("no_files", database=None)
    settings.load_profile("no_files")
except ImportError:
    pass


def _results_in_checkout() -> set:
    return {p for p in (ROOT / "reports").rglob("*") if p.is_file()}


@pytest.fixture(autouse=True, scope="session")
def nothing_written_into_the_checkout():
    """Tests write into temporary folders: a result file appearing under reports/ fails the run."""
    before = _results_in_checkout()
    yield
    new = sorted(str(p.relative_to(ROOT)) for p in _results_in_checkout() - before)
    assert not new, f"the tests wrote into the checkout: {', '.join(new)}"


@pytest.fixture
def rng():
    return np.random.default_rng(12345)



# make test's processes (pytest-xdist, --dist loadscope) take a module at a time, so that a module's
# costly fixtures (compiled kernels, a built report) are made once; these modules share one scope, and so
# one process: each compiles numba's Lennard-Jones specialisations of the CPU strategies and the
# reference (seconds each), once there instead of once per process
SHARED_COMPILE = {"test_cells.py", "test_cli.py", "test_clusterpair.py", "test_fixed.py", "test_md.py",
                  "test_outputs.py", "test_poison.py", "test_properties.py", "test_tolerances.py", "test_tune.py",
                  "test_verify.py", "test_verlet.py", "test_verlet_adapt.py"}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown (and unused) without it
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesSharingCompiles(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "cpu-lennard-jones" if module.rsplit("/", 1)[-1] in SHARED_COMPILE else module

    return ModulesSharingCompiles(config, log)
