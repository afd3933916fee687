"""Timing statistics and the NVTX helper (CPU side)."""
import time

import pytest

from mdcore import ranges
from harness.timing import Stats, time_cpu


def test_stats_of_samples():
    s = Stats.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.min, s.max, s.repeats) == (2.5, 1.0, 10.0, 4)
    assert s.spread == pytest.approx(9.0 / 2.5)
    assert s.mean == 4.0
    with pytest.raises(ValueError):
        Stats.of([])


def test_time_cpu_measures_a_sleep():
    s = time_cpu(lambda: time.sleep(0.01), warmup=1, repeat=4, min_time=0.0)
    assert s.repeats == 4 and 9.0 <= s.min <= s.median < 50.0


def test_time_cpu_runs_until_min_time():
    calls = []
    s = time_cpu(lambda: calls.append(1), warmup=2, repeat=3, min_time=0.05, max_repeat=100000)
    assert s.repeats > 3 and len(calls) == s.repeats + 2


def test_time_cpu_rejects_bad_arguments():
    with pytest.raises(ValueError, match="timing"):
        time_cpu(lambda: None, repeat=0)


def test_nvtx_range_as_context_and_decorator():
    seen = []

    @ranges.nvtx_range("force/test")
    def f(x):
        seen.append(x)
        return x * 2

    with ranges.nvtx_range("upload/test"):
        assert f(3) == 6
    with pytest.raises(KeyError):
        with ranges.nvtx_range("download/test"):
            raise KeyError("pops on the way out")
    assert seen == [3] and ranges.backend() in ("nvtx", "cupy", "none")


def test_nested_parts_pushed_and_popped_in_order(monkeypatch):
    log = []
    monkeypatch.setattr(ranges, "_push", lambda m: log.append(("push", m)))
    monkeypatch.setattr(ranges, "_pop", lambda: log.append(("pop",)))
    with ranges.nvtx_range("force/allpairs_thread_tiled"):
        log.append(("work",))
    assert log == [("push", "force"), ("push", "allpairs_thread_tiled"), ("work",), ("pop",), ("pop",)]
