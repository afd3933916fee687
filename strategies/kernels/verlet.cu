// Verlet neighbour list (strategies/verlet.py): a full list (every pair in both rows) of the
// particles within r_list = cutoff + skin, built from the shared binning with cells of side >=
// r_list, reused while no particle has moved more than skin / 2 since the build.
//
//   verlet_check   each step: sets *flag where some particle moved more than skin/2 since the
//                  list's build (minimum image), so that the guarded binning and verlet_build run
//   verlet_build   (guarded by *flag) G lanes per sorted slot s: the particles j != i of the 27
//                  (or fewer, on short periodic axes) neighbour cells within r_list, in cell order
//                  (deterministic: the binning fixes the order inside a cell), into padded rows
//                  stored column-major (nbr[k * rows + s]); the positions of the build kept for
//                  the check; a row longer than the capacity raises *overflow to its length and
//                  is never written past the capacity (the force phase reports it)
//   verlet_force   TPP threads per row: force on i = order[s] from its row, minimum image per pair
//                  (positions are wrapped every MD step, so an image fixed at the build would go
//                  stale); forces written in input order; energy and virial per block (ENERGY).
//                  Block 0 clears *flag and counts the rebuild.
#include "cells.cuh"

template <typename Real>
__global__ void verlet_check(const Vec4<Real>* __restrict__ pos, const Vec4<Real>* __restrict__ ref, const int n,
                             const Box<Real> box, const Real half_skin2, int* __restrict__ flag) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool moved = false;
  if (i < n) {
    Real dx, dy, dz;
    moved = !(separation<true>(pos[i], ref[i], box, dx, dy, dz) <= half_skin2);  // NaN moves too
  }
  if (__any_sync(0xffffffffu, moved) && (threadIdx.x & 31) == 0) atomicExch(flag, 1);
}

// Launch: 32 rows per block, G lanes per row (blockDim = 32 G); dynamic shared memory 32 x cap
// ints when STAGE: the rows are assembled there and written out a column at a time (32 rows'
// k-th entries: one coalesced store), instead of one scattered store per entry.
template <typename Real, bool PBC, int G, bool STAGE>
__global__ void verlet_build(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ order,
                             const int* __restrict__ cell_sorted, const int* __restrict__ start, const int n,
                             const Grid g, const Box<Real> box, const Real rlist2, const int cap,
                             int* __restrict__ nbr, int* __restrict__ len, Vec4<Real>* __restrict__ ref,
                             int* __restrict__ overflow, const int* __restrict__ guard) {
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to a warp");
  if (guard != nullptr && *guard == 0) return;  // the same for every thread of the launch
  extern __shared__ int s_rows[];  // STAGE: 32 x cap
  __shared__ int s_len[32];
  __shared__ int s_longest;
  // G lanes per row (a group of one warp): they take a cell's candidates G at a time and append
  // the hits in candidate order (ballot, then each hit's rank among the lanes before it), so
  // the row is the same as one thread's.
  const int r = threadIdx.x / G;  // the block's row
  const int s0 = blockIdx.x * 32;
  const int s = s0 + r;
  const int wl = threadIdx.x & 31;
  const int lane = wl & (G - 1);
  const unsigned gmask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (wl & ~(G - 1));
  const unsigned below = (1u << wl) - 1u;
  if (threadIdx.x == 0) s_longest = 0;
  int count = 0;
  if (s < n) {  // the whole group: s is the group's
    const Vec4<Real> pi = sorted[s];
    const int c = cell_sorted[s];
    const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
    int xlo, xhi, ylo, yhi, zlo, zhi;
    axis_range(cx, g.nx, g.pmask & 1, xlo, xhi);
    axis_range(cy, g.ny, g.pmask & 2, ylo, yhi);
    axis_range(cz, g.nz, g.pmask & 4, zlo, zhi);
    for (int ox = xlo; ox <= xhi; ++ox) {
      const int x = wrap(cx + ox, g.nx);
      for (int oy = ylo; oy <= yhi; ++oy) {
        const int y = wrap(cy + oy, g.ny);
        for (int oz = zlo; oz <= zhi; ++oz) {
          const int nc = (x * g.ny + y) * g.nz + wrap(cz + oz, g.nz);
          const int e = start[nc + 1];
          for (int q0 = start[nc]; q0 < e; q0 += G) {
            const int q = q0 + lane;
            bool hit = false;
            if (q < e && q != s) {
              Real dx, dy, dz;
              hit = separation<PBC>(pi, sorted[q], box, dx, dy, dz) < rlist2;
            }
            const unsigned m = G == 1 ? static_cast<unsigned>(hit) : __ballot_sync(gmask, hit);
            if (hit) {
              const int k = count + (G == 1 ? 0 : __popc(m & below));
              if (k < cap) {
                if constexpr (STAGE) {
                  s_rows[r * cap + k] = order[q];
                } else {
                  nbr[static_cast<long long>(k) * n + s] = order[q];
                }
              }
            }
            count += G == 1 ? static_cast<int>(hit) : __popc(m);
          }
        }
      }
    }
    if (lane == 0) {
      len[s] = min(count, cap);  // the force phase reads what was stored; the overflow is reported
      ref[order[s]] = pi;
      if (count > cap) atomicMax(overflow, count);
    }
  }
  if constexpr (STAGE) {
    if (lane == 0) {
      s_len[r] = s < n ? min(count, cap) : 0;
    }
    __syncthreads();
    if (lane == 0) atomicMax(&s_longest, s_len[r]);
    __syncthreads();
    const int longest = s_longest;
    const int row = threadIdx.x & 31;  // write-out: lanes over rows, warps over entries
    for (int k = threadIdx.x >> 5; k < longest; k += G) {
      if (k < s_len[row] && s0 + row < n) nbr[static_cast<long long>(k) * n + s0 + row] = s_rows[row * cap + k];
    }
  }
}

template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, bool PBC, int TPP, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
verlet_force(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order, const int* __restrict__ nbr,
             const int* __restrict__ len, const int n, const Box<Real> box, const Real* __restrict__ params,
             Acc* __restrict__ forces, Acc* __restrict__ partial, unsigned long long* __restrict__ count,
             int* __restrict__ flag, unsigned int* __restrict__ rebuilds) {
  static_assert(TPP >= 1 && TPP <= 32 && (TPP & (TPP - 1)) == 0, "TPP: a power of two up to a warp");
  if (blockIdx.x == 0 && threadIdx.x == 0 && *flag) {  // the build of this step (if any) is complete
    *flag = 0;
    ++*rebuilds;
  }
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc;
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  const int s = t / TPP, lane = t % TPP;
  const bool row = s < n;
  int i = 0;
  if (row) {
    i = order[s];
    const Vec4<Real> pi = pos[i];
    const int m = len[s];
    for (int k = lane; k < m; k += TPP) {
      const int j = nbr[static_cast<long long>(k) * n + s];
      Real dx, dy, dz;
      const Real r2 = separation<PBC>(pi, pos[j], box, dx, dy, dz);
      if (f.inside(r2)) acc.add(f, dx, dy, dz, r2);
    }
  }
  if constexpr (TPP > 1) {  // the row's lanes are consecutive lanes of one warp
#pragma unroll
    for (int off = TPP / 2; off > 0; off >>= 1) {
      acc.fx += __shfl_down_sync(0xffffffffu, acc.fx, off, TPP);
      acc.fy += __shfl_down_sync(0xffffffffu, acc.fy, off, TPP);
      acc.fz += __shfl_down_sync(0xffffffffu, acc.fz, off, TPP);
    }
  }
  if (row && lane == 0) {
    forces[3 * i] = acc.fx;
    forces[3 * i + 1] = acc.fy;
    forces[3 * i + 2] = acc.fz;
  }
  accumulator_sums<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}
