// The Verlet list's storage and the pieces every Verlet kernel shares (strategies/verlet/).
//
// The list is a full list (every pair in both rows) of the particles within r_list = cutoff + skin,
// kept in the binning's (cell) order: row s is particle order[s], its entries are sorted slots, and
// the kernels read positions from `cur`, a copy in that order, so that a row's partners lie in a few
// contiguous runs of memory (the sorting HOOMD-blue and GROMACS do for the same reason). cur[s] is
// particle order[s]'s position moved by whole box lengths to the image nearest its position at the
// build: unwrapped since the build, so that the raw difference of two entries found without an image
// shift stays their separation.
//
// A row holds near entries (the partner's slot relative to the row's, 16 bits) from the front, in
// the order they were found, and far entries (found across a periodic boundary, or too far in slot
// for 16 bits: the slot itself, 32 bits) from the back; len[s] = (near, far). Storage is in groups of
// 16 bytes, the rows of a group consecutive (a warp's 32 rows read 512 contiguous bytes per group):
// 8 near or 4 far entries per load. The near loop takes raw differences and nothing else; only the
// few far entries take a minimum image. See row_groups and RowWriter.
#pragma once
#include "cells.cuh"

// ---- Packed positions (layout=packed, strategies/verlet/packed.py) -----------------------------
// The near entries' gathers read 8 bytes a partner instead of 16: x, y and z as 21, 21 and 22 bits
// of fixed point in steps of h (a power of two), modulo 2^21 h (z: 2^22 h). The L1 serves a 32-lane
// gather of 8-byte elements in fewer data-pipe wavefronts (5.8 against 10.4 a request on the LJ 1M
// rows), and those wavefronts bound the force kernel at 1M (docs/decisions/verlet-packed-layout.md).
// A near entry's separation is the difference of the two fixed-point coordinates taken modulo the
// period, exact, so long as |d| < 2^20 h on each axis: the plan takes the smallest h with 2^20 h
// >= r_list + skin, the farthest a near pair can be while the list is valid (each end within
// skin / 2 of its build position). The coordinates are those of cur (the unwrapped positions)
// rounded to the grid: in fp32 h = 2^-18 for LJ (3.8e-6), the step of a float between 32 and 64.
// The row's own particle and the far entries (across a periodic face, or far in slot) keep the Vec4
// positions and their minimum image. Float coordinates only.
//   word x: qx (bits 0-20) | qy bits 0-10 (21-31); word y: qy bits 11-20 (0-9) | qz (10-31)
constexpr int kPacked = 3;  // verlet_force's LAYOUT: Vec4 positions for rows and far entries, packed near ones

struct PackedPositions {  // strategies/verlet/packed.py, PACKED_DTYPE
  uint2* q;               // per slot, as cur
  float h, inv_h;
  unsigned int expo;      // 0x4b000000, the bits of 2^23 (a parameter, so in a register: one LOP3 masks and ors)
};

// A coordinate on the grid, in steps of h (unwrapped): exact, inv_h being a power of two.
__device__ __forceinline__ long long grid_coordinate(float x, float inv_h) { return __float2ll_rn(x * inv_h); }

__device__ __forceinline__ uint2 pack_position(const Vec4<float>& p, float inv_h) {
  // the two's complement's low bits are the coordinate modulo the period
  const unsigned int x = static_cast<unsigned int>(grid_coordinate(p.x, inv_h)) & 0x1fffffu;
  const unsigned int y = static_cast<unsigned int>(grid_coordinate(p.y, inv_h)) & 0x1fffffu;
  const unsigned int z = static_cast<unsigned int>(grid_coordinate(p.z, inv_h)) & 0x3fffffu;
  return make_uint2(x | (y << 21), (y >> 11) | (z << 10));
}


// The Verlet list's per-step check (slot s, particle order[s]): the trigger on the sorted ref,
// and cur[s]: the position moved by whole box lengths to the image nearest ref[s] (exactly the
// position while the particle has not crossed a periodic boundary since the build).
// Position p of a particle whose build position was r: *cur = p moved by whole box lengths to the
// image nearest r; returns whether p lies further than skin/2 from r (NaN moves too). The check
// of verlet_refresh and of the fused steps (md_drift).
// q (layout=packed, float coordinates): where *cur's packed copy goes; nullptr: none.
// half_skin2 < 0 (launch parameter adapt): each slot's own half-skin, r.w (the build's, verlet_build ADAPT).
template <typename Real>
__device__ __forceinline__ bool refreshed(const Vec4<Real>& p, const Vec4<Real>& r, const Box<Real>& box,
                                          Real half_skin2, Vec4<Real>* cur, uint2* q = nullptr, float inv_h = 0.0f,
                                          Vec4<Real>* out = nullptr) {
  Real dx, dy, dz;
  const Real lim = half_skin2 < Real(0) ? r.w * r.w : half_skin2;
  const bool moved = !(separation<true>(p, r, box, dx, dy, dz) <= lim);
  const Vec4<Real> c = {p.x + box.lx * Math<Real>::rint((r.x - p.x) * box.ilx),
                        p.y + box.ly * Math<Real>::rint((r.y - p.y) * box.ily),
                        p.z + box.lz * Math<Real>::rint((r.z - p.z) * box.ilz), p.w};
  *cur = c;
  if (out != nullptr) *out = c;
  if constexpr (sizeof(Real) == 4) {
    if (q != nullptr) *q = pack_position(c, inv_h);
  }
  return moved;
}

// The inner list's trigger (launch parameter prune): whether c (a position as cur holds it,
// unwrapped since the build) lies further than inner/2 from pr, its position at the last prune
// (the same frame: a raw difference; NaN moves too). Spelled with fma, so that kernels built with
// and without contraction (Fixed: --fmad=false) decide alike: the plain and the fused steps prune
// at the same steps.
template <typename Real>
__device__ __forceinline__ bool pruned_moved(const Vec4<Real>& c, const Vec4<Real>& pr, Real half_inner2) {
  const Real dx = c.x - pr.x, dy = c.y - pr.y, dz = c.z - pr.z;
  return !(fma(dz, dz, fma(dy, dy, dx * dx)) <= half_inner2);
}

// flag[0]: the rebuild trigger; flag[1]: the inner list's (prune) trigger, raised with every
// rebuild too (the new rows' slots are not the old inner rows'). A warp's ballots, one atomic each.
__device__ __forceinline__ void raise_flags(int* flag, bool moved, bool pmoved) {
  const unsigned int m = __ballot_sync(0xffffffffu, moved), pm = __ballot_sync(0xffffffffu, pmoved);
  if ((threadIdx.x & 31) == 0) {
    if (m != 0u) atomicExch(flag, 1);
    if ((m | pm) != 0u) atomicExch(flag + 1, 1);
  }
}

// Whether the raw difference of two build positions is not their separation: a periodic
// boundary lies between them (the per-pair minimum-image builds' test; the others know it from
// the run's image shift).
template <typename Real>
__device__ __forceinline__ bool crosses(const Vec4<Real>& a, const Vec4<Real>& b, const Box<Real>& box) {
  return fabs(a.x - b.x) * box.ilx > Real(0.5) || fabs(a.y - b.y) * box.ily > Real(0.5) ||
         fabs(a.z - b.z) * box.ilz > Real(0.5);  // rint(d / L) != 0, rint's ties to even included
}

// A row's storage: groups of 16 bytes, group g of row s at int4 index g * n + s (a warp's 32
// rows read 512 contiguous bytes per group); row_groups(cap) groups per row. Near entries (the
// partner's slot q as q - s in 16 bits) fill groups of 8 from the front; far entries (found
// across a periodic boundary, or too far in slot for 16 bits: the partner's slot in 32 bits)
// groups of 4 from the back, the last slot first. One group more than cap entries need, so that
// the two regions, each padded to whole groups, fit whatever the split.
constexpr int kNear = 32767;  // |q - s| a near entry holds

__device__ __forceinline__ int row_groups(int cap) { return (cap + 3) / 4 + 1; }

// Where near entry k (a 16-bit index) and far entry k (a 32-bit index, counted from the front of
// the row's storage) of row s lie.
__device__ __forceinline__ long long near_at(int k, int s, int n) {
  return (static_cast<long long>(k >> 3) * n + s) * 8 + (k & 7);
}
__device__ __forceinline__ long long far_at(int k, int s, int n) {
  return (static_cast<long long>(k >> 2) * n + s) * 4 + (k & 3);
}

// Near entry v of a group loaded as an int4 (8 little-endian 16-bit halves), sign-extended.
__device__ __forceinline__ int near_of(const int4& e, int v) {
  const int w = v < 2 ? e.x : v < 4 ? e.y : v < 6 ? e.z : e.w;  // v is a compile-time constant
  return (v & 1) ? (w >> 16) : static_cast<int>(static_cast<short>(w & 0xffff));
}

// Whether partner q of row s is stored as a far entry (32 bits, from the back of the row).
__device__ __forceinline__ bool far_entry(int q, int s, bool img) { return img || q - s > kNear || q - s < -kNear; }

// The far region (b entries below top) padded to whole groups with slot `phantom` (n: masked by
// the force loop; a valid index into the positions). n: the rows (the storage's stride).
__device__ __forceinline__ void pad_far(int* __restrict__ nbr, int n, int s, int top, int b, int phantom) {
  for (int k = top - b - 1; k >= ((top - b) & ~3); --k) nbr[far_at(k, s, n)] = phantom;
}

// One row's writer. Near entries go through a register buffer to the front of the row, a whole
// group (one 16-byte store) at a time; far entries, few, one at a time to the back of the row.
// finish() pads both regions to whole groups, near with 0 (the force loop masks the last near
// group) and far with `phantom` (slot n of the positions, far from every particle; the far loop
// masks it too), and returns (near, far). The caller stores at most cap entries.
struct RowWriter {
  int* __restrict__ nbr;
  int n, s, top;  // n: rows (the stride); top: 4 * row_groups(cap), far entries from top - 1 down
  int phantom;    // the far region's padding slot: the particles (n where a row is a particle)
  int a = 0, b = 0;
  int4 buf = make_int4(0, 0, 0, 0);
  int4* __restrict__ next;  // where the next whole near group goes (group a / 8 of row s)

  __device__ __forceinline__ RowWriter(int* __restrict__ nbr_, int n_, int s_, int cap)
      : RowWriter(nbr_, n_, s_, cap, n_) {}
  __device__ __forceinline__ RowWriter(int* __restrict__ nbr_, int rows, int s_, int cap, int phantom_)
      : nbr(nbr_), n(rows), s(s_), top(4 * row_groups(cap)), phantom(phantom_),
        next(reinterpret_cast<int4*>(nbr_) + s_) {}

  __device__ __forceinline__ void push(int d) {  // shifts d in at the back of the buffer
    buf = make_int4(__funnelshift_r(buf.x, buf.y, 16), __funnelshift_r(buf.y, buf.z, 16),
                    __funnelshift_r(buf.z, buf.w, 16), __funnelshift_r(buf.w, d, 16));
    if ((++a & 7) == 0) {
      *next = buf;
      next += n;
    }
  }
  // a build round's hits, all near, in order: bit 31 - t of `bits` for partner d0 + t. Two hits a
  // step once the row's length is even: the buffer then moves by one whole word (two 16-bit entries
  // shifted in together), and the test and the store of a full group are paid once per two hits.
  __device__ __forceinline__ void push_round_msb(unsigned int bits, int d0) {
    const int top = d0 + 31;  // the partner of bit b: top - b (b = 31 - __clz: one FLO)
    if ((a & 1) && bits) {  // the row's length odd: one hit alone first
      const int b = 31 - __clz(bits);
      bits ^= 1u << b;
      push(top - b);
    }
    while (bits & (bits - 1u)) {  // two hits or more left
      const int b0 = 31 - __clz(bits);
      bits ^= 1u << b0;
      const int b1 = 31 - __clz(bits);
      bits ^= 1u << b1;
      buf = make_int4(buf.y, buf.z, buf.w, __byte_perm(top - b0, top - b1, 0x5410));
      a += 2;
      if ((a & 7) == 0) {
        *next = buf;
        next += n;
      }
    }
    if (bits) push(top - (31 - __clz(bits)));
  }
  __device__ __forceinline__ void far(int q) { nbr[far_at(top - 1 - b++, s, n)] = q; }
  __device__ __forceinline__ void add(int q, bool img) {
    if (far_entry(q, s, img)) {
      far(q);
    } else {
      push(q - s);
    }
  }
  __device__ __forceinline__ int2 finish() {
    const int near = a;
    while (a & 7) push(0);
    pad_far(nbr, n, s, top, b, phantom);
    return make_int2(near, b);
  }
};

// Whether the kernel is built with contraction (fmad): every accumulation type but Fixed, whose
// kernels are built with --fmad=false (strategies/cuda.py, FIXED_OPTIONS).
template <typename Acc>
struct Contracted {
  static constexpr bool value = true;
};
template <>
struct Contracted<Fixed> {
  static constexpr bool value = false;
};

// d = r_i - r_j for an entry: the raw difference, the minimum image for IMAGE entries. Returns
// |d|^2, rounded as separation() (common.cuh) is in every other kernel: with FMA (contraction on)
// every rounding spelled out as the compiler contracts separation(), so that the loops calling
// this cannot contract it differently; without (Fixed, --fmad=false) separation()'s own text,
// which nothing contracts. The same bits in every loop, and the fixed-point mode's same pair
// terms as the other strategies.
template <bool IMAGE, bool FMA, typename Real>
__device__ __forceinline__ Real entry_separation(const Vec4<Real>& pi, const Vec4<Real>& pj, const Box<Real>& box,
                                                 Real& dx, Real& dy, Real& dz) {
  dx = pi.x - pj.x;
  dy = pi.y - pj.y;
  dz = pi.z - pj.z;
  if constexpr (FMA) {
    if constexpr (IMAGE) {
      dx = fma(-box.lx, Math<Real>::rint(dx * box.ilx), dx);
      dy = fma(-box.ly, Math<Real>::rint(dy * box.ily), dy);
      dz = fma(-box.lz, Math<Real>::rint(dz * box.ilz), dz);
    }
    return fma(dz, dz, fma(dx, dx, dy * dy));
  } else {
    if constexpr (IMAGE) {
      dx = min_image<true>(dx, box.lx, box.ilx);
      dy = min_image<true>(dy, box.ly, box.ily);
      dz = min_image<true>(dz, box.lz, box.ilz);
    }
    return dx * dx + dy * dy + dz * dz;
  }
}

// 1 where r2 < rl2, else 0: for a float r2 that is a sum of squares (as bits a non-negative integer:
// +0, a positive number, +inf, or the GPU's canonical NaN 0x7fffffff, all ordered as their floats
// against a finite rl2 >= 0), the sign of the integer difference of the bits: one integer add and a
// shift where a compare, a select and a shift would take three. double: the compare.
__device__ __forceinline__ unsigned int below(float r2, float rl2) {
  return static_cast<unsigned int>(__float_as_int(r2) - __float_as_int(rl2)) >> 31;
}
__device__ __forceinline__ unsigned int below(double r2, double rl2) { return r2 < rl2 ? 1u : 0u; }

// The 3 x 3 columns around a row's column in the order every build walks them: each column
// followed by its opposite, the row's own column last (offsets c = 0, 8, 1, 7, 2, 6, 3, 5, 4 with
// x offset c / 3 - 1, y offset c % 3 - 1). The strip build walks each pair as one stream of
// candidates (verlet_build): a lateral gap that shortens one's z-window lengthens the other's.
__device__ __forceinline__ int column_at(int i) { return i == 8 ? 4 : (i & 1) ? 8 - (i >> 1) : (i >> 1); }

// Column col (0..8, in the walk's order: column_at) of the 3 x 3 columns around column (cx, cy):
// its offsets, coordinates and image shifts; false where there is none (axis_neighbour).
template <bool MINIMAGE, typename Real>
__device__ __forceinline__ bool column_neighbour(int cx, int cy, int col, const Grid& g, const Box<Real>& box, int& ox,
                                                 int& oy, int& x, int& y, Real& sx, Real& sy) {
  const int c = column_at(col);
  ox = c / 3 - 1;
  oy = c % 3 - 1;
  return axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx) &&
         axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy);
}

// A run's image shift along one axis (0, -len or +len: axis_neighbour, z_runs) as 2 bits, and back.
template <typename Real>
__device__ __forceinline__ unsigned int shift_code(Real s) { return s < Real(0) ? 1u : (s > Real(0) ? 2u : 0u); }
template <typename Real>
__device__ __forceinline__ Real from_code(unsigned int c, Real len) {
  c &= 3u;
  return c == 1u ? -len : (c == 2u ? len : Real(0));
}


// The near entries' packed positions seen from slot s (Positions::from's counterpart).
struct PackedNear {
  const unsigned int* __restrict__ p;  // slot s's words (as Positions::from: one IMAD.WIDE a gather from here)
  __device__ __forceinline__ PackedNear(const uint2* q, int s)
      : p(reinterpret_cast<const unsigned int*>(q) + 2LL * s) {}
  __device__ __forceinline__ uint2 operator[](int i) const { return __ldg(reinterpret_cast<const uint2*>(p) + i); }
};

// A row's particle for its near entries: its packed coordinates with the period's half added (x) or
// taken off (y, z), and the constants that turn a 21- or 22-bit remainder into a float. y and z take
// the partner's coordinate plus the row's constant: ptxas folds the shift that extracts it and the
// add into one LEA.HI (y's funnel shift too: 25 SASS instructions a pair against 26).
struct PackedRow {
  unsigned int cx, cy, cz, expo;
  float h, kxy, kz;
  __device__ __forceinline__ PackedRow(const uint2& qi, const PackedPositions& pk)
      : cx((qi.x & 0x1fffffu) + (1u << 20)), cy((1u << 20) - (__funnelshift_r(qi.x, qi.y, 21) & 0x1fffffu)),
        cz((1u << 21) - (qi.y >> 10)), expo(pk.expo), h(pk.h), kxy(-9437184.0f * pk.h), kz(10485760.0f * pk.h) {}
};

// d = r_i - r_j for a near entry from the packed coordinates: the remainder t of (qi - qj + half
// period) modulo the period (y, z: of qj - qi + half), as the float 2^23 + t (its bits: t under the
// exponent of 2^23), then (2^23 + t) h - (2^23 + half) h (y, z: the other way round): every step
// exact, the same d from either row. |d|^2 rounded as entry_separation's.
template <bool FMA>
__device__ __forceinline__ float packed_separation(const PackedRow& r, const uint2& qj, float& dx, float& dy,
                                                   float& dz) {
  const float mx = __int_as_float(static_cast<int>(((r.cx - qj.x) & 0x1fffffu) | r.expo));
  const float my = __int_as_float(static_cast<int>(((__funnelshift_r(qj.x, qj.y, 21) + r.cy) & 0x1fffffu) | r.expo));
  const float mz = __int_as_float(static_cast<int>((((qj.y >> 10) + r.cz) & 0x3fffffu) | r.expo));
  dx = __fmaf_rn(mx, r.h, r.kxy);   // (2^23 + t) h - (2^23 + 2^20) h
  dy = __fmaf_rn(my, -r.h, -r.kxy);  // y: t = qj - qi + 2^20, so d = (2^23 + 2^20) h - (2^23 + t) h
  dz = __fmaf_rn(mz, -r.h, r.kz);   // z: t = qj - qi + 2^21, so d = (2^23 + 2^21) h - (2^23 + t) h
  if constexpr (FMA) {
    return fma(dz, dz, fma(dx, dx, dy * dy));
  } else {
    return dx * dx + dy * dy + dz * dz;
  }
}

// Block 0 of a force kernel: the upkeep of this step (if any) is complete, its triggers cleared
// and counted. flag[0] / rebuilds[0]: the rebuild; flag[1] / rebuilds[1]: the inner list's prune
// (raised only where the plan keeps one, strategies/verlet/plan.py: every plan's flag holds both).
__device__ __forceinline__ void consume_flags(int* flag, unsigned int* rebuilds) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (flag[0]) {
      flag[0] = 0;
      ++rebuilds[0];
    }
    if (flag[1]) {
      flag[1] = 0;
      ++rebuilds[1];
    }
  }
}
