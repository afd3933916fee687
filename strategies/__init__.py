"""Strategy registry: the one list the CLI, the verification matrix, asv and the reports read.

    import strategies
    s = strategies.create("allpairs_thread_tiled", block=128)
    ok, why = s.supports(problem)
    strategies.select(backend="cuda", newton3=True)     # by what a strategy is, not its name

Every module of this package is imported here, so a new strategy module registers itself
(strategies.register); the modules import only mdcore (and numpy, numba, CuPy).
"""
from __future__ import annotations

import importlib
import pkgutil

from mdcore import StrategyError

from .base import Plan, Strategy
from .registry import (ALIASES, ATTRIBUTES, REGISTRY, attributes, canonical, check_launch_keys, create, create_each,
                       lacking, names, ordered, register, resolve, select)

_TOOLS = {"nvcc"}  # command-line helpers, not strategy modules
for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _m not in _TOOLS:
        importlib.import_module(f"{__name__}.{_m}")

__all__ = ["ALIASES", "ATTRIBUTES", "REGISTRY", "Plan", "Strategy", "StrategyError", "attributes", "canonical",
           "check_launch_keys", "create", "create_each", "lacking", "names", "ordered", "register", "resolve", "select"]
