// Binning, shared by every cell strategy (strategies/binning.py drives it): the cell of every
// particle, a deterministic counting sort into cell order, the copy of positions into a cell
// storage, and the forces back to input order.
#include "cells.cuh"

// --- the cell of a particle ------------------------------------------------------------------

// Cell of a box-centred position; rounding at the edges (x = L on an open axis, or x + L/2 one
// ulp outside) is clamped into the grid.
template <typename Real>
__device__ __forceinline__ int cell_of(const Vec4<Real>& p, const Box<Real>& box, const Grid& g, Real isx, Real isy,
                                       Real isz) {
  int cx = static_cast<int>(Math<Real>::floor((p.x + Real(0.5) * box.lx) * isx));
  int cy = static_cast<int>(Math<Real>::floor((p.y + Real(0.5) * box.ly) * isy));
  int cz = static_cast<int>(Math<Real>::floor((p.z + Real(0.5) * box.lz) * isz));
  cx = min(max(cx, 0), g.nx - 1);
  cy = min(max(cy, 0), g.ny - 1);
  cz = min(max(cz, 0), g.nz - 1);
  return (cx * g.ny + cy) * g.nz + cz;
}

// The order inside a cell: z as a float (the same key in every precision and every build
// method), then the particle index.
template <typename Real>
__device__ __forceinline__ float z_key(const Vec4<Real>& p) {
  return static_cast<float>(p.z);
}

__device__ __forceinline__ bool sorts_before(float za, int ia, float zb, int ib) {
  return za < zb || (za == zb && ia < ib);
}

// A build that a device flag decides: the list strategies launch the binning every step and
// it runs only where their displacement check set *guard (no host synchronisation). nullptr:
// always run (the cell strategies).
__device__ __forceinline__ bool skipped(const int* guard) { return guard != nullptr && *guard == 0; }

// --- the counting sort (the build phase of every cell strategy) -----------------------------
//
//   bin_count     cell of every particle, and its provisional slot in the cell (atomics, one per
//                 cell a warp touches: exact counts, slots in arrival order)
//   scan_counts   start = exclusive scan of the counts, one pass (decoupled look-back); resets the
//                 counts for the next build
//   place         order_tmp[start[cell] + slot] = particle
//   rank_in_cell  the final order inside each cell: by z (as a float), ties by particle index,
//                 whatever order the atomics took, so that every build of the same positions gives
//                 the same bits; writes order, cell_sorted and (CSR) the sorted positions. A
//                 column of cells along z is then sorted by z, which the full shell's z-windows use
// Four launches, no host synchronisation (capturable in a CUDA graph). bin_small does all of it
// in one block for small systems.

// counts must be zero on entry (scan_counts leaves them so; the plan zeroes them once). zkey: the
// order key inside a cell (z_key), for rank_in_cell.
template <typename Real>
__global__ void bin_count(const Vec4<Real>* __restrict__ pos, const int n, const Box<Real> box, const Grid g,
                          const Real isx, const Real isy, const Real isz, int* __restrict__ cell, int* __restrict__ slot,
                          int* __restrict__ counts, float* __restrict__ zkey, const int* __restrict__ guard) {
  if (skipped(guard)) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Vec4<Real> p = pos[i];
    const int c = cell_of(p, box, g, isx, isy, isz);
    cell[i] = c;
    zkey[i] = z_key(p);
    slot[i] = claim_cell_slot(counts, c);
  }
}

constexpr int kScanBlock = 256;
constexpr int kScanItems = 4;  // one int4 per thread: coalesced 16-byte loads and stores
constexpr int kScanTile = kScanBlock * kScanItems;  // cells per block of scan_counts
constexpr unsigned long long kTileAggregate = 1ull << 62;
constexpr unsigned long long kTilePrefix = 2ull << 62;
constexpr unsigned long long kTileValue = (1ull << 62) - 1ull;

// Exclusive scan of one int per thread over the block; *total gets the block's sum.
template <int BLOCK>
__device__ __forceinline__ int block_exclusive_scan(int v, int& total) {
  __shared__ int s_warp[BLOCK / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int x = v;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, off);
    if (lane >= off) x += y;
  }
  if (lane == 31) s_warp[warp] = x;
  __syncthreads();
  if (warp == 0) {
    int w = lane < BLOCK / 32 ? s_warp[lane] : 0;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, w, off);
      if (lane >= off) w += y;
    }
    if (lane < BLOCK / 32) s_warp[lane] = w;  // inclusive warp prefixes
  }
  __syncthreads();
  total = s_warp[BLOCK / 32 - 1];
  const int before = warp ? s_warp[warp - 1] : 0;
  __syncthreads();  // s_warp is reused by the next call
  return before + x - v;
}

// start[c] = particles in cells before c (start[ncells] = n), in one pass: each block scans a
// tile of kScanTile cells, publishes its sum, and adds the sums of the tiles before it (looking
// back, a warp reading 32 tiles at once, until a tile that has published its inclusive prefix).
// Tiles are numbered in the order the blocks start (a ticket), so a block only ever waits on
// blocks already running. Integer sums:
// the same result whatever the order. The last block to finish clears the tile words and the
// tickets for the next build; the counts are zeroed as they are read.
__global__ void __launch_bounds__(kScanBlock)
scan_counts(int* __restrict__ counts, const int ncells, int* __restrict__ start,
            unsigned long long* __restrict__ tiles, unsigned int* __restrict__ tickets, const int ntiles,
            const int* __restrict__ guard) {
  if (skipped(guard)) return;  // every block alike: the tickets stay as the last build left them
  __shared__ int s_tile;
  __shared__ long long s_prefix;
  if (threadIdx.x == 0) s_tile = static_cast<int>(atomicAdd(&tickets[0], 1u));
  __syncthreads();
  const int tile = s_tile;
  const int first = tile * kScanTile + threadIdx.x * kScanItems;
  static_assert(kScanItems == 4, "one int4 per thread");
  int v[kScanItems];
  if (first + kScanItems <= ncells) {  // counts and start are 16-byte aligned, first a multiple of 4
    const int4 q4 = *reinterpret_cast<const int4*>(counts + first);
    v[0] = q4.x, v[1] = q4.y, v[2] = q4.z, v[3] = q4.w;
  } else {
#pragma unroll
    for (int q = 0; q < kScanItems; ++q) v[q] = first + q < ncells ? counts[first + q] : 0;
  }
  int sum = 0;
#pragma unroll
  for (int q = 0; q < kScanItems; ++q) sum += v[q];
  int total;
  const int excl = block_exclusive_scan<kScanBlock>(sum, total);
  if (threadIdx.x < 32) {  // the first warp publishes the tile and looks back, 32 tiles at a time
    const int lane = threadIdx.x;
    long long before = 0;
    if (tile == 0) {
      if (lane == 0) atomicExch(&tiles[0], kTilePrefix | static_cast<unsigned long long>(total));
    } else {
      if (lane == 0) atomicExch(&tiles[tile], kTileAggregate | static_cast<unsigned long long>(total));
      for (int last = tile - 1;;) {  // lane l reads tile last - l; tile 0 always ends the look-back
        const int t = last - lane;
        const unsigned long long w = t >= 0 ? atomicAdd(&tiles[t], 0ull) : kTilePrefix;  // read past every cache
        if (__any_sync(0xffffffffu, w == 0ull)) continue;  // a tile of the window has not published yet: it runs, wait
        const unsigned int prefixed = __ballot_sync(0xffffffffu, (w & kTilePrefix) != 0ull);
        const int stop = prefixed ? __ffs(prefixed) - 1 : 31;  // the nearest tile with its inclusive prefix
        long long v = lane <= stop ? static_cast<long long>(w & kTileValue) : 0ll;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
        before += v;  // integer sums: the same whatever the order
        if (prefixed) break;
        last -= 32;
      }
      if (lane == 0) atomicExch(&tiles[tile], kTilePrefix | static_cast<unsigned long long>(before + total));
    }
    if (lane == 0) s_prefix = before;
  }
  __syncthreads();
  const int running = static_cast<int>(s_prefix) + excl;
  const int4 out = make_int4(running, running + v[0], running + v[0] + v[1], running + v[0] + v[1] + v[2]);
  if (first + kScanItems <= ncells) {
    *reinterpret_cast<int4*>(start + first) = out;
    *reinterpret_cast<int4*>(counts + first) = make_int4(0, 0, 0, 0);
  } else {
    const int o[4] = {out.x, out.y, out.z, out.w};
#pragma unroll
    for (int q = 0; q < kScanItems; ++q) {
      if (first + q < ncells) {
        start[first + q] = o[q];
        counts[first + q] = 0;
      }
    }
  }
  if (tile == ntiles - 1 && threadIdx.x == 0) start[ncells] = static_cast<int>(s_prefix) + total;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&tickets[1], 1u) == static_cast<unsigned int>(ntiles - 1)) {  // every other tile is done
      for (int t = 0; t < ntiles; ++t) tiles[t] = 0ull;
      tickets[0] = 0u;
      tickets[1] = 0u;
    }
  }
}

__global__ void place(const int* __restrict__ cell, const int* __restrict__ slot, const int n,
                      const int* __restrict__ start, int* __restrict__ order_tmp, const int* __restrict__ guard) {
  if (skipped(guard)) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    order_tmp[start[cell[i]] + slot[i]] = i;
  }
}

// Particle order_tmp[k] goes to slot start[c] + (the number of particles of its cell that sort
// before it: sorts_before). O(count) per particle: for the cells of liquids and of the thesis's
// Gaussians (up to ~10^3 particles); the plan sorts with a radix sort instead where set-up finds
// fuller cells.
template <typename Real, bool WRITE_POS>
__global__ void rank_in_cell(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order_tmp,
                             const int* __restrict__ cell, const float* __restrict__ zkey,
                             const int* __restrict__ start, const int n, int* __restrict__ order,
                             int* __restrict__ cell_sorted, Vec4<Real>* __restrict__ sorted,
                             const int* __restrict__ guard) {
  if (skipped(guard)) return;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int i = order_tmp[k];
    const int c = cell[i];
    const int b = start[c], e = start[c + 1];
    const float zi = zkey[i];
    int rank = 0;
    for (int q = b; q < e; ++q) {
      const int j = order_tmp[q];
      rank += sorts_before(zkey[j], j, zi, i);
    }
    const int dest = b + rank;
    order[dest] = i;
    cell_sorted[dest] = c;
    if constexpr (WRITE_POS) sorted[dest] = pos[i];
  }
}

// The whole counting sort in one block, for small systems (a launch-bound size pays for each
// launch; at most BLOCK * kSmallPer particles): counts and starts (2 ncells + 1 ints), the slot
// then the place order of each particle (n ints) and its z key (n floats) in shared memory
// (dynamic, within the 48 KiB a launch gets without opting in: strategies/binning.py sizes
// SMALL_N and SMALL_CELLS to it); a sorted slot's cell is found in the starts by bisection. Same
// result as the four kernels.
constexpr int kSmallPer = 4;

template <typename Real, int BLOCK, bool WRITE_POS>
__global__ void __launch_bounds__(BLOCK)
bin_small(const Vec4<Real>* __restrict__ pos, const int n, const Box<Real> box, const Grid g, const Real isx,
          const Real isy, const Real isz, const int ncells, int* __restrict__ start, int* __restrict__ order,
          int* __restrict__ cell_sorted, Vec4<Real>* __restrict__ sorted, const int* __restrict__ guard) {
  if (skipped(guard)) return;
  extern __shared__ int s_mem[];
  int* s_count = s_mem;                 // ncells
  int* s_start = s_mem + ncells;        // ncells + 1
  int* s_order = s_start + ncells + 1;  // n: each particle's slot in its cell, then the place order
  float* s_z = reinterpret_cast<float*>(s_order + n);  // n
  for (int c = threadIdx.x; c < ncells; c += BLOCK) s_count[c] = 0;
  __syncthreads();
  int cell[kSmallPer];  // this thread's particles i = threadIdx.x + q BLOCK (constant q: registers)
#pragma unroll
  for (int q = 0; q < kSmallPer; ++q) {
    const int i = threadIdx.x + q * BLOCK;
    cell[q] = -1;
    if (i < n) {
      const Vec4<Real> p = pos[i];
      cell[q] = cell_of(p, box, g, isx, isy, isz);
      s_z[i] = z_key(p);
      s_order[i] = atomicAdd(&s_count[cell[q]], 1);
    }
  }
  __syncthreads();
  // exclusive scan: each thread a contiguous chunk of cells
  const int per = (ncells + BLOCK - 1) / BLOCK;
  const int c0 = min(ncells, static_cast<int>(threadIdx.x) * per), c1 = min(ncells, c0 + per);
  int sum = 0;
  for (int c = c0; c < c1; ++c) sum += s_count[c];
  int total;
  int running = block_exclusive_scan<BLOCK>(sum, total);
  for (int c = c0; c < c1; ++c) {
    s_start[c] = running;
    start[c] = running;
    running += s_count[c];
  }
  if (threadIdx.x == 0) {
    s_start[ncells] = total;
    start[ncells] = total;
  }
  __syncthreads();
  int place[kSmallPer];
#pragma unroll
  for (int q = 0; q < kSmallPer; ++q) {
    const int i = threadIdx.x + q * BLOCK;
    place[q] = i < n ? s_start[cell[q]] + s_order[i] : -1;
  }
  __syncthreads();  // every slot read before the place order overwrites them
#pragma unroll
  for (int q = 0; q < kSmallPer; ++q) {
    if (place[q] >= 0) s_order[place[q]] = threadIdx.x + q * BLOCK;
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < kSmallPer; ++q) {
    const int k = threadIdx.x + q * BLOCK;
    if (k >= n) continue;
    const int i = s_order[k];
    int lo = 0, hi = ncells - 1;  // slot k's cell: the last c with start[c] <= k (a non-empty one)
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (s_start[mid] <= k) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int c = lo;
    const int b = s_start[c], e = s_start[c + 1];
    const float zi = s_z[i];
    int rank = 0;
    for (int t = b; t < e; ++t) {
      const int j = s_order[t];
      rank += sorts_before(s_z[j], j, zi, i);
    }
    order[b + rank] = i;
    cell_sorted[b + rank] = c;
    if constexpr (WRITE_POS) sorted[b + rank] = pos[i];
  }
}

// --- the radix-sort build (for set-ups with cells of thousands of particles) -----------------

// Cell of each particle (input order), particles per cell (counts zeroed by the caller; integer
// atomics, so the counts are exact and deterministic), and a 64-bit sort key: the cell, then z as
// a float mapped to an unsigned integer of the same order. A stable sort by the key gives the
// counting sort's order (cell, z, index).
template <typename Real>
__global__ void bin_cells(const Vec4<Real>* __restrict__ pos, const int n, const Box<Real> box, const Grid g,
                          const Real isx, const Real isy, const Real isz, int* __restrict__ cell,
                          int* __restrict__ counts, unsigned long long* __restrict__ key) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Vec4<Real> p = pos[i];
    const int c = cell_of(p, box, g, isx, isy, isz);
    cell[i] = c;
    atomicAdd(&counts[c], 1);
    const unsigned int zb = __float_as_uint(z_key(p));
    const unsigned int zo = (zb & 0x80000000u) ? ~zb : (zb | 0x80000000u);  // IEEE order as unsigned order
    key[i] = (static_cast<unsigned long long>(c) << 32) | zo;
  }
}

// --- storages and forces ------------------------------------------------------------------------

// Copy positions into the layout: slot k of the cell order gets particle order[k]. A slot
// beyond a cell's capacity is not written; the largest such slot + 1 goes to *overflow.
template <typename Real, typename Acc, int LAYOUT>
__global__ void scatter_cells(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, const Cells<Real, Acc, LAYOUT> cells,
                              const int* __restrict__ capacity, int* __restrict__ overflow) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const int q = k - cells.begin(c);
    long long cap = 0x7fffffffll;
    if constexpr (LAYOUT == kPadded) cap = cells.cap;
    if constexpr (LAYOUT == kNested) cap = capacity[c];
    if (q >= cap) {
      atomicMax(overflow, q + 1);
      continue;
    }
    *cells.pos_at(c, q) = pos[order[k]];
  }
}

template <typename Real, typename Acc, int LAYOUT>
__global__ void zero_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    Acc* f = cells.f(c, k - cells.begin(c));
    f[0] = Acc(0);
    f[1] = Acc(0);
    f[2] = Acc(0);
  }
}

// Forces back to input order: out[order[k]] = force of slot k.
template <typename Real, typename Acc, int LAYOUT>
__global__ void gather_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, Acc* __restrict__ out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const Acc* f = cells.f(c, k - cells.begin(c));
    const int i = order[k];
    out[3 * i + 0] = f[0];
    out[3 * i + 1] = f[1];
    out[3 * i + 2] = f[2];
  }
}
