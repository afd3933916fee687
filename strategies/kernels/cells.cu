// Linked-cell traversals (thesis chapters 2.3, 7, 8): the full shell (fullshell_thread) and the
// c08 base step with Newton3 (c08_thread, c08_warp), on any cell storage (cells.cuh).
#include "cells.cuh"

// --- full shell ---------------------------------------------------------------------------

// One thread per particle (in cell order) against every particle of its neighbour cells; no
// Newton3: each thread writes only its own particle's force.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC>
__global__ void __launch_bounds__(BLOCK)
fullshell_thread(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n, const Grid g,
                const Box<Real> box, const Real* __restrict__ fparams, Acc* __restrict__ partial,
                unsigned long long* __restrict__ count) {
  const Functor<Real> f(fparams);
  const int k = blockIdx.x * BLOCK + threadIdx.x;
  Accumulator<Real, Acc> acc;
  if (k < n) {
    const int c = cell_sorted[k];
    const int self = k - cells.begin(c);
    const Vec4<Real> pi = cells.p(c, self);
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
          const int nb = (x * g.ny + y) * g.nz + wrap(cz + oz, g.nz);
          const int m = cells.count(nb);
          for (int q = 0; q < m; ++q) {
            Real dx, dy, dz;
            const Real r2 = separation<PBC>(pi, cells.p(nb, q), box, dx, dy, dz);
            if (f.inside(r2) && (nb != c || q != self)) acc.add(f, dx, dy, dz, r2);
          }
        }
      }
    }
    Acc* out = cells.f(c, self);
    out[0] = acc.fx;
    out[1] = acc.fy;
    out[2] = acc.fz;
  }
  block_sums<BLOCK>(acc.s, acc.pairs, partial, count, blockIdx.x);
}

// --- c08 ------------------------------------------------------------------------------------

// One colour of c08 base steps. WARP = false: one thread per base step (the thesis);
// WARP = true: one warp per base step. pairs: the 14 (A, B) offset pairs of
// strategies/schedules.py C08_PAIRS, 6 ints each. Partial sums go to slot slot0 + block.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC, bool WARP>
__device__ __forceinline__ void c08_colour(const Cells<Real, Acc, LAYOUT>& cells, const int4* __restrict__ bases,
                                           const int nbases, const int* __restrict__ pairs, const Grid& g,
                                           const Box<Real>& box, const Real* __restrict__ fparams,
                                           Acc* __restrict__ partial, unsigned long long* __restrict__ count,
                                           const int slot0) {
  __shared__ int s_pairs[14 * 6];
  for (int t = threadIdx.x; t < 14 * 6; t += BLOCK) s_pairs[t] = pairs[t];
  __syncthreads();
  const Functor<Real> f(fparams);
  const int tid = blockIdx.x * BLOCK + threadIdx.x;
  const int task = WARP ? tid >> 5 : tid;
  Accumulator<Real, Acc> acc;
  if (task < nbases) {
    const int4 b = bases[task];
#pragma unroll 1
    for (int p = 0; p < 14; ++p) {
      const int* o = s_pairs + 6 * p;
      const int ca = block_cell(g, b.x, b.y, b.z, o[0], o[1], o[2]);
      const int cb = block_cell(g, b.x, b.y, b.z, o[3], o[4], o[5]);
      if (ca < 0 || cb < 0) continue;
      if constexpr (WARP) {
        pair_cells_warp<Real, Acc, Functor<Real>, LAYOUT, PBC>(cells, ca, cb, f, box, acc, threadIdx.x & 31);
      } else {
        pair_cells_thread<Real, Acc, Functor<Real>, LAYOUT, PBC>(cells, ca, cb, f, box, acc);
      }
    }
  }
  block_sums<BLOCK>(acc.s, acc.pairs, partial, count, slot0 + blockIdx.x);
}

// c08_thread: one thread per base step (the thesis's algorithm 2).
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC>
__global__ void __launch_bounds__(BLOCK)
c08_thread(const Cells<Real, Acc, LAYOUT> cells, const int4* __restrict__ bases, const int nbases,
           const int* __restrict__ pairs, const Grid g, const Box<Real> box, const Real* __restrict__ fparams,
           Acc* __restrict__ partial, unsigned long long* __restrict__ count, const int slot0) {
  c08_colour<Real, Acc, Functor, LAYOUT, BLOCK, PBC, false>(cells, bases, nbases, pairs, g, box, fparams, partial,
                                                            count, slot0);
}

// c08_warp: one warp per base step.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC>
__global__ void __launch_bounds__(BLOCK)
c08_warp(const Cells<Real, Acc, LAYOUT> cells, const int4* __restrict__ bases, const int nbases,
         const int* __restrict__ pairs, const Grid g, const Box<Real> box, const Real* __restrict__ fparams,
         Acc* __restrict__ partial, unsigned long long* __restrict__ count, const int slot0) {
  c08_colour<Real, Acc, Functor, LAYOUT, BLOCK, PBC, true>(cells, bases, nbases, pairs, g, box, fparams, partial,
                                                           count, slot0);
}
