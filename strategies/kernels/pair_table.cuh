// Typed Lennard-Jones and point charges (host side: mdcore/potentials/pair_table.py, built from a
// force-field file, mdcore/forcefield.py). What a particle carries rides in its position's fourth
// component w, so that every traversal gathers it with the position it already loads:
//   KIND 1 (table)   w = the particle's record, an index into the distinct (type, charge) pairs
//                    of the system; the pair's constants are row r_i, column r_j of an R x R table
//   KIND 2 (charge)  one Lennard-Jones type, w = the particle's charge
// METHOD: 0 no charges, 1 reaction field, 2 Ewald real space (erfc(alpha r) / r).
//
// A kernel binds the functor to a pair's two w (bind(wi, wj)) and calls inside() and
// force_over_r() on what bind returns. The bound pair is the same bits from either side: the table
// is symmetric bit for bit (the host fills both halves from one value) and the charge product is
// k (q_i q_j), q_i q_j = q_j q_i exactly.
//
// Parameters (device array in the compute type, host order in PairTable.params()):
//   0 R (records), 1 rc_c^2 (0 without charges), 2 k_rf, 3 2 k_rf, 4 c_rf, 5 alpha, 6 2 alpha / sqrt(pi),
//   7 k (coulomb constant), 8..15 the one type's entry (KIND 2), 16.. the table (KIND 1)
// Each entry is kEntry values: 48 eps s^12, 24 eps s^6, 4 eps s^12, 4 eps s^6, U_shift, rc_lj^2, k q_i q_j, 0.
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

constexpr int kFFHeader = 16, kEntry = 8;
constexpr int kFFTable = 1, kFFCharge = 2;
constexpr int kNoCharges = 0, kReactionField = 1, kEwald = 2;

// One pair's constants with the coulomb ones: what a kernel's pair body calls.
template <typename Real, int METHOD>
struct BoundPair {
  Real c12f, c6f, c12u, c6u, shift, rc2lj, qq;
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
#ifdef NO_CONTRACTION
    const Real ulj = r6 * (c12u * r6 - c6u) - shift;
    const Real flj = r6 * (c12f * r6 - c6f) * inv_r2;
#else
    const Real ulj = fma(r6, fma(c12u, r6, -c6u), -shift);
    const Real flj = r6 * fma(c12f, r6, -c6f) * inv_r2;
#endif
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

// The kEntry values of an entry at e.
template <typename Real>
__device__ __forceinline__ void load_entry(const Real* __restrict__ e, Real (&c)[kEntry]) {
  if constexpr (sizeof(Real) == 4) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(e));
    const float4 b = __ldg(reinterpret_cast<const float4*>(e) + 1);
    c[0] = a.x, c[1] = a.y, c[2] = a.z, c[3] = a.w, c[4] = b.x, c[5] = b.y, c[6] = b.z, c[7] = b.w;
  } else {
#pragma unroll
    for (int v = 0; v < kEntry / 2; ++v) {
      const double2 a = __ldg(reinterpret_cast<const double2*>(e) + v);
      c[2 * v] = a.x, c[2 * v + 1] = a.y;
    }
  }
}

template <typename Real, int KIND, int METHOD>
struct PairTable {
  static_assert(KIND == kFFTable || KIND == kFFCharge, "KIND: kFFTable or kFFCharge");
  static_assert(METHOD >= kNoCharges && METHOD <= kEwald, "METHOD: none, reaction field or Ewald");
  static_assert(KIND == kFFTable || METHOD != kNoCharges, "a charge per particle needs a method");
  const Real* __restrict__ table;
  int records;
  Real rc2c, krf, krf2, crf, alpha, ea, k;
  Real one[kEntry];  // KIND 2: the one type's entry, in registers

  __device__ __forceinline__ explicit PairTable(const Real* __restrict__ params)
      : table(params + kFFHeader), records(static_cast<int>(params[0])), rc2c(params[1]), krf(params[2]),
        krf2(params[3]), crf(params[4]), alpha(params[5]), ea(params[6]), k(params[7]) {
    if constexpr (KIND == kFFCharge) load_entry(params + 8, one);
  }

  __device__ __forceinline__ BoundPair<Real, METHOD> bind(Real wi, Real wj) const {
    if constexpr (KIND == kFFTable) {
      Real c[kEntry];
      load_entry(table + (static_cast<int>(wi) * records + static_cast<int>(wj)) * kEntry, c);
      return {c[0], c[1], c[2], c[3], c[4], c[5], c[6], rc2c, krf, krf2, crf, alpha, ea};
    } else {
      return {one[0], one[1], one[2], one[3], one[4], one[5], k * (wi * wj), rc2c, krf, krf2, crf, alpha, ea};
    }
  }
};
