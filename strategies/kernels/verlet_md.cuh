// The MD loop fused into the Verlet list's order (strategies/integrate_fused.py): the step's state
// and the update a force kernel ends with.
#pragma once
#include "integrate.cuh"
#include "verlet_rows.cuh"

// The loop's state kept in slot order (the binning's order of the last build): x and v (3 Acc a
// particle, centred coordinates as strategies/integrate.py keeps them) and the forces the next
// opening kick reads. A step is then the guarded rebuild and one force kernel that ends with the
// row's particle's update (MD = 2: this step's closing half kick, the next step's opening one,
// the drift, and the next step's positions and trigger; MD = 1: the closing half kick only, the
// force kept for the next opening kick): no pass over the particles in input order, no per-step
// gather. The operations are those of integrate.cu (integrate.cuh) and verlet_refresh, in the
// same order: the fused loop's bits are the plain loop's.
template <typename Real, typename Acc>
struct MdStep {
  Acc* x;                 // slot order, 3 a particle
  Acc* v;
  Acc* f;                 // the forces of the last closing kick (MD = 1 writes, verlet_open reads)
  const Vec4<Real>* ref;  // the build's positions
  Vec4<Real>* next;       // the positions the next force phase reads (verlet_refresh's cur)
  int* flag;              // the next step's trigger; nullptr: never rebuilt (rebuild=never)
  int* bad;               // set where a coordinate is not finite
  uint2* qnext;           // layout=packed: next's packed copy (PackedPositions); nullptr otherwise
  const Vec4<Real>* pref; // launch parameter prune: the positions of the last prune; nullptr: no inner list
  Acc half_dt_m, dt, lx, ly, lz;
  Real half_skin2;
  Real half_inner2;       // prune: (inner / 2)^2
  float inv_h;            // layout=packed: the grid's 1 / h
};

// Drift slot s after KICKS half kicks with force (fx, fy, fz), and write the next step's position
// (the image nearest ref[s], as verlet_refresh). Returns (bit 0) whether it moved beyond skin/2
// since the build, (bit 1) whether a coordinate is not finite and (bit 2, with an inner list)
// whether it moved beyond inner/2 since the last prune: md_flags raises the flags, once per warp.
template <int KICKS, typename Real, typename Acc>
__device__ __forceinline__ int md_drift(const MdStep<Real, Acc>& md, const Box<Real>& box, int s, Acc fx, Acc fy,
                                        Acc fz) {
  const long long k = 3LL * s;
  Acc x0 = md.x[k], x1 = md.x[k + 1], x2 = md.x[k + 2];
  Acc v0 = md.v[k], v1 = md.v[k + 1], v2 = md.v[k + 2];
  bool finite = kicks_drift_one<KICKS>(x0, v0, fx, md.half_dt_m, md.dt, md.lx);
  finite = kicks_drift_one<KICKS>(x1, v1, fy, md.half_dt_m, md.dt, md.ly) && finite;
  finite = kicks_drift_one<KICKS>(x2, v2, fz, md.half_dt_m, md.dt, md.lz) && finite;
  md.x[k] = x0;
  md.x[k + 1] = x1;
  md.x[k + 2] = x2;
  md.v[k] = v0;
  md.v[k + 1] = v1;
  md.v[k + 2] = v2;
  const Vec4<Real> r = md.ref[s];
  const Vec4<Real> p{static_cast<Real>(x0), static_cast<Real>(x1), static_cast<Real>(x2), r.w};
  Vec4<Real> c;
  const bool moved = refreshed(p, r, box, md.half_skin2, md.next + s, md.qnext != nullptr ? md.qnext + s : nullptr,
                               md.inv_h, &c);
  const bool pmoved = md.pref != nullptr && pruned_moved(c, md.pref[s], md.half_inner2);
  return (moved ? 1 : 0) | (finite ? 0 : 2) | (pmoved ? 4 : 0);
}

// The trigger and the blow-up flag from md_drift's bits, an atomic per warp (where every particle
// moved, one per thread took 0.56 ms at 1M). All 32 lanes must call it.
template <typename Real, typename Acc>
__device__ __forceinline__ void md_flags(const MdStep<Real, Acc>& md, int bits) {
  const unsigned int bad = __ballot_sync(0xffffffffu, bits & 2);
  if (md.flag != nullptr && md.pref != nullptr) {  // warp-uniform
    raise_flags(md.flag, bits & 1, bits & 4);
  } else {
    const unsigned int moved = __ballot_sync(0xffffffffu, bits & 1);
    if ((threadIdx.x & 31) == 0 && moved != 0u && md.flag != nullptr) atomicExch(md.flag, 1);
  }
  if ((threadIdx.x & 31) == 0 && bad != 0u) atomicOr(md.bad, 1);
}

// The end of a fused step for row s's particle (MD 1 or 2, above); md_drift's bits (0 for MD 1).
template <int MD, typename Real, typename Acc>
__device__ __forceinline__ int md_update(const MdStep<Real, Acc>& md, const Box<Real>& box, int s, Acc fx, Acc fy,
                                         Acc fz) {
  if constexpr (MD == 2) {
    return md_drift<2>(md, box, s, fx, fy, fz);
  } else {
    const long long k = 3LL * s;
    md.v[k] = md.v[k] + md.half_dt_m * fx;
    md.v[k + 1] = md.v[k + 1] + md.half_dt_m * fy;
    md.v[k + 2] = md.v[k + 2] + md.half_dt_m * fz;
    md.f[k] = fx;
    md.f[k + 1] = fy;
    md.f[k + 2] = fz;
    return 0;
  }
}
