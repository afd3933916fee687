// One coordinate's velocity-Verlet update, shared by the MD loop's integrator (integrate.cu) and
// the Verlet list's fused steps (verlet.cu, verlet_force with MD, verlet_open): the same
// operations in the same order wherever they run, so that the fused loop and the plain one give
// the same bits.
#pragma once
#include "common.cuh"

template <typename Acc>
__device__ __forceinline__ Acc wrap_centred(Acc x, Acc len, Acc inv_len) {
  const Acc half = Acc(0.5) * len;
  x -= len * Math<Acc>::floor(x * inv_len + Acc(0.5));
  return x >= half ? x - len : x;  // rounding can leave x = L/2
}

// KICKS half kicks (v += dt/(2m) f), then the drift (x += dt v) and the wrap into [-L/2, L/2).
// Returns whether the drifted coordinate is finite (before the wrap, which would hide an inf).
template <int KICKS, typename Acc>
__device__ __forceinline__ bool kicks_drift_one(Acc& xk, Acc& vk, Acc fk, Acc half_dt_m, Acc dt, Acc len) {
#pragma unroll
  for (int q = 0; q < KICKS; ++q) vk = vk + half_dt_m * fk;
  xk = xk + dt * vk;
  const bool finite = isfinite(xk);
  xk = wrap_centred(xk, len, Acc(1) / len);
  return finite;
}
