"""Poisoned memory: every new allocation filled with a pattern that cannot pass for data.

A kernel that reads a buffer before anything wrote it usually gets zeros on an idle GPU (fresh
memory from the driver) and old data where other work ran before it: a fault that comes and goes
with what else shares the GPU. With poisoning on, every allocation CuPy's memory pool hands out
and every host work array a CPU strategy makes (`empty`) holds all bits set: NaN in a float, -1
in a signed integer, the largest value in an unsigned one. A read of unwritten memory then gives
the same wrong answer every time: NaN forces, an index far out of range.

On: `enable()` (what `--poison` on verify, bench, md and sanitize calls), or MDFORCE_POISON=1 in
the environment (the tests' conftest and every child process read it). A device allocation
made while its stream captures a CUDA graph is not filled (a fill would be recorded into the
graph and run at every replay); `captured_allocations()` counts them.
"""
from __future__ import annotations

import os

import numpy as np

ENV = "MDFORCE_POISON"
BYTE = 0xFF  # all bits set

_STATE = {"device": False, "captured": 0, "filled": 0}


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("1", "on", "yes", "true")


def enable() -> None:
    """Poisoning on for this process and the processes it starts; the CuPy allocator hook is
    installed now where CuPy is imported (device() installs it later otherwise)."""
    os.environ[ENV] = "1"
    import sys

    if "cupy" in sys.modules:
        device()


def fill(a: np.ndarray) -> np.ndarray:
    """`a` with every byte set to the pattern (in place); returns it."""
    if a.size:
        a.reshape(-1).view(np.uint8).fill(BYTE)
    return a


def empty(shape, dtype=np.float64) -> np.ndarray:
    """np.empty, filled with the pattern where poisoning is on: a CPU strategy's work arrays."""
    a = np.empty(shape, dtype)
    return fill(a) if enabled() else a


def device() -> bool:
    """Install the allocator hook on CuPy's default memory pool where poisoning is on and it is not
    installed yet. Returns whether it is installed. Called by the GPU strategies before they
    allocate (strategies/cuda.py)."""
    if _STATE["device"] or not enabled():
        return _STATE["device"]
    import cupy

    pool = cupy.get_default_memory_pool()
    runtime = cupy.cuda.runtime

    def malloc(size: int):
        mem = pool.malloc(size)
        if size and enabled():  # read each time: a test turns it off again
            stream = cupy.cuda.get_current_stream()
            try:
                capturing = stream.is_capturing()
            except cupy.cuda.runtime.CUDARuntimeError:  # the legacy stream while another captures
                capturing = True
            if capturing:
                _STATE["captured"] += 1
            else:
                runtime.memsetAsync(mem.ptr, BYTE, size, stream.ptr)
                _STATE["filled"] += 1
        return mem

    cupy.cuda.set_allocator(malloc)
    _STATE["device"] = True
    return True


def filled() -> int:
    """Device allocations filled so far in this process."""
    return _STATE["filled"]


def captured_allocations() -> int:
    """Device allocations made during a graph capture (not filled) so far in this process."""
    return _STATE["captured"]
