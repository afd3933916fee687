// Typed Lennard-Jones and point charges (host side: mdcore/potentials/pair_table.py, built from a
// force-field file, mdcore/forcefield.py). What a particle carries rides in its position's fourth
// component w, so that every traversal gathers it with the position it already loads:
//   KIND 1 (table)   w = the particle's record, an index into the distinct (type, charge) pairs
//                    of the system; the pair's constants are row r_i, column r_j of an R x R table
//   KIND 2 (charge)  one Lennard-Jones type, w = the particle's charge
//   KIND 3 (table2)  KIND 1 without charges and with one cutoff: entries of two values (8 bytes in float)
// METHOD: 0 no charges, 1 reaction field, 2 Ewald real space (erfc(alpha r) / r).
//
// A kernel binds the functor to a pair's two w (bind_pair(f, wi, wj), common.cuh) and calls inside() and
// force_over_r() on what bind returns. The bound pair is the same bits from either side: the table
// is symmetric bit for bit (the host fills both halves from one value) and the charge product is
// k (q_i q_j), q_i q_j = q_j q_i exactly.
//
// Parameters (device array in the compute type, host order in PairTable.params()):
//   0 R (records), 1 rc_c^2 (0 without charges), 2 k_rf, 3 2 k_rf, 4 c_rf, 5 alpha, 6 2 alpha / sqrt(pi),
//   7 k (coulomb constant), 8..11 the one type's entry and 12 its U_shift (KIND 2; KIND 3: 10 the cutoff^2),
//   13 shifted, 14 METHOD, 15 KIND (what the CPU twin reads; the kernels have them as template arguments),
//   16.. the table (KIND 1 and 3)
// Each entry is kEntry values, 16 bytes in float (one load a pair): 48 eps s^12, 24 eps s^6, rc_lj^2 and
// k q_i q_j. The energy's constants follow from the force's (4 eps s^12 = 48 eps s^12 / 12, 4 eps s^6 =
// 24 eps s^6 / 6) and, where SHIFT, U(rc) from them and rc^2: measured, the 32-byte entry with them spelled
// out cost more in gathers than the arithmetic does (docs/decisions/pair-table.md).
#pragma once
#include "common.cuh"

template <typename Real>
struct FFMath;

// rsqrt, and erfc(x) with exp(-x^2) (Ewald's pair needs both). float: erfc as Abramowitz and Stegun
// 7.1.26, a polynomial in t = 1 / (1 + p x) times exp(-x^2), absolute error below 1.5e-7 (what OpenMM's
// CUDA kernels use): one exponential for both terms, where erfcf's own branches and temporaries made
// the cell and list kernels spill. double: the library's erfc and exp.
template <>
struct FFMath<float> {
  static __device__ __forceinline__ float rsqrt(float x) { return rsqrtf(x); }
  static __device__ __forceinline__ float erfc_exp(float x, float& ex) {
    ex = __expf(-(x * x));
    const float t = Math<float>::rcp(1.0f + 0.3275911f * x);
    return t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f)))) *
           ex;
  }
};

template <>
struct FFMath<double> {
  static __device__ __forceinline__ double rsqrt(double x) { return ::rsqrt(x); }
  static __device__ __forceinline__ double erfc_exp(double x, double& ex) {
    ex = ::exp(-(x * x));
    return ::erfc(x);
  }
};

constexpr int kFFHeader = 16, kEntry = 4;
constexpr int kFFTable = 1, kFFCharge = 2, kFFTable2 = 3;
constexpr int kNoCharges = 0, kReactionField = 1, kEwald = 2;

// One pair's constants with the coulomb ones: what a kernel's pair body calls.
template <typename Real, int METHOD>
struct BoundPair {
  Real c12f, c6f, rc2lj, qq, shift;
  Real rc2c, krf, krf2, crf, alpha, ea;

  __device__ __forceinline__ bool inside(Real r2) const {
    if constexpr (METHOD == kNoCharges) {
      return r2 < rc2lj;
    } else {
      return r2 < rc2lj || r2 < rc2c;
    }
  }

  // |F| / r (positive = repulsive) and u for r2 inside: each term where r2 lies within its own cutoff.
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real inv_r2 = Math<Real>::rcp(r2);
    const Real r6 = inv_r2 * inv_r2 * inv_r2;
    const bool lj = r2 < rc2lj;
    // force: r^-6 (48 eps s^12 r^-6 - 24 eps s^6) / r^2; energy: r^-6 (that bracket - 24 eps s^6) / 12
#ifdef NO_CONTRACTION
    const Real bracket = c12f * r6 - c6f;
    const Real ulj = r6 * (bracket - c6f) * Real(1.0 / 12.0) - shift;
#else
    const Real bracket = fma(c12f, r6, -c6f);
    const Real ulj = fma(r6 * (bracket - c6f), Real(1.0 / 12.0), -shift);
#endif
    const Real flj = r6 * bracket * inv_r2;
    Real fr = lj ? flj : Real(0);
    u = lj ? ulj : Real(0);
    if constexpr (METHOD != kNoCharges) {
      const bool on = r2 < rc2c;
      const Real inv_r = FFMath<Real>::rsqrt(r2);
      Real fc, uc;
      if constexpr (METHOD == kReactionField) {  // k q q (1/r + k_rf r^2 - c_rf); F/r = k q q (1/r^3 - 2 k_rf)
#ifdef NO_CONTRACTION
        fc = qq * (inv_r * inv_r2 - krf2);
        uc = qq * (inv_r + (krf * r2 - crf));
#else
        fc = qq * fma(inv_r, inv_r2, -krf2);
        uc = qq * (inv_r + fma(krf, r2, -crf));
#endif
      } else {  // k q q erfc(a r) / r; F/r = k q q (erfc(a r) / r + 2 a / sqrt(pi) exp(-a^2 r^2)) / r^2
        const Real ar = alpha * (r2 * inv_r);
        Real x;
        const Real e = FFMath<Real>::erfc_exp(ar, x);
        uc = qq * (e * inv_r);
#ifdef NO_CONTRACTION
        fc = qq * (e * inv_r + ea * x) * inv_r2;
#else
        fc = qq * fma(e, inv_r, ea * x) * inv_r2;
#endif
      }
      fr += on ? fc : Real(0);
      u += on ? uc : Real(0);
    }
    return fr;
  }
};

// A vector of a table: through the read-only path from global memory, or a plain load (SHARED: the
// kernel copied the table to shared memory; in a kernel that did not, a plain load from global memory).
template <bool SHARED, typename V>
__device__ __forceinline__ V table_load(const V* p) {
  if constexpr (SHARED) {
    return *p;
  } else {
    return __ldg(p);
  }
}

// The kEntry values of an entry at e.
template <bool SHARED = false, typename Real>
__device__ __forceinline__ void load_entry(const Real* e, Real (&c)[kEntry]) {
  if constexpr (sizeof(Real) == 4) {
    const float4 a = table_load<SHARED>(reinterpret_cast<const float4*>(e));
    c[0] = a.x, c[1] = a.y, c[2] = a.z, c[3] = a.w;
  } else {
    const double2 a = table_load<SHARED>(reinterpret_cast<const double2*>(e));
    const double2 b = table_load<SHARED>(reinterpret_cast<const double2*>(e) + 1);
    c[0] = a.x, c[1] = a.y, c[2] = b.x, c[3] = b.y;
  }
}

// U(rc) of an entry: r^-6 (48 eps s^12 r^-6 - 2 x 24 eps s^6) / 12 at r^2 = rc^2 (the pair body's form).
template <typename Real>
__device__ __forceinline__ Real entry_shift(Real c12f, Real c6f, Real rc2) {
  const Real inv = Real(1) / rc2;
  const Real r6 = inv * inv * inv;
#ifdef NO_CONTRACTION
  return r6 * ((c12f * r6 - c6f) - c6f) * Real(1.0 / 12.0);
#else
  return r6 * (fma(c12f, r6, -c6f) - c6f) * Real(1.0 / 12.0);
#endif
}

// The two values of a KIND 3 entry at e.
template <bool SHARED, typename Real>
__device__ __forceinline__ void load_pair2(const Real* e, Real& a, Real& b) {
  if constexpr (sizeof(Real) == 4) {
    const float2 v = table_load<SHARED>(reinterpret_cast<const float2*>(e));
    a = v.x, b = v.y;
  } else {
    const double2 v = table_load<SHARED>(reinterpret_cast<const double2*>(e));
    a = v.x, b = v.y;
  }
}

// SHARED: the table placed in shared memory by the kernels that stage it (SharedTable below; the
// Verlet list's launch parameter table=shared), read with plain loads.
template <typename Real, int KIND, int METHOD, bool SHIFT, bool SHARED = false>
struct PairTable {
  static constexpr bool kSharedTable = SHARED && KIND != kFFCharge;
  using RealType = Real;
  static_assert(KIND == kFFTable || KIND == kFFCharge || KIND == kFFTable2, "KIND: kFFTable, kFFCharge or kFFTable2");
  static_assert(METHOD >= kNoCharges && METHOD <= kEwald, "METHOD: none, reaction field or Ewald");
  static_assert(KIND != kFFCharge || METHOD != kNoCharges, "a charge per particle needs a method");
  static_assert(KIND != kFFTable2 || METHOD == kNoCharges, "two-value entries hold no charge product");
  const Real* table;
  int records;
  Real rc2c, krf, krf2, crf, alpha, ea, k;
  Real one[kEntry], one_shift;  // KIND 2: the one type's entry and U(rc); KIND 3: one[2] the cutoff^2

  __device__ __forceinline__ explicit PairTable(const Real* __restrict__ params)
      : table(params + kFFHeader), records(static_cast<int>(params[0])), rc2c(params[1]), krf(params[2]),
        krf2(params[3]), crf(params[4]), alpha(params[5]), ea(params[6]), k(params[7]), one_shift(Real(0)) {
    if constexpr (KIND == kFFCharge || KIND == kFFTable2) load_entry(params + 8, one);
    if constexpr (KIND == kFFCharge && SHIFT) one_shift = params[12];
  }

  __device__ __forceinline__ BoundPair<Real, METHOD> bind(Real wi, Real wj) const {
    if constexpr (KIND == kFFTable) {
      Real c[kEntry];
      load_entry<SHARED>(table + (static_cast<int>(wi) * records + static_cast<int>(wj)) * kEntry, c);
      Real shift = Real(0);
      if constexpr (SHIFT) shift = entry_shift(c[0], c[1], c[2]);
      return {c[0], c[1], c[2], c[3], shift, rc2c, krf, krf2, crf, alpha, ea};
    } else if constexpr (KIND == kFFTable2) {
      Real a, b;
      load_pair2<SHARED>(table + (static_cast<int>(wi) * records + static_cast<int>(wj)) * 2, a, b);
      Real shift = Real(0);
      if constexpr (SHIFT) shift = entry_shift(a, b, one[2]);
      return {a, b, one[2], Real(0), shift, rc2c, krf, krf2, crf, alpha, ea};
    } else {
      return {one[0], one[1], one[2], k * (wi * wj), one_shift, rc2c, krf, krf2, crf, alpha, ea};
    }
  }

  // The table's values (R x R entries), what a kernel staging it copies.
  __device__ __forceinline__ int table_values() const {
    return records * records * (KIND == kFFTable2 ? 2 : kEntry);
  }
};
