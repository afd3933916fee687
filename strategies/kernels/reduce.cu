// Final reduction of per-block partial sums: one block, fixed order, so repeated runs give
// identical bits. Writes out[0] = energy, out[1..9] = the symmetric 3x3 virial (row-major)
// and out_count[0] = pair count.
//
// shift: 1 for traversals that visit every pair from both sides (full shell): sums and count
// halved; 0 with Newton3.
#include "common.cuh"

template <typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
reduce_partials(const Acc* __restrict__ partial, const unsigned long long* __restrict__ count, const int nparts,
                const int shift, Acc* __restrict__ sums, Acc* __restrict__ out,
                unsigned long long* __restrict__ out_count) {
  Acc v[kSums];
#pragma unroll
  for (int k = 0; k < kSums; ++k) v[k] = Acc(0);
  unsigned long long n = 0ull;
  sum_partials<BLOCK, sizeof(Acc) == 4 ? 16 : 8>(partial, count, nparts, v, n, [](const auto* p) { return *p; });
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) sums[k] = v[k];
    write_totals(v, n, shift, out, out_count);
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
