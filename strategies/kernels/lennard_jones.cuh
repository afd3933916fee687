// The Lennard-Jones 12-6 pair functor (host side: mdcore/potentials/lennard_jones.py).
// Truncated at the cutoff, optionally shifted to zero there.
#pragma once
#include "common.cuh"

// Parameters (device array, host order in mdcore.potentials.LennardJones.params()):
// sigma^2, 24 eps, 4 eps, cutoff^2 (inf = no cutoff), U(cutoff) or 0.
template <typename Real>
struct LennardJones {
  static constexpr int kParams = 5;
  // The force's bracket as one multiply-add of constants (48 eps s6 - 24 eps) takes a register for
  // 48 eps: kept where Real is float (fp32, mixed, fixed point); in fp64 two registers more made a
  // cell kernel spill past tests/test_kernels.py's bound, so it keeps eps24 s6 (2 s6 - 1).
  static constexpr bool kForceFma = sizeof(Real) == 4;
  Real sigma2, eps24, eps4, cutoff2, shift, eps48;

  __device__ __forceinline__ explicit LennardJones(const Real* __restrict__ p)
      : sigma2(p[0]), eps24(p[1]), eps4(p[2]), cutoff2(p[3]), shift(p[4]), eps48(Real(2) * p[1]) {}

  __device__ __forceinline__ bool inside(Real r2) const { return r2 < cutoff2; }

  // For r2 inside the cutoff: |F| / r (positive = repulsive) and the pair energy u. The brackets
  // are multiply-adds of constants, spelled out as fma so that every kernel rounds a pair one way:
  // 5 floating-point instructions after s6 for both (fp64: 6), against 7 as eps24 s6 (2 s6 - 1) / r2
  // and eps4 s6 (s6 - 1) - shift (the hot loops' issue slots). The fixed-point mode's kernels are
  // built without contraction (NO_CONTRACTION, strategies/cuda.py): the same brackets unfused.
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real inv_r2 = Math<Real>::rcp(r2);
    const Real s2 = sigma2 * inv_r2;
    const Real s6 = s2 * s2 * s2;
#ifdef NO_CONTRACTION
    u = s6 * (eps4 * s6 - eps4) - shift;
    const Real bracket = kForceFma ? eps48 * s6 - eps24 : eps24 * (Real(2) * s6 - Real(1));
#else
    u = fma(s6, fma(eps4, s6, -eps4), -shift);
    const Real bracket = kForceFma ? fma(eps48, s6, -eps24) : eps24 * fma(Real(2), s6, Real(-1));
#endif
    return s6 * bracket * inv_r2;
  }
};
