// Position layouts (Decker's Kokkos thesis and the GROMOS GPU notes): how the positions a kernel reads lie in memory.
//   kAoS4  one Vec4 per particle (x, y, z, and its word): a single 16-byte load in fp32, the
//          harness's default
//   kAoS3  x, y, z packed per particle: three loads of one Real
//   kSoA   three arrays x[], y[], z[] of `stride` elements each: three loads, each coalesced
//          across a warp reading consecutive particles
// Positions<Real, LAYOUT> reads particle i as a Vec4 in every layout through the read-only path
// (__ldg), so that comparing layouts times the layout and nothing else. The fourth component is
// the particle's word (its type or charge, pair_table.cuh): kAoS4 packs it into the Vec4, kAoS3 and
// kSoA keep it in an array of its own after the coordinates (w[i] = p[3 stride + i]), the GROMOS
// notes' charges beside float3 positions, read where WORDS (a functor with per-particle data:
// Binds<F>, common.cuh; else w is 0). The arithmetic after the load is the same in every layout: results
// are the same bits.
#pragma once
#include "common.cuh"

constexpr int kAoS4 = 0, kAoS3 = 1, kSoA = 2;

template <typename Real, int LAYOUT, bool WORDS = false>
struct Positions {
  static_assert(LAYOUT == kAoS4 || LAYOUT == kAoS3 || LAYOUT == kSoA, "layout: kAoS4, kAoS3 or kSoA");
  const Real* __restrict__ p;
  int stride;                  // kAoS3, kSoA: particles per array (the words start at p + 3 stride)
  const Real* __restrict__ w;  // kAoS3, kSoA: the words

  __device__ __forceinline__ Positions(const Real* data, int stride_)
      : p(data), stride(stride_), w(data + 3 * static_cast<long long>(stride_)) {}
  __device__ __forceinline__ Positions(const Real* data, int stride_, const Real* words)
      : p(data), stride(stride_), w(words) {}

  __device__ __forceinline__ Vec4<Real> operator[](int i) const {
    if constexpr (LAYOUT == kAoS4) {
      if constexpr (sizeof(Real) == 4) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(p) + i);
        return {v.x, v.y, v.z, v.w};
      } else {
        const double2 a = __ldg(reinterpret_cast<const double2*>(p) + 2 * i);
        const double2 b = __ldg(reinterpret_cast<const double2*>(p) + 2 * i + 1);
        return {a.x, a.y, b.x, b.y};
      }
    } else if constexpr (LAYOUT == kAoS3) {
      return {__ldg(p + 3 * i), __ldg(p + 3 * i + 1), __ldg(p + 3 * i + 2), WORDS ? __ldg(w + i) : Real(0)};
    } else {
      return {__ldg(p + i), __ldg(p + stride + i), __ldg(p + 2 * stride + i), WORDS ? __ldg(w + i) : Real(0)};
    }
  }

  // The same positions seen from particle s: from(s)[d] is (*this)[s + d], its address one
  // multiply-add from d (a row's relative entries).
  __device__ __forceinline__ Positions from(int s) const {
    return Positions(p + static_cast<long long>(LAYOUT == kAoS4 ? 4 : LAYOUT == kAoS3 ? 3 : 1) * s, stride, w + s);
  }

  __device__ __forceinline__ Real z(int i) const {
    if constexpr (LAYOUT == kAoS4) {
      return __ldg(p + 4 * i + 2);
    } else if constexpr (LAYOUT == kAoS3) {
      return __ldg(p + 3 * i + 2);
    } else {
      return __ldg(p + 2 * stride + i);
    }
  }
};

// z of particle i, for the helpers that take either positions or a plain Vec4 array.
template <typename Real>
__device__ __forceinline__ Real z_at(const Vec4<Real>* __restrict__ pos, int i) {
  return pos[i].z;
}

template <typename Real, int LAYOUT, bool WORDS>
__device__ __forceinline__ Real z_at(const Positions<Real, LAYOUT, WORDS>& pos, int i) {
  return pos.z(i);
}
