// research/l1_probe.py: the L1 cost of a warp's 128-bit gathers, pattern by pattern. Warp w replays
// pattern w % patterns: at step k lane l loads pos[idx[(p * steps + k) * 32 + l]] (no load where
// the index is negative) and adds its components, reps times over. Nothing else touches memory
// in the loop but the coalesced index loads (one 128-byte request per step), so ncu's data-pipe
// wavefronts and the event time per step measure what the gathers of the pattern cost.
// This lane's column of its warp's pattern: step k's index at [k * 32].
__device__ __forceinline__ const int* replay_column(const int* __restrict__ idx, int patterns, int steps) {
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  return idx + static_cast<long long>(w % patterns) * steps * 32 + lane;
}

template <typename T>
__device__ __forceinline__ float l1_sum(const T& v);
template <>
__device__ __forceinline__ float l1_sum(const float4& v) { return v.x + v.y + v.z + v.w; }
template <>
__device__ __forceinline__ float l1_sum(const float2& v) { return v.x + v.y; }
template <>
__device__ __forceinline__ float l1_sum(const float& v) { return v; }

// T: float4 (the force kernels' 16-byte positions), float2 (an 8-byte packed position), float.
template <typename T>
__global__ void l1_replay(const T* __restrict__ pos, const int* __restrict__ idx, const int patterns,
                          const int steps, const int reps, float* __restrict__ out) {
  const int* __restrict__ p = replay_column(idx, patterns, steps);
  float acc = 0.0f;
  for (int r = 0; r < reps; ++r) {
#pragma unroll 4
    for (int k = 0; k < steps; ++k) {
      const int q = __ldg(p + k * 32);
      if (q >= 0) acc += l1_sum(__ldg(pos + q));
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The same replay with the gathers through the texture path: tex1Dfetch on a linear float4 texture
// object over pos. MIX false: every gather; true: the even steps through the texture path and the
// odd ones through __ldg, so that both paths of the L1 take gathers in the same loop. Whether the
// texture path serves random 16-byte gathers at another rate than the LSU path's bank groups.
template <bool MIX>
__global__ void l1_replay_tex(const float4* __restrict__ pos, const cudaTextureObject_t tex,
                              const int* __restrict__ idx, const int patterns, const int steps, const int reps,
                              float* __restrict__ out) {
  const int* __restrict__ p = replay_column(idx, patterns, steps);
  float acc = 0.0f;
  for (int r = 0; r < reps; ++r) {
#pragma unroll 2
    for (int k = 0; k + 1 < steps; k += 2) {  // steps is even for every pattern of research/l1_probe.py
      const int q0 = __ldg(p + k * 32), q1 = __ldg(p + (k + 1) * 32);
      if (q0 >= 0) {
        const float4 v = tex1Dfetch<float4>(tex, q0);
        acc += v.x + v.y + v.z + v.w;
      }
      if (q1 >= 0) {
        const float4 v = MIX ? __ldg(pos + q1) : tex1Dfetch<float4>(tex, q1);
        acc += v.x + v.y + v.z + v.w;
      }
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
