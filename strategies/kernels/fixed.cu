// The fixed-point precision mode's one kernel of its own (common.cuh has its Fixed type): its
// sums (int64 in units of 1 / scale) as double, once at the end of an evaluation:
// out[k] = in[k] * unit (unit = 2^-32; exact below 2^53 units, rounded once above).
__global__ void fixed_to_double(const long long* __restrict__ in, const int len, const double unit,
                                double* __restrict__ out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < len; k += gridDim.x * blockDim.x)
    out[k] = static_cast<double>(in[k]) * unit;
}
