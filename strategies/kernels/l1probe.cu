// tools/l1_probe.py: the L1 cost of a warp's 128-bit gathers, pattern by pattern. Warp w replays
// pattern w % patterns: at step k lane l loads pos[idx[(p * steps + k) * 32 + l]] (no load where
// the index is negative) and adds its components, reps times over. Nothing else touches memory
// in the loop but the coalesced index loads (one 128-byte request per step), so ncu's data-pipe
// wavefronts and the event time per step measure what the gathers of the pattern cost.
__global__ void l1_replay(const float4* __restrict__ pos, const int* __restrict__ idx, const int patterns,
                          const int steps, const int reps, float* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int* __restrict__ p = idx + static_cast<long long>(w % patterns) * steps * 32 + lane;
  float acc = 0.0f;
  for (int r = 0; r < reps; ++r) {
#pragma unroll 4
    for (int k = 0; k < steps; ++k) {
      const int q = __ldg(p + k * 32);
      if (q >= 0) {
        const float4 v = __ldg(pos + q);
        acc += v.x + v.y + v.z + v.w;
      }
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
