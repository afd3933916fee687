"""Timing of phases: CUDA events on the device, perf_counter on the host.

Both warm up first (compilation, first launches and caches stay out of the numbers), then
repeat until `min_time` seconds and `repeat` samples are reached (capped at `max_repeat`),
and report median, quartiles, min, max, mean, std and spread = (max - min) / median.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable


@dataclass(frozen=True)
class Stats:
    """Times in milliseconds."""

    median: float
    min: float
    max: float
    mean: float
    std: float
    repeats: int
    q1: float = 0.0  # quartiles: the interquartile range is the noise `harness compare` uses
    q3: float = 0.0

    @property
    def spread(self) -> float:
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    @staticmethod
    def of(samples_ms: list[float]) -> "Stats":
        if not samples_ms:
            raise ValueError("no timing samples")
        med = statistics.median(samples_ms)
        q1, _, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive") if len(samples_ms) > 1 else (med,) * 3
        return Stats(med, min(samples_ms), max(samples_ms), statistics.fmean(samples_ms),
                     statistics.pstdev(samples_ms), len(samples_ms), q1, q3)

    def as_dict(self) -> dict:
        return {**asdict(self), "spread": self.spread}

    def __str__(self) -> str:
        return f"{self.median:.4g} ms (min {self.min:.4g}, max {self.max:.4g}, n={self.repeats})"


def _check(warmup: int, repeat: int, max_repeat: int) -> None:
    if warmup < 0 or repeat < 1 or max_repeat < repeat:
        raise ValueError(f"timing: need warmup >= 0, 1 <= repeat <= max_repeat (got {warmup}, {repeat}, {max_repeat})")


def time_gpu(fn: Callable[[], object], warmup: int = 3, repeat: int = 20, min_time: float = 0.2,
             max_repeat: int = 2000, before: Callable[[], object] | None = None) -> Stats:
    """Time `fn` (which enqueues device work on the current stream) with CUDA events, one
    event pair per sample; synchronises once per batch of samples, not per sample. `before`
    (e.g. an L2 flush) is enqueued ahead of each sample, outside its event pair."""
    import cupy

    _check(warmup, repeat, max_repeat)
    stream = cupy.cuda.get_current_stream()
    for _ in range(warmup):
        fn()
    stream.synchronize()
    samples: list[float] = []
    t_end = time.perf_counter() + min_time
    batch = repeat
    while True:
        events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(batch)]
        for start, stop in events:
            if before is not None:
                before()
            start.record(stream)
            fn()
            stop.record(stream)
        events[-1][1].synchronize()
        samples += [cupy.cuda.get_elapsed_time(a, b) for a, b in events]
        if len(samples) >= max_repeat or (len(samples) >= repeat and time.perf_counter() >= t_end):
            break
        batch = min(max(len(samples), 1), max_repeat - len(samples))
    return Stats.of(samples)


def time_cpu(fn: Callable[[], object], warmup: int = 1, repeat: int = 5, min_time: float = 0.2,
             max_repeat: int = 200, sync: Callable[[], object] | None = None) -> Stats:
    """Time `fn` with the host clock; `sync` (e.g. a device synchronize) runs after each call
    inside the timed region."""
    _check(warmup, repeat, max_repeat)
    for _ in range(warmup):
        fn()
        if sync:
            sync()
    samples: list[float] = []
    t_end = time.perf_counter() + min_time
    while len(samples) < max_repeat and (len(samples) < repeat or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Stats.of(samples)
