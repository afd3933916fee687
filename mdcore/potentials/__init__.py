"""Pair potentials: one object per potential, carrying everything each layer needs.

A potential is a frozen dataclass (its parameters, validated on construction) that declares:

  name          registry key and the spec prefix on the command line ("lj:cutoff=2.5")
  functor       the C++ pair functor's template name (every GPU kernel takes it as a template
                parameter: `template <typename> class Functor`)
  cuda_header   the functor's header in strategies/kernels/ (or cuda_source: its C++ text)
  params()      the functor's constants, in its constructor's order (float64; the kernels read
                them in the compute type)
  pair          numba function (r2, prm) -> (|F|/r, u) in the compute dtype, for the CPU
                strategies; prm = pair_params(dtype)
  reference_pair  numba function (r2, c) -> (|F|/r, u) in float64, written from the formula
                independently of `pair` and of the functor; c = reference_constants()
  cutoff        None for no cutoff

Adding a potential: one host module here (the class, `pair`, `reference_pair`, decorated with
`register`) and one functor header in strategies/kernels/; no strategy file changes.
"""
from __future__ import annotations

import functools
import math
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np

from ..errors import InputError


class Potential:
    """Base of every potential (subclasses are frozen dataclasses with a `cutoff` field)."""

    name: ClassVar[str]
    functor: ClassVar[str]
    cuda_header: ClassVar[str | None] = None
    cuda_source: ClassVar[str | None] = None
    pair: ClassVar[Any]
    reference_pair: ClassVar[Any]
    cutoff: float | None

    def params(self) -> np.ndarray:
        raise NotImplementedError

    # whether particles carry data of their own (a type, a charge) that the kernels read from the
    # fourth component of each position (words()); False: that component is 0 and unread
    per_particle: ClassVar[bool] = False

    def words(self) -> np.ndarray:
        """(N,) float64: what each particle carries, where per_particle."""
        raise NotImplementedError

    def cpu_pair(self):
        """The numba pair function the CPU strategies call: (r2, prm, wi, wj) -> (|F|/r, u, hit),
        wi and wj what the two particles carry, hit whether the pair interacts. For a potential
        without per-particle data, `pair` with hit = True (the loops test its cutoff)."""
        return _with_words(self.pair)

    def pair_params(self, dtype) -> np.ndarray:
        """What `pair` reads, in the compute dtype (typed constants keep float32 arithmetic
        float32 in numba, where a literal would promote it)."""
        return self.params().astype(dtype)

    def reference_constants(self) -> np.ndarray:
        raise NotImplementedError

    def min_distance(self, precision: str) -> float:
        """The pair distance below which this potential's pair terms leave the range of the
        precision's compute type: |F|/r, |F|, |F| r and |u| (from reference_pair, in float64)
        must stay HEADROOM times below its largest finite value, room for a particle's sum of
        that many such terms. Closer pairs are refused (Problem.make): a kernel would return
        inf or NaN. Conservative to a factor 2^(1/8) in r."""
        return _min_distance(self, precision)

    def spec(self) -> str:
        """The command-line spec that rebuilds this potential."""
        items = ",".join(f"{f.name}={_fmt(getattr(self, f.name))}" for f in fields(self) if f.init)  # type: ignore[arg-type]
        return f"{self.name}:{items}"

    def describe(self) -> str:
        return self.spec()


@functools.cache
def _with_words(base_pair):
    from numba import njit

    @njit  # not numba's IR inlining, whose callers name their pair function `pair` too (LLVM inlines it)
    def with_words(r2, prm, wi, wj):
        fr, u = base_pair(r2, prm)
        return fr, u, True

    return with_words


def particle_words(problem) -> np.ndarray:
    """(N,) float64: what each particle of a problem carries (zeros where its potential has nothing)."""
    pot = problem.potential
    return np.asarray(pot.words(), np.float64) if pot.per_particle else np.zeros(problem.n)


HEADROOM = 1024.0  # pair terms per particle sum that must fit below the largest float


@functools.lru_cache(maxsize=64)
def _min_distance(pot: "Potential", precision: str) -> float:
    from ..precision import get

    limit = float(np.finfo(get(precision).compute).max) / HEADROOM
    consts = pot.reference_constants()
    r = pot.cutoff if pot.cutoff is not None else 1e6
    step = 2.0 ** 0.125
    safe = r
    with np.errstate(all="ignore"):
        while r > 1e-150:
            fr, u = pot.reference_pair(r * r, consts)
            terms = (abs(fr), abs(fr) * r, abs(fr) * r * r, abs(u))
            if not all(math.isfinite(t) and t < limit for t in terms):
                return safe
            safe = r
            r /= step
    return 0.0


def _fmt(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "1" if v else "0"
    return f"{v:g}" if isinstance(v, float) else str(v)


REGISTRY: dict[str, type[Potential]] = {}


def register(cls: type[Potential]) -> type[Potential]:
    """Class decorator: make the potential known to specs, the CLI and the reference."""
    for attr in ("name", "functor", "pair", "reference_pair"):
        if not hasattr(cls, attr):
            raise TypeError(f"potential {cls.__name__} does not declare {attr}")
    if cls.cuda_header is None and cls.cuda_source is None:
        raise TypeError(f"potential {cls.__name__} names neither a cuda_header nor a cuda_source")
    REGISTRY[cls.name] = cls
    return cls


def positive(name: str, v, allow_none: bool = False) -> None:
    """Validation helper: finite and > 0 (None allowed where it means 'none')."""
    if v is None and allow_none:
        return
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not math.isfinite(v) \
            or v <= 0:
        raise InputError(f"{name} must be finite and > 0{' (or none)' if allow_none else ''}, got {v!r}")


def _value(text: str):
    t = text.strip().lower()
    if t in ("none", "inf"):
        return None
    if t in ("true", "yes"):
        return True
    if t in ("false", "no"):
        return False
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        raise InputError(f"potential parameter value {text!r} is not a number, true/false or none") from None


def parse(spec: str) -> Potential:
    """'lj' or 'lj:epsilon=1,sigma=1,cutoff=2.5,shift=1' -> the potential (parameters named)."""
    name, _, rest = spec.partition(":")
    if name not in REGISTRY:
        raise InputError(f"unknown potential {name!r}; known: {', '.join(REGISTRY)}")
    cls = REGISTRY[name]
    known = [f.name for f in fields(cls) if f.init]  # type: ignore[arg-type]
    kw: dict = {}
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise InputError(f"potential {name}: parameter {item!r} is not key=value")
        if key not in known:
            raise InputError(f"potential {name}: unknown parameter {key!r}; known: {', '.join(known)}")
        kw[key] = _value(val)
    return cls(**kw)


def get(name: str) -> type[Potential]:
    if name not in REGISTRY:
        raise InputError(f"unknown potential {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name]


from .lennard_jones import LennardJones  # noqa: E402  (registers itself)
from .coordination import Coordination  # noqa: E402  (registers itself)
from .pair_table import PairTable  # noqa: E402  (built from a force-field file, not from a spec)

__all__ = ["Coordination", "LennardJones", "PairTable", "particle_words", "Potential", "REGISTRY", "get", "parse", "positive", "register"]
