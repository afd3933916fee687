// PLUMED's coordination number as a pair functor (host side: mdcore/potentials/coordination.py):
// u = S(r) = stretch s(r) + shift for r < dmax, s the rational switching function of x = (r - d0)
// / r0, (1 - x^n) / (1 - x^m), with the tutorial's special cases (2n = m; x within 100 ulps of 1).
#pragma once
#include "common.cuh"

template <typename Real>
struct Eps;
template <>
struct Eps<float> {
  static constexpr float value = 1.1920929e-07f;
};
template <>
struct Eps<double> {
  static constexpr double value = 2.220446049250313e-16;
};

// Parameters (device array, host order in mdcore.potentials.Coordination.params()):
// 1/r0, d0, n, m, stretch, shift, dmax^2.
template <typename Real>
struct Coordination {
  static constexpr int kParams = 7;
  Real inv_r0, d0, rn, rm, stretch, shift, dmax2;
  int n, m;

  __device__ __forceinline__ explicit Coordination(const Real* __restrict__ p)
      : inv_r0(p[0]), d0(p[1]), rn(p[2]), rm(p[3]), stretch(p[4]), shift(p[5]), dmax2(p[6]),
        n(static_cast<int>(p[2])), m(static_cast<int>(p[3])) {}

  __device__ __forceinline__ bool inside(Real r2) const { return r2 < dmax2; }

  static __device__ __forceinline__ Real ipow(Real x, int k) {
    Real out = Real(1);
    while (k > 0) {
      if (k & 1) out *= x;
      x *= x;
      k >>= 1;
    }
    return out;
  }

  // For r2 inside dmax: |F| / r = -dS/dr / r (positive = repulsive) and u = S(r).
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real r = sqrt(r2);
    if (r <= d0) {
      u = stretch + shift;
      return Real(0);
    }
    const Real x = (r - d0) * inv_r0;
    Real s, ds;
    if (2 * n == m) {
      const Real xn1 = ipow(x, n - 1);
      s = Real(1) / (Real(1) + xn1 * x);
      ds = -rn * xn1 * s * s;
    } else if (fabs(x - Real(1)) < Real(100) * Eps<Real>::value) {
      s = rn / rm;
      ds = Real(0.5) * rn * (rn - rm) / rm;
    } else {
      const Real xn1 = ipow(x, n - 1), xm1 = ipow(x, m - 1);
      const Real iden = Real(1) / (Real(1) - xm1 * x);
      s = (Real(1) - xn1 * x) * iden;
      ds = (-rn * xn1 + s * rm * xm1) * iden;
    }
    u = stretch * s + shift;
    return -stretch * ds * inv_r0 / r;
  }
};
