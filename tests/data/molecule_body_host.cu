// The molecule-pair body of strategies/kernels/molecules.cuh compiled for the host (nvcc, no GPU needed):
// tests/test_gpu_molecules.py writes a system and a list of molecule pairs, this program turns the sites
// by the quaternions (rotate, as molecule_sites does) and evaluates molecule_pair and torque_on_j on each
// pair. REAL is float or double (-DREAL=...). Input and output are raw little-endian arrays:
//   in:  int32 nsites, M, npairs, C; REAL params[8 + 2 C^2 + 3 C]; int32 first[M + 1], comp[M], owner[nsites];
//        REAL bodyA[nsites][4], bodyE[nsites][4], quat[M][4]; per pair int32 i, j, REAL dx, dy, dz
//   out: per pair REAL fx, fy, fz, tx, ty, tz, u, then the torque on j (3)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef __CUDA_ARCH__  // the host pass sees common.cuh's fixed-point constructors: host spellings of their intrinsics
#define __float2ll_rn(x) llrintf(x)
#define __double2ll_rn(x) llrint(x)
#endif

#include "molecules.cuh"

template <typename T>
static void take(FILE* f, T* p, size_t n) {
  if (fread(p, sizeof(T), n, f) != n) {
    fprintf(stderr, "short input\n");
    exit(2);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
    return 2;
  }
  using Real = REAL;
  FILE* in = fopen(argv[1], "rb");
  if (!in) return 2;
  int head[4];
  take(in, head, 4);
  const int nsites = head[0], m = head[1], npairs = head[2], C = head[3];
  std::vector<Real> params(molecule_params_size(C));
  take(in, params.data(), params.size());
  std::vector<int> first(m + 1), comp(m), owner(nsites);
  take(in, first.data(), first.size());
  take(in, comp.data(), comp.size());
  std::vector<int4> span(m);  // the device's per-molecule site spans, as molecules_cuda builds them
  for (int i = 0; i < m; ++i) span[i] = molecule_span(params.data(), first[i], first[i + 1], comp[i]);
  take(in, owner.data(), owner.size());
  std::vector<Vec4<Real>> bodyA(nsites), bodyE(nsites), A(nsites), E(nsites);
  std::vector<Real> quat(4 * m);
  take(in, reinterpret_cast<Real*>(bodyA.data()), 4 * nsites);
  take(in, reinterpret_cast<Real*>(bodyE.data()), 4 * nsites);
  take(in, quat.data(), quat.size());
  for (int s = 0; s < nsites; ++s) {  // molecule_sites' work
    const Real* q = &quat[4 * owner[s]];
    turn_site(q[0], q[1], q[2], q[3], bodyA[s], bodyE[s], A[s], E[s]);
  }
  const MoleculeModel<Real> model(params.data(), C == 1 ? nullptr : span.data(), comp.data(), A.data(),
                                 E.data());  // one component: no spans, as the plan passes them
  FILE* out = fopen(argv[2], "wb");
  if (!out) return 2;
  for (int k = 0; k < npairs; ++k) {
    int ij[2];
    Real d[3];
    take(in, ij, 2);
    take(in, d, 3);
    const MoleculePairResult<Real> o = molecule_pair(model, ij[0], ij[1], d[0], d[1], d[2]);
    Real tj[3];
    torque_on_j(o, d[0], d[1], d[2], tj[0], tj[1], tj[2]);
    const Real row[10] = {o.fx, o.fy, o.fz, o.tx, o.ty, o.tz, o.u, tj[0], tj[1], tj[2]};
    fwrite(row, sizeof(Real), 10, out);
  }
  fclose(out);
  fclose(in);
  return 0;
}
