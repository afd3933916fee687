// Experimental: the inner list of launch parameter prune (strategies/verlet/plan.py;
// docs/decisions/verlet-inner-list.md).
#include "verlet_rows.cuh"

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
