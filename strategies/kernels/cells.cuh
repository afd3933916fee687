// Cell storage shared by the cell traversals (cells.cu, parity.cu) and the binning
// (binning.cu): three storages behind one accessor, the grid, and the cell-pair loops with
// Newton3 that c08 and the parity traverser share.
//
// Particles are enumerated in cell order k = 0..n-1 (CSR order: cell c holds
// k = start[c] .. start[c+1]-1 and slot k - start[c]); every storage keeps that enumeration
// and differs only in where slot (c, q) stores its position and force.
#pragma once
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

// Where a cell's particles sit relative to where a traversal's unwrapped geometry expects them:
// +L along an axis where the cell index wrapped past the last cell, -L where it wrapped below 0,
// 0 inside the grid. For two cells a, b of one step, pi - (image_b - image_a) - pj is the
// minimum-image separation: one shift per cell pair, no per-pair minimum image (valid with at
// least 3 cells along every periodic axis, which c08 and the parity traverser require).
template <typename Real>
struct Shift {
  Real x, y, z;
};

// Cell of base + offset, or -1 beyond an open axis, and its image shift. Bases lie in [-1, n)
// and offsets in {0, 1}, so one wrap is enough on periodic axes.
template <typename Real>
__device__ __forceinline__ int block_cell(const Grid& g, const Box<Real>& box, int bx, int by, int bz, int ox, int oy,
                                          int oz, Shift<Real>& image) {
  int x = bx + ox, y = by + oy, z = bz + oz;
  image = {Real(0), Real(0), Real(0)};
  if (x >= g.nx) {
    x = (g.pmask & 1) ? x - g.nx : -1;
    image.x = box.lx;
  }
  if (y >= g.ny) {
    y = (g.pmask & 2) ? y - g.ny : -1;
    image.y = box.ly;
  }
  if (z >= g.nz) {
    z = (g.pmask & 4) ? z - g.nz : -1;
    image.z = box.lz;
  }
  if (x < 0 || y < 0 || z < 0) return -1;
  return (x * g.ny + y) * g.nz + z;
}

// The shift that carries cell a's particles into cell b's image: image_b - image_a.
template <typename Real>
__device__ __forceinline__ Shift<Real> pair_shift(const Shift<Real>& a, const Shift<Real>& b) {
  return {b.x - a.x, b.y - a.y, b.z - a.z};
}

// Full-shell offsets along one axis: -1..1, except 0..1 for a periodic axis of 2 cells (-1 and +1 name
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

// Image shift along one axis of the neighbour at unwrapped coordinate u (wrapped to w).
template <typename Real>
__device__ __forceinline__ Real wrap_shift(int u, int n, Real len) {
  return u < 0 ? -len : (u >= n ? len : Real(0));
}

// Cells a and b with Newton3, one thread: the thesis's base step. a == b: pairs j > i. sh: the
// shift from a to b's image (pair_shift), applied to each particle of a once.
template <typename Real, typename Acc, bool ENERGY, class F, int LAYOUT>
__device__ __forceinline__ void pair_cells_thread(const Cells<Real, Acc, LAYOUT>& cells, int a, int b, const F& f,
                                                  const Box<Real>& box, const Shift<Real>& sh,
                                                  Accumulator<Real, Acc, ENERGY>& acc) {
  const int na = cells.count(a), nb = cells.count(b);
  for (int ia = 0; ia < na; ++ia) {
    const Vec4<Real> pi = shifted(cells.p(a, ia), sh.x, sh.y, sh.z);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int jb = (a == b ? ia + 1 : 0); jb < nb; ++jb) {
      Real ax, ay, az;
      if (newton3_pair<false>(acc, f, box, pi, cells.p(b, jb), fx, fy, fz, ax, ay, az)) {
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
template <typename Real, typename Acc, bool ENERGY, class F, int LAYOUT>
__device__ __forceinline__ void pair_cells_warp(const Cells<Real, Acc, LAYOUT>& cells, int a, int b, const F& f,
                                                const Box<Real>& box, const Shift<Real>& sh,
                                                Accumulator<Real, Acc, ENERGY>& acc, int lane) {
  const int na = cells.count(a), nb = cells.count(b);
  for (int i0 = 0; i0 < na; i0 += 32) {
    const int ia = i0 + lane;
    const bool active = ia < na;
    Vec4<Real> pi = {Real(0), Real(0), Real(0), Real(0)};
    if (active) pi = shifted(cells.p(a, ia), sh.x, sh.y, sh.z);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int jb = (a == b ? i0 + 1 : 0); jb < nb; ++jb) {
      const Vec4<Real> pj = cells.p(b, jb);
      Real ax = Real(0), ay = Real(0), az = Real(0);
      bool hit = false;
      if (active && (a != b || jb > ia)) hit = newton3_pair<false>(acc, f, box, pi, pj, fx, fy, fz, ax, ay, az);
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
