// The positions in another layout (layout.cuh): dst from the Vec4 array src, n particles. Run
// where a strategy's launch parameter layout is not the default (kAoS4): after the binning (the
// full shell) or at the start of the force phase (all-pairs), so that the MD loop's positions
// reach the kernel whatever the layout. words: also the particles' words (w), after the three
// coordinate arrays (layout.cuh), where the potential has per-particle data.
#include "layout.cuh"

template <typename Real, int LAYOUT>
__global__ void relayout(const Vec4<Real>* __restrict__ src, const int n, Real* __restrict__ dst, const int stride,
                         const bool words) {
  static_assert(LAYOUT == kAoS3 || LAYOUT == kSoA, "the default layout needs no copy");
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Vec4<Real> v = src[i];
    if constexpr (LAYOUT == kAoS3) {
      dst[3 * i] = v.x;
      dst[3 * i + 1] = v.y;
      dst[3 * i + 2] = v.z;
    } else {
      dst[i] = v.x;
      dst[stride + i] = v.y;
      dst[2 * stride + i] = v.z;
    }
    if (words) dst[3 * static_cast<long long>(stride) + i] = v.w;
  }
}
