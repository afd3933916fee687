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

