// The GPU molecule traversals' per-thread work (strategies/kernels/molecule_rows.cuh) run on the host, thread
// after thread (nvcc compiles it for the CPU; no GPU needed), for tests/test_gpu_molecules.py. The kernels
// of molecules.cu are thin wrappers around these functions; what the host does not run is theirs alone:
// the block and warp reductions (summed here in plain order) and CuPy's sort of the cells (a stable sort
// here). REAL is double (-DREAL=double). A third argument, "unrolled", runs every mode through the pair
// body unrolled for the model's site shape (NL, NQ > 0: one of those main() has), as the kernels do for
// a uniform system of Lennard-Jones centres and charges. Input, raw little-endian arrays:
//   int32 nsites, M, C, mode, nx, ny, nz, px, py, pz, cap, ncolours
//   REAL params[8 + 2 C^2 + 3 C], box[6] (lengths, inverse lengths, 0 on open axes), lo[3], side[3], reach^2
//   int32 first[M + 1], comp[M], owner[nsites]; REAL bodyA[nsites][4], bodyE[nsites][4], quat[M][4],
//   centres[M][4] (relative to the box centre); per launch int32 n, items[n][3]: c08's bases (x, y, z) of a
//   colour, or the parity traverser's cell pairs (a, b, 0) of a layer
// mode: 0 allpairs_thread_naive, 1 fullshell_thread_csr, 2 fullshell_warp_csr, 3 c08_thread_csr,
// 4 verlet_thread_padded, 5 verlet_warp_padded, 6 c08_warp_csr, 7 parity_thread_csr, 8 parity_block_csr,
// 9 parity_warpblock_twopass_atomic, 10 parity_warpblock_shared_atomic. Output: REAL force[M][3], torque[M][3], sums[10] (energy,
// virial d F^T row by row, as the kernels sum them: both directions except in c08), pairs, longest row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#ifndef __CUDA_ARCH__  // the host pass sees common.cuh's fixed-point constructors: host spellings of their intrinsics
#define __float2ll_rn(x) llrintf(x)
#define __double2ll_rn(x) llrint(x)
#endif

#include "molecule_rows.cuh"

using Real = REAL;
using Acc = REAL;

template <typename T>
static void take(FILE* f, T* p, size_t n) {
  if (fread(p, sizeof(T), n, f) != n) {
    fprintf(stderr, "short input\n");
    exit(2);
  }
}

struct Sums {
  double s[kMolSums] = {0};
  double pairs = 0;
  void add(const MoleculeAcc<Real, Acc>& a) {
    for (int k = 0; k < kMolSums; ++k) s[k] += a.s[k];
    pairs += a.pairs;
  }
};

// molecules.cu's warp_cell_pair with its 32 lanes in turn at every step (the lanes' slots differ within a step).
template <bool PBC, int NL, int NQ>
static void warp_cell_pair_on_host(int a, int b, const std::vector<Vec4<Real>>& c, const Box<Real>& box,
                                   const std::vector<int>& start, const std::vector<int>& order,
                                   const MoleculeModel<Real>& model, std::vector<Acc>& force, std::vector<Acc>& torque,
                                   Sums& sums) {
  const bool same = a == b;
  const int na = start[a + 1] - start[a], nb = start[b + 1] - start[b];
  for (int ba = 0; ba * 32 < na; ++ba) {
    int i[32];
    Vec4<Real> ci[32];
    Acc fi[32][6] = {};
    MoleculeAcc<Real, Acc> acc[32];
    for (int lane = 0; lane < 32; ++lane) {
      i[lane] = ba * 32 + lane < na ? order[start[a] + ba * 32 + lane] : order[start[a]];
      ci[lane] = c[i[lane]];
    }
    const int blocks_b = same ? ba + 1 : (nb + 31) / 32;
    for (int bb = 0; bb < blocks_b; ++bb) {
      int sj[32] = {};
      Vec4<Real> sc[32] = {};
      Acc sf[6 * 32] = {};
      const int nbj = std::min(32, nb - bb * 32);
      const bool diagonal = same && bb == ba;
      for (int lane = 0; lane < nbj; ++lane) {
        sj[lane] = order[start[b] + bb * 32 + lane];
        sc[lane] = c[sj[lane]];
      }
      for (int s = diagonal ? 1 : 0; s <= (diagonal ? 16 : 31); ++s) {
        for (int lane = 0; lane < 32; ++lane) {
          const ShapedSites<NL, NQ, Real> si(model, i[lane]);
          block_step<PBC, true>(lane, s, diagonal, ba * 32 + lane < na, i[lane], ci[lane], si, nbj, sj, sc, sf, box,
                                model, acc[lane], fi[lane]);
        }
      }
      for (int lane = 0; lane < nbj; ++lane) {
        for (int k = 0; k < 3; ++k) {
          force[3 * sj[lane] + k] += sf[k * 32 + lane];
          torque[3 * sj[lane] + k] += sf[(3 + k) * 32 + lane];
        }
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      if (ba * 32 + lane < na) add_to_molecule(i[lane], fi[lane], force.data(), torque.data());
      sums.add(acc[lane]);
    }
  }
}

template <bool PBC, int NL, int NQ>
static int traverse(int mode, int m, const std::vector<Vec4<Real>>& c, const Box<Real>& box,
                    const std::vector<int>& cell, const std::vector<int>& start, const std::vector<int>& order,
                    const MoleculeGrid& g, const MoleculeModel<Real>& model, Real reach2, int cap,
                    const std::vector<std::vector<int>>& colours, std::vector<Acc>& force, std::vector<Acc>& torque,
                    Sums& sums) {
  int longest = 0;
  std::vector<int> list(static_cast<size_t>(m) * cap), counts(m);
  if (mode == 4 || mode == 5) {  // molecule_list_build
    for (int t = 0; t < m; ++t) {
      const int i = order[t];
      counts[i] = list_row_build<PBC>(i, c.data(), box, cell.data(), start.data(), order.data(), g, reach2, cap,
                                      list.data() + static_cast<size_t>(i) * cap);
      longest = std::max(longest, counts[i]);
    }
    if (longest > cap) return longest;  // the host widens the rows and builds again
  }
  if (mode == 7) {  // parity_thread_csr: a thread per cell pair of each launch
    for (const auto& pairs : colours) {
      for (size_t t = 0; t < pairs.size() / 3; ++t) {
        MoleculeAcc<Real, Acc> acc;
        cell_pair_thread<PBC, true, NL, NQ>(pairs[3 * t], pairs[3 * t + 1], c.data(), box, start.data(), order.data(), model,
                                    force.data(), torque.data(), acc);
        sums.add(acc);
      }
    }
    return longest;
  }
  if (mode == 8) {  // parity_block_csr: a block (one warp) per cell pair of each launch
    for (const auto& pairs : colours) {
      for (size_t t = 0; t < pairs.size() / 3; ++t) {
        const int a = pairs[3 * t], b = pairs[3 * t + 1];
        if (start[a + 1] > start[a] && start[b + 1] > start[b]) {
          warp_cell_pair_on_host<PBC, NL, NQ>(a, b, c, box, start, order, model, force, torque, sums);
        }
      }
    }
    return longest;
  }
  if (mode == 9 || mode == 10) {  // the warp-block processors: their jobs one after another, as one warp runs each
    const bool twopass = mode == 9;
    for (const auto& pairs : colours) {
      const int npairs = static_cast<int>(pairs.size() / 3);
      for (int job = 0; job < (twopass ? 2 * npairs : npairs); ++job) {
        const int q = job < npairs ? job : job - npairs;
        const int a = job < npairs ? pairs[3 * q] : pairs[3 * q + 1], b = job < npairs ? pairs[3 * q + 1] : pairs[3 * q];
        if (a == b && job >= npairs) continue;
        if (twopass || a == b) {
          for (int w = 0; w * 32 < start[a + 1] - start[a]; ++w) {
            for (int lane = 0; lane < 32; ++lane) {
              MoleculeAcc<Real, Acc> acc;
              one_side_lane<PBC, true, NL, NQ>(a, b, w, lane, c.data(), box, start.data(), order.data(), model, force.data(),
                                       torque.data(), acc);
              sums.add(acc);
            }
          }
        } else if (start[a + 1] > start[a] && start[b + 1] > start[b]) {
          warp_cell_pair_on_host<PBC, NL, NQ>(a, b, c, box, start, order, model, force, torque, sums);
        }
      }
    }
    return longest;
  }
  if (mode == 6) {  // c08_warp_csr: per base, per molecule i of each cell pair, the 32 lanes in turn
    for (const auto& bases : colours) {
      for (size_t t = 0; t < bases.size() / 3; ++t) {
        for (int p = 0; p < 14; ++p) {
          int ca, cb;
          c08_cells(p, bases[3 * t], bases[3 * t + 1], bases[3 * t + 2], g, ca, cb);
          if (ca < 0 || cb < 0) continue;
          for (int qi = start[ca]; qi < start[ca + 1]; ++qi) {
            const int i = order[qi];
            Acc total[6] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
            for (int lane = 0; lane < 32; ++lane) {
              MoleculeAcc<Real, Acc> acc;
              Acc fi[6];
              c08_lane<PBC, true, NL, NQ>(i, qi, ca, cb, c.data(), box, start.data(), order.data(), model, force.data(),
                                  torque.data(), acc, lane, 32, fi);
              for (int k = 0; k < 6; ++k) total[k] += fi[k];
              sums.add(acc);
            }
            add_to_molecule(i, total, force.data(), torque.data());
          }
        }
      }
    }
    return longest;
  }
  if (mode == 3) {
    for (const auto& bases : colours) {
      for (size_t t = 0; t < bases.size() / 3; ++t) {
        MoleculeAcc<Real, Acc> acc;
        c08_base<PBC, true, NL, NQ>(bases[3 * t], bases[3 * t + 1], bases[3 * t + 2], c.data(), box, start.data(),
                            order.data(), g, model, force.data(), torque.data(), acc);
        sums.add(acc);
      }
    }
    return longest;
  }
  // a thread per molecule, fullshell_warp_csr's warp, verlet_warp_padded's group of lanes (8 here: the plan
  // picks 4 to 32 by the rows' length)
  const int lanes = mode == 2 ? 32 : (mode == 5 ? 8 : 1);
  for (int t = 0; t < m; ++t) {
    const int i = mode == 0 ? t : order[t];
    MoleculeAcc<Real, Acc> total;
    for (int lane = 0; lane < lanes; ++lane) {
      MoleculeAcc<Real, Acc> acc;
      if (mode == 0) {
        allpairs_row<PBC, true, NL, NQ>(i, m, c.data(), box, model, acc, lane, lanes);
      } else if (mode <= 2) {
        shell_row<PBC, true, NL, NQ>(i, c.data(), box, cell.data(), start.data(), order.data(), g, model, acc, lane, lanes);
      } else {
        list_row<PBC, true, NL, NQ>(i, c.data(), box, list.data() + static_cast<size_t>(i) * cap, counts[i], model, acc, lane,
                            lanes);
      }
      total.fx += acc.fx;
      total.fy += acc.fy;
      total.fz += acc.fz;
      total.tx += acc.tx;
      total.ty += acc.ty;
      total.tz += acc.tz;
      sums.add(acc);
    }
    total.store(i, force.data(), torque.data());
  }
  return longest;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return 2;
  const bool unrolled = argc == 4 && std::string(argv[3]) == "unrolled";
  FILE* in = fopen(argv[1], "rb");
  if (!in) return 2;
  int head[12];
  take(in, head, 12);
  const int nsites = head[0], m = head[1], C = head[2], mode = head[3], cap = head[10], ncol = head[11];
  const MoleculeGrid g{head[4], head[5], head[6], head[7], head[8], head[9]};
  std::vector<Real> params(molecule_params_size(C));
  take(in, params.data(), params.size());
  Real b[6], lo[3], side[3], reach2;
  take(in, b, 6);
  take(in, lo, 3);
  take(in, side, 3);
  take(in, &reach2, 1);
  const Box<Real> box{b[0], b[1], b[2], b[3], b[4], b[5]};
  std::vector<int> first(m + 1), comp(m), owner(nsites);
  take(in, first.data(), first.size());
  take(in, comp.data(), comp.size());
  std::vector<int4> span(m);  // the device's per-molecule site spans, as molecules_cuda builds them
  for (int i = 0; i < m; ++i) span[i] = molecule_span(params.data(), first[i], first[i + 1], comp[i]);
  take(in, owner.data(), owner.size());
  std::vector<Vec4<Real>> bodyA(nsites), bodyE(nsites), A(nsites), E(nsites), c(m);
  std::vector<Real> quat(4 * m);
  take(in, reinterpret_cast<Real*>(bodyA.data()), 4 * nsites);
  take(in, reinterpret_cast<Real*>(bodyE.data()), 4 * nsites);
  take(in, quat.data(), quat.size());
  take(in, reinterpret_cast<Real*>(c.data()), 4 * m);
  std::vector<std::vector<int>> colours(ncol);
  for (auto& bases : colours) {
    int n;
    take(in, &n, 1);
    bases.resize(3 * n);
    take(in, bases.data(), bases.size());
  }
  fclose(in);
  for (int s = 0; s < nsites; ++s) {  // molecule_sites
    const Real* q = &quat[4 * owner[s]];
    turn_site(q[0], q[1], q[2], q[3], bodyA[s], bodyE[s], A[s], E[s]);
  }
  const int ncells = g.nx * g.ny * g.nz;
  std::vector<int> cell(m), order(m), start(ncells + 1, 0);
  for (int i = 0; i < m; ++i) {  // molecule_cell_of, then a stable sort by cell and the cell starts
    cell[i] = cell_index(c[i], lo[0], lo[1], lo[2], side[0], side[1], side[2], g.nx, g.ny, g.nz);
  }
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b2) { return cell[a] < cell[b2]; });
  for (int i = 0; i < m; ++i) ++start[cell[i] + 1];
  for (int k = 0; k < ncells; ++k) start[k + 1] += start[k];
  const MoleculeModel<Real> model(params.data(), C == 1 ? nullptr : span.data(), comp.data(), A.data(),
                                 E.data());  // one component: no spans, as the plan passes them
  std::vector<Acc> force(3 * m, Acc(0)), torque(3 * m, Acc(0));
  Sums sums;
  const bool pbc = g.px || g.py || g.pz;
  const int nl = static_cast<int>(params[kMoleculeHeader + 2 * C * C]);  // component 0's kind ends
  const int nq = static_cast<int>(params[kMoleculeHeader + 2 * C * C + 1]) - nl;
  const int ns = static_cast<int>(params[kMoleculeHeader + 2 * C * C + 2]);
  int longest = -1;
#define RUN(L, Q)                                                                                                   \
  longest = pbc ? traverse<true, L, Q>(mode, m, c, box, cell, start, order, g, model, reach2, cap, colours, force,   \
                                       torque, sums)                                                                \
                : traverse<false, L, Q>(mode, m, c, box, cell, start, order, g, model, reach2, cap, colours, force,  \
                                        torque, sums)
  if (!unrolled) {
    RUN(0, 0);
  } else if (C == 1 && ns == nl + nq) {  // the shapes the tests give (molecules_cuda.site_shape's)
    if (nl == 1 && nq == 3) RUN(1, 3);
    if (nl == 1 && nq == 1) RUN(1, 1);
    if (nl == 2 && nq == 0) RUN(2, 0);
    if (nl == 0 && nq == 2) RUN(0, 2);
    if (nl == 2 && nq == 2) RUN(2, 2);
  }
#undef RUN
  if (longest < 0) {
    fprintf(stderr, "no unrolled body here for this site shape\n");
    return 3;
  }
  FILE* out = fopen(argv[2], "wb");
  if (!out) return 2;
  fwrite(force.data(), sizeof(Acc), force.size(), out);
  fwrite(torque.data(), sizeof(Acc), torque.size(), out);
  Real tail[kMolSums + 2];
  for (int k = 0; k < kMolSums; ++k) tail[k] = static_cast<Real>(sums.s[k]);
  tail[kMolSums] = static_cast<Real>(sums.pairs);
  tail[kMolSums + 1] = static_cast<Real>(longest);
  fwrite(tail, sizeof(Real), kMolSums + 2, out);
  fclose(out);
  return 0;
}
