// Shared by every kernel: vector type, precision traits, minimum image, the per-thread
// accumulator and the block reduction of energy, virial and pair count.
//
// Pair functors live in headers of their own (lennard_jones.cuh, ...): strategies/cuda.py puts
// the problem's functor ahead of a kernel file, and every traversal kernel takes it as
// `template <typename> class Functor`. A functor F<Real> provides:
//   explicit F(const Real* params)          constants in the host's params() order
//   bool inside(Real r2) const              r2 within the cutoff
//   Real force_over_r(Real r2, Real& u) const   |F| / r (positive = repulsive), pair energy u
//
// Compiled by NVRTC through CuPy (strategies/cuda.py inlines this header) and by nvcc in the
// CI compile check, so no system headers. Types are chosen on purpose: Real is the compute
// type (float or double), Acc the accumulation type (float, or double in mixed and fp64
// modes); literals are typed through Real(...) / Acc(...) or an f suffix.
#pragma once

template <typename Real>
struct alignas(16) Vec4 {
  Real x, y, z, w;
};

template <typename Real>
struct Math;

template <>
struct Math<float> {
  static __device__ __forceinline__ float rint(float x) { return rintf(x); }
  static __device__ __forceinline__ float floor(float x) { return floorf(x); }
  // Approximate reciprocal (MUFU.RCP, <= 2 ulp): its error is far below the rounding of
  // float coordinates, which dominates the fp32 force error.
  static __device__ __forceinline__ float rcp(float x) { return __fdividef(1.0f, x); }
};

template <>
struct Math<double> {
  static __device__ __forceinline__ double rint(double x) { return ::rint(x); }
  static __device__ __forceinline__ double floor(double x) { return ::floor(x); }
  static __device__ __forceinline__ double rcp(double x) { return 1.0 / x; }
};

// Orthorhombic box: lengths and inverse lengths; the inverse is 0 on an open axis, which
// makes the minimum-image shift vanish there without a branch.
template <typename Real>
struct Box {
  Real lx, ly, lz, ilx, ily, ilz;
};

template <bool PBC, typename Real>
__device__ __forceinline__ Real min_image(Real d, Real len, Real inv_len) {
  if constexpr (PBC) d -= len * Math<Real>::rint(d * inv_len);
  return d;
}

// d = r_i - r_j (minimum image on periodic axes); returns |d|^2.
template <bool PBC, typename Real>
__device__ __forceinline__ Real separation(const Vec4<Real>& pi, const Vec4<Real>& pj, const Box<Real>& box, Real& dx,
                                           Real& dy, Real& dz) {
  dx = min_image<PBC>(pi.x - pj.x, box.lx, box.ilx);
  dy = min_image<PBC>(pi.y - pj.y, box.ly, box.ily);
  dz = min_image<PBC>(pi.z - pj.z, box.lz, box.ilz);
  return dx * dx + dy * dy + dz * dz;
}

// Energy, then the virial's 6 independent components (xx, xy, xz, yy, yz, zz).
constexpr int kSums = 7;

// One thread's sums. pair() takes d = r_i - r_j inside the cutoff, adds the pair energy, the
// pair virial r (x) f and one to the pair count, and returns the force on i (Newton3
// traversals subtract it from j themselves). add() also sums that force into fx, fy, fz:
// the full-shell form, where every pair is visited from both sides and the final reduction
// halves energy and virial.
template <typename Real, typename Acc>
struct Accumulator {
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
  Acc s[kSums] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  unsigned int pairs = 0u;

  template <class Functor>
  __device__ __forceinline__ void add(const Functor& f, Real dx, Real dy, Real dz, Real r2) {
    Real ax, ay, az;
    pair(f, dx, dy, dz, r2, ax, ay, az);
    fx += Acc(ax);
    fy += Acc(ay);
    fz += Acc(az);
  }

  template <class Functor>
  __device__ __forceinline__ void pair(const Functor& f, Real dx, Real dy, Real dz, Real r2, Real& ax, Real& ay,
                                       Real& az) {
    Real u;
    const Real fr = f.force_over_r(r2, u);
    ax = fr * dx;
    ay = fr * dy;
    az = fr * dz;
    s[0] += Acc(u);
    s[1] += Acc(ax * dx);
    s[2] += Acc(ax * dy);
    s[3] += Acc(ax * dz);
    s[4] += Acc(ay * dy);
    s[5] += Acc(ay * dz);
    s[6] += Acc(az * dz);
    ++pairs;
  }
};

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// Sum kSums values and a count over the whole block (every thread must call it): warp sums,
// then the warps' sums in warp 0. Thread 0 returns with the block's totals in v and n. Fixed
// order: deterministic. Reuses its shared arrays: a caller that calls it again in one launch
// puts a __syncthreads() between the calls.
template <int BLOCK, typename Acc>
__device__ __forceinline__ void block_reduce(Acc (&v)[kSums], unsigned long long& n) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "block must be whole warps, at most 1024 threads");
  constexpr int kWarps = BLOCK / 32;
  __shared__ Acc s_v[kWarps][kSums];
  __shared__ unsigned long long s_n[kWarps];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kSums; ++k) v[k] = warp_sum(v[k]);
  n = warp_sum(n);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) s_v[warp][k] = v[k];
    s_n[warp] = n;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] = lane < kWarps ? s_v[lane][k] : Acc(0);
    n = lane < kWarps ? s_n[lane] : 0ull;
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] = warp_sum(v[k]);
    n = warp_sum(n);
  }
}

// block_reduce, then thread 0 writes the totals to partial[slot * kSums + k] and count[slot].
template <int BLOCK, typename Acc>
__device__ __forceinline__ void block_sums(Acc (&v)[kSums], unsigned long long n, Acc* __restrict__ partial,
                                           unsigned long long* __restrict__ count, int slot) {
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) partial[slot * kSums + k] = v[k];
    count[slot] = n;
  }
}

// One pair seen from i with Newton3: inside the cutoff, adds the pair's sums to acc and its
// force on i to (fx, fy, fz), and returns true with that force in (ax, ay, az) for the caller to
// subtract from j wherever j's force lives (global memory, a shared cache, a warp sum).
template <bool PBC, typename Real, typename Acc, class F>
__device__ __forceinline__ bool newton3_pair(Accumulator<Real, Acc>& acc, const F& f, const Box<Real>& box,
                                             const Vec4<Real>& pi, const Vec4<Real>& pj, Acc& fx, Acc& fy, Acc& fz,
                                             Real& ax, Real& ay, Real& az) {
  Real dx, dy, dz;
  const Real r2 = separation<PBC>(pi, pj, box, dx, dy, dz);
  if (!f.inside(r2)) return false;
  acc.pair(f, dx, dy, dz, r2, ax, ay, az);
  fx += Acc(ax);
  fy += Acc(ay);
  fz += Acc(az);
  return true;
}

// *p -= (ax, ay, az) at p[0], p[stride], p[2 stride]
template <typename Acc, typename Real>
__device__ __forceinline__ void subtract3(Acc* p, int stride, Real ax, Real ay, Real az) {
  p[0] -= Acc(ax);
  p[stride] -= Acc(ay);
  p[2 * stride] -= Acc(az);
}
