// Linked-cell traversals (thesis chapters 2.3, 7, 8): the full shell (fullshell_thread_csr on the
// CSR storage, fullshell_thread on the 2D and nested storages) and the c08 base step with
// Newton3 (c08_thread, c08_warp), on any cell storage (cells.cuh).
//
// Template flags shared by the traversals: ENERGY (false: the forces-only flavour, no energy,
// virial or pair count computed), MINIMAGE (true only where a periodic axis has too few cells for
// one image shift per neighbour cell: then every pair takes the minimum image instead).
#include "cells.cuh"

// --- full shell on the CSR storage ----------------------------------------------------------

// The strip helpers (axis_neighbour, z_runs, z_reach, lateral_gap, bisect_z) are in cells.cuh:
// the Verlet list's build walks the same strips.

// One thread (TPP > 1: TPP threads) per particle k of the CSR storage, against the particles of
// its (2 REACH + 1)^3 neighbour cells, walked as (2 REACH + 1)^2 contiguous z-strips with one
// image shift per strip (no per-pair minimum image unless MINIMAGE); the particle itself is
// skipped by splitting its own strip at k (no per-candidate test). No Newton3: each thread
// writes only its own particle's force, straight to input order (force[3 order[k] + a]). With
// ENERGY the block sums go to partial[] and the last blocks fold them into out in two levels
// (fold_in_last_block; no separate reduction). The TPP threads of a particle take every TPP-th candidate and add their forces
// with shuffles in a fixed order: results are the same bits run to run.
//
// WINDOW: a strip is sorted by z (the binning sorts each cell by z), so only its z-window
// [z - w, z + w] can hold partners, w = z_reach of the column: a binary search finds the window's
// first particle and the loop stops past its last. About 2.5 candidates per interaction instead
// of 6.5 (cells of the cutoff's side); the pair test r2 < rc2 decides as before.
//
// LAYOUT (layout.cuh): how the sorted positions lie (kAoS4: the binning's Vec4 array; kAoS3,
// kSoA: a copy made after the binning, `stride` elements per array in kSoA).
template <typename Real, typename Acc, template <typename> class Functor, int BLOCK, int TPP, int REACH, bool MINIMAGE,
          bool ENERGY, int MINB, bool WINDOW, int LAYOUT>
__global__ void __launch_bounds__(BLOCK, MINB)
fullshell_thread_csr(const Real* __restrict__ pos_data, const int stride, const int* __restrict__ start,
                     const int* __restrict__ cell_sorted, const int* __restrict__ order, const int n, const Grid g,
                     const Box<Real> box, const Real* __restrict__ fparams, const Real rc2, const Real margin,
                     Acc* __restrict__ force, Acc* __restrict__ partial, unsigned long long* __restrict__ pcount,
                     unsigned int* __restrict__ ticket, Acc* __restrict__ out, unsigned long long* __restrict__ out_count) {
  static_assert(TPP >= 1 && TPP <= 32 && (TPP & (TPP - 1)) == 0, "threads per particle: a power of 2 up to 32");
  static_assert(!(WINDOW && MINIMAGE), "z-windows need one image shift per strip");
  const Positions<Real, LAYOUT, Binds<Functor<Real>>::value> pos{pos_data, stride};
  const Functor<Real> f(fparams);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  const int k = t / TPP;
  const int sub = t & (TPP - 1);
  // The TPP threads of a particle: fewer than the (2 REACH + 1)^2 columns, each walks every
  // column, taking every TPP-th candidate; at least as many (small systems, tpp 16 or 32), they
  // split the columns, G threads to a column (the rest idle): one column's latency instead of all
  // of them in sequence, and no per-column overhead paid by threads with nothing to check there.
  constexpr int kSide = 2 * REACH + 1, kColumns = kSide * kSide;
  constexpr bool kSplit = TPP >= kColumns;
  constexpr int kG = kSplit ? TPP / kColumns : 1;
  const int col0 = kSplit ? sub / kG : 0;
  const int col_step = kSplit ? kColumns : 1;
  const int jphase = kSplit ? sub % kG : sub;
  constexpr int kStride = kSplit ? kG : TPP;
  Accumulator<Real, Acc, ENERGY> acc;
  if (k < n && col0 < kColumns) {
    const Vec4<Real> pi = pos[k];
    const int c = cell_sorted[k];
    const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
    // the particle's distances to its cell's faces in x and y (WINDOW)
    const Real side_x = box.lx / Real(g.nx), side_y = box.ly / Real(g.ny);
    const Real lo_x = pi.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x = side_x - lo_x;
    const Real lo_y = pi.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y = side_y - lo_y;
#pragma unroll 1
    for (int col = col0; col < kColumns; col += col_step) {
      const int ox = col / kSide - REACH, oy = col % kSide - REACH;
      int x;
      Real sx;
      if (!axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx)) continue;
      const Real gx = lateral_gap(ox, lo_x, hi_x, side_x);
      {
        int y;
        Real sy;
        if (!axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy)) continue;
        Real w = Real(0);
        if constexpr (WINDOW) {
          w = z_reach(gx, lateral_gap(oy, lo_y, hi_y, side_y), rc2, margin);
          if (w < Real(0)) continue;  // the whole column is beyond the cutoff
        }
        int b[2], e[2];
        Real sz[2];
        const int runs = z_runs<REACH, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
#pragma unroll  // constant indices keep b, e, sz in registers
        for (int r = 0; r < 2; ++r) {
          if (r >= runs) break;
          const Vec4<Real> p = shifted(pi, sx, sy, sz[r]);
          int first = b[r];
          if constexpr (WINDOW) first = bisect_z<false>(pos, b[r], e[r], p.z - w);
          const Real zmax = p.z + w;
          // the run split at k: [first, min(e, k)) and [max(first, k + 1), e); outside the run one is empty
#pragma unroll 1
          for (int part = 0; part < 2; ++part) {
            const int lo = part ? max(first, k + 1) : first;
            const int hi = part ? e[r] : min(e[r], k);
#pragma unroll 4
            for (int j = lo + jphase; j < hi; j += kStride) {
              const Vec4<Real> pj = pos[j];
              if (WINDOW && pj.z > zmax) break;  // past the window: the strip is sorted by z
              Real dx, dy, dz;
              const Real r2 = separation<MINIMAGE>(p, pj, box, dx, dy, dz);
              const auto& fp = bind_pair(f, pi.w, pj.w);
              if (fp.inside(r2)) acc.add(fp, dx, dy, dz, r2);
            }
          }
        }
      }
    }
  }
  if constexpr (TPP > 1) {  // the particle's TPP lanes add their forces (every lane of the warp takes part)
#pragma unroll
    for (int off = TPP / 2; off > 0; off >>= 1) {
      acc.fx += __shfl_xor_sync(0xffffffffu, acc.fx, off);
      acc.fy += __shfl_xor_sync(0xffffffffu, acc.fy, off);
      acc.fz += __shfl_xor_sync(0xffffffffu, acc.fz, off);
    }
  }
  if (k < n && sub == 0) {
    const int i = order[k];
    force[3 * i + 0] = acc.fx;
    force[3 * i + 1] = acc.fy;
    force[3 * i + 2] = acc.fz;
  }
  if constexpr (ENERGY) {
    fold_in_last_block<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, pcount, blockIdx.x,
                              gridDim.x, ticket, 1, out, out_count);
  }
}

// --- full shell on the 2D and nested storages ---------------------------------------------

// One thread per particle (in cell order) against every particle of its neighbour cells, one
// image shift per neighbour cell; no Newton3: each thread writes only its own particle's force
// (into the storage; gather_forces brings them to input order).
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool MINIMAGE,
          bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
fullshell_thread(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n, const Grid g,
                 const Box<Real> box, const Real* __restrict__ fparams, Acc* __restrict__ partial,
                 unsigned long long* __restrict__ count) {
  const Functor<Real> f(fparams);
  const int k = blockIdx.x * BLOCK + threadIdx.x;
  Accumulator<Real, Acc, ENERGY> acc;
  if (k < n) {
    const int c = cell_sorted[k];
    const int self = k - cells.begin(c);
    const Vec4<Real> pi = cells.p(c, self);
    const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
#pragma unroll 1
    for (int ox = -1; ox <= 1; ++ox) {
      int x;
      Real sx;
      if (!axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx)) continue;
#pragma unroll 1
      for (int oy = -1; oy <= 1; ++oy) {
        int y;
        Real sy;
        if (!axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy)) continue;
#pragma unroll 1
        for (int oz = -1; oz <= 1; ++oz) {
          int z;
          Real sz;
          if (!axis_neighbour<MINIMAGE>(cz, oz, g.nz, g.pmask & 4, box.lz, z, sz)) continue;
          const int nb = (x * g.ny + y) * g.nz + z;
          const Vec4<Real> p = shifted(pi, sx, sy, sz);
          const int m = cells.count(nb);
          for (int q = 0; q < m; ++q) {
            Real dx, dy, dz;
            const Vec4<Real> pj = cells.p(nb, q);
            const Real r2 = separation<MINIMAGE>(p, pj, box, dx, dy, dz);
            const auto& fp = bind_pair(f, pi.w, pj.w);
            if (fp.inside(r2) && (nb != c || q != self)) acc.add(fp, dx, dy, dz, r2);
          }
        }
      }
    }
    Acc* out = cells.f(c, self);
    out[0] = acc.fx;
    out[1] = acc.fy;
    out[2] = acc.fz;
  }
  accumulator_sums<BLOCK>(acc, partial, count, blockIdx.x);
}

// --- c08 ------------------------------------------------------------------------------------

// One colour of c08 base steps. WARP = false: one thread per base step (the thesis);
// WARP = true: one warp per base step. pairs: the 14 (A, B) offset pairs of
// strategies/schedules.py C08_PAIRS, 6 ints each. Partial sums go to slot slot0 + block. Each
// cell pair gets its image shift once (block_cell, pair_shift).
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool ENERGY, bool WARP>
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
  Accumulator<Real, Acc, ENERGY> acc;
  if (task < nbases) {
    const int4 b = bases[task];
#pragma unroll 1
    for (int p = 0; p < 14; ++p) {
      const int* o = s_pairs + 6 * p;
      Shift<Real> ia, ib;
      const int ca = block_cell(g, box, b.x, b.y, b.z, o[0], o[1], o[2], ia);
      const int cb = block_cell(g, box, b.x, b.y, b.z, o[3], o[4], o[5], ib);
      if (ca < 0 || cb < 0) continue;
      const Shift<Real> sh = pair_shift(ia, ib);
      if constexpr (WARP) {
        pair_cells_warp(cells, ca, cb, f, box, sh, acc, threadIdx.x & 31);
      } else {
        pair_cells_thread(cells, ca, cb, f, box, sh, acc);
      }
    }
  }
  accumulator_sums<BLOCK>(acc, partial, count, slot0 + blockIdx.x);
}

// c08_thread: one thread per base step (the thesis's algorithm 2).
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
c08_thread(const Cells<Real, Acc, LAYOUT> cells, const int4* __restrict__ bases, const int nbases,
           const int* __restrict__ pairs, const Grid g, const Box<Real> box, const Real* __restrict__ fparams,
           Acc* __restrict__ partial, unsigned long long* __restrict__ count, const int slot0) {
  c08_colour<Real, Acc, Functor, LAYOUT, BLOCK, ENERGY, false>(cells, bases, nbases, pairs, g, box, fparams, partial,
                                                               count, slot0);
}

// c08_warp: one warp per base step.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
c08_warp(const Cells<Real, Acc, LAYOUT> cells, const int4* __restrict__ bases, const int nbases,
         const int* __restrict__ pairs, const Grid g, const Box<Real> box, const Real* __restrict__ fparams,
         Acc* __restrict__ partial, unsigned long long* __restrict__ count, const int slot0) {
  c08_colour<Real, Acc, Functor, LAYOUT, BLOCK, ENERGY, true>(cells, bases, nbases, pairs, g, box, fparams, partial,
                                                              count, slot0);
}
