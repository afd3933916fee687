// The NO_SQUISH rigid-body integrator (mdcore/rigid.py: Miller et al., J. Chem. Phys. 116, 8649 (2002)) for
// one molecule, so that a GPU molecule traversal's MD step stays on the device (molecule_md.cu's
// rigid_kick and rigid_drift, a thread per molecule). __host__ __device__: the CI test compiles these for
// the host and checks them against mdcore.rigid (tests/data/rigid_host.cu).
//
// State per molecule in the type S (the precision mode's accumulation type): centre r (3, in [0, L) on
// periodic axes), momentum p (3), unit quaternion q (w, x, y, z) and its conjugate momentum pi (4); mass m
// and principal moments I (3). One step of dt is kick(dt/2), drift(dt), the forces, kick(dt/2):
//   kick:   p += h F;  pi += h 2 S(q) (0, R(q)^T tau)   (no torque about an axis of zero moment)
//   drift:  r += dt p / m (wrapped); the free rotation R_3(dt/2) R_2(dt/2) R_1(dt) R_2(dt/2) R_3(dt/2),
//           each about one body axis k: zeta = (pi . P_k q) / (4 I_k), q <- cos(zeta h) q + sin(zeta h)
//           P_k q, pi <- cos(zeta h) pi + sin(zeta h) P_k pi; for a linear molecule the angular momentum
//           about its own axis projected out after it.
#pragma once

// The functions in each type by name (float's sinf, cosf, floorf: no float64 in fp32 code).
__host__ __device__ __forceinline__ float rigid_sin(float x) { return sinf(x); }
__host__ __device__ __forceinline__ double rigid_sin(double x) { return sin(x); }
__host__ __device__ __forceinline__ float rigid_cos(float x) { return cosf(x); }
__host__ __device__ __forceinline__ double rigid_cos(double x) { return cos(x); }
__host__ __device__ __forceinline__ float rigid_floor(float x) { return floorf(x); }
__host__ __device__ __forceinline__ double rigid_floor(double x) { return floor(x); }

// P_k v for k = 1, 2, 3.
template <typename S>
__host__ __device__ __forceinline__ void rigid_p(int k, const S (&v)[4], S (&o)[4]) {
  if (k == 1) {
    o[0] = -v[1], o[1] = v[0], o[2] = v[3], o[3] = -v[2];
  } else if (k == 2) {
    o[0] = -v[2], o[1] = -v[3], o[2] = v[0], o[3] = v[1];
  } else {
    o[0] = -v[3], o[1] = v[2], o[2] = -v[1], o[3] = v[0];
  }
}

// S(q) (0, v): the quaternion product q * (0, v).
template <typename S>
__host__ __device__ __forceinline__ void rigid_s_times(const S (&q)[4], S a, S b, S c, S (&o)[4]) {
  o[0] = -q[1] * a - q[2] * b - q[3] * c;
  o[1] = q[0] * a - q[3] * b + q[2] * c;
  o[2] = q[3] * a + q[0] * b - q[1] * c;
  o[3] = -q[2] * a + q[1] * b + q[0] * c;
}

// The half kick of molecule i by force f and lab-frame torque t over h.
template <typename S>
__host__ __device__ __forceinline__ void rigid_kick(S (&p)[3], S (&pi)[4], const S (&q)[4], const S (&inertia)[3],
                                                    S fx, S fy, S fz, S tx, S ty, S tz, S h) {
  p[0] += h * fx;
  p[1] += h * fy;
  p[2] += h * fz;
  const S w = q[0], x = q[1], y = q[2], z = q[3];
  // R(q)^T t: the rows of R are its columns here
  const S r00 = S(1) - S(2) * (y * y + z * z), r01 = S(2) * (x * y - w * z), r02 = S(2) * (x * z + w * y);
  const S r10 = S(2) * (x * y + w * z), r11 = S(1) - S(2) * (x * x + z * z), r12 = S(2) * (y * z - w * x);
  const S r20 = S(2) * (x * z - w * y), r21 = S(2) * (y * z + w * x), r22 = S(1) - S(2) * (x * x + y * y);
  S b0 = r00 * tx + r10 * ty + r20 * tz, b1 = r01 * tx + r11 * ty + r21 * tz, b2 = r02 * tx + r12 * ty + r22 * tz;
  b0 = inertia[0] > S(0) ? b0 : S(0);
  b1 = inertia[1] > S(0) ? b1 : S(0);
  b2 = inertia[2] > S(0) ? b2 : S(0);
  S d[4];
  rigid_s_times(q, b0, b1, b2, d);
  for (int k = 0; k < 4; ++k) pi[k] += h * S(2) * d[k];
}

// The drift of molecule i over dt: the centre (wrapped into [0, L) on periodic axes) and the free rotation.
template <typename S>
__host__ __device__ __forceinline__ void rigid_drift(S (&r)[3], const S (&p)[3], S (&q)[4], S (&pi)[4], S mass,
                                                     const S (&inertia)[3], S dt, const S (&box)[3],
                                                     const int (&periodic)[3]) {
  for (int a = 0; a < 3; ++a) {
    r[a] += dt * p[a] / mass;
    if (periodic[a]) {
      r[a] -= box[a] * rigid_floor(r[a] / box[a]);
      if (r[a] >= box[a]) r[a] -= box[a];  // -tiny wraps to L in rounding
    }
  }
  const int axes[5] = {3, 2, 1, 2, 3};
  const S steps[5] = {S(0.5), S(0.5), S(1), S(0.5), S(0.5)};
  bool linear = false;
  for (int a = 0; a < 5; ++a) {
    const int k = axes[a];
    const S moment = inertia[k - 1];
    if (!(moment > S(0))) {
      linear = true;
      continue;
    }
    const S h = steps[a] * dt;
    S pq[4], pp[4];
    rigid_p(k, q, pq);
    rigid_p(k, pi, pp);
    const S zeta = (pi[0] * pq[0] + pi[1] * pq[1] + pi[2] * pq[2] + pi[3] * pq[3]) / (S(4) * moment);
    const S c = rigid_cos(zeta * h), s = rigid_sin(zeta * h);
    for (int x = 0; x < 4; ++x) {
      q[x] = c * q[x] + s * pq[x];
      pi[x] = c * pi[x] + s * pp[x];
    }
  }
  if (linear) {  // pi from the body angular momentum with the zero-moment components 0
    S l[3];
    for (int k = 1; k <= 3; ++k) {
      S pq[4];
      rigid_p(k, q, pq);
      l[k - 1] = inertia[k - 1] > S(0) ? S(0.5) * (pq[0] * pi[0] + pq[1] * pi[1] + pq[2] * pi[2] + pq[3] * pi[3])
                                       : S(0);
    }
    S d[4];
    rigid_s_times(q, l[0], l[1], l[2], d);
    for (int k = 0; k < 4; ++k) pi[k] = S(2) * d[k];
  }
}
