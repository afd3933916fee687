// Experimental: rows of two particles, verlet_thread_pairrows (strategies/verlet/pairrows.py;
// docs/decisions/verlet-rows-of-two.md).
#include "verlet_near.cuh"

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
  const Positions<Real, LAYOUT, Binds<Functor<Real>>::value> pos{pos_data, stride};
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
    const auto near = pos.from(a);
    auto pair = [&](const Vec4<Real>& pj, bool valid) {
      Real dx, dy, dz;
      Real r2 = entry_separation<false, FMA>(pi0, pj, box, dx, dy, dz);
      const auto& f0 = bind_pair(f, pi0.w, pj.w);
      acc0.template add_where<!ROW_VIRIAL>(f0, dx, dy, dz, r2, f0.inside(r2) && valid);
      r2 = entry_separation<false, FMA>(pi1, pj, box, dx, dy, dz);
      const auto& f1 = bind_pair(f, pi1.w, pj.w);
      acc1.template add_where<!ROW_VIRIAL>(f1, dx, dy, dz, r2, f1.inside(r2) && valid && two);
    };
    if (two) {  // the row's own pair, from both sides
      Real dx, dy, dz;
      const Real r2 = entry_separation<false, FMA>(pi0, pi1, box, dx, dy, dz);
      const auto& f01 = bind_pair(f, pi0.w, pi1.w);
      const auto& f10 = bind_pair(f, pi1.w, pi0.w);
      acc0.template add_where<!ROW_VIRIAL>(f01, dx, dy, dz, r2, f01.inside(r2));
      acc1.template add_where<!ROW_VIRIAL>(f10, -dx, -dy, -dz, r2, f10.inside(r2));
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
        const auto& f0 = bind_pair(f, pi0.w, q[v].w);
        acc0.add_where(f0, dx, dy, dz, r2, f0.inside(r2) && in_row);
        r2 = entry_separation<PBC, FMA>(pi1, q[v], box, dx, dy, dz);
        const auto& f1 = bind_pair(f, pi1.w, q[v].w);
        acc1.add_where(f1, dx, dy, dz, r2, f1.inside(r2) && in_row && two);
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
