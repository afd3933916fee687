"""Seeded, reproducible particle configurations (the scenario axis of the matrix).

Every scenario maps (n, seed, params) to a Problem; the same arguments give the same bits.
Sizes are named tiny (unit tests), small (CI verify), medium and large (GPU); any N can be
asked for and is rounded to the scenario's natural count (4 m^3 for fcc, k m^3 for cells).

Random placements use random sequential addition with a minimum pair distance: LJ at
r -> 0 overflows float32 (r^-13), and no force strategy should be judged on such pairs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit

from mdcore import Box, InputError, LennardJones, Problem, check_precision

DENSITY = 0.8442  # LJ liquid near the triple point, the standard LJ benchmark density
SIZES = ("tiny", "small", "medium", "large")


@njit(inline="always")
def _hash_axis(g, o, n, periodic):
    """Neighbour hash coordinate g + o along one axis, or -1 outside an open axis."""
    h = g + o
    if h < 0 or h >= n:
        return h % n if periodic else -1
    return h


@njit(cache=True)
def _rsa(cand, slot, quota, L, per, dmin, pos, count, head, nxt, ng):
    """Accept candidates in order while their slot has quota and no accepted particle lies
    closer than dmin (minimum image on periodic axes). Grid hash of ng cells per axis."""
    d2min = dmin * dmin
    sx, sy, sz = L[0] / ng[0], L[1] / ng[1], L[2] / ng[2]
    for c in range(cand.shape[0]):
        s = slot[c]
        if quota[s] == 0:
            continue
        x, y, z = cand[c, 0], cand[c, 1], cand[c, 2]
        gx = min(int(x / sx), ng[0] - 1)
        gy = min(int(y / sy), ng[1] - 1)
        gz = min(int(z / sz), ng[2] - 1)
        ok = True
        for ox in range(-1, 2):
            hx = _hash_axis(gx, ox, ng[0], per[0])
            if hx < 0 or not ok:
                continue
            for oy in range(-1, 2):
                hy = _hash_axis(gy, oy, ng[1], per[1])
                if hy < 0 or not ok:
                    continue
                for oz in range(-1, 2):
                    hz = _hash_axis(gz, oz, ng[2], per[2])
                    if hz < 0:
                        continue
                    k = head[(hx * ng[1] + hy) * ng[2] + hz]
                    while k >= 0 and ok:
                        dx = x - pos[k, 0]
                        dy = y - pos[k, 1]
                        dz = z - pos[k, 2]
                        if per[0]:
                            dx -= L[0] * np.rint(dx / L[0])
                        if per[1]:
                            dy -= L[1] * np.rint(dy / L[1])
                        if per[2]:
                            dz -= L[2] * np.rint(dz / L[2])
                        if dx * dx + dy * dy + dz * dz < d2min:
                            ok = False
                        k = nxt[k]
        if ok:
            i = count[0]
            pos[i, 0], pos[i, 1], pos[i, 2] = x, y, z
            cell = (gx * ng[1] + gy) * ng[2] + gz
            nxt[i] = head[cell]
            head[cell] = i
            count[0] += 1
            quota[s] -= 1


def place(rng: np.random.Generator, L: np.ndarray, periodic, quota: np.ndarray, dmin: float,
          propose: Callable[[np.random.Generator, np.ndarray], tuple[np.ndarray, np.ndarray]],
          what: str, rounds: int = 200) -> np.ndarray:
    """Random sequential addition. quota[s] particles per slot s; propose(rng, remaining)
    returns (candidates (M, 3), slot (M,)) for the slots that still need particles."""
    total = int(quota.sum())
    pos = np.empty((total, 3))
    count = np.zeros(1, dtype=np.int64)
    # hash cells of side >= dmin, and no more than about two cells per particle
    side = max(dmin, (L.prod() / (2.0 * max(total, 1))) ** (1 / 3))
    ng = np.maximum(1, np.floor(L / side)).astype(np.int64)
    head = np.full(int(ng.prod()), -1, dtype=np.int64)
    nxt = np.full(total, -1, dtype=np.int64)
    left = quota.astype(np.int64).copy()
    per = np.array(periodic, dtype=np.bool_)
    for _ in range(rounds):
        if left.sum() == 0:
            return pos
        cand, slot = propose(rng, left)
        _rsa(cand, slot.astype(np.int64), left, L, per, dmin, pos, count, head, nxt, ng)
    raise InputError(f"{what}: could not place {int(left.sum())} of {total} particles with minimum distance "
                     f"{dmin:g} after {rounds} rounds; lower the density or the minimum distance")


def _uniform_in_box(L: np.ndarray, batch: float = 1.5):
    def propose(rng, left):
        m = max(int(left[0] * batch), 256)
        return rng.random((m, 3)) * L, np.zeros(m, dtype=np.int64)
    return propose


@dataclass(frozen=True)
class Param:
    """A scenario parameter as typed on the command line ('gaussian:sigma=20'): its default,
    type and allowed range, checked by name before anything is built."""

    default: float | int
    help: str
    integer: bool = False
    low: float = 0.0          # the value must be > low (>= low when low_ok)
    low_ok: bool = False
    high: float = math.inf    # and < high

    def check(self, scenario: str, key: str, value, text: str | None = None) -> float | int:
        text = repr(value) if text is None else repr(text)
        if self.integer and not float(value).is_integer():
            raise InputError(f"scenario {scenario}: {key} must be a whole number, got {text}")
        v = int(value) if self.integer else float(value)
        above = v >= self.low if self.low_ok else v > self.low
        if not (math.isfinite(v) and above and v < self.high):
            rng = f"{'>=' if self.low_ok else '>'} {self.low:g}" + (f" and < {self.high:g}" if self.high < math.inf else "")
            raise InputError(f"scenario {scenario}: {key} ({self.help}) must be {rng}, got {text}")
        return v


def _p_density(d=DENSITY):
    return Param(d, "number density, particles per unit volume")


P_CUTOFF = Param(2.5, "LJ cutoff radius")
P_DMIN = Param(0.8, "minimum pair distance of the random placement")
P_JITTER = Param(0.05, "random displacement, a fraction of the lattice constant", low_ok=True, high=0.25)

# host memory of building a configuration and its float64 reference, per particle (measured peak:
# 346 bytes building k_per_cell, 250 for the reference of the others): sizes beyond what the
# machine has are refused before anything is allocated
HOST_BYTES_PER_PARTICLE = 400


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    sizes: dict
    build: Callable[..., tuple[np.ndarray, Box, LennardJones]]
    params: dict[str, Param] = field(default_factory=dict)

    @property
    def defaults(self) -> dict:
        return {k: p.default for k, p in self.params.items()}

    def size(self, size: str | int) -> int:
        size = parse_size(size)
        return size if isinstance(size, int) else self.sizes[size]


def parse_size(text: str | int) -> str | int:
    """A size name (tiny, small, medium, large) or a particle count (12000, 1e6, 1_000_000),
    at least 2."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        n = int(text)
    else:
        t = str(text).strip()
        if t in SIZES:
            return t
        try:
            v = float(t.replace("_", ""))
        except ValueError:
            raise InputError(f"n: expected a particle count or a size name ({', '.join(SIZES)}), got {text!r}") from None
        if not (math.isfinite(v) and v.is_integer()):
            raise InputError(f"n: a particle count must be a whole number, got {text!r}")
        n = int(v)
    if n < 2:
        raise InputError(f"n: a configuration needs at least 2 particles (a pair), got {n}")
    return n


def check_memory(n: int, what: str) -> None:
    """Refuse a size whose configuration cannot fit in this machine's free memory."""
    from .device import host_memory_available

    need = n * HOST_BYTES_PER_PARTICLE
    have = host_memory_available()
    if have is not None and need > have:
        raise InputError(f"n: {what} at N={n:,} needs about {need / 2 ** 30:,.1f} GiB of host memory "
                         f"({HOST_BYTES_PER_PARTICLE} bytes per particle), this machine has {have / 2 ** 30:,.1f} GiB "
                         f"free")


# --- builders: (n, rng, **params) -> positions, box, potential -------------------------

def _fcc(n, rng, density=DENSITY, jitter=0.05, cutoff=2.5, periodic=True):
    m = max(1, round((n / 4) ** (1 / 3)))
    a = (4.0 / density) ** (1 / 3)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    pos = ((g + basis + 0.25) * a).reshape(-1, 3)
    pos += rng.uniform(-jitter, jitter, pos.shape) * a
    L = m * a
    if not periodic:
        pos = np.clip(pos, 0.0, L)
    return pos, Box.make([L] * 3, periodic), LennardJones(cutoff=cutoff)


def _uniform(n, rng, density=DENSITY, dmin=0.8, cutoff=2.5, periodic=(True, True, True)):
    L = np.full(3, (max(n, 1) / density) ** (1 / 3))
    pos = place(rng, L, periodic, np.array([n]), dmin, _uniform_in_box(L), "uniform")
    return pos, Box.make(L, periodic), LennardJones(cutoff=cutoff)


def _slab(n, rng, **kw):
    return _uniform(n, rng, periodic=(True, True, False), **kw)


def _per_cell(n, rng, k=9, cutoff=2.5, dmin=0.8, periodic=True):
    m = max(1, round((n / k) ** (1 / 3)))
    side = cutoff
    L = np.full(3, m * side)
    if k == 1:  # the thesis's grid: one particle per cell, here randomly inside its central half
        g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 3)
        pos = (g + 0.25 + 0.5 * rng.random(g.shape)) * side
    else:
        ncell = m ** 3

        def propose(rng, left):
            cells = np.repeat(np.nonzero(left)[0], 4 * k)
            cx, cy, cz = cells // (m * m), (cells // m) % m, cells % m
            corner = np.stack([cx, cy, cz], -1) * side
            return corner + rng.random((len(cells), 3)) * side, cells

        pos = place(rng, L, (periodic,) * 3, np.full(ncell, k), dmin, propose, f"k_per_cell k={k}")
    return pos, Box.make(L, periodic), LennardJones(cutoff=cutoff)


def _gaussian(n, rng, sigma=12.0, dmin=0.2, cutoff=3.0):
    """Thesis section 10.5 at n = 1,000,000: box side 120 with 40^3 cells of side 3, sigma in
    [12, 85]. Other n scale box and sigma by (n / 1e6)^(1/3), keeping the shape and density."""
    scale = (max(n, 1) / 1e6) ** (1 / 3)
    L = np.full(3, 120.0 * scale)
    s = sigma * scale

    def propose(rng, left):
        m = max(int(left[0] * 1.5), 256)
        c = rng.normal(L / 2, s, (m, 3))
        c = c[np.all((c >= 0) & (c < L), axis=1)]  # truncated to the (open) box
        return c, np.zeros(len(c), dtype=np.int64)

    pos = place(rng, L, (False,) * 3, np.array([n]), dmin, propose, f"gaussian sigma={sigma:g}")
    return pos, Box.make(L, False), LennardJones(cutoff=cutoff)


def _clump(n, rng, sigma=5.0, box=60.0, dmin=0.2, cutoff=2.5):
    """A Gaussian clump whose box and width do not scale with N: denser with every particle
    added (the tolerance model's hard case: many partners, close pairs, coordinates up to 60)."""
    L = np.full(3, float(box))

    def propose(rng, left):
        m = max(int(left[0] * 1.5), 256)
        c = rng.normal(L / 2, sigma, (m, 3))
        c = c[np.all((c >= 0) & (c < L), axis=1)]
        return c, np.zeros(len(c), dtype=np.int64)

    pos = place(rng, L, (False,) * 3, np.array([n]), dmin, propose, f"clump sigma={sigma:g}")
    return pos, Box.make(L, False), LennardJones(cutoff=cutoff)


def _cube(n, rng, density=DENSITY, jitter=0.05):
    m = max(1, round(n ** (1 / 3)))
    a = density ** (-1 / 3)
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (g + 0.5 + rng.uniform(-jitter, jitter, g.shape)) * a
    return pos, Box.make([m * a] * 3, False), LennardJones(cutoff=None)


def _kob_andersen(n, rng, density=1.2, fraction=0.2, jitter=0.05):
    """Kob and Andersen's binary mixture: an fcc lattice at density 1.2 (jittered), a random
    `fraction` of B particles; the explicit table eps_AB = 1.5, sigma_AB = 0.8, eps_BB = 0.5,
    sigma_BB = 0.88 (not Lorentz-Berthelot), each pair cut at 2.5 sigma_ab."""
    from mdcore import forcefield
    from mdcore.potentials.pair_table import potential

    pos, box, _ = _fcc(n, rng, density=density, jitter=jitter)
    types = np.zeros(len(pos), np.int32)
    types[rng.permutation(len(pos))[:round(fraction * len(pos))]] = 1
    ff = forcefield.parse({"types": ["A", "B"],
                           "lj": {"pair_sigma": [[1.0, 0.8], [0.8, 0.88]], "pair_epsilon": [[1.0, 1.5], [1.5, 0.5]],
                                  "cutoff": 2.5, "cutoff_in_sigma": True}}, source="kob_andersen")
    return pos, box, potential(ff, types)


def _typed(n, rng, types=2, density=DENSITY, jitter=0.05, cutoff=2.5):
    """The LJ liquid's lattice with `types` particle types drawn at random, each type's sigma in
    [0.95, 1.05] and epsilon in [0.8, 1.2] (evenly spaced), Lorentz-Berthelot mixing, one cutoff: the
    LJ benchmark's positions and pairs with a pair table of any size."""
    from mdcore import forcefield
    from mdcore.potentials.pair_table import potential

    pos, box, _ = _fcc(n, rng, density=density, jitter=jitter, cutoff=cutoff)
    t = int(types)
    frac = np.linspace(0.0, 1.0, t) if t > 1 else np.zeros(1)
    ff = forcefield.parse({"types": [f"T{k}" for k in range(t)],
                           "lj": {"sigma": (0.95 + 0.1 * frac).tolist(), "epsilon": (0.8 + 0.4 * frac).tolist(),
                                  "mixing": "lorentz-berthelot", "cutoff": cutoff}}, source=f"typed_lj types={t}")
    return pos, box, potential(ff, rng.integers(0, t, len(pos)).astype(np.int32))


def _charged(n, rng, method="reaction-field", charge=0.5, density=DENSITY, jitter=0.05, cutoff=2.5, epsilon_rf=78.3,
             tolerance=5e-4):
    """The LJ liquid with charges +q and -q alternating by particle index (neutral for even N)."""
    from mdcore import forcefield
    from mdcore.potentials.pair_table import potential

    pos, box, _ = _fcc(n, rng, density=density, jitter=jitter, cutoff=cutoff)
    q = np.where(np.arange(len(pos)) % 2 == 0, charge, -charge)
    es = {"method": method, "cutoff": cutoff}
    es.update({"epsilon_rf": epsilon_rf} if method == "reaction-field" else {"tolerance": tolerance})
    ff = forcefield.parse({"types": ["LJ"], "lj": {"sigma": [1.0], "epsilon": [1.0], "cutoff": cutoff},
                           "electrostatics": es, "allow_net_charge": True},
                          source="charged_lj" if method == "reaction-field" else "charged_lj_ewald")
    return pos, box, potential(ff, np.zeros(len(pos), np.int32), q)


_FCC = {"density": _p_density(), "jitter": P_JITTER, "cutoff": P_CUTOFF}
_CHARGE = Param(0.5, "the particles' charges, +q and -q alternating")
_UNIFORM = {"density": _p_density(), "dmin": P_DMIN, "cutoff": P_CUTOFF}

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("lj_liquid", "fcc lattice at density 0.8442, jittered by 5% of the lattice constant; periodic; rc 2.5",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576}, _fcc, _FCC),
    Scenario("lj_liquid_open", "the LJ liquid lattice in an open box (surfaces on every side); rc 2.5",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576},
             lambda n, rng, **kw: _fcc(n, rng, periodic=False, **kw), _FCC),
    Scenario("uniform", "uniform random at density 0.8442, minimum distance 0.8; periodic; rc 2.5",
             {"tiny": 300, "small": 3000, "medium": 50000, "large": 1000000}, _uniform, _UNIFORM),
    Scenario("uniform_slab", "uniform random at density 0.8442; periodic in x and y, open in z; rc 2.5",
             {"tiny": 300, "small": 3000, "medium": 50000, "large": 1000000}, _slab, _UNIFORM),
    Scenario("one_per_cell", "one particle per cell of side rc = 2.5 (random in the cell's central half); periodic",
             {"tiny": 216, "small": 1728, "medium": 64000, "large": 1000000},
             lambda n, rng, **kw: _per_cell(n, rng, k=1, **kw), {"cutoff": P_CUTOFF}),
    Scenario("k_per_cell", "k particles per cell of side rc = 2.5 (default k=9, thesis fig. 10.4), minimum distance 0.8; periodic",
             {"tiny": 243, "small": 1944, "medium": 36864, "large": 2146689}, _per_cell,
             {"k": Param(9, "particles per cell", integer=True, low=1, low_ok=True), "dmin": P_DMIN, "cutoff": P_CUTOFF}),
    Scenario("gaussian", "Gaussian blob (thesis 10.5): box 120 and sigma 12 at N=1e6 (scaled by N^(1/3)), open, rc 3.0, minimum distance 0.2",
             {"tiny": 300, "small": 4000, "medium": 64000, "large": 1000000}, _gaussian,
             {"sigma": Param(12.0, "width at N=1e6 (scaled by (N/1e6)^(1/3))"),
              "dmin": Param(0.2, "minimum pair distance of the random placement"), "cutoff": Param(3.0, "LJ cutoff radius")}),
    Scenario("clump", "dense Gaussian clump: sigma 5 in an open box of side 60 at every N (not scaled), rc 2.5, "
             "minimum distance 0.2; up to 12 particles per unit volume at the centre at medium size",
             {"tiny": 500, "small": 4000, "medium": 24000, "large": 48000}, _clump,
             {"sigma": Param(5.0, "width of the clump"), "box": Param(60.0, "side of the open box"),
              "dmin": Param(0.2, "minimum pair distance of the random placement"), "cutoff": P_CUTOFF}),
    Scenario("kob_andersen", "Kob-Andersen 80:20 binary LJ: fcc lattice at density 1.2, jittered; explicit table "
             "eps_AB 1.5, sigma_AB 0.8, eps_BB 0.5, sigma_BB 0.88; each pair cut at 2.5 sigma_ab; periodic",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576}, _kob_andersen,
             {"density": Param(1.2, "number density"), "fraction": Param(0.2, "the B particles' share", high=1.0),
              "jitter": P_JITTER}),
    Scenario("typed_lj", "the LJ liquid's lattice with T random particle types (default 2; sigma 0.95-1.05, epsilon "
             "0.8-1.2, Lorentz-Berthelot), one cutoff 2.5: the LJ benchmark with a pair table of T x T",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576}, _typed,
             {"types": Param(2, "particle types", integer=True, low=1, low_ok=True, high=257), **_FCC}),
    Scenario("charged_lj", "the LJ liquid with charges +q, -q alternating (q 0.5), reaction field (eps_rf 78.3) "
             "and LJ both cut at 2.5; periodic",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576},
             lambda n, rng, **kw: _charged(n, rng, "reaction-field", **kw),
             {**_FCC, "charge": _CHARGE, "epsilon_rf": Param(78.3, "reaction field's dielectric", low=1.0,
                                                              low_ok=True)}),
    Scenario("charged_lj_ewald", "the charged LJ liquid with Ewald's real-space term (tolerance 5e-4: alpha as OpenMM "
             "chooses it; the reciprocal part not computed); periodic",
             {"tiny": 256, "small": 2048, "medium": 32000, "large": 1048576},
             lambda n, rng, **kw: _charged(n, rng, "ewald", **kw),
             {**_FCC, "charge": _CHARGE, "tolerance": Param(5e-4, "Ewald real-space error", high=0.5)}),
    Scenario("allpairs_cube", "simple cubic lattice at density 0.8442, jittered; open box; no cutoff (thesis 10.1)",
             {"tiny": 125, "small": 1000, "medium": 32768, "large": 216000}, _cube,
             {"density": _p_density(), "jitter": P_JITTER}),
]}

DEFAULT_MATRIX = ("lj_liquid", "lj_liquid_open", "uniform", "uniform_slab", "one_per_cell", "k_per_cell",
                  "gaussian", "clump", "allpairs_cube", "kob_andersen", "typed_lj", "charged_lj", "charged_lj_ewald")


def parse_spec(spec: str) -> tuple[Scenario, dict]:
    """'name' or 'name:key=value,key=value' -> (scenario, params), each parameter checked by name."""
    name, _, rest = spec.partition(":")
    if name not in SCENARIOS:
        raise InputError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    sc = SCENARIOS[name]
    params: dict = {}
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise InputError(f"scenario {name}: parameter {item!r} is not key=value")
        if key not in sc.params:
            known = ", ".join(sc.params) or "none"
            raise InputError(f"scenario {name}: unknown parameter {key!r}; it takes {known}")
        try:
            value = float(val)
        except ValueError:
            raise InputError(f"scenario {name}: parameter {key} must be a number, got {val!r}") from None
        params[key] = sc.params[key].check(name, key, value, val)
    return sc, params


def check(spec: str, size: str | int) -> int:
    """The particle count of spec at size, refused before any work when the size is not a count
    or cannot fit in this machine's memory."""
    sc, _ = parse_spec(spec)
    n = sc.size(size)
    check_memory(n, f"scenario {sc.name}")
    return n


def make(spec: str, size: str | int = "small", seed: int = 1, precision: str = "fp32") -> Problem:
    """Build the Problem for scenario `spec` at `size` (a size name or a particle count)."""
    check_precision(precision)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a whole number >= 0, got {seed!r}")
    sc, params = parse_spec(spec)
    n = check(spec, size)
    pos, box, pot = sc.build(n, np.random.default_rng(seed), **params)
    short = _too_short(box, pot)
    if short:
        raise InputError(f"scenario {spec}: N={n} gives a periodic box of side {short:.3g}, shorter than twice the "
                         f"cutoff ({2 * pot.cutoff:g}); {_smallest_n_text(sc, params, n)}")
    label = f"{spec} N={len(pos)} seed={seed}"
    return Problem.make(pos, box, pot, precision=precision, label=label)


def with_potential(problem: Problem, spec: str | None) -> Problem:
    """The problem's positions and box with the potential of `spec` (e.g.
    'coordination:r0=1,n=6,dmax=2.5'; its name joins the label), the problem itself where spec
    is None. A box too short for the new cutoff is refused as for any problem."""
    if not spec:
        return problem
    from mdcore import potentials

    pot = potentials.parse(spec)
    return Problem.make(problem.positions, problem.box, pot, precision=problem.precision,
                        label=f"{problem.label} {pot.name}")


def _too_short(box: Box, pot) -> float:
    """The shortest periodic length when it is below twice the cutoff, else 0."""
    if pot.cutoff is None:
        return 0.0
    short = [L for L, p in zip(box.lengths, box.periodic) if p and L < 2.0 * pot.cutoff]
    return min(short) if short else 0.0


SMALLEST_N_SEARCH = 1 << 24  # the particle counts _smallest_n tries, at most


def _smallest_n_text(sc: Scenario, params: dict, n: int) -> str:
    m = _smallest_n(sc, params, n)
    if m is None:
        return f"no N up to {SMALLEST_N_SEARCH:,} fits it"
    return f"the smallest N it takes is about {m}"


def _smallest_n(sc: Scenario, params: dict, n: int) -> int | None:
    """The smallest particle count whose box fits the cutoff (doubling, then bisection); None where
    none up to SMALLEST_N_SEARCH does."""
    def fits(m: int) -> bool:
        try:
            _, box, pot = sc.build(m, np.random.default_rng(0), **params)
        except InputError:
            return False
        return not _too_short(box, pot)

    lo, hi = n, max(n, 2) * 2
    while not fits(hi):
        lo, hi = hi, hi * 2
        if hi > SMALLEST_N_SEARCH:
            return None
    while hi - lo > max(1, lo // 50):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi
