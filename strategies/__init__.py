"""Strategy registry: the one list the CLI, the verification matrix, asv and the reports read.

    import strategies
    s = strategies.create("allpairs_tiled", block=128)
    ok, why = s.supports(problem)
"""
from __future__ import annotations

from harness.problem import InputError

from .allpairs import AllPairsCpu, AllPairsNaive, AllPairsTiled
from .base import Plan, Strategy, StrategyError
from .cells import CPU_STRATEGIES as _CELLS_CPU
from .cells import CUDA_STRATEGIES as _CELLS_CUDA
from .mardyn import CUDA_STRATEGIES as _MARDYN_CUDA

REGISTRY: dict[str, type[Strategy]] = {cls.name: cls for cls in (
    AllPairsNaive,
    AllPairsTiled,
    AllPairsCpu,
    *_CELLS_CUDA,
    *_CELLS_CPU,
    *_MARDYN_CUDA,
)}

__all__ = ["REGISTRY", "Plan", "Strategy", "StrategyError", "create", "names", "resolve"]


def names(backend: str | None = None) -> list[str]:
    return [n for n, cls in REGISTRY.items() if backend is None or cls.backend == backend]


def create(name: str, **launch) -> Strategy:
    """An instance of the registered strategy `name` with launch parameters `launch`."""
    if name not in REGISTRY:
        raise InputError(f"unknown strategy {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name](**launch)


def resolve(spec: str | None) -> list[str]:
    """Comma list of names or family prefixes ('allpairs_', 'cuda', 'cpu', 'all') -> names."""
    if not spec or spec == "all":
        return names()
    out: list[str] = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        if item in REGISTRY:
            hit = [item]
        elif item in ("cuda", "cpu"):
            hit = names(item)
        else:
            hit = [n for n in REGISTRY if n.startswith(item)] if item.endswith("_") else []
        if not hit:
            raise InputError(f"unknown strategy {item!r}; known: {', '.join(REGISTRY)} "
                             "(or a family prefix ending in '_', or cuda / cpu / all)")
        out += [h for h in hit if h not in out]
    return out
