"""The strategy registry: what every strategy declares, and selection by those declarations.

Names follow one grammar, `<traversal>_<processor>_<variant>`:
  traversal  allpairs | fullshell | c08 | parity          (the loop order over pairs)
  processor  thread | warp | block | warpblock            (what one GPU thread, warp or block
             processes; numba strategies run one CPU thread per particle or base step: thread)
  variant    the storage (csr, 2d, nested), the CPU backend (cpu), or what else tells two
             implementations of one traversal and processor apart (naive, tiled; the warp-block
             processor's Newton3 mode and scheduler: twopass_atomic, shared_mutex, ...)

A strategy marked `experimental` (a measured design kept for comparison, docs/decisions/) is left
out of every selection that does not ask for it: `all`, `cuda`, `cpu`, family prefixes and
attribute filters give it only with `experimental=true` in the filter or `experimental=True`
(the CLI's `--experimental`); its name always selects it.

Strategies register themselves (`@register`, or `register(cls)` for generated classes) when
their module is imported; strategies/__init__.py imports every module of the package.
"""
from __future__ import annotations

from mdcore import InputError

REGISTRY: dict = {}
TRAVERSALS = ("allpairs", "fullshell", "c08", "parity", "verlet", "clusterpair")
ATTRIBUTES = ("backend", "traversal", "processor", "storage", "newton3", "deterministic", "list_reuse",
              "potentials", "precisions", "experimental")
# Names of the first release, kept as aliases for one release: reports on disk use them
# (harness.report maps them when it loads older results).
ALIASES = {
    "allpairs_naive": "allpairs_thread_naive",
    "allpairs_tiled": "allpairs_thread_tiled",
    "allpairs_cpu": "allpairs_thread_cpu",
    "cells_fullshell_csr": "fullshell_thread_csr",
    "cells_fullshell_2d": "fullshell_thread_2d",
    "cells_fullshell_nested": "fullshell_thread_nested",
    "cells_fullshell_cpu": "fullshell_thread_cpu",
    "c08_cpu": "c08_thread_cpu",
    "parity_reference": "parity_thread_csr",
    "tbp_parity": "parity_block_csr",
    "wbp_twopass_mutex": "parity_warpblock_twopass_mutex",
    "wbp_twopass_atomic": "parity_warpblock_twopass_atomic",
    "wbp_shared_mutex": "parity_warpblock_shared_mutex",
    "wbp_shared_atomic": "parity_warpblock_shared_atomic",
}


def register(cls):
    """Class decorator: add a strategy to the registry after checking its declarations."""
    missing = [a for a in ("name", "backend", "description", "traversal", "processor") if not hasattr(cls, a)]
    if missing:
        raise TypeError(f"strategy {cls.__name__} does not declare {', '.join(missing)}")
    if cls.traversal not in TRAVERSALS:
        raise TypeError(f"strategy {cls.name}: traversal {cls.traversal!r} is not one of {', '.join(TRAVERSALS)}")
    if not cls.name.startswith(f"{cls.traversal}_{cls.processor}_"):
        raise TypeError(f"strategy {cls.name}: the name must read <traversal>_<processor>_<variant> "
                        f"({cls.traversal}_{cls.processor}_...)")
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise TypeError(f"strategy {cls.name} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def ordered() -> list[str]:
    """Names in a stable order: by traversal, GPU before CPU, then by name."""
    return sorted(REGISTRY, key=lambda n: (TRAVERSALS.index(REGISTRY[n].traversal),
                                           REGISTRY[n].backend != "cuda", n))


def canonical(name: str) -> str:
    """The registered name for a name or an old alias."""
    return ALIASES.get(name, name)


def attributes(cls) -> dict:
    return {a: getattr(cls, a) for a in ATTRIBUTES}


def matches(cls, key: str, value) -> bool:
    have = getattr(cls, key)
    if key == "potentials":
        return have is None or value in have
    if isinstance(have, tuple):
        return value in have
    return have == value


def select(experimental: bool | None = None, **attrs) -> list[str]:
    """Names of the strategies whose attributes match every given one, e.g.
    select(backend="cuda", newton3=True), select(traversal="parity"). experimental: None leaves the
    experimental strategies out, True selects only them, False is the default made explicit;
    `experimental_too=True` takes both."""
    both = bool(attrs.pop("experimental_too", False))
    bad = [k for k in attrs if k not in ATTRIBUTES]
    if bad:
        raise InputError(f"unknown strategy attribute(s) {', '.join(bad)}; known: {', '.join(ATTRIBUTES)}")
    keep = (lambda c: True) if both else (lambda c: c.experimental == bool(experimental))
    return [n for n in ordered() if keep(REGISTRY[n]) and all(matches(REGISTRY[n], k, v) for k, v in attrs.items())]


def _value(text: str):
    low = text.lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    return text


def names(backend: str | None = None, experimental: bool = False) -> list[str]:
    """Registered names (of one backend), the experimental ones only with `experimental`."""
    return [n for n in ordered() if (backend is None or REGISTRY[n].backend == backend)
            and (experimental or not REGISTRY[n].experimental)]


def closest(name: str, count: int = 3) -> list[str]:
    """The registered names (and old aliases) nearest to a misspelt one."""
    import difflib

    return difflib.get_close_matches(name, list(REGISTRY) + list(ALIASES), n=count, cutoff=0.5)


def unknown_strategy(item: str) -> InputError:
    near = closest(item)
    hint = f"did you mean {', '.join(near)}?" if near else "`harness list` names them"
    return InputError(f"unknown strategy {item!r}: {hint} (or a family prefix ending in '_', cuda / cpu / all, or "
                      f"key=value filters on {', '.join(ATTRIBUTES)})")


def resolve(spec: str | None, experimental: bool = False) -> list[str]:
    """A comma list of items -> names, in the registry's order within each item. An item is a
    name (or an old alias), a family prefix ending in '_' (e.g. 'parity_'), cuda / cpu / all,
    or attribute filters 'key=value' joined by '+' (e.g. 'newton3=true+backend=cuda').
    Experimental strategies come only by name, with `experimental=true` in a filter, or with
    `experimental` (then every item takes them too)."""
    if spec is None or spec == "all":
        return names(experimental=experimental)
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise InputError(f"--strategies {spec!r} names no strategy: give names, family prefixes, cuda, cpu or all "
                         "(or leave the option out for the default)")
    out: list[str] = []
    for item in items:
        name = canonical(item)
        if name in REGISTRY:
            hit = [name]
        elif item == "all":
            hit = names(experimental=experimental)
        elif item in ("cuda", "cpu"):
            hit = names(item, experimental=experimental)
        elif "=" in item:
            filters = {}
            for f in item.split("+"):
                key, eq, val = f.partition("=")
                if not eq or not val:
                    raise InputError(f"strategy filter {f!r} is not key=value")
                filters[key.strip()] = _value(val.strip())
            if "experimental" not in filters and experimental:
                filters["experimental_too"] = True
            hit = select(**filters)
            if not hit:
                raise InputError(f"no strategy has {item!r}")
        else:
            hit = [n for n in names(experimental=experimental) if n.startswith(item)] if item.endswith("_") else []
        if not hit:
            raise unknown_strategy(item)
        out += [h for h in hit if h not in out]
    return out


def create(name: str, **launch):
    """An instance of the registered strategy `name` (or an old alias) with launch parameters."""
    key = canonical(name)
    if key not in REGISTRY:
        raise unknown_strategy(name)
    return REGISTRY[key](**launch)


def lacking(name: str, launch: dict) -> str:
    """Why strategy `name` cannot take these launch parameters ("" if it has them all)."""
    cls = REGISTRY[canonical(name)]
    missing = [k for k in launch if not cls.knows(k)]
    if not missing:
        return ""
    return (f"launch parameter {', '.join(missing)} not implemented by {cls.name} (its parameters: "
            f"{', '.join(cls.launch_defaults) or 'none'})")


def check_launch_keys(names: list[str], launch: dict) -> None:
    """A launch parameter that none of the strategies has is a typo: refused by name."""
    unknown = [k for k in launch if not any(REGISTRY[canonical(n)].knows(k) for n in names)]
    if unknown:
        raise InputError(f"unknown launch parameter(s) {', '.join(unknown)}: none of {', '.join(names)} has "
                         f"{'it' if len(unknown) == 1 else 'them'}")


def create_each(names: list[str], launch: dict) -> list:
    """Instances for a run over several strategies with one set of launch parameters: a strategy
    that lacks one of them is created with those it has and marked refused (n/a with the reason
    in every cell); a parameter that none of them has is refused (check_launch_keys)."""
    check_launch_keys(names, launch)
    out = []
    for n in names:
        cls = REGISTRY[canonical(n)]
        s = cls(**{k: v for k, v in launch.items() if cls.knows(k)})
        s.refused = lacking(n, launch)
        out.append(s)
    return out
