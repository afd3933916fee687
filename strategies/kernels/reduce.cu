// Final reduction of per-block partial sums, in two levels and a fixed order, so repeated runs
// give identical bits. Writes out[0] = energy, out[1..9] = the symmetric 3x3 virial (row-major)
// and out_count[0] = pair count (and the raw sums to sums[]).
//
// shift: 1 for traversals that visit every pair from both sides (full shell): sums and count
// halved; 0 with Newton3.
#include "common.cuh"

// Grid: strategies/cuda.py, reduce_blocks (a block per BLOCK partials, at most BLOCK blocks).
// Level 1: block b sums partials b BLOCK + t, then + G BLOCK, ... in thread t (G = gridDim.x:
// one each up to BLOCK^2 partials), then over the block (block_reduce), into level[b]. Level 2:
// the last block to finish (a ticket) sums level[0 .. G) over the block and writes the totals,
// then resets the ticket for the next launch. Which block finishes last does not change a sum.
// Two levels took 7.2 us against 16.4 in one block for the Verlet kernel's 8,192 block sums at LJ 1M
// (docs/decisions/reduction.md).
template <typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
reduce_partials(const Acc* __restrict__ partial, const unsigned long long* __restrict__ count, const int nparts,
                const int shift, Acc* __restrict__ level, unsigned long long* __restrict__ lcount,
                unsigned int* __restrict__ ticket, Acc* __restrict__ sums, Acc* __restrict__ out,
                unsigned long long* __restrict__ out_count) {
  __shared__ bool s_last;
  Acc v[kSums];
#pragma unroll
  for (int k = 0; k < kSums; ++k) v[k] = Acc(0);
  unsigned long long n = 0ull;
  for (int p = blockIdx.x * BLOCK + threadIdx.x; p < nparts; p += gridDim.x * BLOCK) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] += partial[static_cast<long long>(p) * kSums + k];
    n += count[p];
  }
  block_sums<BLOCK>(v, n, level, lcount, blockIdx.x);
  if (threadIdx.x == 0) s_last = arrive_last(ticket, gridDim.x);
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  load_slots<BLOCK>(level, lcount, 0, gridDim.x, v, n);
  __syncthreads();
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) sums[k] = v[k];
    write_totals(v, n, shift, out, out_count);
    *ticket = 0u;
  }
}

// Sum `slices` partial arrays of `len` elements (parts[s * len + k]) into out[k], slice 0
// first: a fixed order, so the result does not depend on scheduling.
template <typename Acc>
__global__ void fold_slices(const Acc* __restrict__ parts, const int len, const int slices, Acc* __restrict__ out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < len; k += gridDim.x * blockDim.x) {
    Acc s = parts[k];
    for (int t = 1; t < slices; ++t) s += parts[static_cast<size_t>(t) * len + k];
    out[k] = s;
  }
}
