"""NVTX ranges: one helper, usable as a context manager or a decorator.

    with nvtx_range("force/allpairs_tiled"): ...
    @nvtx_range("reduce/allpairs_tiled")
    def reduce(...): ...

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
    """Push an NVTX range named `name` on enter, pop it on exit (also on exceptions)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> "nvtx_range":
        if _push is not None:
            _push(self.name)
        return self

    def __exit__(self, *exc) -> bool:
        if _pop is not None:
            _pop()
        return False

