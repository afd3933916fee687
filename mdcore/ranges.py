"""NVTX ranges: one helper, usable as a context manager or a decorator.

    with nvtx_range("force/allpairs_thread_tiled"): ...
    @nvtx_range("reduce/allpairs_thread_tiled")
    def reduce(...): ...

A name with slashes is pushed as nested ranges ("force", then "allpairs_thread_tiled"): Nsight
Compute reads '/' as nesting, so `ncu --nvtx --nvtx-include "force/"` selects every
strategy's force phase and `--nvtx-include "force/allpairs_thread_tiled/"` one strategy's, and Nsight
Systems shows the phase with the strategy inside it.

Uses the `nvtx` package when installed, else CuPy's NVTX binding, else does nothing (CPU-only
machines). `backend()` says which one is active, so reports can state whether ranges exist.
"""
from __future__ import annotations

import contextlib
from typing import Callable

_push: Callable[[str], None] | None = None
_pop: Callable[[], None] | None = None
_backend = "none"


def _init() -> None:
    global _push, _pop, _backend
    try:
        import nvtx  # type: ignore[import-not-found]

        # default domain: `ncu --nvtx --nvtx-include "force/"` matches without a domain prefix
        _push, _pop, _backend = nvtx.push_range, nvtx.pop_range, "nvtx"
        return
    except Exception:
        pass
    try:
        from cupy.cuda import nvtx as cnvtx  # type: ignore[import-not-found]

        cnvtx.RangePush("harness-probe")
        cnvtx.RangePop()
        _push, _pop, _backend = cnvtx.RangePush, cnvtx.RangePop, "cupy"
    except Exception:
        _push = _pop = None
        _backend = "none"


_init()


def backend() -> str:
    """'nvtx', 'cupy' or 'none'."""
    return _backend


class nvtx_range(contextlib.ContextDecorator):
    """Push the NVTX ranges of `name` on enter, pop them on exit (also on exceptions)."""

    def __init__(self, name: str):
        self.name = name
        self.parts = [p for p in name.split("/") if p]

    def __enter__(self) -> "nvtx_range":
        if _push is not None:
            for part in self.parts:
                _push(part)
        return self

    def __exit__(self, *exc) -> bool:
        if _pop is not None:
            for _ in self.parts:
                _pop()
        return False

