// The rigid-molecule MD step on the device (host: strategies/rigid_cuda.py DeviceRigid), a thread per molecule:
// NO_SQUISH's kicks and drift (rigid.cuh) around a traversal of molecules.cu, which reads the centres and
// quaternions the drift writes, and the mark that follows a list build the step decided on the device.
#include "common.cuh"
#include "rigid.cuh"

// State in S (the accumulation type): r, p (M x 3), q, pi (M x 4), mass (M), inertia (M x 3).
template <typename S, typename Acc>
__global__ void molecule_kick(const int m, S* __restrict__ p, S* __restrict__ pi, const S* __restrict__ q,
                              const S* __restrict__ inertia, const Acc* __restrict__ force,
                              const Acc* __restrict__ torque, const S h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  S pp[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
  S pq[4] = {pi[4 * i], pi[4 * i + 1], pi[4 * i + 2], pi[4 * i + 3]};
  const S qq[4] = {q[4 * i], q[4 * i + 1], q[4 * i + 2], q[4 * i + 3]};
  const S in[3] = {inertia[3 * i], inertia[3 * i + 1], inertia[3 * i + 2]};
  rigid_kick(pp, pq, qq, in, S(force[3 * i]), S(force[3 * i + 1]), S(force[3 * i + 2]), S(torque[3 * i]),
             S(torque[3 * i + 1]), S(torque[3 * i + 2]), h);
  for (int k = 0; k < 3; ++k) p[3 * i + k] = pp[k];
  for (int k = 0; k < 4; ++k) pi[4 * i + k] = pq[k];
}

// A kick of the momenta by h (0: none), then the drift by dt, a thread per molecule; then its state and
// the traversal's inputs written: the centres relative to the box centre (r - L/2, r in [0, L) on
// periodic axes) and the quaternions, in the compute type; with a list (at: the centres at its build),
// *moved = 1 where a centre is more than sqrt(limit2) from its place then. DeviceRigid's fused step passes
// a step's opening kick with the last step's closing half; its unfused step kicks apart (molecule_kick)
// and passes h = 0, which changes no bit of the momenta.
template <typename Real, typename S, typename Acc>
__global__ void molecule_kick_drift(const int m, S* __restrict__ r, S* __restrict__ p, S* __restrict__ q,
                                    S* __restrict__ pi, const S* __restrict__ mass, const S* __restrict__ inertia,
                                    const Acc* __restrict__ force, const Acc* __restrict__ torque, const S h,
                                    const S dt, const S lx, const S ly, const S lz, const int px, const int py,
                                    const int pz, Vec4<Real>* __restrict__ c, Real* __restrict__ quat,
                                    const S* __restrict__ at, const S limit2, int* __restrict__ moved) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  S rr[3] = {r[3 * i], r[3 * i + 1], r[3 * i + 2]};
  S pp[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
  S qq[4] = {q[4 * i], q[4 * i + 1], q[4 * i + 2], q[4 * i + 3]};
  S pq[4] = {pi[4 * i], pi[4 * i + 1], pi[4 * i + 2], pi[4 * i + 3]};
  const S in[3] = {inertia[3 * i], inertia[3 * i + 1], inertia[3 * i + 2]};
  const S box[3] = {lx, ly, lz};
  const int per[3] = {px, py, pz};
  if (h != S(0)) {
    rigid_kick(pp, pq, qq, in, S(force[3 * i]), S(force[3 * i + 1]), S(force[3 * i + 2]), S(torque[3 * i]),
               S(torque[3 * i + 1]), S(torque[3 * i + 2]), h);
    for (int k = 0; k < 3; ++k) p[3 * i + k] = pp[k];
  }
  rigid_drift(rr, pp, qq, pq, mass[i], in, dt, box, per);
  for (int k = 0; k < 3; ++k) r[3 * i + k] = rr[k];
  for (int k = 0; k < 4; ++k) {
    q[4 * i + k] = qq[k];
    pi[4 * i + k] = pq[k];
    quat[4 * i + k] = static_cast<Real>(qq[k]);
  }
  c[i] = {static_cast<Real>(rr[0] - S(0.5) * lx), static_cast<Real>(rr[1] - S(0.5) * ly),
          static_cast<Real>(rr[2] - S(0.5) * lz), Real(0)};
  if (at != nullptr) {  // a list traversal's rebuild test: moved more than half the skin since the build
    S d2 = S(0);
    for (int k = 0; k < 3; ++k) {
      S d = rr[k] - at[3 * i + k];
      if (per[k]) d -= box[k] * rint(d / box[k]);
      d2 += d * d;
    }
    if (d2 > limit2) *moved = 1;  // every writer writes the same value
  }
}

// After a build the MD step's device decision made (guarded as the build): the centres at the build (at, the
// state's r) and the builds counted (builds[0] + 1, one thread).
template <typename S>
__global__ void molecule_list_mark(const int m, const S* __restrict__ r, S* __restrict__ at,
                                   unsigned int* __restrict__ builds, const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;  // the build's guard: skipped with it
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) builds[0] += 1u;
  if (i >= m) return;
  for (int k = 0; k < 3; ++k) at[3 * i + k] = r[3 * i + k];
}
