"""pytest, for tests/ and research/tests/: tests marked gpu skip with the reason where no CUDA device is
found (CI has none; the GPU machine runs them)."""
import pytest

from strategies.cuda import device_status


def pytest_collection_modifyitems(config, items):
    ok, why = device_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
