// The Lennard-Jones 12-6 pair functor (host side: mdcore/potentials/lennard_jones.py).
// Truncated at the cutoff, optionally shifted to zero there.
#pragma once
#include "common.cuh"

// Parameters (device array, host order in mdcore.potentials.LennardJones.params()):
// sigma^2, 24 eps, 4 eps, cutoff^2 (inf = no cutoff), U(cutoff) or 0, then 48 eps sigma^12,
// 24 eps sigma^6, 4 eps sigma^12, 4 eps sigma^6.
template <typename Real>
struct LennardJones {
  static constexpr int kParams = 9;
  // Where Real is float (fp32, mixed, fixed point) the pair is written in r^-6 with the sigma powers
  // in the constants: no sigma^2 / r^2 multiply (455 instead of 473 instructions a 16-pair step of the
  // packed Verlet loop, H100), and for sigma = 1 the same operations on the same values as the sigma^2
  // form, so the same bits. fp64 keeps the sigma^2 form: its register pairs for two more constants
  // made a cell kernel spill past tests/test_kernels.py's bound.
  static constexpr bool kPowers = sizeof(Real) == 4;
  // A masked form (1/r^2 selected to 0 outside the cutoff) was measured and dropped: the select moved
  // into a predicated reciprocal (docs/decisions/pair-body.md).
  Real sigma2, eps24, eps4, cutoff2, shift, c12f, c6f, c12u, c6u;

  __device__ __forceinline__ explicit LennardJones(const Real* __restrict__ p)
      : sigma2(p[0]), eps24(p[1]), eps4(p[2]), cutoff2(p[3]), shift(p[4]), c12f(p[5]), c6f(p[6]), c12u(p[7]),
        c6u(p[8]) {}

  __device__ __forceinline__ bool inside(Real r2) const { return r2 < cutoff2; }

  // For r2 inside the cutoff: |F| / r (positive = repulsive) and the pair energy u. The brackets
  // are multiply-adds of constants, spelled out as fma so that every kernel rounds a pair one way
  // (the hot loops' issue slots). The fixed-point mode's kernels are built without contraction
  // (NO_CONTRACTION, strategies/cuda.py): the same brackets unfused.
  __device__ __forceinline__ Real force_over_r(Real r2, Real& u) const {
    const Real inv_r2 = Math<Real>::rcp(r2);
    if constexpr (kPowers) {  // 48 eps sigma^12 r^-12 - 24 eps sigma^6 r^-6, over r^2
      const Real r6 = inv_r2 * inv_r2 * inv_r2;
#ifdef NO_CONTRACTION
      u = r6 * (c12u * r6 - c6u) - shift;
      const Real bracket = c12f * r6 - c6f;
#else
      u = fma(r6, fma(c12u, r6, -c6u), -shift);
      const Real bracket = fma(c12f, r6, -c6f);
#endif
      return r6 * bracket * inv_r2;
    } else {  // eps24 s6 (2 s6 - 1) / r2 with s = sigma / r
      const Real s2 = sigma2 * inv_r2;
      const Real s6 = s2 * s2 * s2;
#ifdef NO_CONTRACTION
      u = s6 * (eps4 * s6 - eps4) - shift;
      const Real bracket = eps24 * (Real(2) * s6 - Real(1));
#else
      u = fma(s6, fma(eps4, s6, -eps4), -shift);
      const Real bracket = eps24 * fma(Real(2), s6, Real(-1));
#endif
      return s6 * bracket * inv_r2;
    }
  }

  // force_over_r with the energy split for a sum (Accumulator::add_where's predicated float form):
  // u = ua ub - shift, so that a sum adds fma(ua, ub, sum) a pair and takes the shift off once for
  // the pairs it counted (Accumulator::take_shift): one add a pair fewer. The force's bits are
  // force_over_r's; the energy's sum rounds once per pair as before, but without the shift.
  // Measured faster in the packed Verlet loop (docs/decisions/pair-body.md).
  static constexpr bool kSplitEnergy = kPowers;
  __device__ __forceinline__ Real force_over_r_split(Real r2, Real& ua, Real& ub) const {
    const Real inv_r2 = Math<Real>::rcp(r2);
    const Real r6 = inv_r2 * inv_r2 * inv_r2;
    ua = r6;
    ub = fma(c12u, r6, -c6u);
    const Real bracket = fma(c12f, r6, -c6f);
    return r6 * bracket * inv_r2;
  }
  __device__ __forceinline__ Real energy_shift() const { return shift; }
};
