// What one thread (or one lane) of a molecule traversal does (molecules.cu's kernels are thin wrappers
// around these): __host__ __device__, so that the CI test compiles them for the host and runs every
// thread's work in turn (tests/data/molecule_kernels_host.cu), no GPU needed.
//
// `lane` and `step`: a thread takes every candidate (0, 1); lane l of a warp every 32nd from l (l, 32).
// NL, NQ: the site shape of the pair body (molecules.cuh pair_body): NL + NQ > 0 unrolls it for a uniform
// system of that many Lennard-Jones centres and charges, molecule i's sites loaded once per i
// (ShapedSites); 0, 0 (the default) takes the general loops.
#pragma once
#include "molecules.cuh"

constexpr int kMolSums = 10;  // energy, then the 9 virial entries W_ab = sum d_a F_b

// The centres' cells: per axis the count and whether the axis is periodic.
struct MoleculeGrid {
  int nx, ny, nz, px, py, pz;
};

// d = c_i - c_j, the minimum image on periodic axes (the box's inverse length is 0 on an open one);
// returns |d|^2.
template <bool PBC, typename Real>
__host__ __device__ __forceinline__ Real centre_separation(const Vec4<Real>& ci, const Vec4<Real>& cj,
                                                           const Box<Real>& box, Real& dx, Real& dy, Real& dz) {
  dx = ci.x - cj.x;
  dy = ci.y - cj.y;
  dz = ci.z - cj.z;
  if constexpr (PBC) {
    dx -= box.lx * rint(dx * box.ilx);
    dy -= box.ly * rint(dy * box.ily);
    dz -= box.lz * rint(dz * box.ilz);
  }
  return dx * dx + dy * dy + dz * dz;
}

// The cell of a centre: origin lo, side s, n cells per axis; a centre outside (an open axis's rounding)
// clamps to the first or last cell.
template <typename Real>
__host__ __device__ __forceinline__ int cell_index(const Vec4<Real>& p, Real lox, Real loy, Real loz, Real sx, Real sy,
                                                   Real sz, int nx, int ny, int nz) {
  const int ix = min(max(static_cast<int>(floor((p.x - lox) / sx)), 0), nx - 1);
  const int iy = min(max(static_cast<int>(floor((p.y - loy) / sy)), 0), ny - 1);
  const int iz = min(max(static_cast<int>(floor((p.z - loz) / sz)), 0), nz - 1);
  return (ix * ny + iy) * nz + iz;
}

// The neighbour-cell offsets along one axis: -1..1, fewer on an open axis's ends; with fewer than 3 cells
// on a periodic axis every cell once, as absolute indices 0 .. n - 1 (`absolute`).
__host__ __device__ __forceinline__ void cell_range(int c, int n, int periodic, int& lo, int& hi, bool& absolute) {
  absolute = periodic && n < 3;
  if (absolute) {
    lo = 0;
    hi = n - 1;
  } else {
    lo = (!periodic && c == 0) ? 0 : -1;
    hi = (!periodic && c == n - 1) ? 0 : 1;
  }
}

__host__ __device__ __forceinline__ int wrap_cell(int c, int n) { return c < 0 ? c + n : (c >= n ? c - n : c); }

// visit(nb) for every cell nb around cell cc (its own included), each neighbour cell once, in a fixed
// order (x, then y, then z offsets ascending).
template <class Visit>
__host__ __device__ __forceinline__ void for_shell_cells(int cc, const MoleculeGrid& g, Visit&& visit) {
  const int cz = cc % g.nz, cy = (cc / g.nz) % g.ny, cx = cc / (g.nz * g.ny);
  int xl, xh, yl, yh, zl, zh;
  bool ax, ay, az;
  cell_range(cx, g.nx, g.px, xl, xh, ax);
  cell_range(cy, g.ny, g.py, yl, yh, ay);
  cell_range(cz, g.nz, g.pz, zl, zh, az);
  for (int ox = xl; ox <= xh; ++ox) {
    const int bx = ax ? ox : wrap_cell(cx + ox, g.nx);
    for (int oy = yl; oy <= yh; ++oy) {
      const int by = ay ? oy : wrap_cell(cy + oy, g.ny);
      for (int oz = zl; oz <= zh; ++oz) {
        const int bz = az ? oz : wrap_cell(cz + oz, g.nz);
        visit((bx * g.ny + by) * g.nz + bz);
      }
    }
  }
}

// visit(q) for the candidates q = start[nb] + lane, + step, ... of every cell nb around cell cc, each
// neighbour cell once.
template <class Visit>
__host__ __device__ __forceinline__ void for_shell(int cc, const MoleculeGrid& g, const int* __restrict__ start,
                                                   int lane, int step, Visit&& visit) {
  for_shell_cells(cc, g, [&](int nb) {
    for (int q = start[nb] + lane; q < start[nb + 1]; q += step) visit(q);
  });
}

// One thread's (or lane's) sums.
template <typename Real, typename Acc>
struct MoleculeAcc {
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0), tx = Acc(0), ty = Acc(0), tz = Acc(0);
  Acc s[kMolSums] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  unsigned int pairs = 0u;

  // The pair's energy, virial d F^T and count (ENERGY), without its force and torque (c08 writes those).
  template <bool ENERGY>
  __host__ __device__ __forceinline__ void sums(const MoleculePairResult<Real>& o, Real dx, Real dy, Real dz) {
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

  template <bool ENERGY>
  __host__ __device__ __forceinline__ void add(const MoleculePairResult<Real>& o, Real dx, Real dy, Real dz) {
    fx += Acc(o.fx);
    fy += Acc(o.fy);
    fz += Acc(o.fz);
    tx += Acc(o.tx);
    ty += Acc(o.ty);
    tz += Acc(o.tz);
    sums<ENERGY>(o, dx, dy, dz);
  }

  __host__ __device__ __forceinline__ void store(int i, Acc* __restrict__ force, Acc* __restrict__ torque) const {
    force[3 * i + 0] = fx;
    force[3 * i + 1] = fy;
    force[3 * i + 2] = fz;
    torque[3 * i + 0] = tx;
    torque[3 * i + 1] = ty;
    torque[3 * i + 2] = tz;
  }
};

// Molecule i against the candidates j = lane, lane + step, ... of all molecules.
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void allpairs_row(int i, int m, const Vec4<Real>* __restrict__ c,
                                                      const Box<Real>& box, const MoleculeModel<Real>& model,
                                                      MoleculeAcc<Real, Acc>& acc, int lane, int step) {
  const Vec4<Real> ci = c[i];
  const ShapedSites<NL, NQ, Real> si(model, i);
  for (int j = lane; j < m; j += step) {
    Real dx, dy, dz;
    const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
    if (r2 < model.rc2 && j != i) {
      acc.template add<ENERGY>(pair_body<NL, NQ>(model, si, i, j, dx, dy, dz), dx, dy, dz);
    }
  }
}

// Molecule i against its share (lane, step) of the molecules of the 27 cells around its own.
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void shell_row(int i, const Vec4<Real>* __restrict__ c, const Box<Real>& box,
                                                   const int* __restrict__ cell, const int* __restrict__ start,
                                                   const int* __restrict__ order, const MoleculeGrid& g,
                                                   const MoleculeModel<Real>& model, MoleculeAcc<Real, Acc>& acc,
                                                   int lane, int step) {
  const Vec4<Real> ci = c[i];
  const ShapedSites<NL, NQ, Real> si(model, i);
  for_shell(cell[i], g, start, lane, step, [&](int q) {
    const int j = order[q];
    Real dx, dy, dz;
    const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
    if (r2 < model.rc2 && j != i) {
      acc.template add<ENERGY>(pair_body<NL, NQ>(model, si, i, j, dx, dy, dz), dx, dy, dz);
    }
  });
}

// Molecule i's Verlet row: the molecules within reach (reach2 = reach^2) of the cells around its own,
// written to row[0 .. cap) in cell order; returns how many there are (beyond cap: counted, not written).
template <bool PBC, typename Real>
__host__ __device__ __forceinline__ int list_row_build(int i, const Vec4<Real>* __restrict__ c, const Box<Real>& box,
                                                       const int* __restrict__ cell, const int* __restrict__ start,
                                                       const int* __restrict__ order, const MoleculeGrid& g,
                                                       Real reach2, int cap, int* __restrict__ row) {
  const Vec4<Real> ci = c[i];
  int n = 0;
  for_shell(cell[i], g, start, 0, 1, [&](int q) {
    const int j = order[q];
    Real dx, dy, dz;
    if (j != i && centre_separation<PBC>(ci, c[j], box, dx, dy, dz) < reach2) {
      if (n < cap) row[n] = j;
      ++n;
    }
  });
  return n;
}

// Molecule i against its share (lane, step) of its Verlet row's n entries.
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void list_row(int i, const Vec4<Real>* __restrict__ c, const Box<Real>& box,
                                                  const int* __restrict__ row, int n, const MoleculeModel<Real>& model,
                                                  MoleculeAcc<Real, Acc>& acc, int lane, int step) {
  const Vec4<Real> ci = c[i];
  const ShapedSites<NL, NQ, Real> si(model, i);
  for (int k = lane; k < n; k += step) {
    const int j = row[k];
    Real dx, dy, dz;
    const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
    if (r2 < model.rc2) acc.template add<ENERGY>(pair_body<NL, NQ>(model, si, i, j, dx, dy, dz), dx, dy, dz);
  }
}

// The cell at base + offset, wrapped on periodic axes; -1 outside the grid on an open axis.
__host__ __device__ __forceinline__ int block_cell(int bx, int by, int bz, int ox, int oy, int oz,
                                                   const MoleculeGrid& g) {
  int x = bx + ox, y = by + oy, z = bz + oz;
  if (x >= g.nx) {
    if (!g.px) return -1;
    x -= g.nx;
  }
  if (y >= g.ny) {
    if (!g.py) return -1;
    y -= g.ny;
  }
  if (z >= g.nz) {
    if (!g.pz) return -1;
    z -= g.nz;
  }
  if (x < 0 || y < 0 || z < 0) return -1;
  return (x * g.ny + y) * g.nz + z;
}

// The c08 cell pair p (0..13) of base (bx, by, bz): its two cells, or -1 where one lies outside an open
// axis's grid.
__host__ __device__ __forceinline__ void c08_cells(int p, int bx, int by, int bz, const MoleculeGrid& g, int& ca,
                                                   int& cb) {
  constexpr int kPairs[14][6] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 1},
                                 {0, 0, 0, 1, 1, 0}, {0, 0, 0, 1, 0, 1}, {0, 0, 0, 0, 1, 1}, {0, 0, 0, 1, 1, 1},
                                 {1, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 0, 1}, {0, 1, 0, 0, 0, 1}, {1, 0, 0, 0, 1, 1},
                                 {0, 1, 0, 1, 0, 1}, {0, 0, 1, 1, 1, 0}};
  ca = block_cell(bx, by, bz, kPairs[p][0], kPairs[p][1], kPairs[p][2], g);
  cb = block_cell(bx, by, bz, kPairs[p][3], kPairs[p][4], kPairs[p][5], g);
}

// fi[0..2] += the pair's force on i, fi[3..5] += its torque on i (in the accumulation type).
template <typename Real, typename Acc>
__host__ __device__ __forceinline__ void add_pair_to_i(const MoleculePairResult<Real>& o, Acc (&fi)[6]) {
  fi[0] += Acc(o.fx);
  fi[1] += Acc(o.fy);
  fi[2] += Acc(o.fz);
  fi[3] += Acc(o.tx);
  fi[4] += Acc(o.ty);
  fi[5] += Acc(o.tz);
}

// c08's warp form, one molecule i of cell pair (ca, cb) with Newton3: this lane's share (lane, step) of
// the candidates j of cb (after i where ca == cb), each pair's force subtracted from j and j's torque
// (torque_on_j) added in global memory, the pair's energy and virial into acc; returns the lane's part
// of the force and torque on i (the caller sums the lanes' parts and adds them to i). Within one i the
// lanes' j are distinct; the caller orders the i (a warp barrier between them).
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void c08_lane(int i, int qi, int ca, int cb, const Vec4<Real>* __restrict__ c,
                                                  const Box<Real>& box, const int* __restrict__ start,
                                                  const int* __restrict__ order, const MoleculeModel<Real>& model,
                                                  Acc* __restrict__ force, Acc* __restrict__ torque,
                                                  MoleculeAcc<Real, Acc>& acc, int lane, int step, Acc (&fi)[6]) {
  const Vec4<Real> ci = c[i];
  const ShapedSites<NL, NQ, Real> si(model, i);
  for (int k = 0; k < 6; ++k) fi[k] = Acc(0);
  for (int qj = (ca == cb ? qi + 1 : start[cb]) + lane; qj < start[cb + 1]; qj += step) {
    const int j = order[qj];
    Real dx, dy, dz;
    const Real r2 = centre_separation<PBC>(ci, c[j], box, dx, dy, dz);
    if (!(r2 < model.rc2)) continue;
    const MoleculePairResult<Real> o = pair_body<NL, NQ>(model, si, i, j, dx, dy, dz);
    Real sx, sy, sz;
    torque_on_j(o, dx, dy, dz, sx, sy, sz);
    add_pair_to_i(o, fi);
    force[3 * j + 0] -= Acc(o.fx);
    force[3 * j + 1] -= Acc(o.fy);
    force[3 * j + 2] -= Acc(o.fz);
    torque[3 * j + 0] += Acc(sx);
    torque[3 * j + 1] += Acc(sy);
    torque[3 * j + 2] += Acc(sz);
    acc.template sums<ENERGY>(o, dx, dy, dz);
  }
}

// force[i] += fi[0..2], torque[i] += fi[3..5]: what c08 adds to molecule i once its partners are done.
template <typename Acc>
__host__ __device__ __forceinline__ void add_to_molecule(int i, const Acc (&fi)[6], Acc* __restrict__ force,
                                                         Acc* __restrict__ torque) {
  for (int k = 0; k < 3; ++k) {
    force[3 * i + k] += fi[k];
    torque[3 * i + k] += fi[3 + k];
  }
}

// One cell pair (ca, cb) with Newton3, all of it by one thread (parity_thread_csr's cell pair, and each of
// c08_base's): every molecule i of ca against cb's molecules (after i where ca == cb), each pair once, the
// force and torque on i added once its partners are done, j's written as they come (c08_lane).
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void cell_pair_thread(int ca, int cb, const Vec4<Real>* __restrict__ c,
                                                          const Box<Real>& box, const int* __restrict__ start,
                                                          const int* __restrict__ order,
                                                          const MoleculeModel<Real>& model, Acc* __restrict__ force,
                                                          Acc* __restrict__ torque, MoleculeAcc<Real, Acc>& acc) {
  for (int qi = start[ca]; qi < start[ca + 1]; ++qi) {
    const int i = order[qi];
    Acc fi[6];
    c08_lane<PBC, ENERGY, NL, NQ>(i, qi, ca, cb, c, box, start, order, model, force, torque, acc, 0, 1, fi);
    add_to_molecule(i, fi, force, torque);
  }
}

// c08: the base cell (bx, by, bz)'s 14 cell pairs of its 2x2x2 block (strategies/schedules.py C08_PAIRS:
// the base with itself, then the 13 pairs that cover every pair of neighbouring cells once over all
// bases), each molecule pair once: the force and torque on i added, the force subtracted from j and j's
// torque (torque_on_j) added, in global memory (bases of one colour touch disjoint cells); the pairs'
// energy and virial into acc. A thread takes every partner of each i (cell_pair_thread).
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void c08_base(int bx, int by, int bz, const Vec4<Real>* __restrict__ c,
                                                  const Box<Real>& box, const int* __restrict__ start,
                                                  const int* __restrict__ order, const MoleculeGrid& g,
                                                  const MoleculeModel<Real>& model, Acc* __restrict__ force,
                                                  Acc* __restrict__ torque, MoleculeAcc<Real, Acc>& acc) {
#pragma unroll 1  // the heavy body once in the code, not 14 times
  for (int p = 0; p < 14; ++p) {
    int ca, cb;
    c08_cells(p, bx, by, bz, g, ca, cb);
    if (ca < 0 || cb < 0) continue;
    cell_pair_thread<PBC, ENERGY, NL, NQ>(ca, cb, c, box, start, order, model, force, torque, acc);
  }
}

// parity_block_csr's step s for one lane of the warp that holds a block of up to 32 molecules of cell A
// (the lane's molecule i at centre ci, its sites si, where `active`) against a staged block of cell B (nbj molecules:
// their indices sj and centres sc): the lane meets slot (lane + s) mod 32, so within a step no two lanes
// share a B molecule. The force and torque on i go into fi, those on j into the slot's sums sf[k * 32 +
// slot] (k: force x, y, z, torque x, y, z). The diagonal (a block with itself) takes steps 1 to 16, step
// 16 by lanes 0 to 15 only: each pair of the block once.
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void block_step(int lane, int s, bool diagonal, bool active, int i,
                                                    const Vec4<Real>& ci, const ShapedSites<NL, NQ, Real>& si,
                                                    int nbj, const int* sj,
                                                    const Vec4<Real>* sc, Acc* sf, const Box<Real>& box,
                                                    const MoleculeModel<Real>& model, MoleculeAcc<Real, Acc>& acc,
                                                    Acc (&fi)[6]) {
  const int slot = (lane + s) & 31;
  if (!active || slot >= nbj || (diagonal && s == 16 && lane >= 16)) return;
  Real dx, dy, dz;
  if (!(centre_separation<PBC>(ci, sc[slot], box, dx, dy, dz) < model.rc2)) return;
  const MoleculePairResult<Real> o = pair_body<NL, NQ>(model, si, i, sj[slot], dx, dy, dz);
  Real tx, ty, tz;
  torque_on_j(o, dx, dy, dz, tx, ty, tz);
  add_pair_to_i(o, fi);
  sf[slot] -= Acc(o.fx);
  sf[32 + slot] -= Acc(o.fy);
  sf[64 + slot] -= Acc(o.fz);
  sf[96 + slot] += Acc(tx);
  sf[128 + slot] += Acc(ty);
  sf[160 + slot] += Acc(tz);
  acc.template sums<ENERGY>(o, dx, dy, dz);
}

// One side of a cell pair for the lane's molecule of warp block w of cell a (the warp-block processors'
// two-pass form, and their intra-cell pass, the port's processCell): i against every molecule of cell b
// (j != i), the force and torque written on i alone. The energy and virial of a pair count once: on the
// side with a < b, or within a cell where i < j.
template <bool PBC, bool ENERGY, int NL = 0, int NQ = 0, typename Real, typename Acc>
__host__ __device__ __forceinline__ void one_side_lane(int a, int b, int w, int lane, const Vec4<Real>* __restrict__ c,
                                                       const Box<Real>& box, const int* __restrict__ start,
                                                       const int* __restrict__ order, const MoleculeModel<Real>& model,
                                                       Acc* __restrict__ force, Acc* __restrict__ torque,
                                                       MoleculeAcc<Real, Acc>& acc) {
  const int ia = w * 32 + lane;
  if (ia >= start[a + 1] - start[a]) return;
  const int i = order[start[a] + ia];
  const Vec4<Real> ci = c[i];
  const ShapedSites<NL, NQ, Real> si(model, i);
  Acc fi[6] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  for (int q = start[b]; q < start[b + 1]; ++q) {
    const int j = order[q];
    if (j == i) continue;
    Real dx, dy, dz;
    if (!(centre_separation<PBC>(ci, c[j], box, dx, dy, dz) < model.rc2)) continue;
    const MoleculePairResult<Real> o = pair_body<NL, NQ>(model, si, i, j, dx, dy, dz);
    add_pair_to_i(o, fi);
    if (a < b || (a == b && i < j)) acc.template sums<ENERGY>(o, dx, dy, dz);
  }
  add_to_molecule(i, fi, force, torque);
}
