// Verlet neighbour list (strategies/verlet.py): a full list (every pair in both rows) of the
// particles within r_list = cutoff + skin, built from the shared binning with cells of side >=
// r_list, reused while no particle has moved more than skin / 2 since the build.
//
// The list lives in the binning's (cell) order: row s is particle order[s], its entries are
// sorted slots, and the force kernel reads the positions from `cur`, a copy in that order, so
// that a row's partners lie in a few contiguous runs of memory whatever the input order (the
// sorting that HOOMD-blue and GROMACS do for the same reason). cur[s] is particle order[s]'s
// position moved by whole box lengths to the image nearest its position at the build: unwrapped
// since the build, so that the raw difference of two entries found without an image shift stays
// their separation.
//
// A row holds near entries (the partner's slot relative to the row's, 16 bits) from the front,
// in the order they were found, and far entries (found across a periodic boundary, or too far in
// slot for 16 bits: the slot itself, 32 bits) from the back; len[s] = (near, far). Storage is in
// groups of 16 bytes, the rows of a group consecutive (a warp's 32 rows read 512 contiguous bytes
// per group): 8 near or 4 far entries per load. The near loop takes raw differences and nothing
// else; only the few far entries take a minimum image. See row_groups and RowWriter.
//
//   verlet_check   (the Newton3 cluster pairs' trigger) each step: sets *flag where some particle
//                  moved more than skin/2 since the list's build (minimum image)
//   verlet_refresh each step, the Verlet list's check: the same trigger on ref (sorted), and cur
//                  from the positions the MD loop moved (flag nullptr: cur only, the negative
//                  control that never rebuilds)
//   verlet_build   (guarded by *flag; verlet_build_warp: a warp per row; verlet_build_cells: a
//                  warp per cell) one thread per sorted slot: the particles j != i of the
//                  neighbour cells' z-strips within r_list, in strip order (deterministic: the
//                  binning fixes the order inside a cell), into padded rows as above; ref and cur
//                  set to the build's positions; a row longer than the capacity raises *overflow
//                  to its length and is never written past the capacity (the force phase reports
//                  it)
//   verlet_banks   (guarded; launch parameter banks=1) each whole near group's entries reordered so
//                  that a quarter-warp's gathers read distinct L1 bank groups
//   verlet_rotate  (guarded; banks=2, tpp 1) each row's near entries permuted so that its gather t
//                  reads bank group (s + t) % 8 where it can: the same for a whole row
//   verlet_pack    (guarded; layout=packed) cur's 8-byte fixed-point copy after a build (verlet_refresh
//                  and the fused steps write it with cur; PackedPositions below)
//   verlet_force   TPP threads per row: force on i = order[s] from its row; forces written in
//                  input order; energy and virial per block (ENERGY). Block 0 clears *flag and
//                  counts the rebuild. With MD (the MD loop's fused steps, MdStep below): no
//                  forces written; the row's particle kicked (and drifted) in slot order instead
//   verlet_open, verlet_unsort, verlet_stage, verlet_resort  (the fused steps) the opening kick and
//                  drift of a run of steps; the state to input order where the loop reads it; a
//                  rebuild's positions to input order and its state to the new slot order
#include "cells.cuh"
#include "integrate.cuh"

// ---- Packed positions (layout=packed, strategies/verlet.py) ------------------------------------
// The near entries' gathers read 8 bytes a partner instead of 16: x, y and z as 21, 21 and 22 bits
// of fixed point in steps of h (a power of two), modulo 2^21 h (z: 2^22 h). The L1 serves a 32-lane
// gather of 8-byte elements in fewer data-pipe wavefronts (tools/l1_probe.py: 5.8 against 10.4
// per request on the LJ 1M rows, H100), and those wavefronts bound the force kernel at 1M.
// A near entry's separation is the difference of the two fixed-point coordinates taken modulo the
// period, exact, so long as |d| < 2^20 h on each axis: the plan takes the smallest h with 2^20 h
// >= r_list + skin, the farthest a near pair can be while the list is valid (each end within
// skin / 2 of its build position). The coordinates are those of cur (the unwrapped positions)
// rounded to the grid: in fp32 h = 2^-18 for LJ (3.8e-6), the step of a float between 32 and 64.
// The row's own particle and the far entries (across a periodic face, or far in slot) keep the Vec4
// positions and their minimum image. Float coordinates only.
//   word x: qx (bits 0-20) | qy bits 0-10 (21-31); word y: qy bits 11-20 (0-9) | qz (10-31)
constexpr int kPacked = 3;  // verlet_force's LAYOUT: Vec4 positions for rows and far entries, packed near ones

struct PackedPositions {  // strategies/verlet.py, PACKED_DTYPE
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

// cur's packed copy, slots [0, n) (grid-stride), where *guard is set (nullptr: always).
__global__ void verlet_pack(const Vec4<float>* __restrict__ cur, const int n, const PackedPositions pk,
                            const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    pk.q[s] = pack_position(cur[s], pk.inv_h);
  }
}

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

// pref (launch parameter prune; nullptr: no inner list): the positions of the last prune, and
// flag[1] raised where some slot moved further than inner/2 from them.
template <typename Real>
__global__ void verlet_refresh(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order,
                               const Vec4<Real>* __restrict__ ref, const int n, const Box<Real> box,
                               const Real half_skin2, Vec4<Real>* __restrict__ cur, int* __restrict__ flag,
                               const PackedPositions pk, const Vec4<Real>* __restrict__ pref, const Real half_inner2) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  bool moved = false, pmoved = false;
  if (s < n) {
    Vec4<Real> c;
    moved = refreshed(pos[order[s]], ref[s], box, half_skin2, cur + s, pk.q != nullptr ? pk.q + s : nullptr, pk.inv_h,
                      &c);
    if (pref != nullptr) pmoved = pruned_moved(c, pref[s], half_inner2);
  }
  if (flag == nullptr) return;  // warp-uniform
  if (pref == nullptr) {
    if (__any_sync(0xffffffffu, moved) && (threadIdx.x & 31) == 0) atomicExch(flag, 1);
  } else {
    raise_flags(flag, moved, pmoved);
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

// One thread per row (sorted slot k), the full shell's walk (cells.cuh): 9 z-strips of the CSR
// storage with one image shift per run (per-pair minimum image only with MINIMAGE: a periodic
// axis of fewer than 3 cells), the particle itself split out of its strip. WINDOW: only the
// z-window a strip's column can reach (the strips are sorted by z). Hits are appended in strip
// order: the same rows with and without WINDOW.
// (__launch_bounds__: float coordinates 56 registers, nine blocks of 128 an SM, what the uniform build takes
// without bounds; ADAPT took 58 without them, eight blocks: 42.7% of warps active against 47.5%, s35-call1.
// double 80, as without bounds. With __launch_bounds__(128) alone ptxas aims at full occupancy and spills.)
// ADAPT (launch parameter adapt, strategies/verlet.py): each particle's own half-skin h in its w
// (0 <= h <= hcap, the plan's and verlet_stage's), a pair listed where r < cutoff + h_i + h_j, and the
// z-windows sized for cutoff + h_i + hcap (rlist2_all unused). Exact as the uniform list: a pair left out
// was at least cutoff + h_i + h_j apart, and the trigger (refreshed) keeps each end within its own h.
template <typename Real, bool MINIMAGE, bool WINDOW, bool OPPOSITE = false, bool ADAPT = false>
__global__ void __launch_bounds__(128, sizeof(Real) == 4 ? 9 : 6)
verlet_build(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ cell_sorted,
             const int* __restrict__ start, const int n, const Grid g, const Box<Real> box, const Real rlist2_all,
             const Real margin, const int cap, int* __restrict__ nbr, int2* __restrict__ len,
             Vec4<Real>* __restrict__ ref, Vec4<Real>* __restrict__ cur, int* __restrict__ overflow,
             const int* __restrict__ guard, const Real cutoff, const Real hcap) {
  static_assert(!(WINDOW && MINIMAGE), "z-windows need one image shift per strip");
  static_assert(!OPPOSITE || WINDOW, "the opposite columns' walk is over z-windows");
  if (guard != nullptr && *guard == 0) return;
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const Vec4<Real> pi = sorted[k];
  // ADAPT: the row's reach a = cutoff + h_i; a candidate j is in where r2 < (a + h_j)^2 (reach2 below)
  const Real a = cutoff + pi.w, a2 = a * a, a2x = Real(2) * a;
  const Real rlist2 = ADAPT ? (a + hcap) * (a + hcap) : rlist2_all;  // the windows' reach
  auto reach2 = [&](Real hj) { return ADAPT ? fma(hj, hj, fma(a2x, hj, a2)) : rlist2_all; };
  const int c = cell_sorted[k];
  const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
  const Real side_x = box.lx / Real(g.nx), side_y = box.ly / Real(g.ny);
  const Real lo_x = pi.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x = side_x - lo_x;
  const Real lo_y = pi.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y = side_y - lo_y;
  int count = 0;  // hits
  RowWriter row(nbr, n, k, cap);
  // One round: candidates q0 .. end - 1 (at most 32) of a run whose image shift moved pi to p. Their
  // hits as bits, then stored in slot order. The store (the divergent part: ~3 in 10 candidates hit,
  // so some lane almost always does) runs once per hit of the lane, not once per candidate of the
  // warp. The particle itself (r2 = 0) is taken out of its round's bits: the run is not split at k
  // (a second pass of rounds).
  auto round = [&](int q0, int end, const Vec4<Real>& p, bool run_img) {
    const bool self = static_cast<unsigned int>(k - q0) < static_cast<unsigned int>(end - q0);
    unsigned int bits = 0u, ibits = 0u;
    if constexpr (MINIMAGE) {
#pragma unroll 4
      for (int q = q0; q < end; ++q) {
        const Vec4<Real> pj = sorted[q];
        Real dx, dy, dz;
        const bool hit = separation<MINIMAGE>(p, pj, box, dx, dy, dz) < reach2(pj.w);
        bits |= static_cast<unsigned int>(hit) << (q - q0);
        ibits |= static_cast<unsigned int>(hit && crosses(pi, pj, box)) << (q - q0);
      }
      if (self) bits &= ~(1u << (k - q0));
    } else {
      // Each candidate's bit shifted in from the bottom, then the mask aligned to the top (candidate
      // q at bit 31 - (q - q0)): a candidate costs its test and one shift-add, not a variable shift.
      // Eight candidates a step and no remainder loop: the last step reads up to seven slots past
      // the round (the binning pads `sorted` for them: strategies/binning.py, SORTED_PAD), their
      // bits cleared below. Measured under ncu (H200, LJ 1M): 496 us against 505 with four a step.
      const int len = end - q0;
      const Vec4<Real>* __restrict__ src = sorted + q0;
#pragma unroll 1
      for (int u0 = 0; u0 < len; u0 += 8) {
        Vec4<Real> pj[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) pj[u] = src[u0 + u];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          Real dx, dy, dz;
          bits = (bits << 1) | below(separation<false>(p, pj[u], box, dx, dy, dz), reach2(pj[u].w));
        }
      }
      bits <<= 32 - ((len + 7) & ~7);  // candidate q at bit 31 - (q - q0)
      bits &= 0xffffffffu << (32 - len);
      if (self) bits &= ~(0x80000000u >> (k - q0));
    }
    // the common case: every hit of the round a near entry (no image, |q - k| within 16 bits for
    // the whole round) and room for all of them, so that a hit takes no test of its own; it
    // leaves no bits for the general loop below
    const int hits = __popc(bits);
    if (!MINIMAGE && !run_img && count + hits <= cap && q0 - k >= -kNear && end - 1 - k <= kNear) {
      row.push_round_msb(bits, q0 - k);
      bits = 0u;
      count += hits;
    }
    if constexpr (!MINIMAGE) bits = __brev(bits);  // bit t: candidate q0 + t again
    while (bits) {
      const int t = __ffs(bits) - 1;
      bits &= bits - 1u;
      if (count < cap) row.add(q0 + t, MINIMAGE ? ((ibits >> t) & 1u) != 0u : run_img);
      ++count;
    }
  };
  if constexpr (OPPOSITE) {
    // build=opposite: the columns two at a time, each with its opposite (column_at), the own column
    // last. A lane's z-window in a column depends on its lateral gap to it, so the lanes of a warp
    // walk windows of different lengths; the pair's lengths add to a near-constant. Each pair's runs
    // (up to two a column) become up to four segments (the window's index range, found by bisection,
    // and the run's image shift as a code of 2 bits an axis), walked by each lane as one stream of
    // rounds: the warp runs its longest lane's pair, not each column's longest lane. The rows are
    // those of the columns walked one by one in the same order (the other builds). It pays where
    // windows differ most (crowded inputs), not on the LJ liquid (strategies/verlet.py, build).
#pragma unroll 1
    for (int pr = 0; pr < 5; ++pr) {
      int sf[4] = {0, 0, 0, 0}, sl[4] = {0, 0, 0, 0};  // segment: [sf, sl)
      unsigned int codes = 0u;                         // segment t's shift code at bits 6 t
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int ox, oy, x, y;
        Real sx, sy;
        if (pr == 4 && h == 1) continue;  // the own column: alone
        if (!column_neighbour<false>(cx, cy, 2 * pr + h, g, box, ox, oy, x, y, sx, sy)) continue;
        const Real w = z_reach(lateral_gap(ox, lo_x, hi_x, side_x), lateral_gap(oy, lo_y, hi_y, side_y), rlist2,
                               margin);
        if (w < Real(0)) continue;
        int b[2], e[2];
        Real sz[2];
        const int runs = z_runs<1, false>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          if (r < runs) {
            const Real pz = pi.z - sz[r];  // shifted()'s z
            // the window [z - w, z + w] as an index range, both ends found by bisection (the two
            // searches side by side, bisect_z_window): the round's loop then has no exit of its
            // own, so its loads can be issued ahead of the checks
            bisect_z_window(sorted, b[r], e[r], pz - w, pz + w, sf[2 * h + r], sl[2 * h + r]);
            codes |= (shift_code(sx) | shift_code(sy) << 2 | shift_code(sz[r]) << 4) << (6 * (2 * h + r));
          }
        }
      }
      // the segments in order, each lane on its own: the queue moves up as one is done
      int q0 = sf[0], last = sl[0];
#pragma unroll 1
      for (int left = 3;;) {
        while (q0 >= last && left > 0) {
          q0 = sf[1], last = sl[1], sf[1] = sf[2], sl[1] = sl[2], sf[2] = sf[3], sl[2] = sl[3], sf[3] = sl[3] = 0;
          codes >>= 6;
          --left;
        }
        if (q0 >= last) break;
        const unsigned int code = codes & 63u;
        const Vec4<Real> p = shifted(pi, from_code(code, box.lx), from_code(code >> 2, box.ly),
                                     from_code(code >> 4, box.lz));
        const int end = min(last, q0 + 32);
        round(q0, end, p, code != 0u);
        q0 = end;
      }
    }
  } else {
    // The column set-up below (neighbour, z-reach, runs) repeats the opposite walk's above. Written once
    // in a force-inlined helper (988a155) it gave the same lists, but ptxas scheduled this walk apart:
    // the LJ 1M build 0.5449 / 0.5438 against 0.5389 / 0.5396 ms (H200, s33-call10). So it stays twice.
#pragma unroll 1
    for (int col = 0; col < 9; ++col) {
      int ox, oy, x, y;
      Real sx, sy;
      if (!column_neighbour<MINIMAGE>(cx, cy, col, g, box, ox, oy, x, y, sx, sy)) continue;
      Real w = Real(0);
      if constexpr (WINDOW) {
        w = z_reach(lateral_gap(ox, lo_x, hi_x, side_x), lateral_gap(oy, lo_y, hi_y, side_y), rlist2, margin);
        if (w < Real(0)) continue;
      }
      int b[2], e[2];
      Real sz[2];
      const int runs = z_runs<1, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (r < runs) {  // constant indices: b, e, sz stay in registers
          const Vec4<Real> p = shifted(pi, sx, sy, sz[r]);
          const bool run_img = sx != Real(0) || sy != Real(0) || sz[r] != Real(0);
          // the window [z - w, z + w] as an index range, both ends found by bisection (the two
          // searches side by side, bisect_z_window): the round's loop then has no exit of its own,
          // so its loads can be issued ahead of the checks
          int first = b[r], last = e[r];
          if constexpr (WINDOW) bisect_z_window(sorted, b[r], e[r], p.z - w, p.z + w, first, last);
#pragma unroll 1
          for (int q0 = first; q0 < last; q0 += 32) round(q0, min(last, q0 + 32), p, run_img);
        }
      }
    }
  }
  len[k] = row.finish();  // the force phase reads what was stored; the overflow is reported
  if (count > cap) atomicMax(overflow, count);
  ref[k] = pi;
  cur[k] = pi;
}

// The same rows, a warp per row: the strip kernel's walk (9 columns, their runs in order, each
// run's image shift applied once), 32 candidates at a time, one per lane; the hits of a round
// are compacted in lane order with a ballot, so the row is the strip kernel's, in the same order
// (the same sums downstream). For systems too small to fill the GPU with a thread per row
// (4,000 particles: 4,000 threads), where each thread's serial walk over ~500 candidates is the
// build's whole time.
template <typename Real, bool MINIMAGE>
__global__ void
verlet_build_warp(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ cell_sorted,
                  const int* __restrict__ start, const int n, const Grid g, const Box<Real> box,
                  const Real rlist2, const int cap, int* __restrict__ nbr, int2* __restrict__ len,
                  Vec4<Real>* __restrict__ ref, Vec4<Real>* __restrict__ cur, int* __restrict__ overflow,
                  const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  const int lane = threadIdx.x & 31;
  const int k = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5);
  if (k >= n) return;  // k is the same for the whole warp: it leaves together
  const Vec4<Real> pi = sorted[k];
  const int c = cell_sorted[k];
  const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
  int count = 0, na = 0, nb = 0;  // hits; near and far entries stored
  const int top = 4 * row_groups(cap);
#pragma unroll 1
  for (int col = 0; col < 9; ++col) {
    int ox, oy, x, y;
    Real sx, sy;
    if (!column_neighbour<MINIMAGE>(cx, cy, col, g, box, ox, oy, x, y, sx, sy)) continue;
    int b[2], e[2];
    Real sz[2];
    const int runs = z_runs<1, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
#pragma unroll 1
    for (int r = 0; r < runs; ++r) {
      const int rb = r ? b[1] : b[0], re = r ? e[1] : e[0];
      const Real rsz = r ? sz[1] : sz[0];
      const Vec4<Real> p = shifted(pi, sx, sy, rsz);
      const bool run_img = sx != Real(0) || sy != Real(0) || rsz != Real(0);
#pragma unroll 1
      for (int base = rb; base < re; base += 32) {
        const int q = base + lane;
        bool hit = false, img = false;
        if (q < re && q != k) {
          Real dx, dy, dz;
          const Vec4<Real> pj = sorted[q];
          hit = separation<MINIMAGE>(p, pj, box, dx, dy, dz) < rlist2;
          img = hit && (MINIMAGE ? crosses(pi, pj, box) : run_img);
        }
        // the hits in lane order, as the strip kernel finds them: a hit is stored while the row
        // has room, near ones after the row's near entries, far ones before its far entries
        // (RowWriter's classes)
        const bool far = far_entry(q, k, img);
        const unsigned int below = (1u << lane) - 1u;
        const unsigned int hits = __ballot_sync(0xffffffffu, hit);
        const bool stored = hit && count + __popc(hits & below) < cap;
        const unsigned int kept = __ballot_sync(0xffffffffu, stored);
        const unsigned int fars = __ballot_sync(0xffffffffu, stored && far);
        if (stored && far) nbr[far_at(top - 1 - (nb + __popc(fars & below)), k, n)] = q;
        if (stored && !far) {
          reinterpret_cast<short*>(nbr)[near_at(na + __popc(kept & ~fars & below), k, n)] = static_cast<short>(q - k);
        }
        count += __popc(hits);
        na += __popc(kept & ~fars);
        nb += __popc(fars);
      }
    }
  }
  if (lane == 0) {  // both regions padded to whole groups (RowWriter::finish)
    for (int j = na; j & 7; ++j) reinterpret_cast<short*>(nbr)[near_at(j, k, n)] = 0;
    pad_far(nbr, n, k, top, nb, n);
    len[k] = make_int2(na, nb);
    if (count > cap) atomicMax(overflow, count);
    ref[k] = pi;
    cur[k] = pi;
  }
}

// The same rows, a warp per tile of 32 consecutive rows (consecutive slots: one column of cells,
// or two where a column ends, sorted by z). The rows go in GROUPS groups of R = 32 / GROUPS lanes.
// For each neighbour column, each group takes the union of its rows' z-windows, loads those
// candidates R at a time (a lane each, coalesced) into shared memory, and every lane of the group
// tests every candidate of the chunk against its own particle: one load per candidate and group
// instead of one per row and candidate, every lane busy, one bisection per window and group. A
// lane keeps a candidate only in its own three cells of the column (the strip walk's runs, each
// with its own image shift), within r_list and not itself, in the strip kernel's order (columns;
// cells in unwrapped z order; slots): the strip kernel's rows. The lanes of a tile that sit in
// another column than the tile's first row take a second pass. Periodic axes need 3 cells or
// more (no per-pair minimum image: build_kind takes the strip build otherwise). Grid-stride over
// the tiles: a guarded launch that skips costs few blocks.
constexpr int kTileWarps = 4;

template <typename Real, int GROUPS>
__global__ void verlet_build_tile(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ cell_sorted,
                  const int* __restrict__ start, const int n, const Grid g, const Box<Real> box, const Real rlist2,
                  const Real margin, const int cap, int* __restrict__ nbr, int2* __restrict__ len,
                  Vec4<Real>* __restrict__ ref, Vec4<Real>* __restrict__ cur, int* __restrict__ overflow,
                  const int* __restrict__ guard) {
  static_assert(GROUPS == 1 || GROUPS == 2 || GROUPS == 4, "GROUPS: 1, 2 or 4 groups of rows per warp");
  constexpr int R = 32 / GROUPS;  // lanes per group: candidates per chunk
  __shared__ Vec4<Real> s_pos[kTileWarps][32];
  if (guard != nullptr && *guard == 0) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = lane / R, gl = lane % R;
  const int tiles = (n + 31) >> 5;
  const Real side_x = box.lx / Real(g.nx), side_y = box.ly / Real(g.ny);
  const bool zper = (g.pmask & 4) != 0;
  for (int tile = blockIdx.x * kTileWarps + warp; tile < tiles; tile += gridDim.x * kTileWarps) {
    const int k = tile * 32 + lane;
    const bool mine = k < n;
    const Vec4<Real> pi = mine ? sorted[k] : Vec4<Real>{Real(0), Real(0), Real(0), Real(0)};
    const int c = mine ? cell_sorted[k] : -1;
    const int cz = mine ? c % g.nz : 0, col2 = mine ? c / g.nz : -1;  // col2: the column, x * ny + y
    const int cx = mine ? col2 / g.ny : 0, cy = mine ? col2 % g.ny : 0;
    const Real lo_x = pi.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x = side_x - lo_x;
    const Real lo_y = pi.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y = side_y - lo_y;
    int count = 0;
    RowWriter row(nbr, n, mine ? k : 0, cap);
    unsigned int pending = __ballot_sync(0xffffffffu, mine);
    while (pending) {  // one pass per column among the tile's rows (warp-uniform)
      const int lcol = __shfl_sync(0xffffffffu, col2, __ffs(pending) - 1);
      const bool act = mine && col2 == lcol;
      pending &= ~__ballot_sync(0xffffffffu, act);
      const int lcx = lcol / g.ny, lcy = lcol % g.ny;
#pragma unroll 1
      for (int col = 0; col < 9; ++col) {
        int ox, oy, x, y;
        Real sx, sy;
        if (!column_neighbour<false>(lcx, lcy, col, g, box, ox, oy, x, y, sx, sy)) continue;
        const Real w = act ? z_reach(lateral_gap(ox, lo_x, hi_x, side_x), lateral_gap(oy, lo_y, hi_y, side_y),
                                     rlist2, margin)
                           : Real(-1);
        const bool want = w >= Real(0);
        // the group's cells (unwrapped z) and z-window: unions over its wanting lanes
        int ulo = want ? cz - 1 : 0x3fffffff, uhi = want ? cz + 1 : -0x3fffffff;
        Real wlo = want ? pi.z - w : Real(1e30), whi = want ? pi.z + w : Real(-1e30);
#pragma unroll
        for (int off = R / 2; off > 0; off >>= 1) {
          ulo = min(ulo, __shfl_xor_sync(0xffffffffu, ulo, off));
          uhi = max(uhi, __shfl_xor_sync(0xffffffffu, uhi, off));
          wlo = fmin(wlo, __shfl_xor_sync(0xffffffffu, wlo, off));
          whi = fmax(whi, __shfl_xor_sync(0xffffffffu, whi, off));
        }
        if (!zper) {
          ulo = max(ulo, 0);
          uhi = min(uhi, g.nz - 1);
        }
        const int base = (x * g.ny + y) * g.nz;
#pragma unroll 1
        for (int part = 0; part < 3; ++part) {  // cells below 0 (one box length down), inside, past the top
          const int plo = part == 0 ? ulo : (part == 1 ? max(ulo, 0) : max(ulo, g.nz));
          const int phi = part == 0 ? min(uhi, -1) : (part == 1 ? min(uhi, g.nz - 1) : uhi);
          const int poff = part == 0 ? g.nz : (part == 1 ? 0 : -g.nz);  // unwrapped cell + poff: the cell
          const Real sz = part == 0 ? -box.lz : (part == 1 ? Real(0) : box.lz);
          const bool some = plo <= phi;
          if (!__any_sync(0xffffffffu, some)) continue;
          int first = 0, last = 0;
          if (some) {
            first = bisect_z<false>(sorted, start[base + plo + poff], start[base + phi + poff + 1], wlo - sz);
            last = bisect_z<true>(sorted, first, start[base + phi + poff + 1], whi - sz);
          }
          // this lane's own cells within the part: the candidates it may keep
          const int alo = max(cz - 1, plo), ahi = min(cz + 1, phi);
          const bool own = want && some && alo <= ahi;
          const int lo = own ? max(first, start[base + alo + poff]) : 0;
          const int span = own ? max(0, min(last, start[base + ahi + poff + 1]) - lo) : 0;
          const Vec4<Real> p = shifted(pi, sx, sy, sz);
          const bool img = sx != Real(0) || sy != Real(0) || sz != Real(0);
          int most = last - first;
#pragma unroll
          for (int off = 16; off > 0; off >>= 1) most = max(most, __shfl_xor_sync(0xffffffffu, most, off));
#pragma unroll 1
          for (int c0 = 0; c0 < most; c0 += R) {
            if (c0 + gl < last - first) s_pos[warp][gl * GROUPS + grp] = sorted[first + c0 + gl];
            __syncwarp();
            const int d0 = first + c0 - lo;  // candidate t is slot first + c0 + t: kept where d0 + t in [0, span)
            unsigned int bits = 0u;
#pragma unroll
            for (int t = 0; t < R; ++t) {
              const Vec4<Real> pj = s_pos[warp][t * GROUPS + grp];  // the groups' reads in distinct banks
              Real dx, dy, dz;
              const bool hit = separation<false>(p, pj, box, dx, dy, dz) < rlist2;
              bits |= static_cast<unsigned int>(hit && static_cast<unsigned int>(d0 + t) < static_cast<unsigned int>(span))
                      << t;
            }
            __syncwarp();  // the chunk is read before the next one is stored
            const int self = k - (first + c0);
            if (self >= 0 && self < R) bits &= ~(1u << self);
            while (bits) {
              const int t = __ffs(bits) - 1;
              bits &= bits - 1u;
              if (count < cap) row.add(first + c0 + t, img);
              ++count;
            }
          }
        }
      }
    }
    if (mine) {
      len[k] = row.finish();  // the force phase reads what was stored; the overflow is reported
      if (count > cap) atomicMax(overflow, count);
      ref[k] = pi;
      cur[k] = pi;
    }
  }
}

// The same rows, built per cell: one warp per cell loads the candidates of the cell's 9 z-strips
// (each run's image shift applied as it is loaded) CHUNK at a time into shared memory, and every
// particle of the cell (a lane each, 32 at a time) scans the chunk: one cooperative load per
// candidate instead of one per particle and candidate, and a loop that every lane runs alike.
// Candidate order is the strip kernel's (columns, runs, slots): the lists are the same.
constexpr int kBuildChunk = 256;

template <typename Real, bool MINIMAGE>
__global__ void __launch_bounds__(32)
verlet_build_cells(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ start,
                   const int n, const Grid g, const Box<Real> box, const Real rlist2, const int cap,
                   int* __restrict__ nbr, int2* __restrict__ len, Vec4<Real>* __restrict__ ref,
                   Vec4<Real>* __restrict__ cur, int* __restrict__ overflow, const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  __shared__ Vec4<Real> s_pos[kBuildChunk];
  __shared__ int s_slot[kBuildChunk];  // sorted slot: the self test, and the entry
  __shared__ bool s_img[kBuildChunk];  // the candidate's run has an image shift
  __shared__ int s_b[18], s_off[19];
  __shared__ Real s_sx[18], s_sy[18], s_sz[18];
  const int c = blockIdx.x;
  const int lane = threadIdx.x;
  const int first = start[c], count_c = start[c + 1] - first;
  if (count_c == 0) return;  // the whole block
  const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
  if (lane < 9) {  // column `lane` of the walk's order (column_at): up to two runs, each with its image shift
    const int ox = column_at(lane) / 3 - 1, oy = column_at(lane) % 3 - 1;
    int x, y, runs = 0, b[2] = {0, 0}, e[2] = {0, 0};
    Real sx, sy, sz[2] = {Real(0), Real(0)};
    if (axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx) &&
        axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy)) {
      runs = z_runs<1, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const bool on = r < runs;
      s_b[2 * lane + r] = on ? b[r] : 0;
      s_off[2 * lane + r + 1] = on ? e[r] - b[r] : 0;  // lengths; the prefix follows
      s_sx[2 * lane + r] = on ? sx : Real(0);
      s_sy[2 * lane + r] = on ? sy : Real(0);
      s_sz[2 * lane + r] = on ? sz[r] : Real(0);
    }
  }
  __syncwarp();
  if (lane == 0) {
    s_off[0] = 0;
    for (int r = 0; r < 18; ++r) s_off[r + 1] += s_off[r];
  }
  __syncwarp();
  const int total = s_off[18];
  for (int base = 0; base < count_c; base += 32) {
    const bool mine = base + lane < count_c;
    const int k = first + base + lane;
    const Vec4<Real> pi = mine ? sorted[k] : Vec4<Real>{};
    int count = 0;  // hits
    RowWriter row(nbr, n, mine ? k : 0, cap);
    for (int chunk = 0; chunk < total; chunk += kBuildChunk) {
      const int m = min(kBuildChunk, total - chunk);
      for (int t = lane; t < m; t += 32) {  // cooperative load, shifts applied
        const int gi = chunk + t;
        int r = 0;
        while (s_off[r + 1] <= gi) ++r;
        const int q = s_b[r] + (gi - s_off[r]);
        const Vec4<Real> p = sorted[q];
        s_pos[t] = {p.x + s_sx[r], p.y + s_sy[r], p.z + s_sz[r], p.w};
        s_slot[t] = q;
        s_img[t] = s_sx[r] != Real(0) || s_sy[r] != Real(0) || s_sz[r] != Real(0);
      }
      __syncwarp();
      if (mine) {
        for (int t = 0; t < m; ++t) {
          Real dx, dy, dz;
          if (separation<MINIMAGE>(pi, s_pos[t], box, dx, dy, dz) < rlist2 && s_slot[t] != k) {
            if (count < cap) row.add(s_slot[t], MINIMAGE ? crosses(pi, s_pos[t], box) : s_img[t]);
            ++count;
          }
        }
      }
      __syncwarp();
    }
    if (mine) {
      len[k] = row.finish();
      if (count > cap) atomicMax(overflow, count);
      ref[k] = pi;
      cur[k] = pi;
    }
  }
}

// The near entries of each whole group of 8 reordered so that the lanes of a quarter-warp gather
// from distinct 16-byte bank groups in the force kernel (launch parameter banks). The L1 reads a
// float4 gather 128 bytes per wavefront, one 16-byte chunk from each of its 8 bank groups (the
// slot's low 3 bits in the float Vec4 positions); lanes whose chunks share a bank group in different
// lines take wavefronts of their own (the model; the measurement below). The force kernel reads
// position v of the group in its v-th gather, on lane l = (s tpp + t) % 32 of the warp (t: the
// row's lane reading it: g % tpp split by groups, 0 by entries, whose lanes read positions t + w
// tpp). Position v gets the entry whose slot has bank group (l + v) % 8 where the group has one:
// each quarter-warp's 8 lanes then read 8 distinct bank groups. Entries left over (two of one
// bank group) take the free positions in order. The same entries per group, so the same pairs;
// the row's last partial group is kept as it is (the force loop masks it by position). Guarded
// like the builds; one thread per (group, row). Measured (H100, LJ 1M, tpp 1): 15% fewer data-pipe
// wavefronts (28.0M against 32.8M), not the half this model promises: a row's hits are sparse in
// slot order (about 1 candidate in 3), so a group's 8 entries share bank groups and ~1 in 3 lands
// at a free position instead of its own. The same order staged in shared memory (tried, fifteenth
// session) took 9 wavefronts per 128-bit gather and lost (strategies/verlet.py, banks).
__global__ void verlet_banks(int* __restrict__ nbr, const int2* __restrict__ len, const int n, const int groups,
                             const int tpp, const int by_entries, const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(groups) * n) return;
  const int s = static_cast<int>(t % n), g = static_cast<int>(t / n);
  if (g >= (__ldg(&len[s].x) >> 3)) return;
  int4* __restrict__ at = reinterpret_cast<int4*>(nbr) + static_cast<long long>(g) * n + s;
  const int4 e = *at;
  const int key = s * tpp + (by_entries ? 0 : g % tpp);  // lane of the warp, up to multiples of 8
  int d[8], out[8];
#pragma unroll
  for (int v = 0; v < 8; ++v) {
    d[v] = near_of(e, v);
    out[v] = 0;
  }
  unsigned int free = 0xffu, left = 0u;
#pragma unroll
  for (int v = 0; v < 8; ++v) {  // each entry to its own position where that is free
    const int want = (s + d[v] - key) & 7;
    const bool ok = (free >> want) & 1u;
#pragma unroll
    for (int p = 0; p < 8; ++p) out[p] = ok && p == want ? d[v] : out[p];
    free &= ok ? ~(1u << want) : 0xffu;
    left |= ok ? 0u : 1u << v;
  }
#pragma unroll
  for (int v = 0; v < 8; ++v) {  // the rest to the free positions, in order
    const bool go = (left >> v) & 1u;
    const int p0 = __ffs(free) - 1;
#pragma unroll
    for (int p = 0; p < 8; ++p) out[p] = go && p == p0 ? d[v] : out[p];
    free &= go ? free - 1u : 0xffffffffu;
  }
  *at = make_int4(__byte_perm(out[0], out[1], 0x5410), __byte_perm(out[2], out[3], 0x5410),
                  __byte_perm(out[4], out[5], 0x5410), __byte_perm(out[6], out[7], 0x5410));
}

// banks=2 (tpp 1, verlet_rotate): each row's near entries permuted so that entry t of row s
// reads bank group (s + t) % 8 wherever the row has an entry there. The 8 rows of a quarter-warp
// (8 consecutive slots) then read 8 distinct bank groups at each step of the force loop, and a
// 128-bit gather takes one L1 wavefront per quarter-warp instead of one per 16-byte chunk that
// shares a group with another lane's (measured on the H100 with tools/l1_probe.py: lines per lane
// with the quarter-warps' groups distinct take 4.08 wavefronts per gather, one group 32, the LJ
// rows as built 10.55). Row s owns the entries t = (b - s) % 8 + 8 r of group b, the first
// min(c_b, own_b) of its c_b entries go there in build order; the entries beyond a group's own
// positions fill the positions left free by the groups with fewer, in group order (a
// deterministic permutation; those entries share a group with another lane's gather). A thread
// per row: counts per group (8-bit fields), the free positions in order, then every entry to its
// position in shared memory, then the row's groups stored. Rows longer than `most` (at most 255,
// and what the shared buffer holds) keep the build's order.
__device__ __forceinline__ int field8(unsigned int lo, unsigned int hi, int b) {
  return static_cast<int>(((b & 4) ? hi : lo) >> ((b & 3) << 3)) & 0xff;
}
__device__ __forceinline__ void add8(unsigned int& lo, unsigned int& hi, int b, int v) {
  const unsigned int inc = static_cast<unsigned int>(v) << ((b & 3) << 3);
  if (b & 4) {
    hi += inc;
  } else {
    lo += inc;
  }
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
verlet_rotate(int* __restrict__ nbr, const int2* __restrict__ len, const int n, const int most,
              const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  // this thread's row (entry t at t * BLOCK + tid), then its free positions (x at the same in the
  // byte array after the rows)
  extern __shared__ unsigned short s_row[];
  unsigned char* s_free = reinterpret_cast<unsigned char*>(s_row + most * BLOCK);
  const int s = blockIdx.x * BLOCK + threadIdx.x;
  if (s >= n) return;  // no barrier below: each thread reads and writes its own column
  const int m = __ldg(&len[s].x);
  if (m > most) return;
  int4* __restrict__ rows = reinterpret_cast<int4*>(nbr);
  const int groups = (m + 7) >> 3;
  unsigned int clo = 0u, chi = 0u;  // entries per bank group
#pragma unroll 1
  for (int g = 0; g < groups; ++g) {
    const int4 e = rows[static_cast<long long>(g) * n + s];
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      if (8 * g + v < m) add8(clo, chi, (s + near_of(e, v)) & 7, 1);
    }
  }
  // per group b: its own positions (olo/ohi) and where its overflow starts among all (elo/ehi);
  // the free positions, group by group, into s_free
  unsigned int olo = 0u, ohi = 0u, elo = 0u, ehi = 0u;
  int e_acc = 0, x = 0;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const int c = field8(clo, chi, b), base = (b - s) & 7;
    const int own = m > base ? (m - base + 7) >> 3 : 0;
    add8(olo, ohi, b, own);
    add8(elo, ehi, b, e_acc);
    e_acc += max(c - own, 0);
#pragma unroll 1
    for (int t = base + 8 * c; t < m; t += 8) s_free[(x++) * BLOCK + threadIdx.x] = static_cast<unsigned char>(t);
  }
  unsigned int rlo = 0u, rhi = 0u;  // entries of each group placed so far
#pragma unroll 1
  for (int g = 0; g < groups; ++g) {
    const int4 e = rows[static_cast<long long>(g) * n + s];
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      if (8 * g + v < m) {
        const int d = near_of(e, v);
        const int b = (s + d) & 7;
        const int r = field8(rlo, rhi, b), o = field8(olo, ohi, b);
        add8(rlo, rhi, b, 1);
        const int t = r < o ? ((b - s) & 7) + 8 * r : s_free[(field8(elo, ehi, b) + r - o) * BLOCK + threadIdx.x];
        s_row[t * BLOCK + threadIdx.x] = static_cast<unsigned short>(d);
      }
    }
  }
#pragma unroll 1
  for (int g = 0; g < groups; ++g) {
    unsigned int h[8];
#pragma unroll
    for (int v = 0; v < 8; ++v) h[v] = 8 * g + v < m ? s_row[(8 * g + v) * BLOCK + threadIdx.x] : 0u;  // padding 0
    rows[static_cast<long long>(g) * n + s] = make_int4(static_cast<int>(h[0] | h[1] << 16), static_cast<int>(h[2] | h[3] << 16),
                                                        static_cast<int>(h[4] | h[5] << 16), static_cast<int>(h[6] | h[7] << 16));
  }
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

// A row's near entries split by entries among its TPP lanes (verlet_force with ENTRIES): lane t
// takes entries t, t + TPP, ... The row's lanes read whole groups together, GPS groups at a time
// (TPP / 8 for TPP >= 8, else 1), PER entries of each per lane (8 / TPP, else 1); lane t reads
// group sub = t / 8 of each GPS and its entries t % 8 + w TPP as 16-bit loads of their own (one
// register per entry in flight, whatever TPP). BATCH entries per lane are in flight: those of
// STEPS = BATCH / PER groups, loaded an iteration ahead. pair(q, valid) adds one candidate; the
// row's partial last group masks its padding (0: the row itself, never a pair).
template <int TPP, int BATCH, class Near, class Pair>
__device__ __forceinline__ void near_entries(const int* __restrict__ nbr, int n, int s, int lane, int m,
                                             const Near& near, Pair& pair) {
  constexpr int PER = TPP >= 8 ? 1 : 8 / TPP;
  constexpr int GPS = TPP >= 8 ? TPP / 8 : 1;
  constexpr int STEPS = BATCH / PER;
  static_assert(BATCH % PER == 0, "BATCH: whole groups per lane");
  const int sub = lane >> 3, pos0 = lane & 7;
  const int full = m >> 3;
  const int whole = full > sub ? (full - sub + GPS - 1) / GPS : 0;  // this lane's whole groups
  const long long gstep = static_cast<long long>(GPS) * n * 8;       // 16-bit entries from one to the next
  const short* __restrict__ base = reinterpret_cast<const short*>(nbr);
  const short* __restrict__ p = base + (static_cast<long long>(sub) * n + s) * 8 + pos0;
  int e[BATCH];
#pragma unroll
  for (int v = 0; v < BATCH; ++v) e[v] = v / PER < whole ? __ldg(p + (v / PER) * gstep + (v % PER) * TPP) : 0;
  int t = 0;
#pragma unroll 1
  for (; t + STEPS <= whole; t += STEPS) {
    decltype(near[0]) q[BATCH];
#pragma unroll
    for (int v = 0; v < BATCH; ++v) q[v] = near[e[v]];
    p += STEPS * gstep;
#pragma unroll
    for (int v = 0; v < BATCH; ++v) {
      e[v] = t + STEPS + v / PER < whole ? __ldg(p + (v / PER) * gstep + (v % PER) * TPP) : 0;
    }
#pragma unroll
    for (int v = 0; v < BATCH; ++v) pair(q[v], true);
  }
#pragma unroll
  for (int u = 0; u < STEPS - 1; ++u) {  // whole groups left (fewer than STEPS), loaded in e[]
    if (t + u < whole) {
      decltype(near[0]) q[PER];
#pragma unroll
      for (int w = 0; w < PER; ++w) q[w] = near[e[u * PER + w]];
#pragma unroll
      for (int w = 0; w < PER; ++w) pair(q[w], true);
    }
  }
  if ((m & 7) && sub == full % GPS) {  // the row's partial last group, padded with 0 (the row itself)
    const short* __restrict__ pl = base + (static_cast<long long>(full) * n + s) * 8 + pos0;
    decltype(near[0]) q[PER];
#pragma unroll
    for (int w = 0; w < PER; ++w) q[w] = near[__ldg(pl + w * TPP)];
#pragma unroll
    for (int w = 0; w < PER; ++w) pair(q[w], pos0 + w * TPP < (m & 7));
  }
}

// A warp's rounds of near groups (near_groups): in round k lane t of a row takes the row's group
// k TPP + t. `whole`: the rounds in which every row of the warp has whole groups only; `rounds`: the
// rounds that hold every row's groups. Warp-uniform, so that the warp's rows run their groups
// together: the whole rounds without masks, then the rest masked (a row's partial last group, and
// rounds past its end, which read no entries and add nothing). Rows of one warp differ by a group
// or two, and those groups, run per lane (a loop's extra pass, the last whole group, the partial
// group), each took an issue of its own. Every lane of the warp calls it; `row`: the lane has a row.
struct WarpRounds {
  int whole, rounds;
};
template <int TPP>
__device__ __forceinline__ WarpRounds warp_rounds(int m, bool row) {
  const unsigned int full = row ? static_cast<unsigned int>(m >> 3) : 0xffffffffu;
  const unsigned int groups = row ? static_cast<unsigned int>((m + 7) >> 3) : 0u;
  return {static_cast<int>(__reduce_min_sync(0xffffffffu, full) / TPP),
          static_cast<int>((__reduce_max_sync(0xffffffffu, groups) + TPP - 1) / TPP)};
}

// A row's near entries taken by whole groups (verlet_force without ENTRIES, verlet_force_pairs), in
// the warp's rounds (warp_rounds): lane t of the row's TPP takes groups t, t + TPP, ..., G rounds
// at a time through a pointer (no 64-bit index product per group), each group loaded a step ahead
// so that its latency hides behind the pairs of the groups before; then the masked rounds (below).
// A group past the row's end is not loaded (0: the row itself); the entries past the row's end
// (there, and the partial last group's padding) are masked. rows: the storage, `stride` rows per
// group; row: this row's index in it; m: its near entries. pair(q, valid) adds one candidate.
// Each lane takes its groups in order, as a loop per lane would: the same sums.
template <int TPP, int G, class Near, class Pair>
__device__ __forceinline__ void near_groups(const int4* __restrict__ rows, int stride, int row, int lane, int m,
                                            const WarpRounds& wr, const Near& near, Pair& pair) {
  static_assert(G == 1 || G == 2, "G: one or two groups in flight");
  const long long step = static_cast<long long>(TPP) * stride;
  const int4 none = make_int4(0, 0, 0, 0);
  const int4* __restrict__ p = rows + static_cast<long long>(lane) * stride + row;  // round 0's group
  auto has = [&](int k) { return 8 * (k * TPP + lane) < m; };                      // round k holds a group of the row
  int4 e[G];
#pragma unroll
  for (int u = 0; u < G; ++u) e[u] = has(u) ? __ldg(p + u * step) : none;
  int k = 0;
#pragma unroll 1
  for (; k + G <= wr.whole; k += G) {
    decltype(near[0]) q[8 * G];
#pragma unroll
    for (int v = 0; v < 8 * G; ++v) q[v] = near[near_of(e[v / 8], v % 8)];
    p += G * step;
#pragma unroll
    for (int u = 0; u < G; ++u) e[u] = has(k + G + u) ? __ldg(p + u * step) : none;
#pragma unroll
    for (int v = 0; v < 8 * G; ++v) pair(q[v], true);
  }
  if constexpr (G == 1) {
    // the masked rounds, one at a time, each loaded a round ahead (a warp with a short row, one of
    // the boundary's with many far entries, runs several: their loads must not wait each for the
    // one before), no entry past the row's end gathered. Measured (H100, LJ, all outputs, tpp 1,
    // reports/2026-11-26-h100, twenty-fifth session): without the load ahead 256,000 took 7.5-8%
    // longer than the per-lane loops of before; with it, 1.0-1.3%.
#pragma unroll 1
    for (; k < wr.rounds; ++k) {
      const int e0 = 8 * (k * TPP + lane);  // the group's first entry in the row
      decltype(near[0]) q[8];
#pragma unroll
      for (int v = 0; v < 8; ++v) q[v] = e0 + v < m ? near[near_of(e[0], v)] : decltype(near[0]){};
      p += step;
      e[0] = has(k + 1) ? __ldg(p) : none;
#pragma unroll
      for (int v = 0; v < 8; ++v) pair(q[v], e0 + v < m);
    }
  } else {
    // rounds k and k + 1, loaded in e[] (whole or not), then the rest one at a time. A load ahead
    // here (a queue of two) cost the forces flavour's unmasked loop register moves under its cap:
    // LJ 1M, packed, forces 4.8% faster than before without it, 1.1-2.4% with it (same session).
#pragma unroll
    for (int u = 0; u < G; ++u) {
      if (k + u < wr.rounds) {
        const int e0 = 8 * ((k + u) * TPP + lane);  // the group's first entry in the row
        decltype(near[0]) q[8];
#pragma unroll
        for (int v = 0; v < 8; ++v) q[v] = near[near_of(e[u], v)];
#pragma unroll
        for (int v = 0; v < 8; ++v) pair(q[v], e0 + v < m);
      }
    }
#pragma unroll 1
    for (k += G; k < wr.rounds; ++k) {
      const int e0 = 8 * (k * TPP + lane);
      const int4 el = e0 < m ? __ldg(rows + static_cast<long long>(k * TPP + lane) * stride + row) : none;
      decltype(near[0]) q[8];
#pragma unroll
      for (int v = 0; v < 8; ++v) q[v] = near[near_of(el, v)];
#pragma unroll
      for (int v = 0; v < 8; ++v) pair(q[v], e0 + v < m);
    }
  }
}

// ---- The MD loop fused into the list's order (strategies/verlet.py, VerletSteps) --------------
// The loop's state kept in slot order (the binning's order of the last build): x and v (3 Acc a
// particle, centred coordinates as strategies/integrate.py keeps them) and the forces the next
// opening kick reads. A step is then the guarded rebuild and one force kernel that ends with the
// row's particle's update (MD = 2: this step's closing half kick, the next step's opening one,
// the drift, and the next step's positions and trigger; MD = 1: the closing half kick only, the
// force kept for the next opening kick): no pass over the particles in input order, no per-step
// gather. The operations are those of integrate.cu (integrate.cuh) and verlet_refresh, in the
// same order: the fused loop's bits are the plain loop's.
template <typename Real, typename Acc>
struct MdStep {
  Acc* x;                 // slot order, 3 a particle
  Acc* v;
  Acc* f;                 // the forces of the last closing kick (MD = 1 writes, verlet_open reads)
  const Vec4<Real>* ref;  // the build's positions
  Vec4<Real>* next;       // the positions the next force phase reads (verlet_refresh's cur)
  int* flag;              // the next step's trigger; nullptr: never rebuilt (rebuild=never)
  int* bad;               // set where a coordinate is not finite
  uint2* qnext;           // layout=packed: next's packed copy (PackedPositions); nullptr otherwise
  const Vec4<Real>* pref; // launch parameter prune: the positions of the last prune; nullptr: no inner list
  Acc half_dt_m, dt, lx, ly, lz;
  Real half_skin2;
  Real half_inner2;       // prune: (inner / 2)^2
  float inv_h;            // layout=packed: the grid's 1 / h
};

// Drift slot s after KICKS half kicks with force (fx, fy, fz), and write the next step's position
// (the image nearest ref[s], as verlet_refresh). Returns (bit 0) whether it moved beyond skin/2
// since the build, (bit 1) whether a coordinate is not finite and (bit 2, with an inner list)
// whether it moved beyond inner/2 since the last prune: md_flags raises the flags, once per warp.
template <int KICKS, typename Real, typename Acc>
__device__ __forceinline__ int md_drift(const MdStep<Real, Acc>& md, const Box<Real>& box, int s, Acc fx, Acc fy,
                                        Acc fz) {
  const long long k = 3LL * s;
  Acc x0 = md.x[k], x1 = md.x[k + 1], x2 = md.x[k + 2];
  Acc v0 = md.v[k], v1 = md.v[k + 1], v2 = md.v[k + 2];
  bool finite = kicks_drift_one<KICKS>(x0, v0, fx, md.half_dt_m, md.dt, md.lx);
  finite = kicks_drift_one<KICKS>(x1, v1, fy, md.half_dt_m, md.dt, md.ly) && finite;
  finite = kicks_drift_one<KICKS>(x2, v2, fz, md.half_dt_m, md.dt, md.lz) && finite;
  md.x[k] = x0;
  md.x[k + 1] = x1;
  md.x[k + 2] = x2;
  md.v[k] = v0;
  md.v[k + 1] = v1;
  md.v[k + 2] = v2;
  const Vec4<Real> r = md.ref[s];
  const Vec4<Real> p{static_cast<Real>(x0), static_cast<Real>(x1), static_cast<Real>(x2), r.w};
  Vec4<Real> c;
  const bool moved = refreshed(p, r, box, md.half_skin2, md.next + s, md.qnext != nullptr ? md.qnext + s : nullptr,
                               md.inv_h, &c);
  const bool pmoved = md.pref != nullptr && pruned_moved(c, md.pref[s], md.half_inner2);
  return (moved ? 1 : 0) | (finite ? 0 : 2) | (pmoved ? 4 : 0);
}

// The trigger and the blow-up flag from md_drift's bits, an atomic per warp (where every particle
// moved, one per thread took 0.56 ms at 1M on the H100). All 32 lanes must call it.
template <typename Real, typename Acc>
__device__ __forceinline__ void md_flags(const MdStep<Real, Acc>& md, int bits) {
  const unsigned int bad = __ballot_sync(0xffffffffu, bits & 2);
  if (md.flag != nullptr && md.pref != nullptr) {  // warp-uniform
    raise_flags(md.flag, bits & 1, bits & 4);
  } else {
    const unsigned int moved = __ballot_sync(0xffffffffu, bits & 1);
    if ((threadIdx.x & 31) == 0 && moved != 0u && md.flag != nullptr) atomicExch(md.flag, 1);
  }
  if ((threadIdx.x & 31) == 0 && bad != 0u) atomicOr(md.bad, 1);
}

// The end of a fused step for row s's particle (MD 1 or 2, above); md_drift's bits (0 for MD 1).
template <int MD, typename Real, typename Acc>
__device__ __forceinline__ int md_update(const MdStep<Real, Acc>& md, const Box<Real>& box, int s, Acc fx, Acc fy,
                                         Acc fz) {
  if constexpr (MD == 2) {
    return md_drift<2>(md, box, s, fx, fy, fz);
  } else {
    const long long k = 3LL * s;
    md.v[k] = md.v[k] + md.half_dt_m * fx;
    md.v[k + 1] = md.v[k + 1] + md.half_dt_m * fy;
    md.v[k + 2] = md.v[k + 2] + md.half_dt_m * fz;
    md.f[k] = fx;
    md.f[k + 1] = fy;
    md.f[k + 2] = fz;
    return 0;
  }
}

// The opening half kick and drift of a run of fused steps, from the forces the last closing kick
// kept (integrate.cu's kick_drift in slot order), with the next positions and trigger.
template <typename Real, typename Acc>
__global__ void verlet_open(const MdStep<Real, Acc> md, const Box<Real> box, const int n) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  int bits = 0;
  if (s < n) {
    const long long k = 3LL * s;
    bits = md_drift<1>(md, box, s, md.f[k], md.f[k + 1], md.f[k + 2]);
  }
  md_flags(md, bits);  // every lane: no return above
}

// The state between slot order and input order (order: slot -> particle): verlet_unsort writes x
// and v (and the positions, Real(x) as kick_drift writes them) in input order, where the loop reads
// the state (kinetic energy, frames). A rebuild takes the state to the new slot order through
// verlet_stage (before the binning: the positions the binning reads, in input order; the state
// copied aside in the old slot order, xt and vt; inv, the old order's inverse) and verlet_resort
// (after it: xs[s'] = xt[inv[order[s']]]), the same values the plain loop's binning and sort give,
// with one scattered store of 16 bytes and one of 4 a particle where going through input order took
// nine of 4 (H200, LJ 1M: verlet_unsort 66 us, the old sort 18). The two are guarded by *guard as
// the rebuild is; grid-stride: a skipped launch costs few blocks. The three copies stay written out,
// loads first: one helper taking a coordinate at a time (load, store x, store v) cost 14 us a rebuild
// (thirtieth session, s30-call8: harness md at LJ 1M 0.2167-0.2171 against 0.2150-0.2154 ms a step).
template <typename Real, typename Acc>
__global__ void verlet_unsort(const int* __restrict__ order, const Acc* __restrict__ xs, const Acc* __restrict__ vs,
                              const int n, Acc* __restrict__ x, Acc* __restrict__ v, Vec4<Real>* __restrict__ pos) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s, i = 3LL * order[s];
    const Acc a = xs[k], b = xs[k + 1], c = xs[k + 2];
    x[i] = a;
    x[i + 1] = b;
    x[i + 2] = c;
    v[i] = vs[k];
    v[i + 1] = vs[k + 1];
    v[i + 2] = vs[k + 2];
    Vec4<Real>& p = pos[order[s]];
    p.x = static_cast<Real>(a);
    p.y = static_cast<Real>(b);
    p.z = static_cast<Real>(c);
  }
}

// Launch parameter adapt: the half-skin of a particle's next rows (verlet_build ADAPT) from its velocity,
// hmin + kdt |v|, at most hcap, in Real (a heuristic: any h >= 0 keeps the list exact). One expression for
// the fused steps (verlet_stage) and the plain ones (verlet_half_skins): the same h, so the same rows.
template <typename Real, typename Acc>
__device__ __forceinline__ Real adapt_half_skin(Acc u, Acc v, Acc w, Real kdt, Real hmin, Real hcap) {
  const Real ur = static_cast<Real>(u), vr = static_cast<Real>(v), wr = static_cast<Real>(w);
  return min(hcap, hmin + kdt * sqrt(ur * ur + vr * vr + wr * wr));
}

// The plain MD steps' counterpart of verlet_stage's half-skins (guarded as the binning that follows): the
// w of each particle's position (input order) from its velocity (v: input order, 3 a particle).
template <typename Real, typename Acc>
__global__ void verlet_half_skins(const Acc* __restrict__ v, const int n, Vec4<Real>* __restrict__ pos,
                                  const int* __restrict__ guard, const Real kdt, const Real hmin, const Real hcap) {
  if (guard != nullptr && *guard == 0) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const long long k = 3LL * i;
    pos[i].w = adapt_half_skin(v[k], v[k + 1], v[k + 2], kdt, hmin, hcap);
  }
}

// ref: the last build's positions in slot order (their w is the particle's).
// kdt >= 0 (launch parameter adapt): w, the half-skin of the particle's next rows (adapt_half_skin);
// kdt < 0: ref's w as it was.
template <typename Real, typename Acc>
__global__ void verlet_stage(const int* __restrict__ order, const Acc* __restrict__ xs, const Acc* __restrict__ vs,
                             const Vec4<Real>* __restrict__ ref, const int n, Acc* __restrict__ xt,
                             Acc* __restrict__ vt, Vec4<Real>* __restrict__ pos, int* __restrict__ inv,
                             const int* __restrict__ guard, const Real kdt, const Real hmin, const Real hcap) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s;
    const int i = order[s];
    const Acc a = xs[k], b = xs[k + 1], c = xs[k + 2];
    const Acc u = vs[k], v = vs[k + 1], w = vs[k + 2];
    xt[k] = a;
    xt[k + 1] = b;
    xt[k + 2] = c;
    vt[k] = u;
    vt[k + 1] = v;
    vt[k + 2] = w;
    const Real h = kdt < Real(0) ? ref[s].w : adapt_half_skin(u, v, w, kdt, hmin, hcap);
    pos[i] = Vec4<Real>{static_cast<Real>(a), static_cast<Real>(b), static_cast<Real>(c), h};
    inv[i] = s;
  }
}

template <typename Acc>
__global__ void verlet_resort(const int* __restrict__ order, const int* __restrict__ inv, const Acc* __restrict__ xt,
                              const Acc* __restrict__ vt, const int n, Acc* __restrict__ xs, Acc* __restrict__ vs,
                              const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s, t = 3LL * inv[order[s]];
    xs[k] = xt[t];
    xs[k + 1] = xt[t + 1];
    xs[k + 2] = xt[t + 2];
    vs[k] = vt[t];
    vs[k + 1] = vt[t + 1];
    vs[k + 2] = vt[t + 2];
  }
}

// Block 0 of a force kernel: the upkeep of this step (if any) is complete, its triggers cleared
// and counted. flag[0] / rebuilds[0]: the rebuild; flag[1] / rebuilds[1]: the inner list's prune
// (raised only where the plan keeps one, strategies/verlet.py: every plan's flag holds both).
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

// ---- The inner list (launch parameter prune, strategies/verlet.py) -------------------------------
// GROMACS's dynamic pruning (Pall et al. 2020) on the Verlet rows: the outer list (r_list =
// cutoff + skin, rebuilt where a particle moved beyond skin/2 since the build) is pruned to the
// entries within r_in = cutoff + inner at the positions of now, into rows of the same storage that
// the force kernel reads, and pruned again where a particle moved beyond inner/2 since (flag[1];
// every rebuild raises it too). A pair inside the cutoff now was within r_in at the prune (each
// end within inner/2 of where it was) and within r_list at the build, so the inner rows hold it.
// The inner rows keep the outer rows' order, so at one thread per row a force kernel adds the
// same pairs in the same order from either (the pairs dropped are beyond the cutoff: they add
// zeros), and the sums are the same bits.
// One thread per row. r2 as the force kernel takes it (the packed coordinates' for near entries
// with layout=packed, else cur's; far entries the minimum image), so that on the prune's own step
// the inner rows hold every pair the force kernel would count from the outer ones. pref[s] = cur[s].
// Guarded by *guard (flag + 1; nullptr: always).
template <typename Real, bool FMA, bool PBC, bool PACKED>
__global__ void __launch_bounds__(128)
verlet_prune(const Vec4<Real>* __restrict__ cur, const int* __restrict__ nbr, const int2* __restrict__ len, const int n,
             const int cap, const Box<Real> box, const Real rin2, int* __restrict__ inner, int2* __restrict__ ilen,
             Vec4<Real>* __restrict__ pref, const int* __restrict__ guard, const PackedPositions pk) {
  static_assert(!PACKED || sizeof(Real) == 4, "packed positions: float coordinates only");
  if (guard != nullptr && *guard == 0) return;
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const Vec4<Real> pi = cur[s];
  pref[s] = pi;
  const int2 m = __ldg(len + s);
  const int4* __restrict__ rows = reinterpret_cast<const int4*>(nbr);
  RowWriter row(inner, n, s, cap);
  uint2 qi = make_uint2(0u, 0u);
  if constexpr (PACKED) qi = pack_position(pi, pk.inv_h);
  // the near groups, two in flight (16 gathers), each pair of groups loaded a step ahead
  const int groups = (m.x + 7) >> 3;
  const int4 none = make_int4(0, 0, 0, 0);
  int4 e[2] = {groups > 0 ? __ldg(rows + s) : none, groups > 1 ? __ldg(rows + static_cast<long long>(n) + s) : none};
#pragma unroll 1
  for (int g = 0; g < groups; g += 2) {
    const int4 eg[2] = {e[0], e[1]};
    e[0] = g + 2 < groups ? __ldg(rows + static_cast<long long>(g + 2) * n + s) : none;
    e[1] = g + 3 < groups ? __ldg(rows + static_cast<long long>(g + 3) * n + s) : none;
    unsigned int keep = 0u;  // bit 8 u + v: entry v of group g + u
    if constexpr (PACKED) {
      const PackedRow pr(qi, pk);
      const PackedNear near(pk.q, s);
      uint2 qj[16];
#pragma unroll
      for (int v = 0; v < 16; ++v) qj[v] = near[near_of(eg[v / 8], v % 8)];
#pragma unroll
      for (int v = 0; v < 16; ++v) {
        Real dx, dy, dz;
        keep |= static_cast<unsigned int>(packed_separation<FMA>(pr, qj[v], dx, dy, dz) < rin2) << v;
      }
    } else {
      Vec4<Real> pj[16];
#pragma unroll
      for (int v = 0; v < 16; ++v) pj[v] = cur[s + near_of(eg[v / 8], v % 8)];
#pragma unroll
      for (int v = 0; v < 16; ++v) {
        Real dx, dy, dz;
        keep |= static_cast<unsigned int>(entry_separation<false, FMA>(pi, pj[v], box, dx, dy, dz) < rin2) << v;
      }
    }
    const int left = m.x - 8 * g;
    if (left < 16) keep &= (1u << left) - 1u;  // the partial last group's padding, a group past the row's end
#pragma unroll
    for (int v = 0; v < 16; ++v) {
      if (keep & (1u << v)) row.push(near_of(eg[v / 8], v % 8));
    }
  }
  // the far entries, from the back of the row in their order, four a load as the force kernel reads them
  const int top = 4 * row_groups(cap), first = top - m.y;
#pragma unroll 1
  for (int gi = (top >> 2) - 1; gi >= (first >> 2); --gi) {
    const int4 ef = __ldg(rows + static_cast<long long>(gi) * n + s);
    const int q[4] = {ef.w, ef.z, ef.y, ef.x};  // entries 4 gi + 3 down to 4 gi
    const Vec4<Real> pj[4] = {cur[q[0]], cur[q[1]], cur[q[2]], cur[q[3]]};
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      Real dx, dy, dz;
      if (4 * gi + 3 - v >= first && entry_separation<PBC, FMA>(pi, pj[v], box, dx, dy, dz) < rin2) row.far(q[v]);
    }
  }
  ilen[s] = row.finish();
}

// LAYOUT (layout.cuh): how the positions (cur: sorted order) lie: kAoS4 the plan's Vec4 array;
// kAoS3, kSoA a copy made at the start of the force phase, `stride` elements per array in kSoA.
// BATCH: near entries a thread gathers (whole groups of 8) before it computes their pairs
// (memory-level parallelism). MINB: blocks per SM the compiler must leave room for
// (__launch_bounds__'s second argument), a register cap. PBC: some axis is periodic (else far
// entries are only far in slot, and take no minimum image).
//
// ENTRIES (TPP > 1): how a row's TPP lanes share its near entries. false: by groups (lane t
// takes whole groups t, t + TPP, ...); true: by entries (lane t takes entries t, t + TPP, ... of
// the row, each as a 16-bit load of its own: near_entries), so that the TPP lanes of a row gather
// neighbouring entries of the row, mostly consecutive slots, in the same instruction. Measured
// (H100, strategies/verlet.py, SPLIT_CHOICES): 12% faster at tpp 4 (32,000 particles); at 1M with
// tpp 4 the gathers take fewer sectors, but the 16-bit index loads and 37% more instructions
// outweigh it, and tpp 1 stays faster there.
//
// Each thread's pairs are added in a fixed order (its near groups, the row's last near group,
// its far groups): the same sums, bit for bit, at every BATCH and MINB. With energy (and sums not
// in fixed point) the near entries' virial is 2 r_i (x) F_i of the row's near force, added once per
// lane before its far entries (Accumulator::row_virial): 6 products per lane instead of 6 per
// entry; the far entries, whose d takes an image, add theirs pair by pair. The pair body runs for
// every entry and keeps the pair where it lies inside the cutoff (Accumulator::add_where): about
// 3 of 4 entries do, so a warp would run the body anyway, and a branch would only add to it.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, bool PBC, int TPP, int BLOCK,
          int LAYOUT, int MINB, int BATCH, bool ENTRIES = false, int MD = 0>
__global__ void __launch_bounds__(BLOCK, MINB)
verlet_force(const Real* __restrict__ pos_data, const int stride, const int* __restrict__ order,
             const int* __restrict__ nbr, const int2* __restrict__ len, const int n, const int cap,
             const Box<Real> box, const Real* __restrict__ params, Acc* __restrict__ forces,
             Acc* __restrict__ partial, unsigned long long* __restrict__ count, int* __restrict__ flag,
             unsigned int* __restrict__ rebuilds, const MdStep<Real, Acc> md, const PackedPositions pk) {
  static_assert(TPP >= 1 && TPP <= 32 && (TPP & (TPP - 1)) == 0, "TPP: a power of two up to a warp");
  static_assert(LAYOUT != kPacked || sizeof(Real) == 4, "packed positions: float coordinates only");
  constexpr bool PACKED = LAYOUT == kPacked;
  constexpr int VLAYOUT = PACKED ? kAoS4 : LAYOUT;  // the Vec4 positions' (rows, far entries)
  static_assert(MD >= 0 && MD <= 2, "MD: 0 (forces), 1 (closing kick), 2 (closing and opening kicks, drift)");
  static_assert(BATCH == 8 || BATCH == 16, "BATCH: 8 or 16 near entries (one or two groups)");
  static_assert(!ENTRIES || TPP > 1, "ENTRIES: a row shared by several lanes");
  constexpr int G = BATCH / 8;  // near groups in flight
  constexpr bool FMA = Contracted<Acc>::value;
  // the near entries' virial from the forces (their d is the raw difference, and near is
  // symmetric: |q - s| and the image are the same from either row); far entries add their own.
  // Not in fixed point (the one type built without contraction), whose sums must not depend on
  // how terms are grouped: it keeps the pair-by-pair virial.
  constexpr bool ROW_VIRIAL = ENERGY && FMA;
  constexpr bool PRED = PACKED || ENERGY;  // the sums' adds predicated (Accumulator::add_where says where it pays)
  consume_flags(flag, rebuilds);
  const Positions<Real, VLAYOUT> pos{pos_data, stride};
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc;
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  const int s = t / TPP, lane = t % TPP;
  const bool row = s < n;
  const int2 m = row ? __ldg(len + s) : make_int2(0, 0);  // (near, far) entries
  WarpRounds wr{0, 0};
  if constexpr (!ENTRIES) wr = warp_rounds<TPP>(m.x, row);
  if (row) {
    const Vec4<Real> pi = pos[s];
    const int4* __restrict__ rows = reinterpret_cast<const int4*>(nbr);
    // the near entries (raw differences), by entries or by whole groups
    auto near_loop = [&](const auto& near, auto& pair) {
      if constexpr (ENTRIES) {
        near_entries<TPP, BATCH>(nbr, n, s, lane, m.x, near, pair);
      } else {
        near_groups<TPP, G>(rows, n, s, lane, m.x, wr, near, pair);
      }
    };
    if constexpr (PACKED) {
      const uint2 qi = pack_position(pi, pk.inv_h);
      const PackedRow pr(qi, pk);
      auto pair = [&](const uint2& qj, bool valid) {  // valid: an entry of the row (not padding, not past its end)
        Real dx, dy, dz;
        const Real r2 = packed_separation<FMA>(pr, qj, dx, dy, dz);
        acc.template add_where<!ROW_VIRIAL, PRED>(f, dx, dy, dz, r2, f.inside(r2) && valid);
      };
      const unsigned int p0 = acc.pairs;
      near_loop(PackedNear(pk.q, s), pair);
      acc.template take_shift<!ROW_VIRIAL, PRED>(f, p0);
      // the near separations are differences of the grid's coordinates (unwrapped): their row virial's
      if constexpr (ROW_VIRIAL) {
        acc.row_virial(static_cast<Real>(grid_coordinate(pi.x, pk.inv_h)) * pk.h,
                       static_cast<Real>(grid_coordinate(pi.y, pk.inv_h)) * pk.h,
                       static_cast<Real>(grid_coordinate(pi.z, pk.inv_h)) * pk.h);
      }
    } else {
      auto pair = [&](const Vec4<Real>& pj, bool valid) {  // valid: an entry of the row (not padding, not past its end)
        Real dx, dy, dz;
        const Real r2 = entry_separation<false, FMA>(pi, pj, box, dx, dy, dz);
        acc.template add_where<!ROW_VIRIAL, PRED>(f, dx, dy, dz, r2, f.inside(r2) && valid);
      };
      const unsigned int p0 = acc.pairs;
      near_loop(pos.from(s), pair);  // near entries are slots relative to s
      acc.template take_shift<!ROW_VIRIAL, PRED>(f, p0);
      if constexpr (ROW_VIRIAL) acc.row_virial(pi.x, pi.y, pi.z);  // before the far entries add their forces
    }
    // the far groups, from the back of the row: the minimum image on a periodic box (an entry
    // that is far only in slot takes it too, and keeps its separation: |d| < L / 2)
    const int top = 4 * row_groups(cap), first = top - m.y;  // entries first .. top - 1
#pragma unroll 1
    for (int gi = (first >> 2) + lane; gi < (top >> 2); gi += TPP) {
      const int4 ef = __ldg(rows + static_cast<long long>(gi) * n + s);
      const Vec4<Real> q[4] = {pos[ef.x], pos[ef.y], pos[ef.z], pos[ef.w]};
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        Real dx, dy, dz;
        const Real r2 = entry_separation<PBC, FMA>(pi, q[v], box, dx, dy, dz);
        acc.template add_where<true, PRED>(f, dx, dy, dz, r2, f.inside(r2) && 4 * gi + v >= first);  // the padding is not a pair
      }
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
  int bits = 0;  // md_drift's: the next step's trigger and the blow-up flag (MD 2)
  if (row && lane == 0) {
    if constexpr (MD == 0) {
      const int i = order[s];
      forces[3 * i] = acc.fx;
      forces[3 * i + 1] = acc.fy;
      forces[3 * i + 2] = acc.fz;
    } else {
      bits = md_update<MD>(md, box, s, acc.fx, acc.fy, acc.fz);
    }
  }
  if constexpr (MD == 2) md_flags(md, bits);  // every lane of every warp reaches it (no early return)
  accumulator_sums<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// ---- Rows of two particles (verlet_thread_pairrows, strategies/verlet.py) ----------------------
// Row r holds two consecutive slots a, a + 1 of one cell (its particles paired in the binning's
// order; a cell with an odd count ends with a row of one), and the union of both particles' lists:
// one gather of a partner's position serves two pairs (the i-cluster of GROMACS's CPU kernels,
// two particles wide, with single j particles). Rows per cell: (count + 1) / 2, numbered cell by
// cell (rfirst: their exclusive scan, rfirst[ncells] the rows of this build); rows_max =
// (n + ncells) / 2 bounds them at every build, and rows from rfirst[ncells] on are empty.
// row_slot[r] = 2 a + (whether a + 1 is in the row); row_of[s] = the row of slot s.
//
// A near entry holds the partner's slot q as q - a in 16 bits. It is near (raw difference) where
// no image lies between (the run's shift) and the rows are within kNearRows of each other: a
// relation that is the same from both rows (|row_of[q] - r|), which the near entries' virial from
// the row's forces needs (Accumulator::row_virial), and that bounds |q - a| by 2 kNearRows + 1.
constexpr int kNearRows = 16383;

__global__ void pair_rows_count(const int* __restrict__ start, const int ncells, int* __restrict__ pcounts,
                                const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells; c += gridDim.x * blockDim.x) {
    pcounts[c] = (start[c + 1] - start[c] + 1) >> 1;
  }
}

__global__ void pair_rows_place(const int* __restrict__ cell_sorted, const int* __restrict__ start,
                                const int* __restrict__ rfirst, const int n, int* __restrict__ row_slot,
                                int* __restrict__ row_of, const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const int c = cell_sorted[s];
    const int k = s - start[c];
    const int r = rfirst[c] + (k >> 1);
    row_of[s] = r;
    if ((k & 1) == 0) row_slot[r] = 2 * s + (s + 1 < start[c + 1] ? 1 : 0);
  }
}

// Whether partner q of the row r (first slot a) is near (see above).
__device__ __forceinline__ bool near_rows(int q, int a, int r, const int* __restrict__ row_of) {
  const int d = q - a;
  if (d >= -kNearRows && d <= kNearRows) return true;  // rows hold one slot or more
  if (d < -2 * kNearRows - 1 || d > 2 * kNearRows + 1) return false;  // rows hold two slots or fewer
  const int dr = __ldg(row_of + q) - r;
  return dr >= -kNearRows && dr <= kNearRows;
}

// The strip build (verlet_build) for rows of two: a thread per row walks the 9 columns around the
// row's cell once, each column's z-window the hull of its two particles' windows, and keeps a
// candidate within r_list of either particle (the row's own two excluded: the force kernel takes
// their pair itself). MINIMAGE (a periodic axis of fewer than 3 cells): no windows, the per-pair
// minimum image, and every hit a far entry (the near relation then holds no pair, the same from
// both rows). Rows in strip order: deterministic.
template <typename Real, bool MINIMAGE>
__global__ void verlet_build_pairs(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ cell_sorted,
                                   const int* __restrict__ start, const int* __restrict__ rfirst,
                                   const int* __restrict__ row_slot, const int* __restrict__ row_of, const int n,
                                   const int rows_max, const Grid g, const Box<Real> box, const Real rlist2,
                                   const Real margin, const int cap, int* __restrict__ nbr, int2* __restrict__ len,
                                   Vec4<Real>* __restrict__ ref, Vec4<Real>* __restrict__ cur,
                                   int* __restrict__ overflow, const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows_max) return;
  if (r >= rfirst[g.nx * g.ny * g.nz]) {  // no row at this build
    len[r] = make_int2(0, 0);
    return;
  }
  const int word = row_slot[r], a = word >> 1;
  const bool two = (word & 1) != 0;
  const int skip = two ? 2 : 1;  // the row's own slots a .. a + skip - 1
  const Vec4<Real> p0 = sorted[a];
  const Vec4<Real> p1 = two ? sorted[a + 1] : p0;
  const int c = cell_sorted[a];
  const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
  const Real side_x = box.lx / Real(g.nx), side_y = box.ly / Real(g.ny);
  const Real lo_x0 = p0.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x0 = side_x - lo_x0;
  const Real lo_y0 = p0.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y0 = side_y - lo_y0;
  const Real lo_x1 = p1.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x1 = side_x - lo_x1;
  const Real lo_y1 = p1.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y1 = side_y - lo_y1;
  int count = 0;
  RowWriter row(nbr, rows_max, r, cap, n);
#pragma unroll 1
  for (int col = 0; col < 9; ++col) {
    int ox, oy, x, y;
    Real sx, sy;
    if (!column_neighbour<MINIMAGE>(cx, cy, col, g, box, ox, oy, x, y, sx, sy)) continue;
    const Real w0 = z_reach(lateral_gap(ox, lo_x0, hi_x0, side_x), lateral_gap(oy, lo_y0, hi_y0, side_y), rlist2, margin);
    const Real w1 = z_reach(lateral_gap(ox, lo_x1, hi_x1, side_x), lateral_gap(oy, lo_y1, hi_y1, side_y), rlist2, margin);
    if (!MINIMAGE && w0 < Real(0) && w1 < Real(0)) continue;
    int b[2], e[2];
    Real sz[2];
    const int runs = z_runs<1, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
    auto walk = [&](int rb, int re, Real rsz) {
      const Vec4<Real> q0 = shifted(p0, sx, sy, rsz), q1 = shifted(p1, sx, sy, rsz);
      const bool run_img = sx != Real(0) || sy != Real(0) || rsz != Real(0);
      // the hull of the two windows (a particle out of the column's reach adds none)
      const Real zlo = w0 < Real(0) ? q1.z - w1 : w1 < Real(0) ? q0.z - w0 : fmin(q0.z - w0, q1.z - w1);
      const Real zhi = w0 < Real(0) ? q1.z + w1 : w1 < Real(0) ? q0.z + w0 : fmax(q0.z + w0, q1.z + w1);
      int first = rb, last = re;
      if constexpr (!MINIMAGE) bisect_z_window(sorted, rb, re, zlo, zhi, first, last);
#pragma unroll 1
      for (int part = 0; part < 2; ++part) {  // the run split around the row's own slots
        const int lo = part ? max(first, a + skip) : first;
        const int hi = part ? last : min(last, a);
#pragma unroll 1
        for (int k0 = lo; k0 < hi; k0 += 32) {
          const int end = min(hi, k0 + 32);
          unsigned int bits = 0u;  // as in verlet_build: shifted in from the bottom, then aligned to the top
#pragma unroll 4
          for (int q = k0; q < end; ++q) {
            const Vec4<Real> pj = sorted[q];
            Real dx, dy, dz;
            bits = (bits << 1) | below(separation<MINIMAGE>(q0, pj, box, dx, dy, dz), rlist2) |
                   below(separation<MINIMAGE>(q1, pj, box, dx, dy, dz), rlist2);
          }
          bits <<= 32 - (end - k0);  // candidate q at bit 31 - (q - k0)
          const int hits = __popc(bits);
          if (!MINIMAGE && !run_img && count + hits <= cap && k0 - a >= -kNearRows && end - 1 - a <= kNearRows) {
            row.push_round_msb(bits, k0 - a);  // every hit near (no image, rows within kNearRows), and room
            bits = 0u;
            count += hits;
          }
          bits = __brev(bits);  // bit t: candidate k0 + t
          while (bits) {
            const int t = __ffs(bits) - 1;
            bits &= bits - 1u;
            const int q = k0 + t;
            if (count < cap) {
              if (MINIMAGE || run_img || !near_rows(q, a, r, row_of)) {
                row.far(q);
              } else {
                row.push(q - a);
              }
            }
            ++count;
          }
        }
      }
    };
    walk(b[0], e[0], sz[0]);
    if (runs > 1) walk(b[1], e[1], sz[1]);
  }
  len[r] = row.finish();
  if (count > cap) atomicMax(overflow, count);
  ref[a] = p0;
  cur[a] = p0;
  if (two) {
    ref[a + 1] = p1;
    cur[a + 1] = p1;
  }
}

// The force kernel for rows of two (verlet_force's loop, one thread per row): each gathered
// partner's position gives two pairs, one per particle of the row, each kept where it lies inside
// the cutoff; the row's own pair once, added to both. A row of one takes its own particle for the
// second, whose pairs are all selected away (`two`; a phantom far away would not do: the minimum
// image of a far entry can bring it back within the cutoff). Template
// parameters as verlet_force's (TPP 1). Each thread's sums in a fixed order: deterministic.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, bool PBC, int BLOCK,
          int LAYOUT, int MINB, int BATCH>
__global__ void __launch_bounds__(BLOCK, MINB)
verlet_force_pairs(const Real* __restrict__ pos_data, const int stride, const int* __restrict__ order,
                   const int* __restrict__ row_slot, const int* __restrict__ rows_now, const int* __restrict__ nbr,
                   const int2* __restrict__ len, const int n, const int rows_max, const int cap, const Box<Real> box,
                   const Real* __restrict__ params, Acc* __restrict__ forces, Acc* __restrict__ partial,
                   unsigned long long* __restrict__ count, int* __restrict__ flag, unsigned int* __restrict__ rebuilds) {
  static_assert(BATCH == 8 || BATCH == 16, "BATCH: 8 or 16 near entries (one or two groups)");
  constexpr int G = BATCH / 8;
  constexpr bool FMA = Contracted<Acc>::value;
  constexpr bool ROW_VIRIAL = ENERGY && FMA;  // as in verlet_force: near is the same from both rows
  consume_flags(flag, rebuilds);
  const Positions<Real, LAYOUT> pos{pos_data, stride};
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc0, acc1;
  const int r = blockIdx.x * BLOCK + threadIdx.x;
  const bool row = r < rows_max && r < __ldg(rows_now);
  int a = 0;
  bool two = false;
  const int2 m = row ? __ldg(len + r) : make_int2(0, 0);
  const WarpRounds wr = warp_rounds<1>(m.x, row);
  if (row) {
    const int word = __ldg(row_slot + r);
    a = word >> 1;
    two = (word & 1) != 0;
    const Vec4<Real> pi0 = pos[a], pi1 = pos[two ? a + 1 : a];
    const int4* __restrict__ rows = reinterpret_cast<const int4*>(nbr);
    const Positions<Real, LAYOUT> near = pos.from(a);
    auto pair = [&](const Vec4<Real>& pj, bool valid) {
      Real dx, dy, dz;
      Real r2 = entry_separation<false, FMA>(pi0, pj, box, dx, dy, dz);
      acc0.template add_where<!ROW_VIRIAL>(f, dx, dy, dz, r2, f.inside(r2) && valid);
      r2 = entry_separation<false, FMA>(pi1, pj, box, dx, dy, dz);
      acc1.template add_where<!ROW_VIRIAL>(f, dx, dy, dz, r2, f.inside(r2) && valid && two);
    };
    if (two) {  // the row's own pair, from both sides
      Real dx, dy, dz;
      const Real r2 = entry_separation<false, FMA>(pi0, pi1, box, dx, dy, dz);
      acc0.template add_where<!ROW_VIRIAL>(f, dx, dy, dz, r2, f.inside(r2));
      acc1.template add_where<!ROW_VIRIAL>(f, -dx, -dy, -dz, r2, f.inside(r2));
    }
    near_groups<1, G>(rows, rows_max, r, 0, m.x, wr, near, pair);
    if constexpr (ROW_VIRIAL) {
      acc0.row_virial(pi0.x, pi0.y, pi0.z);
      acc1.row_virial(pi1.x, pi1.y, pi1.z);  // zero force for a row of one
    }
    const int top = 4 * row_groups(cap), first = top - m.y;
#pragma unroll 1
    for (int gi = first >> 2; gi < (top >> 2); ++gi) {
      const int4 ef = __ldg(rows + static_cast<long long>(gi) * rows_max + r);
      const Vec4<Real> q[4] = {pos[ef.x], pos[ef.y], pos[ef.z], pos[ef.w]};
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const bool in_row = 4 * gi + v >= first;  // the padding is not a pair
        Real dx, dy, dz;
        Real r2 = entry_separation<PBC, FMA>(pi0, q[v], box, dx, dy, dz);
        acc0.add_where(f, dx, dy, dz, r2, f.inside(r2) && in_row);
        r2 = entry_separation<PBC, FMA>(pi1, q[v], box, dx, dy, dz);
        acc1.add_where(f, dx, dy, dz, r2, f.inside(r2) && in_row && two);
      }
    }
  }
  if (row) {
    const int i = order[a];
    forces[3 * i] = acc0.fx;
    forces[3 * i + 1] = acc0.fy;
    forces[3 * i + 2] = acc0.fz;
    if (two) {
      const int j = order[a + 1];
      forces[3 * j] = acc1.fx;
      forces[3 * j + 1] = acc1.fy;
      forces[3 * j + 2] = acc1.fz;
    }
  }
  if constexpr (ENERGY) {  // one thread's sums: its first particle's, then its second's
#pragma unroll
    for (int k = 0; k < kSums; ++k) acc0.s[k] += acc1.s[k];
    acc0.pairs += acc1.pairs;
  }
  accumulator_sums<BLOCK, ENERGY>(acc0, partial, count, blockIdx.x);
}
