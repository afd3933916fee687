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
// A row holds its plain entries from the front, in the order they were found, and the entries
// found across a periodic boundary from the back (the last slot first): len[s] = (plain, image).
// Entries lie in groups of 4 (entry k of row s at entry_at(k, s, n)): one 16-byte load per 4
// entries, and a warp's 32 rows read 512 contiguous bytes per group. Both regions are padded to
// whole groups with a phantom (slot n of the positions, far from every particle), so that the
// force loop over the plain groups takes raw differences and nothing else; only the few image
// groups take a minimum image per pair (and mask their padding). A row of capacity cap has
// row_groups(cap) groups, room for any split of cap entries.
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
//   verlet_force   TPP threads per row: force on i = order[s] from its row; forces written in
//                  input order; energy and virial per block (ENERGY). Block 0 clears *flag and
//                  counts the rebuild.
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

// The Verlet list's per-step check (slot s, particle order[s]): the trigger on the sorted ref,
// and cur[s]: the position moved by whole box lengths to the image nearest ref[s] (exactly the
// position while the particle has not crossed a periodic boundary since the build).
template <typename Real>
__global__ void verlet_refresh(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order,
                               const Vec4<Real>* __restrict__ ref, const int n, const Box<Real> box,
                               const Real half_skin2, Vec4<Real>* __restrict__ cur, int* __restrict__ flag) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  bool moved = false;
  if (s < n) {
    const Vec4<Real> p = pos[order[s]], r = ref[s];
    Real dx, dy, dz;
    moved = !(separation<true>(p, r, box, dx, dy, dz) <= half_skin2);  // NaN moves too
    cur[s] = {p.x + box.lx * Math<Real>::rint((r.x - p.x) * box.ilx),
              p.y + box.ly * Math<Real>::rint((r.y - p.y) * box.ily),
              p.z + box.lz * Math<Real>::rint((r.z - p.z) * box.ilz), p.w};
  }
  if (flag != nullptr && __any_sync(0xffffffffu, moved) && (threadIdx.x & 31) == 0) atomicExch(flag, 1);
}

// Whether the raw difference of two build positions is not their separation: a periodic
// boundary lies between them (the per-pair minimum-image builds' test; the others know it from
// the run's image shift).
template <typename Real>
__device__ __forceinline__ bool crosses(const Vec4<Real>& a, const Vec4<Real>& b, const Box<Real>& box) {
  return fabs(a.x - b.x) * box.ilx > Real(0.5) || fabs(a.y - b.y) * box.ily > Real(0.5) ||
         fabs(a.z - b.z) * box.ilz > Real(0.5);  // rint(d / L) != 0, rint's ties to even included
}

// Where entry k of row s lies: groups of 4 entries, the rows of a group consecutive.
__device__ __forceinline__ long long entry_at(int k, int s, int n) {
  return (static_cast<long long>(k >> 2) * n + s) * 4 + (k & 3);
}

// Groups of 4 entries per row for a capacity of cap entries: one more than cap needs, so that
// plain and image entries, each region padded to whole groups, fit whatever the split
// (ceil(a / 4) + ceil(b / 4) <= ceil((a + b) / 4) + 1). strategies/verlet.py, groups_of.
__device__ __forceinline__ int row_groups(int cap) { return (cap + 3) / 4 + 1; }

// One row's writer. Plain entries go through a register buffer to the front of the row, a whole
// group (one 16-byte store) at a time; image entries, few, one at a time to the back of the row
// (group `groups` - 1 down). finish() pads both regions to whole groups with `phantom` (slot n
// of the positions, far from every particle: its pairs lie beyond any cutoff) and returns (plain,
// image). The caller stores at most cap entries.
struct RowWriter {
  int* __restrict__ nbr;
  int n, s, top, phantom;  // top: 4 * groups
  int a = 0, b = 0;
  int4 buf = make_int4(0, 0, 0, 0);

  __device__ __forceinline__ RowWriter(int* __restrict__ nbr_, int n_, int s_, int cap)
      : nbr(nbr_), n(n_), s(s_), top(4 * row_groups(cap)), phantom(n_) {}

  __device__ __forceinline__ void push(int q) {  // shifts q in at the back of the buffer
    buf = make_int4(buf.y, buf.z, buf.w, q);
    if ((++a & 3) == 0) reinterpret_cast<int4*>(nbr)[static_cast<long long>((a >> 2) - 1) * n + s] = buf;
  }
  __device__ __forceinline__ void add(int q, bool img) {
    if (img) {
      nbr[entry_at(top - 1 - b++, s, n)] = q;
    } else {
      push(q);
    }
  }
  __device__ __forceinline__ int2 finish() {
    const int plain = a;
    while (a & 3) push(phantom);
    for (int k = top - b - 1; k >= ((top - b) & ~3); --k) nbr[entry_at(k, s, n)] = phantom;
    return make_int2(plain, b);
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

// One thread per row (sorted slot k), the full shell's walk (cells.cuh): 9 z-strips of the CSR
// storage with one image shift per run (per-pair minimum image only with MINIMAGE: a periodic
// axis of fewer than 3 cells), the particle itself split out of its strip. WINDOW: only the
// z-window a strip's column can reach (the strips are sorted by z). Hits are appended in strip
// order: the same rows with and without WINDOW.
// (The builds take no __launch_bounds__(128): with it ptxas aims at full occupancy and spills.)
template <typename Real, bool MINIMAGE, bool WINDOW>
__global__ void
verlet_build(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ cell_sorted,
             const int* __restrict__ start, const int n, const Grid g, const Box<Real> box, const Real rlist2,
             const Real margin, const int cap, int* __restrict__ nbr, int2* __restrict__ len,
             Vec4<Real>* __restrict__ ref, Vec4<Real>* __restrict__ cur, int* __restrict__ overflow,
             const int* __restrict__ guard) {
  static_assert(!(WINDOW && MINIMAGE), "z-windows need one image shift per strip");
  if (guard != nullptr && *guard == 0) return;
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const Vec4<Real> pi = sorted[k];
  const int c = cell_sorted[k];
  const int cz = c % g.nz, cy = (c / g.nz) % g.ny, cx = c / (g.nz * g.ny);
  const Real side_x = box.lx / Real(g.nx), side_y = box.ly / Real(g.ny);
  const Real lo_x = pi.x + Real(0.5) * box.lx - Real(cx) * side_x, hi_x = side_x - lo_x;
  const Real lo_y = pi.y + Real(0.5) * box.ly - Real(cy) * side_y, hi_y = side_y - lo_y;
  int count = 0;  // hits
  RowWriter row(nbr, n, k, cap);
#pragma unroll 1
  for (int col = 0; col < 9; ++col) {
    const int ox = col / 3 - 1, oy = col % 3 - 1;
    int x, y;
    Real sx, sy;
    if (!axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx)) continue;
    if (!axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy)) continue;
    Real w = Real(0);
    if constexpr (WINDOW) {
      w = z_reach(lateral_gap(ox, lo_x, hi_x, side_x), lateral_gap(oy, lo_y, hi_y, side_y), rlist2, margin);
      if (w < Real(0)) continue;
    }
    int b[2], e[2];
    Real sz[2];
    const int runs = z_runs<1, MINIMAGE>(start, (x * g.ny + y) * g.nz, cz, g, box.lz, b, e, sz);
    // one run (constant indices: b, e, sz stay in registers)
    auto walk = [&](int rb, int re, Real rsz) {
      const Vec4<Real> p = shifted(pi, sx, sy, rsz);
      const bool run_img = sx != Real(0) || sy != Real(0) || rsz != Real(0);
      int first = rb;
      if constexpr (WINDOW) first = lower_bound_z(sorted, rb, re, p.z - w);
      const Real zmax = p.z + w;
#pragma unroll 1
      for (int part = 0; part < 2; ++part) {  // the run split at k
        const int lo = part ? max(first, k + 1) : first;
        const int hi = part ? re : min(re, k);
#pragma unroll 1
        for (int q = lo; q < hi; ++q) {
          const Vec4<Real> pj = sorted[q];
          if (WINDOW && pj.z > zmax) break;
          Real dx, dy, dz;
          if (separation<MINIMAGE>(p, pj, box, dx, dy, dz) < rlist2) {
            if (count < cap) row.add(q, MINIMAGE ? crosses(pi, pj, box) : run_img);
            ++count;
          }
        }
      }
    };
    walk(b[0], e[0], sz[0]);
    if (runs > 1) walk(b[1], e[1], sz[1]);
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
  int count = 0, na = 0, nb = 0;  // hits; plain and image entries stored
  const int top = 4 * row_groups(cap);
#pragma unroll 1
  for (int col = 0; col < 9; ++col) {
    const int ox = col / 3 - 1, oy = col % 3 - 1;
    int x, y;
    Real sx, sy;
    if (!axis_neighbour<MINIMAGE>(cx, ox, g.nx, g.pmask & 1, box.lx, x, sx)) continue;
    if (!axis_neighbour<MINIMAGE>(cy, oy, g.ny, g.pmask & 2, box.ly, y, sy)) continue;
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
        // has room, plain ones after the row's plain entries, image ones before its image entries
        const unsigned int below = (1u << lane) - 1u;
        const unsigned int hits = __ballot_sync(0xffffffffu, hit);
        const bool stored = hit && count + __popc(hits & below) < cap;
        const unsigned int kept = __ballot_sync(0xffffffffu, stored);
        const unsigned int imgs = __ballot_sync(0xffffffffu, stored && img);
        if (stored) {
          const int at = img ? top - 1 - (nb + __popc(imgs & below)) : na + __popc(kept & ~imgs & below);
          nbr[entry_at(at, k, n)] = q;
        }
        count += __popc(hits);
        na += __popc(kept & ~imgs);
        nb += __popc(imgs);
      }
    }
  }
  if (lane == 0) {  // both regions padded to whole groups (RowWriter::finish)
    for (int j = na; j & 3; ++j) nbr[entry_at(j, k, n)] = n;
    for (int j = top - nb - 1; j >= ((top - nb) & ~3); --j) nbr[entry_at(j, k, n)] = n;
    len[k] = make_int2(na, nb);
    if (count > cap) atomicMax(overflow, count);
    ref[k] = pi;
    cur[k] = pi;
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
  if (lane < 9) {  // column `lane`: up to two runs, each with its image shift
    const int ox = lane / 3 - 1, oy = lane % 3 - 1;
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

// LAYOUT (layout.cuh): how the positions (cur: sorted order) lie: kAoS4 the plan's Vec4 array;
// kAoS3, kSoA a copy made at the start of the force phase, `stride` elements per array in kSoA.
// BATCH: plain entries a thread loads (whole groups of 4) before it computes their pairs
// (memory-level parallelism). MINB: blocks per SM the compiler must leave room for
// (__launch_bounds__'s second argument), a register cap. PBC: some axis is periodic (else no
// row has image entries).
//
// Each thread's pairs are added in a fixed order (its plain groups, the row's last partial group,
// its image entries): the same sums, bit for bit, at every BATCH and MINB. The pair body runs
// for every entry and keeps the pair where it lies inside the cutoff (Accumulator::add_where):
// about 3 of 4 entries do, so a warp would run the body anyway, and a branch would only add to it.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, bool PBC, int TPP, int BLOCK,
          int LAYOUT, int MINB, int BATCH>
__global__ void __launch_bounds__(BLOCK, MINB)
verlet_force(const Real* __restrict__ pos_data, const int stride, const int* __restrict__ order,
             const int* __restrict__ nbr, const int2* __restrict__ len, const int n, const int cap,
             const Box<Real> box, const Real* __restrict__ params, Acc* __restrict__ forces,
             Acc* __restrict__ partial, unsigned long long* __restrict__ count, int* __restrict__ flag,
             unsigned int* __restrict__ rebuilds) {
  static_assert(TPP >= 1 && TPP <= 32 && (TPP & (TPP - 1)) == 0, "TPP: a power of two up to a warp");
  static_assert(BATCH == 4 || BATCH == 8, "BATCH: 4 or 8 entries (one or two groups)");
  constexpr int G = BATCH / 4;  // groups in flight
  constexpr bool FMA = Contracted<Acc>::value;
  if (blockIdx.x == 0 && threadIdx.x == 0 && *flag) {  // the build of this step (if any) is complete
    *flag = 0;
    ++*rebuilds;
  }
  const Positions<Real, LAYOUT> pos{pos_data, stride};
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc;
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  const int s = t / TPP, lane = t % TPP;
  const bool row = s < n;
  if (row) {
    const Vec4<Real> pi = pos[s];
    const int2 m = __ldg(len + s);  // (plain, image) entries
    const long long step = static_cast<long long>(TPP) * n;
    const int4* __restrict__ rows = reinterpret_cast<const int4*>(nbr);
    // the plain groups g = lane, lane + TPP, ... (the last one padded with the phantom), G at a
    // time, by a pointer (no 64-bit index product per group): raw differences. A group's entries
    // are loaded an iteration ahead (their latency hides behind the pairs of the groups before);
    // past the row's end the phantom's, whose pairs add nothing.
    const int plain = (m.x + 3) >> 2;
    const int4 none = make_int4(n, n, n, n);
    const int4* __restrict__ p = rows + static_cast<long long>(lane) * n + s;
    int4 e[G];
#pragma unroll
    for (int u = 0; u < G; ++u) e[u] = lane + u * TPP < plain ? __ldg(p + u * step) : none;
#pragma unroll 1
    for (int g = lane; g < plain; g += G * TPP) {
      Vec4<Real> q[4 * G];
#pragma unroll
      for (int u = 0; u < G; ++u) {
        q[4 * u] = pos[e[u].x];
        q[4 * u + 1] = pos[e[u].y];
        q[4 * u + 2] = pos[e[u].z];
        q[4 * u + 3] = pos[e[u].w];
      }
      p += G * step;
#pragma unroll
      for (int u = 0; u < G; ++u) e[u] = g + (G + u) * TPP < plain ? __ldg(p + u * step) : none;
#pragma unroll
      for (int v = 0; v < 4 * G; ++v) {
        Real dx, dy, dz;
        const Real r2 = entry_separation<false, FMA>(pi, q[v], box, dx, dy, dz);
        acc.add_where(f, dx, dy, dz, r2, f.inside(r2));
      }
    }
    if constexpr (PBC) {  // the image groups, from the back of the row: the minimum image
      const int top = 4 * row_groups(cap), first = top - m.y;  // entries first .. top - 1
#pragma unroll 1
      for (int gi = (first >> 2) + lane; gi < (top >> 2); gi += TPP) {
        const int4 e = __ldg(rows + static_cast<long long>(gi) * n + s);
        const Vec4<Real> q[4] = {pos[e.x], pos[e.y], pos[e.z], pos[e.w]};
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          Real dx, dy, dz;
          const Real r2 = entry_separation<true, FMA>(pi, q[v], box, dx, dy, dz);
          acc.add_where(f, dx, dy, dz, r2, f.inside(r2) && 4 * gi + v >= first);  // the padding is not a pair
        }
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
  if (row && lane == 0) {
    const int i = order[s];
    forces[3 * i] = acc.fx;
    forces[3 * i + 1] = acc.fy;
    forces[3 * i + 2] = acc.fz;
  }
  accumulator_sums<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}
