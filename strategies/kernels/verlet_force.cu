// The Verlet list's force kernel (strategies/verlet/plan.py): TPP threads per row, the force on
// i = order[s] from its row, written in input order; energy and virial per block (ENERGY). Block 0
// clears *flag and counts the rebuild. With MD (the fused steps, verlet_md.cuh) no forces are
// written: the row's particle is kicked (and drifted) in slot order instead.
#include "verlet_md.cuh"
#include "verlet_near.cuh"

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
// neighbouring entries of the row, mostly consecutive slots, in the same instruction: faster from
// 4 lanes a row (strategies/verlet/tuning.py, split_entries).
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
  const Positions<Real, VLAYOUT, Binds<Functor<Real>>::value> pos{pos_data, stride};
  Functor<Real> fs(params);
  stage_table<BLOCK>(fs);  // a pair table in shared memory where the functor asks for it (pair_table.cuh)
  const Functor<Real>& f = fs;
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
    if constexpr (PACKED) {  // a potential without per-particle data (the packed entries carry none)
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
        const auto& fp = bind_pair(f, pi.w, pj.w);
        acc.template add_where<!ROW_VIRIAL, PRED>(fp, dx, dy, dz, r2, fp.inside(r2) && valid);
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
        const auto& fp = bind_pair(f, pi.w, q[v].w);
        acc.template add_where<true, PRED>(fp, dx, dy, dz, r2, fp.inside(r2) && 4 * gi + v >= first);  // the padding is not a pair
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
