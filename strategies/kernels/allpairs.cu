// All-pairs traversals: every particle against every other, no cells, no Newton3 (each
// pair is visited from both sides and each thread writes only its own particle's force).
//
// Launch: one thread per particle i, BLOCK threads per block, grid = ceil(n / BLOCK);
// partial sums: one slot per block (ENERGY; none in the forces-only flavour). Positions are
// centred on the box, in the layout LAYOUT (layout.cuh: kAoS4, the plan's Vec4 array; kAoS3, kSoA:
// a copy made at the start of the force phase, `stride` elements per array in kSoA).
#include "layout.cuh"

// allpairs_thread_naive: the PLUMED tutorial's getSelfCoord pattern. Particle i in registers, j read
// straight from global memory (all lanes read the same j: one broadcast load per warp).
template <typename Real, typename Acc, template <typename> class Functor, int BLOCK, bool PBC, bool ENERGY, int LAYOUT>
__global__ void __launch_bounds__(BLOCK)
allpairs_thread_naive(const Real* __restrict__ pos_data, const int stride, const int n, const Box<Real> box,
               const Real* __restrict__ fparams, Acc* __restrict__ force, Acc* __restrict__ partial,
               unsigned long long* __restrict__ count) {
  const Positions<Real, LAYOUT, Binds<Functor<Real>>::value> pos{pos_data, stride};
  const Functor<Real> f(fparams);
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  Accumulator<Real, Acc, ENERGY> acc;
  if (i < n) {
    const Vec4<Real> pi = pos[i];
    for (int j = 0; j < n; ++j) {
      Real dx, dy, dz;
      const Vec4<Real> pj = pos[j];
      const Real r2 = separation<PBC>(pi, pj, box, dx, dy, dz);
      const auto& fp = bind_pair(f, pi.w, pj.w);
      if (fp.inside(r2) && j != i) acc.add(fp, dx, dy, dz, r2);
    }
    force[3 * i + 0] = acc.fx;
    force[3 * i + 1] = acc.fy;
    force[3 * i + 2] = acc.fz;
  }
  accumulator_sums<BLOCK>(acc, partial, count, blockIdx.x);
}

// allpairs_thread_tiled: the same loop with j staged through shared memory, BLOCK particles per tile
// (GPU Gems 3, ch. 31): each position is read from global memory once per block, not once
// per thread. blockIdx.y selects a slice [y * jchunk, (y + 1) * jchunk) of the j range, so
// that small systems still fill the GPU; slice y writes its partial forces to
// force + y * 3n (fold_slices sums them in a fixed order) and its sums to slot
// y * gridDim.x + x.
template <typename Real, typename Acc, template <typename> class Functor, int BLOCK, bool PBC, bool ENERGY, int LAYOUT>
__global__ void __launch_bounds__(BLOCK)
allpairs_thread_tiled(const Real* __restrict__ pos_data, const int stride, const int n, const int jchunk,
               const Box<Real> box, const Real* __restrict__ fparams, Acc* __restrict__ force,
               Acc* __restrict__ partial, unsigned long long* __restrict__ count) {
  const Positions<Real, LAYOUT, Binds<Functor<Real>>::value> pos{pos_data, stride};
  __shared__ Vec4<Real> tile[BLOCK];
  const Functor<Real> f(fparams);
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const bool active = i < n;
  const int jbeg = blockIdx.y * jchunk;
  const int jend = min(n, jbeg + jchunk);
  Vec4<Real> pi = {Real(0), Real(0), Real(0), Real(0)};
  if (active) pi = pos[i];
  Accumulator<Real, Acc, ENERGY> acc;

  auto visit = [&](const Vec4<Real>& pj, int j) {
    Real dx, dy, dz;
    const Real r2 = separation<PBC>(pi, pj, box, dx, dy, dz);
    const auto& fp = bind_pair(f, pi.w, pj.w);
    if (fp.inside(r2) && j != i) acc.add(fp, dx, dy, dz, r2);
  };

  for (int base = jbeg; base < jend; base += BLOCK) {
    if (base + threadIdx.x < jend) tile[threadIdx.x] = pos[base + threadIdx.x];
    __syncthreads();
    if (active) {
      if (jend - base >= BLOCK) {
#pragma unroll 8
        for (int k = 0; k < BLOCK; ++k) visit(tile[k], base + k);
      } else {
        for (int k = 0; k < jend - base; ++k) visit(tile[k], base + k);
      }
    }
    __syncthreads();  // the tile is overwritten next iteration
  }
  if (active) {
    Acc* out = force + static_cast<size_t>(blockIdx.y) * 3 * n;
    out[3 * i + 0] = acc.fx;
    out[3 * i + 1] = acc.fy;
    out[3 * i + 2] = acc.fz;
  }
  accumulator_sums<BLOCK>(acc, partial, count, blockIdx.y * gridDim.x + blockIdx.x);
}
