// strategies/kernels/rigid.cuh compiled for the host (nvcc; no GPU needed), for tests/test_gpu_molecules.py:
// per molecule kick(h, F, tau), drift(dt), kick(h, F, tau) with the forces and torques given. Input, raw
// little-endian double arrays: int32 M, periodic[3]; box[3], dt; per molecule r[3], p[3], q[4], pi[4],
// mass, inertia[3], force[3], torque[3]. Output: per molecule r[3], p[3], q[4], pi[4].
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "rigid.cuh"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* in = fopen(argv[1], "rb");
  FILE* out = fopen(argv[2], "wb");
  if (!in || !out) return 2;
  int head[4];
  double box[3], dt;
  if (fread(head, sizeof(int), 4, in) != 4 || fread(box, sizeof(double), 3, in) != 3 ||
      fread(&dt, sizeof(double), 1, in) != 1)
    return 2;
  const int periodic[3] = {head[1], head[2], head[3]};
  for (int i = 0; i < head[0]; ++i) {
    double v[24];
    if (fread(v, sizeof(double), 24, in) != 24) return 2;
    double r[3] = {v[0], v[1], v[2]}, p[3] = {v[3], v[4], v[5]}, q[4] = {v[6], v[7], v[8], v[9]};
    double pi[4] = {v[10], v[11], v[12], v[13]}, inertia[3] = {v[15], v[16], v[17]};
    const double mass = v[14];
    rigid_kick(p, pi, q, inertia, v[18], v[19], v[20], v[21], v[22], v[23], 0.5 * dt);
    rigid_drift(r, p, q, pi, mass, inertia, dt, box, periodic);
    rigid_kick(p, pi, q, inertia, v[18], v[19], v[20], v[21], v[22], v[23], 0.5 * dt);
    const double o[14] = {r[0], r[1], r[2], p[0], p[1], p[2], q[0], q[1], q[2], q[3], pi[0], pi[1], pi[2], pi[3]};
    fwrite(o, sizeof(double), 14, out);
  }
  fclose(in);
  fclose(out);
  return 0;
}
