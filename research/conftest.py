"""The research scripts' tests: GPU tests skip with the reason where no device is found."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from strategies.cuda import device_status  # noqa: E402


def pytest_collection_modifyitems(config, items):
    ok, why = device_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
