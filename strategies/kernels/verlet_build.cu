// The Verlet list's per-step check and its builds (strategies/verlet/plan.py). Storage: verlet_rows.cuh.
//
//   verlet_check    (the Newton3 cluster pairs' trigger) sets *flag where some particle moved more
//                   than skin/2 since the list's build (minimum image)
//   verlet_refresh  each step, the Verlet list's check: the same trigger on ref (sorted), and cur from
//                   the positions the MD loop moved (flag nullptr: cur only, the negative control that
//                   never rebuilds)
//   verlet_build    (guarded by *flag) a thread per sorted slot: the particles j != i of the neighbour
//                   cells' z-strips within r_list, in strip order (deterministic: the binning fixes the
//                   order inside a cell), into padded rows; ref and cur set to the build's positions; a
//                   row longer than the capacity raises *overflow to its length and is never written
//                   past the capacity (the force phase reports it). verlet_build_warp: a warp per row;
//                   verlet_build_cells: a warp per cell. The same rows from each.
//   verlet_pack     (guarded; layout=packed) cur's 8-byte fixed-point copy after a build
#include "verlet_rows.cuh"

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

// One thread per row (sorted slot k), the full shell's walk (cells.cuh): 9 z-strips of the CSR
// storage with one image shift per run (per-pair minimum image only with MINIMAGE: a periodic
// axis of fewer than 3 cells), the particle itself split out of its strip. WINDOW: only the
// z-window a strip's column can reach (the strips are sorted by z). Hits are appended in strip
// order: the same rows with and without WINDOW.
// __launch_bounds__(128, 9) for float: what the build takes without bounds (56 registers), kept for
// ADAPT, which would otherwise take 58 and drop to eight blocks an SM. With __launch_bounds__(128)
// alone ptxas aims at full occupancy and spills.
// ADAPT (launch parameter adapt, strategies/verlet/plan.py): each particle's own half-skin h in its w
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
      // bits cleared below (faster under ncu than four a step: docs/decisions/verlet-build.md).
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
    // windows differ most (crowded inputs), not on the LJ liquid (strategies/verlet/tuning.py, build_kind).
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
    // The column set-up below (neighbour, z-reach, runs) repeats the opposite walk's above: written
    // once in a shared helper, ptxas scheduled this walk worse (docs/decisions/verlet-build.md).
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
