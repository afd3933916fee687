// Rigid molecules on the GPU: the sites turned by the quaternions, the cells over the centres, and the
// traversals that call the molecule-pair body of molecules.cuh (host: strategies/molecules_cuda.py).
//
// The full-shell and all-pairs traversals visit each pair from both sides (a thread or warp writes only
// its own molecule's force and torque, the same bits run after run; c08 below visits each once); the
// energy and the virial
// W = sum over pairs of d F_i^T (d = c_i - c_j, the centre-of-mass convention, 9 entries: a molecule
// system's virial is not symmetric) are summed per block into `partial` (kMolSums values a slot) with
// the molecule pairs into `count`, and halved on the host where every pair was visited twice. Centres are relative to the box centre.
//   allpairs_thread_naive   a thread per molecule i against every j (minimum image)
//   fullshell_thread_csr    a thread per molecule (in cell order) over the 27 cells around its own
//   fullshell_warp_csr      a warp per molecule, its lanes over the candidates of those cells (the
//                           heavy body spread over 32 lanes: ls1-MarDyn's warp-per-molecule idea),
//                           then a warp sum of force, torque, energy and virial
//   c08_thread_csr          Newton3: the c08 colours of the cells, a launch per colour, a thread per
//                           base cell over the 14 cell pairs of its 2x2x2 block (strategies/schedules.py);
//                           each pair once, its force subtracted from j and j's torque from the pair's
//                           conserved angular momentum (torque_on_j); bases of one colour touch disjoint
//                           cells, so the adds need no atomics and their order is fixed
//   verlet_thread_padded    a list over the centres within the cutoff and a skin, a padded row per
//                           molecule (molecule_list_build), kept across steps while the centres stay
//                           within half the skin (the host decides); a thread per molecule over its row
//   verlet_warp_padded      the same list, a warp per molecule over its row, then a warp sum
#include "molecules.cuh"

constexpr int kMolSums = 10;  // energy, then the 9 virial entries W_ab = sum d_a F_b

// Lab-frame sites from the body frame: one thread per site. quat (w, x, y, z) per molecule, unit length.
template <typename Real>
__global__ void molecule_sites(const int nsites, const int* __restrict__ owner, const Real* __restrict__ quat,
                               const Vec4<Real>* __restrict__ bodyA, const Vec4<Real>* __restrict__ bodyE,
                               Vec4<Real>* __restrict__ A, Vec4<Real>* __restrict__ E) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= nsites) return;
  const int i = owner[s];
  const Real w = quat[4 * i + 0], x = quat[4 * i + 1], y = quat[4 * i + 2], z = quat[4 * i + 3];
  const Vec4<Real> p = bodyA[s], d = bodyE[s];
  Vec4<Real> a{Real(0), Real(0), Real(0), p.w};
  rotate(w, x, y, z, p.x, p.y, p.z, a.x, a.y, a.z);
  A[s] = a;
  if (static_cast<int>(d.w) == kSiteLJ) {
    E[s] = d;  // (sigma, sqrt(epsilon), 0, kind): no direction to turn
  } else {
    Vec4<Real> e{Real(0), Real(0), Real(0), d.w};
    rotate(w, x, y, z, d.x, d.y, d.z, e.x, e.y, e.z);
    E[s] = e;
  }
}

// Each molecule's cell (cells of side >= the cutoff over the centres; origin lo, `dims` cells of side
// `side` along each axis; centres outside on an open axis clamp to the first or last cell).
template <typename Real>
__global__ void molecule_cell_of(const int m, const Vec4<Real>* __restrict__ c, const Real lox, const Real loy,
                                 const Real loz, const Real sx, const Real sy, const Real sz, const int nx, const int ny,
                                 const int nz, int* __restrict__ cell) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const Vec4<Real> p = c[i];
  const int ix = min(max(static_cast<int>(floor((p.x - lox) / sx)), 0), nx - 1);
  const int iy = min(max(static_cast<int>(floor((p.y - loy) / sy)), 0), ny - 1);
  const int iz = min(max(static_cast<int>(floor((p.z - loz) / sz)), 0), nz - 1);
  cell[i] = (ix * ny + iy) * nz + iz;
}

// One thread's (or lane's) sums.
template <typename Real, typename Acc>
struct MoleculeAcc {
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0), tx = Acc(0), ty = Acc(0), tz = Acc(0);
  Acc s[kMolSums] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  unsigned int pairs = 0u;

  template <bool ENERGY>
  __device__ __forceinline__ void add(const MoleculePairResult<Real>& o, Real dx, Real dy, Real dz) {
    fx += Acc(o.fx);
    fy += Acc(o.fy);
    fz += Acc(o.fz);
    tx += Acc(o.tx);
    ty += Acc(o.ty);
    tz += Acc(o.tz);
    if constexpr (ENERGY) {
      s[0] += Acc(o.u);
      s[1] += Acc(dx * o.fx);
      s[2] += Acc(dx * o.fy);
      s[3] += Acc(dx * o.fz);
      s[4] += Acc(dy * o.fx);
      s[5] += Acc(dy * o.fy);
      s[6] += Acc(dy * o.fz);
      s[7] += Acc(dz * o.fx);
      s[8] += Acc(dz * o.fy);
      s[9] += Acc(dz * o.fz);
      ++pairs;
    }
  }

  __device__ __forceinline__ void store(int i, Acc* __restrict__ force, Acc* __restrict__ torque) const {
    force[3 * i + 0] = fx;
    force[3 * i + 1] = fy;
    force[3 * i + 2] = fz;
    torque[3 * i + 0] = tx;
    torque[3 * i + 1] = ty;
    torque[3 * i + 2] = tz;
  }
};

// The block's energy, virial and pair count into slot `slot` of partial and count (every thread calls
// it): warp sums, then the warps' sums in warp 0, in a fixed order.
template <int BLOCK, typename Acc>
__device__ __forceinline__ void molecule_block_sums(Acc (&v)[kMolSums], unsigned long long n, Acc* __restrict__ partial,
                                                    unsigned long long* __restrict__ count, int slot) {
  constexpr int kWarps = BLOCK / 32;
  __shared__ Acc s_v[kWarps][kMolSums];
  __shared__ unsigned long long s_n[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kMolSums; ++k) v[k] = warp_sum(v[k]);
  n = warp_sum(n);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kMolSums; ++k) s_v[warp][k] = v[k];
    s_n[warp] = n;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < kMolSums; ++k) v[k] = warp_sum(lane < kWarps ? s_v[lane][k] : Acc(0));
    n = warp_sum(lane < kWarps ? s_n[lane] : 0ull);
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < kMolSums; ++k) partial[slot * kMolSums + k] = v[k];
      count[slot] = n;
    }
  }
}

template <bool PBC, typename Real>
__device__ __forceinline__ Real centre_separation(const Vec4<Real>& ci, const Vec4<Real>& cj, const Box<Real>& box,
                                                  Real& dx, Real& dy, Real& dz) {
  return separation<PBC>(ci, cj, box, dx, dy, dz);
}

template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_allpairs_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                         const Real* __restrict__ params, const int* __restrict__ first, const int* __restrict__ comp,
                         const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E, Acc* __restrict__ force,
                         Acc* __restrict__ torque, Acc* __restrict__ partial, unsigned long long* __restrict__ count) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (i < m) {
    const Vec4<Real> ci = c[i];
    for (int j = 0; j < m; ++j) {
      Real dx, dy, dz;
      const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
      if (r2 < model.rc2 && j != i) acc.template add<ENERGY>(molecule_pair(model, i, j, dx, dy, dz), dx, dy, dz);
    }
    acc.store(i, force, torque);
  }
  if constexpr (ENERGY) molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count,
                                                         blockIdx.x);
}

// The neighbour-cell range along one axis: -1..1, fewer where the axis has fewer than 3 cells (each
// neighbour cell once) or is open (no wrap past its ends).
__device__ __forceinline__ void cell_range(int c, int n, bool periodic, int& lo, int& hi) {
  if (n >= 3 || !periodic) {
    lo = (!periodic && c == 0) ? 0 : -1;
    hi = (!periodic && c == n - 1) ? 0 : 1;
  } else {
    lo = 0;
    hi = n - 1;  // 1 or 2 cells: every cell once, as offsets 0 .. n - 1
  }
}

__device__ __forceinline__ int wrap_cell(int c, int n) { return c < 0 ? c + n : (c >= n ? c - n : c); }

// fullshell_thread_csr: thread t takes molecule order[t] (cell order: a warp's molecules share their
// cells), then the molecules of the 27 cells around its own, each pair with the minimum image.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_fullshell_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                          const int* __restrict__ cell, const int* __restrict__ start, const int* __restrict__ order,
                          const int nx, const int ny, const int nz, const int px, const int py, const int pz,
                          const Real* __restrict__ params, const int* __restrict__ first, const int* __restrict__ comp,
                          const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E, Acc* __restrict__ force,
                          Acc* __restrict__ torque, Acc* __restrict__ partial, unsigned long long* __restrict__ count) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (t < m) {
    const int i = order[t];
    const Vec4<Real> ci = c[i];
    const int cc = cell[i];
    const int cz = cc % nz, cy = (cc / nz) % ny, cx = cc / (nz * ny);
    int xl, xh, yl, yh, zl, zh;
    cell_range(cx, nx, px, xl, xh);
    cell_range(cy, ny, py, yl, yh);
    cell_range(cz, nz, pz, zl, zh);
    const bool fx = !(nx >= 3 || !px), fy = !(ny >= 3 || !py), fz = !(nz >= 3 || !pz);  // absolute cell index
    for (int ox = xl; ox <= xh; ++ox) {
      const int bx = fx ? ox : wrap_cell(cx + ox, nx);
      for (int oy = yl; oy <= yh; ++oy) {
        const int by = fy ? oy : wrap_cell(cy + oy, ny);
        for (int oz = zl; oz <= zh; ++oz) {
          const int bz = fz ? oz : wrap_cell(cz + oz, nz);
          const int nb = (bx * ny + by) * nz + bz;
          for (int q = start[nb]; q < start[nb + 1]; ++q) {
            const int j = order[q];
            Real dx, dy, dz;
            const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
            if (r2 < model.rc2 && j != i) acc.template add<ENERGY>(molecule_pair(model, i, j, dx, dy, dz), dx, dy, dz);
          }
        }
      }
    }
    acc.store(i, force, torque);
  }
  if constexpr (ENERGY) molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count,
                                                         blockIdx.x);
}

// fullshell_warp_csr: warp w takes molecule order[w]; lane l the candidates l, l + 32, ... of the 27
// cells' molecules (concatenated in cell order); the lanes' sums then added across the warp in a fixed
// order (warp_sum), lane 0 writing the molecule's force and torque.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_fullshell_warp(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                        const int* __restrict__ cell, const int* __restrict__ start, const int* __restrict__ order,
                        const int nx, const int ny, const int nz, const int px, const int py, const int pz,
                        const Real* __restrict__ params, const int* __restrict__ first, const int* __restrict__ comp,
                        const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E, Acc* __restrict__ force,
                        Acc* __restrict__ torque, Acc* __restrict__ partial, unsigned long long* __restrict__ count) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * BLOCK + threadIdx.x) >> 5;
  MoleculeAcc<Real, Acc> acc;
  if (w < m) {  // the whole warp takes the same branch
    const int i = order[w];
    const Vec4<Real> ci = c[i];
    const int cc = cell[i];
    const int cz = cc % nz, cy = (cc / nz) % ny, cx = cc / (nz * ny);
    int xl, xh, yl, yh, zl, zh;
    cell_range(cx, nx, px, xl, xh);
    cell_range(cy, ny, py, yl, yh);
    cell_range(cz, nz, pz, zl, zh);
    const bool fx = !(nx >= 3 || !px), fy = !(ny >= 3 || !py), fz = !(nz >= 3 || !pz);
    for (int ox = xl; ox <= xh; ++ox) {
      const int bx = fx ? ox : wrap_cell(cx + ox, nx);
      for (int oy = yl; oy <= yh; ++oy) {
        const int by = fy ? oy : wrap_cell(cy + oy, ny);
        for (int oz = zl; oz <= zh; ++oz) {
          const int bz = fz ? oz : wrap_cell(cz + oz, nz);
          const int nb = (bx * ny + by) * nz + bz;
          for (int q = start[nb] + lane; q < start[nb + 1]; q += 32) {
            const int j = order[q];
            Real dx, dy, dz;
            const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
            if (r2 < model.rc2 && j != i) acc.template add<ENERGY>(molecule_pair(model, i, j, dx, dy, dz), dx, dy, dz);
          }
        }
      }
    }
    __syncwarp();
    const Acc sfx = warp_sum(acc.fx), sfy = warp_sum(acc.fy), sfz = warp_sum(acc.fz);
    const Acc stx = warp_sum(acc.tx), sty = warp_sum(acc.ty), stz = warp_sum(acc.tz);
    if (lane == 0) {
      force[3 * i + 0] = sfx;
      force[3 * i + 1] = sfy;
      force[3 * i + 2] = sfz;
      torque[3 * i + 0] = stx;
      torque[3 * i + 1] = sty;
      torque[3 * i + 2] = stz;
    }
  }
  if constexpr (ENERGY) molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count,
                                                         blockIdx.x);
}

// The c08 offsets: the 14 pairs of cells of a 2x2x2 block whose base is at offset (0, 0, 0)
// (strategies/schedules.py C08_PAIRS: the base with itself, then the 13 pairs that cover every pair of
// neighbouring cells once over all bases).
__constant__ int kC08Pairs[14][2][3] = {
    {{0, 0, 0}, {0, 0, 0}}, {{0, 0, 0}, {1, 0, 0}}, {{0, 0, 0}, {0, 1, 0}}, {{0, 0, 0}, {0, 0, 1}},
    {{0, 0, 0}, {1, 1, 0}}, {{0, 0, 0}, {1, 0, 1}}, {{0, 0, 0}, {0, 1, 1}}, {{0, 0, 0}, {1, 1, 1}},
    {{1, 0, 0}, {0, 1, 0}}, {{1, 0, 0}, {0, 0, 1}}, {{0, 1, 0}, {0, 0, 1}}, {{1, 0, 0}, {0, 1, 1}},
    {{0, 1, 0}, {1, 0, 1}}, {{0, 0, 1}, {1, 1, 0}}};

// The cell at base + offset, wrapped on periodic axes; -1 outside the grid on an open axis.
__device__ __forceinline__ int block_cell(int bx, int by, int bz, const int (&o)[3], int nx, int ny, int nz, int px,
                                          int py, int pz) {
  int x = bx + o[0], y = by + o[1], z = bz + o[2];
  if (x >= nx) {
    if (!px) return -1;
    x -= nx;
  }
  if (y >= ny) {
    if (!py) return -1;
    y -= ny;
  }
  if (z >= nz) {
    if (!pz) return -1;
    z -= nz;
  }
  if (x < 0 || y < 0 || z < 0) return -1;
  return (x * ny + y) * nz + z;
}

// c08_thread_csr, one colour: thread t takes base bases[t] (3 ints); force and torque are added to
// (zeroed before the first colour), each pair once (Newton3); block sums into slot slot0 + blockIdx.x.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_c08_thread(const int nbases, const int* __restrict__ bases, const Vec4<Real>* __restrict__ c,
                    const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order, const int nx,
                    const int ny, const int nz, const int px, const int py, const int pz,
                    const Real* __restrict__ params, const int* __restrict__ first, const int* __restrict__ comp,
                    const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E, Acc* __restrict__ force,
                    Acc* __restrict__ torque, Acc* __restrict__ partial, unsigned long long* __restrict__ count,
                    const int slot0) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;  // energy, virial and pairs only: forces and torques go to global memory
  if (t < nbases) {
    const int bx = bases[3 * t + 0], by = bases[3 * t + 1], bz = bases[3 * t + 2];
    for (int p = 0; p < 14; ++p) {
      const int ca = block_cell(bx, by, bz, kC08Pairs[p][0], nx, ny, nz, px, py, pz);
      const int cb = block_cell(bx, by, bz, kC08Pairs[p][1], nx, ny, nz, px, py, pz);
      if (ca < 0 || cb < 0) continue;
      for (int qi = start[ca]; qi < start[ca + 1]; ++qi) {
        const int i = order[qi];
        const Vec4<Real> ci = c[i];
        Acc fx = Acc(0), fy = Acc(0), fz = Acc(0), tx = Acc(0), ty = Acc(0), tz = Acc(0);
        for (int qj = (ca == cb ? qi + 1 : start[cb]); qj < start[cb + 1]; ++qj) {
          const int j = order[qj];
          Real dx, dy, dz;
          const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
          if (!(r2 < model.rc2)) continue;
          const MoleculePairResult<Real> o = molecule_pair(model, i, j, dx, dy, dz);
          Real sx, sy, sz;
          torque_on_j(o, dx, dy, dz, sx, sy, sz);
          fx += Acc(o.fx);
          fy += Acc(o.fy);
          fz += Acc(o.fz);
          tx += Acc(o.tx);
          ty += Acc(o.ty);
          tz += Acc(o.tz);
          force[3 * j + 0] -= Acc(o.fx);
          force[3 * j + 1] -= Acc(o.fy);
          force[3 * j + 2] -= Acc(o.fz);
          torque[3 * j + 0] += Acc(sx);
          torque[3 * j + 1] += Acc(sy);
          torque[3 * j + 2] += Acc(sz);
          if constexpr (ENERGY) {
            acc.s[0] += Acc(o.u);
            acc.s[1] += Acc(dx * o.fx);
            acc.s[2] += Acc(dx * o.fy);
            acc.s[3] += Acc(dx * o.fz);
            acc.s[4] += Acc(dy * o.fx);
            acc.s[5] += Acc(dy * o.fy);
            acc.s[6] += Acc(dy * o.fz);
            acc.s[7] += Acc(dz * o.fx);
            acc.s[8] += Acc(dz * o.fy);
            acc.s[9] += Acc(dz * o.fz);
            ++acc.pairs;
          }
        }
        force[3 * i + 0] += fx;
        force[3 * i + 1] += fy;
        force[3 * i + 2] += fz;
        torque[3 * i + 0] += tx;
        torque[3 * i + 1] += ty;
        torque[3 * i + 2] += tz;
      }
    }
  }
  if constexpr (ENERGY) {
    molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count, slot0 + blockIdx.x);
  }
}

// The Verlet list over the centres: thread t takes molecule order[t] (cell order) and writes the
// molecules within `reach` (the cutoff and the skin) of the 27 cells around its own into its padded row
// list[i * cap ...], in cell order, and their number into counts[i] (beyond cap: counted, not written;
// the host builds again with a wider row).
template <typename Real, bool PBC>
__global__ void molecule_list_build(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                                    const int* __restrict__ cell, const int* __restrict__ start,
                                    const int* __restrict__ order, const int nx, const int ny, const int nz,
                                    const int px, const int py, const int pz, const Real reach2, const int cap,
                                    int* __restrict__ list, int* __restrict__ counts) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= m) return;
  const int i = order[t];
  const Vec4<Real> ci = c[i];
  const int cc = cell[i];
  const int cz = cc % nz, cy = (cc / nz) % ny, cx = cc / (nz * ny);
  int xl, xh, yl, yh, zl, zh;
  cell_range(cx, nx, px, xl, xh);
  cell_range(cy, ny, py, yl, yh);
  cell_range(cz, nz, pz, zl, zh);
  const bool fx = !(nx >= 3 || !px), fy = !(ny >= 3 || !py), fz = !(nz >= 3 || !pz);
  int n = 0;
  for (int ox = xl; ox <= xh; ++ox) {
    const int bx = fx ? ox : wrap_cell(cx + ox, nx);
    for (int oy = yl; oy <= yh; ++oy) {
      const int by = fy ? oy : wrap_cell(cy + oy, ny);
      for (int oz = zl; oz <= zh; ++oz) {
        const int bz = fz ? oz : wrap_cell(cz + oz, nz);
        const int nb = (bx * ny + by) * nz + bz;
        for (int q = start[nb]; q < start[nb + 1]; ++q) {
          const int j = order[q];
          Real dx, dy, dz;
          if (j != i && centre_separation<PBC>(ci, c[j], box, dx, dy, dz) < reach2) {
            if (n < cap) list[static_cast<size_t>(i) * cap + n] = j;
            ++n;
          }
        }
      }
    }
  }
  counts[i] = n;
}

// verlet_thread_padded: thread t takes molecule order[t] over its list row, each pair within the cutoff
// (both directions: no Newton3).
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_verlet_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                       const int* __restrict__ order, const int* __restrict__ list, const int* __restrict__ counts,
                       const int cap, const Real* __restrict__ params, const int* __restrict__ first,
                       const int* __restrict__ comp, const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E,
                       Acc* __restrict__ force, Acc* __restrict__ torque, Acc* __restrict__ partial,
                       unsigned long long* __restrict__ count) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (t < m) {
    const int i = order[t];
    const Vec4<Real> ci = c[i];
    const int* row = list + static_cast<size_t>(i) * cap;
    const int n = counts[i];
    for (int k = 0; k < n; ++k) {
      const int j = row[k];
      Real dx, dy, dz;
      const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
      if (r2 < model.rc2) acc.template add<ENERGY>(molecule_pair(model, i, j, dx, dy, dz), dx, dy, dz);
    }
    acc.store(i, force, torque);
  }
  if constexpr (ENERGY) {
    molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count, blockIdx.x);
  }
}

// verlet_warp_padded: warp w takes molecule order[w], its lanes the row's entries l, l + 32, ...; then a
// warp sum in a fixed order, lane 0 writing the force and torque.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY>
__global__ void __launch_bounds__(BLOCK)
molecule_verlet_warp(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                     const int* __restrict__ order, const int* __restrict__ list, const int* __restrict__ counts,
                     const int cap, const Real* __restrict__ params, const int* __restrict__ first,
                     const int* __restrict__ comp, const Vec4<Real>* __restrict__ A, const Vec4<Real>* __restrict__ E,
                     Acc* __restrict__ force, Acc* __restrict__ torque, Acc* __restrict__ partial,
                     unsigned long long* __restrict__ count) {
  const MoleculeModel<Real> model(params, first, comp, A, E);
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * BLOCK + threadIdx.x) >> 5;
  MoleculeAcc<Real, Acc> acc;
  if (w < m) {  // the whole warp takes the same branch
    const int i = order[w];
    const Vec4<Real> ci = c[i];
    const int* row = list + static_cast<size_t>(i) * cap;
    const int n = counts[i];
    for (int k = lane; k < n; k += 32) {
      const int j = row[k];
      Real dx, dy, dz;
      const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
      if (r2 < model.rc2) acc.template add<ENERGY>(molecule_pair(model, i, j, dx, dy, dz), dx, dy, dz);
    }
    __syncwarp();
    const Acc sfx = warp_sum(acc.fx), sfy = warp_sum(acc.fy), sfz = warp_sum(acc.fz);
    const Acc stx = warp_sum(acc.tx), sty = warp_sum(acc.ty), stz = warp_sum(acc.tz);
    if (lane == 0) {
      force[3 * i + 0] = sfx;
      force[3 * i + 1] = sfy;
      force[3 * i + 2] = sfz;
      torque[3 * i + 0] = stx;
      torque[3 * i + 1] = sty;
      torque[3 * i + 2] = stz;
    }
  }
  if constexpr (ENERGY) {
    molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count, blockIdx.x);
  }
}
