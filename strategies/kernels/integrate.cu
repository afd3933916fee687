// Velocity Verlet (velocity Stoermer-Verlet, thesis section 2) for the MD loop, one thread per
// particle. The state (x, v) lives in the accumulation type Acc (float in fp32, double in the
// mixed and fp64 modes), with positions centred on the box, in [-L/2, L/2) on every (periodic)
// axis: the coordinates the strategies read (in their compute type Real), and the ones whose
// float rounding is smallest.
//
//   kick_drift:  v += (dt/2m) f;  x += dt v;  wrap x into [-L/2, L/2);  pos = Real(x)
//   (strategy: build if needed, force)
//   kick:        v += (dt/2m) f
//   kick_kick_drift: kick then kick_drift of the next step in one launch (graphs of several steps)
//
// Both are in input order, like the strategies' forces. A non-finite coordinate sets *bad
// (the host reads it at each sample): a blown-up run is reported, not silently continued.
#include "integrate.cuh"

// A thread per coordinate k = 3 i + a: x, v and f are read and written with unit stride (a thread
// per particle strode by three and took twice as long at 1M particles). KICKS: the half kicks
// applied before the drift, 1 (kick_drift) or 2 (the last step's closing kick fused with this
// step's opening one, inside a graph of several steps: the same operations in the same order,
// so the same bits as kick then kick_drift).
template <typename Real, typename Acc, int KICKS>
__device__ __forceinline__ void kicks_drift(Acc* __restrict__ x, Acc* __restrict__ v, const Acc* __restrict__ f,
                                            int n3, Acc half_dt_m, Acc dt, Acc lx, Acc ly, Acc lz,
                                            Real* __restrict__ pos, int pos_stride, int* __restrict__ bad) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n3) return;
  const int i = k / 3, a = k - 3 * i;
  const Acc len = a == 0 ? lx : (a == 1 ? ly : lz);
  Acc vk = v[k], xk = x[k];
  const bool finite = kicks_drift_one<KICKS>(xk, vk, f[k], half_dt_m, dt, len);
  v[k] = vk;
  x[k] = xk;
  pos[static_cast<long long>(pos_stride) * i + a] = static_cast<Real>(xk);
  if (!finite) atomicOr(bad, 1);
}

template <typename Real, typename Acc>
__global__ void kick_drift(Acc* __restrict__ x, Acc* __restrict__ v, const Acc* __restrict__ f, int n3,
                           Acc half_dt_m, Acc dt, Acc lx, Acc ly, Acc lz, Real* __restrict__ pos, int pos_stride,
                           int* __restrict__ bad) {
  kicks_drift<Real, Acc, 1>(x, v, f, n3, half_dt_m, dt, lx, ly, lz, pos, pos_stride, bad);
}

template <typename Real, typename Acc>
__global__ void kick_kick_drift(Acc* __restrict__ x, Acc* __restrict__ v, const Acc* __restrict__ f, int n3,
                                Acc half_dt_m, Acc dt, Acc lx, Acc ly, Acc lz, Real* __restrict__ pos,
                                int pos_stride, int* __restrict__ bad) {
  kicks_drift<Real, Acc, 2>(x, v, f, n3, half_dt_m, dt, lx, ly, lz, pos, pos_stride, bad);
}

template <typename Acc>
__global__ void kick(Acc* __restrict__ v, const Acc* __restrict__ f, int n3, Acc half_dt_m) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n3) v[k] += half_dt_m * f[k];
}
