// How a Verlet force kernel walks a row's near entries (verlet_force.cu, verlet_pairrows.cu).
#pragma once
#include "verlet_rows.cuh"

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
    // one before), no entry past the row's end gathered. Without the load ahead the LJ liquid at
    // 256,000 took 7.5-8% longer than per-lane loops; with it, 1.0-1.3%.
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
    // here (a queue of two) cost the forces flavour's unmasked loop register moves under its cap.
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
