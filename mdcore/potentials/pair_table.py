"""Typed Lennard-Jones and point charges (a force-field file, mdcore.forcefield) as a pair potential
whose particles carry data of their own.

Per pair at distance r, with a, b the two particles' types (the formulas of mdcore.forcefield):
  Lennard-Jones, r < rc_ab:   u = 4 eps_ab (s^12 - s^6) - U_shift,ab,  s = sigma_ab / r
  reaction field, r < rc:     u = k q_i q_j (1/r + k_rf r^2 - c_rf)
  Ewald real space, r < rc:   u = k q_i q_j erfc(alpha r) / r
A pair interacts (is counted) where it lies within either cutoff that applies.

What a particle carries rides in its position's fourth component (words(); functor `PairTable` in
strategies/kernels/pair_table.cuh):
  table   the particle's record: an index into the distinct (type, charge) pairs of the system, whose
          R x R table holds each record pair's constants, the charge product included. Typed
          particles without charges are the case R = T; with one cutoff for every pair their entries
          hold two values (table2: 8 bytes a pair in float, the cutoff in the header).
  charge  one Lennard-Jones type with a charge per particle: the particle's charge (any number of
          distinct values); the charge product is formed per pair.
One type and no charges is plain Lennard-Jones: `potential()` returns mdcore's LennardJones for it,
so that such a file runs the single-type kernels unchanged.

Not a spec on the command line (`--potential`): it is built from a force-field file and the
particles' types and charges (`--forcefield`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numba import njit

from ..errors import InputError
from ..forcefield import ForceField, ForceFieldError
from . import Potential

KIND_TABLE, KIND_CHARGE, KIND_TABLE2 = 1, 2, 3
METHODS = {"none": 0, "reaction-field": 1, "ewald": 2}
HEADER, ENTRY = 16, 4  # the functor's header values and the values of one table entry
MAX_RECORDS = 256  # distinct (type, charge) pairs a table holds (256 x 256 entries, 1 MB in float)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@njit(inline="always")
def table_pair(r2, prm, wi, wj):
    """CPU strategies (the twin of the functor), in the compute dtype: (|F|/r, u, hit) for the
    particles carrying wi and wj; prm = params() then 0, 1 and 1/12 in the compute dtype."""
    zero = prm[-3]
    one = prm[-2]
    twelfth = prm[-1]
    kind = int(prm[HEADER - 1])
    if kind == KIND_CHARGE:
        c12, c6, rc2 = prm[8], prm[9], prm[10]
        qq = prm[7] * (wi * wj)
        shift = prm[12]
    else:
        if kind == KIND_TABLE:
            e = HEADER + (int(wi) * int(prm[0]) + int(wj)) * ENTRY
            c12, c6, rc2, qq = prm[e], prm[e + 1], prm[e + 2], prm[e + 3]
        else:
            e = HEADER + (int(wi) * int(prm[0]) + int(wj)) * 2
            c12, c6, rc2, qq = prm[e], prm[e + 1], prm[10], zero
        shift = zero
        if prm[13] != zero:  # shifted: U(rc) from the entry, as the functor forms it
            inv = one / rc2
            s6 = inv * inv * inv
            shift = s6 * ((c12 * s6 - c6) - c6) * twelfth
    inv_r2 = one / r2
    r6 = inv_r2 * inv_r2 * inv_r2
    fr = zero
    u = zero
    hit = False
    if r2 < rc2:
        hit = True
        bracket = c12 * r6 - c6
        fr = r6 * bracket * inv_r2
        u = r6 * (bracket - c6) * twelfth - shift
    method = int(prm[HEADER - 2])
    if method != 0 and r2 < prm[1]:
        hit = True
        inv_r = one / np.sqrt(r2)
        if method == 1:
            fr += qq * (inv_r * inv_r2 - prm[3])
            u += qq * (inv_r + (prm[2] * r2 - prm[4]))
        else:
            ar = prm[5] * (r2 * inv_r)
            ec = math.erfc(ar)
            x = math.exp(-(ar * ar))
            fr += qq * (ec * inv_r + prm[6] * x) * inv_r2
            u += qq * (ec * inv_r)
    return fr, u, hit


@njit(inline="always")
def bound_pair(r2, c):
    """A bound on any pair's |F|/r and |u| at r (float64): the largest sigma and epsilon of the
    table and the largest |k q_i q_j|, terms added in magnitude. For the range checks (the closest
    pair a precision computes, the fixed-point sums' range), not for verification: the reference
    (reference.forcefield) computes each pair from its own types and charges.
    c = sigma_max^2, eps_max, U_shift bound, |k q q|_max, method, k_rf, c_rf, alpha, rc_c^2."""
    s2 = c[0] / r2
    s6 = s2 * s2 * s2
    fr = abs(24.0 * c[1] * s6 * (2.0 * s6 - 1.0) / r2)
    u = abs(4.0 * c[1] * s6 * (s6 - 1.0)) + c[2]
    if c[4] != 0.0 and r2 < c[8]:
        r = math.sqrt(r2)
        if c[4] == 1.0:
            fr += c[3] * abs(1.0 / (r2 * r) - 2.0 * c[5])
            u += c[3] * abs(1.0 / r + c[5] * r2 - c[6])
        else:
            e = math.erfc(c[7] * r)
            fr += c[3] * (e / r + TWO_OVER_SQRT_PI * c[7] * math.exp(-c[7] * c[7] * r2)) / r2
            u += c[3] * e / r
    return fr, u


@dataclass(frozen=True, eq=False)
class PairTable(Potential):
    """forcefield: the parsed file; types (N,) indices into its types; charges (N,) or None."""

    forcefield: ForceField
    types: np.ndarray
    charges: np.ndarray | None = None
    cutoff: float | None = field(init=False)

    name: ClassVar[str] = "ff"
    per_particle: ClassVar[bool] = True
    pair: ClassVar = staticmethod(table_pair)
    reference_pair: ClassVar = staticmethod(bound_pair)

    def __post_init__(self) -> None:
        ff = self.forcefield
        t = np.ascontiguousarray(self.types, dtype=np.int32)
        q = None if self.charges is None else np.ascontiguousarray(self.charges, dtype=np.float64)
        if q is not None and q.shape != t.shape:
            raise InputError(f"charges: {q.shape[0]} values for {t.shape[0]} particles")
        t.setflags(write=False)
        object.__setattr__(self, "types", t)
        if q is not None:
            q.setflags(write=False)
            object.__setattr__(self, "charges", q)
        object.__setattr__(self, "cutoff", ff.cutoff)
        charged = ff.method != "none"
        if ff.ntypes == 1 and charged:
            kind, records, words = KIND_CHARGE, np.zeros((1, 2)), q
        else:
            pairs = np.stack([t.astype(np.float64), q if charged else np.zeros(len(t))], axis=1)
            records, index = np.unique(pairs, axis=0, return_inverse=True) if len(t) else (np.zeros((1, 2)),
                                                                                           np.zeros(0, np.int64))
            if len(records) > MAX_RECORDS:
                raise ForceFieldError(f"{ff.where()}: the particles form {len(records)} distinct (type, charge) "
                                      f"pairs; the pair table holds at most {MAX_RECORDS} (with one type, any number "
                                      "of distinct charges is computed per pair)")
            uniform = bool(np.all(ff.pair_cutoff == ff.pair_cutoff[0, 0]))
            kind = KIND_TABLE2 if not charged and uniform else KIND_TABLE
            words = np.asarray(index, np.float64).reshape(-1)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_records", records)
        words = np.ascontiguousarray(words, dtype=np.float64)
        words.setflags(write=False)
        object.__setattr__(self, "_words", words)

    # --- what the strategies read -----------------------------------------------------------

    @property
    def kind(self) -> str:
        return {KIND_TABLE: "table", KIND_CHARGE: "charge", KIND_TABLE2: "table2"}[self._kind]

    @property
    def records(self) -> int:
        return 1 if self._kind == KIND_CHARGE else len(self._records)

    @property
    def functor(self) -> str:  # type: ignore[override]
        return f"PairTable_k{self._kind}_m{METHODS[self.forcefield.method]}_s{int(self.forcefield.shift)}"

    @property
    def functor_shared(self) -> str | None:
        """The functor whose table the kernels that can stage it read from shared memory (None: no table)."""
        return None if self._kind == KIND_CHARGE else self.functor + "_shared"

    @property
    def cuda_source(self) -> str:  # type: ignore[override]
        k, m = self._kind, METHODS[self.forcefield.method]
        shift = "true" if self.forcefield.shift else "false"
        out = '#include "pair_table.cuh"\n'
        for name, shared in ((self.functor, "false"), (self.functor + "_shared", "true")):
            base = f"PairTable<Real, {k}, {m}, {shift}, {shared}>"
            out += (f"template <typename Real>\nstruct {name} : {base} {{\n"
                    f"  __device__ __forceinline__ explicit {name}(const Real* __restrict__ p) : {base}(p) {{}}\n}};\n")
        return out

    def table_bytes(self, itemsize: int) -> int:
        """The pair table's size in the compute type (0 without a table)."""
        if self._kind == KIND_CHARGE:
            return 0
        return self.records ** 2 * (2 if self._kind == KIND_TABLE2 else ENTRY) * itemsize

    def words(self) -> np.ndarray:
        return self._words

    def cpu_pair(self):
        return table_pair

    def _entries(self, a: np.ndarray, b: np.ndarray, qq: np.ndarray) -> np.ndarray:
        """(..., ENTRY) constants of type pairs (a, b) with charge products qq."""
        ff = self.forcefield
        sig, eps, rc = ff.pair_sigma[a, b], ff.pair_epsilon[a, b], ff.pair_cutoff[a, b]
        s6 = sig ** 6
        out = np.zeros(np.shape(a) + (ENTRY,))
        out[..., 0] = 48.0 * eps * s6 * s6
        out[..., 1] = 24.0 * eps * s6
        out[..., 2] = rc * rc
        out[..., 3] = qq
        return out

    def params(self) -> np.ndarray:
        """The functor's constants (float64; the kernels read them in the compute type): the header
        (R, rc_c^2, k_rf, 2 k_rf, c_rf, alpha, 2 alpha / sqrt(pi), k, the one type's entry and U(rc),
        whether shifted, method, kind) then the R x R table, both halves from one value (the same bits
        from either side)."""
        ff = self.forcefield
        charged = ff.method != "none"
        rc_c = ff.coulomb_cutoff or 0.0
        alpha = ff.alpha or 0.0
        head = np.zeros(HEADER)
        head[:8] = [self.records, rc_c * rc_c if charged else 0.0, ff.k_rf, 2.0 * ff.k_rf, ff.c_rf, alpha,
                    TWO_OVER_SQRT_PI * alpha, ff.coulomb_constant]
        head[13] = 1.0 if ff.shift else 0.0
        if self._kind == KIND_CHARGE:
            head[8:8 + ENTRY] = self._entries(np.array(0), np.array(0), np.array(0.0))
            head[12] = ff.lj_shift()[0, 0]
            head[HEADER - 2], head[HEADER - 1] = METHODS[ff.method], KIND_CHARGE
            return head
        head[HEADER - 2], head[HEADER - 1] = METHODS[ff.method], self._kind
        rec = self._records
        ta = rec[:, 0].astype(np.int64)
        upper = np.triu_indices(len(rec))
        qq = ff.coulomb_constant * rec[upper[0], 1] * rec[upper[1], 1]
        tab = np.zeros((len(rec), len(rec), ENTRY))
        tab[upper] = self._entries(ta[upper[0]], ta[upper[1]], qq)
        tab[upper[1], upper[0]] = tab[upper]
        if self._kind == KIND_TABLE2:  # two values an entry, the one cutoff in the header
            head[10] = float(ff.pair_cutoff[0, 0]) ** 2
            tab = tab[..., :2]
        return np.concatenate([head, tab.reshape(-1)])

    def pair_params(self, dtype) -> np.ndarray:
        return np.concatenate([self.params(), [0.0, 1.0, 1.0 / 12.0]]).astype(dtype)

    def reference_constants(self) -> np.ndarray:
        ff = self.forcefield
        qmax = 0.0
        if ff.method != "none" and self.charges is not None and len(self.charges):
            qmax = float(np.max(np.abs(self.charges)))
        return np.array([float(ff.pair_sigma.max()) ** 2, float(ff.pair_epsilon.max()),
                         float(np.abs(ff.lj_shift()).max()), abs(ff.coulomb_constant) * qmax * qmax,
                         float(METHODS[ff.method]), ff.k_rf, ff.c_rf, ff.alpha or 0.0,
                         (ff.coulomb_cutoff or 0.0) ** 2])

    def spec(self) -> str:
        """The file's name and a digest of what the kernels compute with (the constants and what each
        particle carries): two problems with the same spec compute the same pairs. Formed once (every
        verify and bench row names it)."""
        if "_spec" not in self.__dict__:
            import hashlib
            from pathlib import Path

            h = hashlib.sha1(self.params().tobytes())
            h.update(self._words.tobytes())
            name = Path(self.forcefield.source).name if self.forcefield.source else "inline"
            object.__setattr__(self, "_spec", f"ff:{name}#{h.hexdigest()[:10]}")
        return self._spec

    def describe(self) -> str:
        ff = self.forcefield
        what = [f"{ff.ntypes} type{'s' if ff.ntypes != 1 else ''}"]
        if ff.method != "none":
            what.append(ff.method)
        return f"force field {ff.source or '(inline)'}: {', '.join(what)}, rc {ff.cutoff:g}"


def potential(ff: ForceField, types, charges=None) -> Potential:
    """The potential of a force field for particles of these types and charges: PairTable, or
    mdcore's LennardJones where the file has one type and no charges."""
    from .lennard_jones import LennardJones

    t = np.zeros(0, np.int32) if types is None else np.asarray(types)
    if ff.method == "none" and ff.ntypes == 1:
        return LennardJones(epsilon=float(ff.pair_epsilon[0, 0]), sigma=float(ff.pair_sigma[0, 0]),
                            cutoff=float(ff.pair_cutoff[0, 0]), shift=ff.shift)
    return PairTable(ff, t, charges if ff.method != "none" else None)
