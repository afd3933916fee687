// Linked-cell traversals (thesis chapters 2.3, 7, 8): binning, three cell storages behind
// one accessor, the full-shell traversal and the c08 base step with Newton3.
//
// Particles are enumerated in cell order k = 0..n-1 (CSR order: cell c holds
// k = start[c] .. start[c+1]-1 and slot k - start[c]); every layout keeps that enumeration
// and differs only in where slot (c, q) stores its position and force.
#include "common.cuh"

constexpr int kCsr = 0;     // one flat array sorted by cell (MarDyn's cellStartIndices)
constexpr int kPadded = 1;  // (cells, capacity) arrays: thesis section 7.2, "2D views"
constexpr int kNested = 2;  // one allocation per cell plus a pointer table: section 7.1

// Where cell c's particles live. 32 bytes, passed by value (the host mirrors the layout).
template <typename Real, typename Acc, int LAYOUT>
struct Cells {
  const void* pos;       // CSR, padded: Vec4<Real>*;  nested: Vec4<Real>* const* (per cell)
  void* force;           // CSR, padded: Acc* (3 per slot);  nested: Acc* const*
  const int* start;      // CSR offsets (cells + 1): the counts of every layout
  long long cap;         // padded: slots per cell

  __device__ __forceinline__ int begin(int c) const { return start[c]; }
  __device__ __forceinline__ int count(int c) const { return start[c + 1] - start[c]; }

  __device__ __forceinline__ Vec4<Real>* pos_at(int c, int q) const {
    if constexpr (LAYOUT == kCsr) {
      return const_cast<Vec4<Real>*>(static_cast<const Vec4<Real>*>(pos)) + start[c] + q;
    } else if constexpr (LAYOUT == kPadded) {
      return const_cast<Vec4<Real>*>(static_cast<const Vec4<Real>*>(pos)) + c * cap + q;
    } else {
      return static_cast<Vec4<Real>* const*>(const_cast<void*>(pos))[c] + q;
    }
  }
  __device__ __forceinline__ Vec4<Real> p(int c, int q) const { return *pos_at(c, q); }

  __device__ __forceinline__ Acc* f(int c, int q) const {
    if constexpr (LAYOUT == kCsr) {
      return static_cast<Acc*>(force) + 3 * (static_cast<long long>(start[c]) + q);
    } else if constexpr (LAYOUT == kPadded) {
      return static_cast<Acc*>(force) + 3 * (c * cap + q);
    } else {
      return static_cast<Acc* const*>(force)[c] + 3 * q;
    }
  }
};

// Cells per axis and which axes are periodic (bit a of pmask).
struct Grid {
  int nx, ny, nz, pmask;
};

// Cell of base + offset, or -1 beyond an open axis. Bases lie in [-1, n) and offsets in
// {0, 1}, so one wrap is enough on periodic axes.
__device__ __forceinline__ int block_cell(const Grid& g, int bx, int by, int bz, int ox, int oy, int oz) {
  int x = bx + ox, y = by + oy, z = bz + oz;
  if (x >= g.nx) x = (g.pmask & 1) ? x - g.nx : -1;
  if (y >= g.ny) y = (g.pmask & 2) ? y - g.ny : -1;
  if (z >= g.nz) z = (g.pmask & 4) ? z - g.nz : -1;
  if (x < 0 || y < 0 || z < 0) return -1;
  return (x * g.ny + y) * g.nz + z;
}

// --- binning ----------------------------------------------------------------------------

// Cell of each particle (input order) from box-centred positions, and particles per cell
// (counts zeroed by the caller; integer atomics, so the counts are exact and deterministic).
// Rounding at the edges (x = L on an open axis, or x + L/2 one ulp outside) is clamped into
// the grid.
template <typename Real>
__global__ void bin_cells(const Vec4<Real>* __restrict__ pos, const int n, const Box<Real> box, const Grid g,
                          const Real isx, const Real isy, const Real isz, int* __restrict__ cell,
                          int* __restrict__ counts) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Vec4<Real> p = pos[i];
    int cx = static_cast<int>(Math<Real>::floor((p.x + Real(0.5) * box.lx) * isx));
    int cy = static_cast<int>(Math<Real>::floor((p.y + Real(0.5) * box.ly) * isy));
    int cz = static_cast<int>(Math<Real>::floor((p.z + Real(0.5) * box.lz) * isz));
    cx = min(max(cx, 0), g.nx - 1);
    cy = min(max(cy, 0), g.ny - 1);
    cz = min(max(cz, 0), g.nz - 1);
    const int c = (cx * g.ny + cy) * g.nz + cz;
    cell[i] = c;
    atomicAdd(&counts[c], 1);
  }
}

// Copy positions into the layout: slot k of the cell order gets particle order[k]. A slot
// beyond a cell's capacity is not written; the largest such slot + 1 goes to *overflow.
template <typename Real, typename Acc, int LAYOUT>
__global__ void scatter_cells(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, const Cells<Real, Acc, LAYOUT> cells,
                              const int* __restrict__ capacity, int* __restrict__ overflow) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const int q = k - cells.begin(c);
    long long cap = 0x7fffffffll;
    if constexpr (LAYOUT == kPadded) cap = cells.cap;
    if constexpr (LAYOUT == kNested) cap = capacity[c];
    if (q >= cap) {
      atomicMax(overflow, q + 1);
      continue;
    }
    *cells.pos_at(c, q) = pos[order[k]];
  }
}

template <typename Real, typename Acc, int LAYOUT>
__global__ void zero_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    Acc* f = cells.f(c, k - cells.begin(c));
    f[0] = Acc(0);
    f[1] = Acc(0);
    f[2] = Acc(0);
  }
}

// Forces back to input order: out[order[k]] = force of slot k.
template <typename Real, typename Acc, int LAYOUT>
__global__ void gather_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, Acc* __restrict__ out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const Acc* f = cells.f(c, k - cells.begin(c));
    const int i = order[k];
    out[3 * i + 0] = f[0];
    out[3 * i + 1] = f[1];
    out[3 * i + 2] = f[2];
  }
}

// --- full shell ---------------------------------------------------------------------------

// Offsets along one axis: -1..1, except 0..1 for a periodic axis of 2 cells (-1 and +1 name
// one cell) and 0..0 for a periodic axis of 1 cell. Open axes clip at the grid edge.
__device__ __forceinline__ void axis_range(int c, int n, bool periodic, int& lo, int& hi) {
  if (periodic) {
    lo = n >= 3 ? -1 : 0;
    hi = n >= 2 ? 1 : 0;
  } else {
    lo = c > 0 ? -1 : 0;
    hi = c < n - 1 ? 1 : 0;
  }
}

__device__ __forceinline__ int wrap(int x, int n) { return x < 0 ? x + n : (x >= n ? x - n : x); }

// One thread per particle (in cell order) against every particle of its neighbour cells; no
// Newton3: each thread writes only its own particle's force.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC>
__global__ void __launch_bounds__(BLOCK)
cells_fullshell(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n, const Grid g,
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

// Cells a and b with Newton3, one thread: the thesis's base step. a == b: pairs j > i.
template <typename Real, typename Acc, class F, int LAYOUT, bool PBC>
__device__ __forceinline__ void pair_cells_thread(const Cells<Real, Acc, LAYOUT>& cells, int a, int b, const F& f,
                                                  const Box<Real>& box, Accumulator<Real, Acc>& acc) {
  const int na = cells.count(a), nb = cells.count(b);
  for (int ia = 0; ia < na; ++ia) {
    const Vec4<Real> pi = cells.p(a, ia);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int jb = (a == b ? ia + 1 : 0); jb < nb; ++jb) {
      Real ax, ay, az;
      if (newton3_pair<PBC>(acc, f, box, pi, cells.p(b, jb), fx, fy, fz, ax, ay, az)) {
        subtract3(cells.f(b, jb), 1, ax, ay, az);
      }
    }
    Acc* fi = cells.f(a, ia);
    fi[0] += fx;
    fi[1] += fy;
    fi[2] += fz;
  }
}

template <typename T>
__device__ __forceinline__ T warp_sum_all(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Cells a and b with Newton3, one warp: lanes take the particles of a, 32 at a time, and walk
// b together; each j's force is summed over the lanes (in Acc) and lane 0 commits it. The
// loop bounds are uniform across the warp, so every lane reaches every shuffle.
template <typename Real, typename Acc, class F, int LAYOUT, bool PBC>
__device__ __forceinline__ void pair_cells_warp(const Cells<Real, Acc, LAYOUT>& cells, int a, int b, const F& f,
                                                const Box<Real>& box, Accumulator<Real, Acc>& acc, int lane) {
  const int na = cells.count(a), nb = cells.count(b);
  for (int i0 = 0; i0 < na; i0 += 32) {
    const int ia = i0 + lane;
    const bool active = ia < na;
    Vec4<Real> pi = {Real(0), Real(0), Real(0), Real(0)};
    if (active) pi = cells.p(a, ia);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int jb = (a == b ? i0 + 1 : 0); jb < nb; ++jb) {
      const Vec4<Real> pj = cells.p(b, jb);
      Real ax = Real(0), ay = Real(0), az = Real(0);
      bool hit = false;
      if (active && (a != b || jb > ia)) hit = newton3_pair<PBC>(acc, f, box, pi, pj, fx, fy, fz, ax, ay, az);
      if (__any_sync(0xffffffffu, hit)) {
        const Acc sx = warp_sum_all(Acc(ax)), sy = warp_sum_all(Acc(ay)), sz = warp_sum_all(Acc(az));
        if (lane == 0) {
          Acc* fj = cells.f(b, jb);
          fj[0] -= sx;
          fj[1] -= sy;
          fj[2] -= sz;
        }
      }
    }
    __syncwarp();  // lane 0's updates of b are visible before the lanes update a (a == b)
    if (active) {
      Acc* fi = cells.f(a, ia);
      fi[0] += fx;
      fi[1] += fy;
      fi[2] += fz;
    }
    __syncwarp();
  }
}

// One colour of c08 base steps. WARP = false: one thread per base step (the thesis);
// WARP = true: one warp per base step. pairs: the 14 (A, B) offset pairs of
// strategies/schedules.py C08_PAIRS, 6 ints each. Partial sums go to slot slot0 + block.
template <typename Real, typename Acc, template <typename> class Functor, int LAYOUT, int BLOCK, bool PBC, bool WARP>
__global__ void __launch_bounds__(BLOCK)
c08_colour(const Cells<Real, Acc, LAYOUT> cells, const int4* __restrict__ bases, const int nbases,
           const int* __restrict__ pairs, const Grid g, const Box<Real> box, const Real* __restrict__ fparams,
           Acc* __restrict__ partial, unsigned long long* __restrict__ count, const int slot0) {
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
