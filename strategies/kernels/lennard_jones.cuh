// The Lennard-Jones 12-6 pair functor (host side: mdcore/potentials/lennard_jones.py).
// Truncated at the cutoff, optionally shifted to zero there.
#pragma once
#include "common.cuh"

// Parameters (device array, host order in mdcore.potentials.LennardJones.params()):
// sigma^2, 24 eps, 4 eps, cutoff^2 (inf = no cutoff), U(cutoff) or 0.
template <typename Real>
struct LennardJones {
  static constexpr int kParams = 5;
  Real sigma2, eps24, eps4, cutoff2, shift, eps48;

  __device__ __forceinline__ explicit LennardJones(const Real* __restrict__ p)
      : sigma2(p[0]), eps24(p[1]), eps4(p[2]), cutoff2(p[3]), shift(p[4]), eps48(Real(2) * p[1]) {}

  __device__ __forceinline__ bool inside(Real r2) const { return r2 < cutoff2; }

  // For r2 inside the cutoff: |F| / r (positive = repulsive) and the pair energy u. Each bracket
  // is one fused multiply-add of constants (48 eps s6 - 24 eps, 4 eps s6 - 4 eps), spelled out so
  // that every kernel (the fixed-point mode's, built without contraction, too) rounds a pair one
  // way: 5 floating-point instructions after s6 for both, against 7 as
  // eps24 s6 (2 s6 - 1) / r2 and eps4 s6 (s6 - 1) - shift (the hot loops' issue slots).
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real inv_r2 = Math<Real>::rcp(r2);
    const Real s2 = sigma2 * inv_r2;
    const Real s6 = s2 * s2 * s2;
    u = fma(s6, fma(eps4, s6, -eps4), -shift);
    return s6 * fma(eps48, s6, -eps24) * inv_r2;
  }
};
