// Cell storage shared by the cell traversals (cells.cu, parity.cu) and the binning
// (binning.cu): three storages behind one accessor, the grid, and the cell-pair loops with
// Newton3 that c08 and the parity traverser share.
//
// Particles are enumerated in cell order k = 0..n-1 (CSR order: cell c holds
// k = start[c] .. start[c+1]-1 and slot k - start[c]); every storage keeps that enumeration
// and differs only in where slot (c, q) stores its position and force.
#pragma once
#include "common.cuh"
#include "layout.cuh"

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

// --- z-strips of the CSR storage (the full shell, the Verlet list's build) --------------------

// The neighbour of cell coordinate c at offset o along one axis of n cells, and its image shift;
// false where there is none (beyond an open axis; with MINIMAGE, an offset that names a cell
// already named: a periodic axis of 1 or 2 cells).
template <bool MINIMAGE, typename Real>
__device__ __forceinline__ bool axis_neighbour(int c, int o, int n, bool periodic, Real len, int& w, Real& s) {
  const int u = c + o;
  s = Real(0);
  if (!periodic) {
    w = u;
    return u >= 0 && u < n;
  }
  if constexpr (MINIMAGE) {  // reach 1; the pair loop takes the minimum image
    if (n < 3 && (o < 0 || o >= n)) return false;  // 1 or 2 cells: each once (offsets 0, then 1)
    w = wrap(u, n);
    return true;
  }
  w = wrap(u, n);
  s = wrap_shift(u, n, len);
  return true;
}

// The particles of the cells at z-offsets -REACH..REACH of column `col` (cell (x, y, 0)) are
// contiguous in the CSR storage: one run, or two where the range wraps a periodic z axis, each
// with its own image shift along z. Returns the number of runs (0..2): [b[r], e[r]) with sz[r].
template <int REACH, bool MINIMAGE, typename Real>
__device__ __forceinline__ int z_runs(const int* __restrict__ start, int col, int cz, const Grid& g, Real lz,
                                      int (&b)[2], int (&e)[2], Real (&sz)[2]) {
  const int lo = cz - REACH, hi = cz + REACH;
  sz[0] = sz[1] = Real(0);
  if (!(g.pmask & 4)) {  // open: clip
    b[0] = start[col + max(lo, 0)];
    e[0] = start[col + min(hi, g.nz - 1) + 1];
    return 1;
  }
  if (MINIMAGE && g.nz < 3) {  // a periodic z of 1 or 2 cells: all of them, once
    b[0] = start[col];
    e[0] = start[col + g.nz];
    return 1;
  }
  if (lo < 0) {  // the cells below 0 are the top of the column, one box length down
    b[0] = start[col + lo + g.nz];
    e[0] = start[col + g.nz];
    sz[0] = -lz;
    b[1] = start[col];
    e[1] = start[col + hi + 1];
    return 2;
  }
  if (hi >= g.nz) {  // the cells past the top are the bottom of the column, one box length up
    b[0] = start[col + lo];
    e[0] = start[col + g.nz];
    b[1] = start[col];
    e[1] = start[col + hi - g.nz + 1];
    sz[1] = lz;
    return 2;
  }
  b[0] = start[col + lo];
  e[0] = start[col + hi + 1];
  return 1;
}

// How far along z the cutoff reaches into a neighbour column at lateral distance (gx, gy) from
// the particle: sqrt(rc^2 - gx^2 - gy^2) plus a margin (the strip is sorted by z as a float, so a
// rounding's worth of disorder must not hide a partner), or negative where the column is out of
// reach altogether.
template <typename Real>
__device__ __forceinline__ Real z_reach(Real gx, Real gy, Real rc2, Real margin) {
  const Real w2 = rc2 - gx * gx - gy * gy;
  return w2 < Real(0) ? Real(-1) : sqrt(w2) + margin;
}

// Lateral distance from a particle to the neighbour column at offset o: lo = its distance to its
// cell's lower face, hi = to the upper face, side = the cell side.
template <typename Real>
__device__ __forceinline__ Real lateral_gap(int o, Real lo, Real hi, Real side) {
  return o < 0 ? lo + Real(-o - 1) * side : (o > 0 ? hi + Real(o - 1) * side : Real(0));
}

// First index in [b, e) of a z-sorted run whose z is not below z (ABOVE false) or is above z
// (ABOVE true); e where none is (pos: a Vec4 array or a Positions view, layout.cuh).
template <bool ABOVE, class P, typename Real>
__device__ __forceinline__ int bisect_z(const P& pos, int b, int e, Real z) {
  while (b < e) {
    const int mid = (b + e) >> 1;
    const Real zm = z_at(pos, mid);
    if (ABOVE ? !(zm > z) : zm < z) {
      b = mid + 1;
    } else {
      e = mid;
    }
  }
  return b;
}

// Both ends of the window [lo, hi] of a z-sorted run [b, e) at once: first = bisect_z<false>(lo),
// last = bisect_z<true>(hi), as two branch-free searches (Khuong and Morin's lower bound: `base`
// moves by `half` where the element at base + half is below, the count halves either way) that
// share their counts: one loop of ceil(log2(e - b)) steps, each a load, a compare and a select per
// end, and no test of whether a search has ended. The two searches' loads are independent and
// issued together, so a window costs the latency of one chain of dependent loads, not two. The
// same indices as the two bisections (z sorted, none NaN).
template <class P, typename Real>
__device__ __forceinline__ void bisect_z_window(const P& pos, int b, int e, Real lo, Real hi, int& first, int& last) {
  if (b >= e) {
    first = last = b;
    return;
  }
  int bf = b, bl = b, len = e - b;
  while (len > 1) {
    const int half = len >> 1;
    const Real zf = z_at(pos, bf + half), zl = z_at(pos, bl + half);
    bf = zf < lo ? bf + half : bf;
    bl = !(zl > hi) ? bl + half : bl;
    len -= half;
  }
  first = bf + (z_at(pos, bf) < lo ? 1 : 0);
  last = bl + (!(z_at(pos, bl) > hi) ? 1 : 0);
}
