// Rigid molecules on the GPU: the sites turned by the quaternions, the cells over the centres, and the
// traversals that call the molecule-pair body of molecules.cuh (host: strategies/molecules_cuda.py).
//
// The full-shell and all-pairs traversals visit each pair from both sides (a thread or warp writes only
// its own molecule's force and torque, the same bits run after run; c08 below visits each once); the
// energy and the virial
// W = sum over pairs of d F_i^T (d = c_i - c_j, the centre-of-mass convention, 9 entries: a molecule
// system's virial is not symmetric) are summed per block into `partial` (kMolSums values a slot) with
// the molecule pairs into `count`, and halved on the host where every pair was visited twice. Centres are
// relative to the box centre. What each thread does is in molecule_rows.cuh. Every traversal kernel's last
// two template arguments, NL and NQ, are the pair body's site shape (molecules_cuda.site_shape): unrolled
// for a uniform system of NL Lennard-Jones centres and NQ charges, the general loops for 0, 0.
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
//   c08_warp_csr            the same colours, a warp per base: for each molecule i of its cell pairs the
//                           lanes split i's partners j (written directly, distinct per lane), then a
//                           warp sum of i's force and torque (the warp-block form of c08)
//   verlet_thread_padded    a list over the centres within the cutoff and a skin, a padded row per
//                           molecule (molecule_list_build), kept across steps while the centres stay
//                           within half the skin (the host decides, or the MD step's device flag:
//                           the build kernels' guard); a thread per molecule over its row
//   verlet_warp_padded      the same list, a warp per molecule over its row, then a warp sum
#include "molecule_rows.cuh"

// Lab-frame sites from the body frame: one thread per site. quat (w, x, y, z) per molecule, unit length.
template <typename Real>
__global__ void molecule_sites(const int nsites, const int* __restrict__ owner, const Real* __restrict__ quat,
                               const Vec4<Real>* __restrict__ bodyA, const Vec4<Real>* __restrict__ bodyE,
                               Vec4<Real>* __restrict__ A, Vec4<Real>* __restrict__ E) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= nsites) return;
  const int i = owner[s];
  const Real w = quat[4 * i + 0], x = quat[4 * i + 1], y = quat[4 * i + 2], z = quat[4 * i + 3];
  Vec4<Real> a, e;
  turn_site(w, x, y, z, bodyA[s], bodyE[s], a, e);
  A[s] = a;
  E[s] = e;
}

// Each molecule's cell (cells of side >= the cutoff over the centres; origin lo, n cells of side s per
// axis).
template <typename Real>
__global__ void molecule_cell_of(const int m, const Vec4<Real>* __restrict__ c, const Real lox, const Real loy,
                                 const Real loz, const Real sx, const Real sy, const Real sz, const int nx, const int ny,
                                 const int nz, int* __restrict__ cell) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) cell[i] = cell_index(c[i], lox, loy, loz, sx, sy, sz, nx, ny, nz);
}

// The centres' cells by a counting sort, in the order a stable sort by cell gives (molecules_cuda's
// MoleculePlan._cells; CuPy's stable argsort gives the same arrays and is kept beside it):
//   molecule_bin_count   each molecule's cell (as molecule_cell_of) and a provisional slot in it, one
//                        atomic per cell a warp touches (counts zero on entry)
//   scan_counts, place   binning.cu's: the cell starts (the counts zeroed for the next build), and each
//                        molecule at start + slot in order_tmp
//   molecule_rank_in_cell  the final order inside each cell: by index, whatever order the atomics took
// Four launches, no host synchronisation and no allocation. With the list kernels below they take a guard:
// where it is given (the MD step's displacement flag) they run only where *guard is set, so that a
// step decides its own list build on the device (strategies/rigid_cuda.py); nullptr: always.
__device__ __forceinline__ bool molecule_skipped(const int* guard) { return guard != nullptr && *guard == 0; }

template <typename Real>
__global__ void molecule_bin_count(const int m, const Vec4<Real>* __restrict__ c, const Real lox, const Real loy,
                                   const Real loz, const Real sx, const Real sy, const Real sz, const int nx,
                                   const int ny, const int nz, int* __restrict__ cell, int* __restrict__ slot,
                                   int* __restrict__ counts, const int* __restrict__ guard) {
  if (molecule_skipped(guard)) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
    const int cc = cell_index(c[i], lox, loy, loz, sx, sy, sz, nx, ny, nz);
    cell[i] = cc;
    slot[i] = claim_cell_slot(counts, cc);
  }
}

__global__ void molecule_rank_in_cell(const int m, const int* __restrict__ order_tmp, const int* __restrict__ cell,
                                      const int* __restrict__ start, int* __restrict__ order,
                                      const int* __restrict__ guard) {
  if (molecule_skipped(guard)) return;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x) {
    const int i = order_tmp[k], cc = cell[i];
    int rank = 0;
    for (int q = start[cc]; q < start[cc + 1]; ++q) rank += order_tmp[q] < i;
    order[start[cc] + rank] = i;
  }
}

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

// One warp's energy, virial and pair count into slot `slot` (every lane calls it; lane 0 writes), the
// lanes' sums then cleared for the warp's next job.
template <typename Real, typename Acc>
__device__ __forceinline__ void job_sums(MoleculeAcc<Real, Acc>& acc, int lane, Acc* __restrict__ partial,
                                         unsigned long long* __restrict__ count, int slot) {
  __syncwarp();
#pragma unroll
  for (int k = 0; k < kMolSums; ++k) {
    const Acc v = warp_sum(acc.s[k]);
    if (lane == 0) partial[slot * kMolSums + k] = v;
    acc.s[k] = Acc(0);
  }
  const unsigned long long n = warp_sum(static_cast<unsigned long long>(acc.pairs));
  if (lane == 0) count[slot] = n;
  acc.pairs = 0u;
}

template <int BLOCK, bool ENERGY, typename Real, typename Acc>
__device__ __forceinline__ void block_end(MoleculeAcc<Real, Acc>& acc, Acc* __restrict__ partial,
                                          unsigned long long* __restrict__ count, int slot) {
  if constexpr (ENERGY) {
    molecule_block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count, slot);
  }
}

// A warp's lanes' force and torque summed in a fixed order (warp_sum), lane 0 writing molecule i's.
template <typename Real, typename Acc>
__device__ __forceinline__ void warp_store(const MoleculeAcc<Real, Acc>& acc, int i, int lane, Acc* __restrict__ force,
                                           Acc* __restrict__ torque) {
  __syncwarp();
  MoleculeAcc<Real, Acc> sum;
  sum.fx = warp_sum(acc.fx), sum.fy = warp_sum(acc.fy), sum.fz = warp_sum(acc.fz);
  sum.tx = warp_sum(acc.tx), sum.ty = warp_sum(acc.ty), sum.tz = warp_sum(acc.tz);
  if (lane == 0) sum.store(i, force, torque);
}

// The force and torque summed over each aligned group of `lanes` lanes (a power of two up to 32), stored
// by the group's first lane where it has a molecule (i >= 0). Every lane of the warp calls it.
template <typename Real, typename Acc>
__device__ __forceinline__ void group_store(const MoleculeAcc<Real, Acc>& acc, int i, int lane, int lanes,
                                            Acc* __restrict__ force, Acc* __restrict__ torque) {
  __syncwarp();
  Acc v[6] = {acc.fx, acc.fy, acc.fz, acc.tx, acc.ty, acc.tz};
  for (int off = lanes >> 1; off > 0; off >>= 1) {
#pragma unroll
    for (int k = 0; k < 6; ++k) v[k] += __shfl_xor_sync(0xffffffffu, v[k], off);
  }
  if (lane == 0 && i >= 0) {
    MoleculeAcc<Real, Acc> sum;
    sum.fx = v[0], sum.fy = v[1], sum.fz = v[2], sum.tx = v[3], sum.ty = v[4], sum.tz = v[5];
    sum.store(i, force, torque);
  }
}

#define MOLECULE_ARGS                                                                                                \
  const Real *__restrict__ params, const int4 *__restrict__ span, const int *__restrict__ comp,                    \
      const Vec4<Real> *__restrict__ A, const Vec4<Real> *__restrict__ E, Acc *__restrict__ force,                 \
      Acc *__restrict__ torque, Acc *__restrict__ partial, unsigned long long *__restrict__ count

template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_allpairs_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box, MOLECULE_ARGS) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (i < m) {
    allpairs_row<PBC, ENERGY, NL, NQ>(i, m, c, box, model, acc, 0, 1);
    acc.store(i, force, torque);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// fullshell_thread_csr: thread t takes molecule order[t] (cell order: a warp's molecules share cells).
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_fullshell_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                          const int* __restrict__ cell, const int* __restrict__ start, const int* __restrict__ order,
                          const int nx, const int ny, const int nz, const int px, const int py, const int pz,
                          MOLECULE_ARGS) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (t < m) {
    const int i = order[t];
    shell_row<PBC, ENERGY, NL, NQ>(i, c, box, cell, start, order, g, model, acc, 0, 1);
    acc.store(i, force, torque);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// fullshell_warp_csr: warp w takes molecule order[w], lane l every 32nd candidate from l.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_fullshell_warp(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                        const int* __restrict__ cell, const int* __restrict__ start, const int* __restrict__ order,
                        const int nx, const int ny, const int nz, const int px, const int py, const int pz,
                        MOLECULE_ARGS) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * BLOCK + threadIdx.x) >> 5;
  MoleculeAcc<Real, Acc> acc;
  if (w < m) {  // the whole warp takes the same branch
    const int i = order[w];
    shell_row<PBC, ENERGY, NL, NQ>(i, c, box, cell, start, order, g, model, acc, lane, 32);
    warp_store(acc, i, lane, force, torque);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// c08_thread_csr, one colour: thread t takes base bases[t] (3 ints); force and torque are added to
// (zeroed before the first colour); block sums into slot slot0 + blockIdx.x.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_c08_thread(const int nbases, const int* __restrict__ bases, const Vec4<Real>* __restrict__ c,
                    const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order, const int nx,
                    const int ny, const int nz, const int px, const int py, const int pz, MOLECULE_ARGS,
                    const int slot0) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;  // energy, virial and pairs: forces and torques go to global memory
  if (t < nbases) {
    c08_base<PBC, ENERGY, NL, NQ>(bases[3 * t + 0], bases[3 * t + 1], bases[3 * t + 2], c, box, start, order, g, model,
                                  force, torque, acc);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, slot0 + blockIdx.x);
}

// c08_warp_csr, one colour: warp w takes base bases[w]; for each molecule i of each of its cell pairs (in
// turn, the whole warp together) the lanes split i's candidates j (c08_lane: distinct j per lane, written
// directly), then their parts of i's force and torque are summed across the warp (warp_sum) and lane 0
// adds them to i. Warp barriers order one i's writes before the next i's reads.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_c08_warp(const int nbases, const int* __restrict__ bases, const Vec4<Real>* __restrict__ c,
                  const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order, const int nx,
                  const int ny, const int nz, const int px, const int py, const int pz, MOLECULE_ARGS,
                  const int slot0) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const int lane = threadIdx.x & 31;
  const int w = (blockIdx.x * BLOCK + threadIdx.x) >> 5;
  MoleculeAcc<Real, Acc> acc;
  if (w < nbases) {  // the whole warp takes the same branch
    const int bx = bases[3 * w + 0], by = bases[3 * w + 1], bz = bases[3 * w + 2];
    for (int p = 0; p < 14; ++p) {
      int ca, cb;
      c08_cells(p, bx, by, bz, g, ca, cb);
      if (ca < 0 || cb < 0) continue;
      for (int qi = start[ca]; qi < start[ca + 1]; ++qi) {
        const int i = order[qi];
        Acc fi[6];
        c08_lane<PBC, ENERGY, NL, NQ>(i, qi, ca, cb, c, box, start, order, model, force, torque, acc, lane, 32, fi);
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 6; ++k) fi[k] = warp_sum(fi[k]);
        if (lane == 0) add_to_molecule(i, fi, force, torque);
        __syncwarp();
      }
    }
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, slot0 + blockIdx.x);
}

// parity_thread_csr: the ls1-MarDyn port's reference processor on the parity-plane traverser. One launch
// is one layer of cell pairs (strategies/schedules.py parity_launches, decoded on the host into `pairs`),
// every cell in at most one pair, so Newton3's writes need no atomics; a thread takes a whole cell pair.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_parity_thread(const int npairs, const int2* __restrict__ pairs, const Vec4<Real>* __restrict__ c,
                       const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order,
                       MOLECULE_ARGS, const int slot0) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (t < npairs) {
    cell_pair_thread<PBC, ENERGY, NL, NQ>(pairs[t].x, pairs[t].y, c, box, start, order, model, force, torque, acc);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, slot0 + blockIdx.x);
}

// Cell pair (a, b) with Newton3 by one warp (lane: its lane): cell A cut into blocks of 32 molecules, one per
// lane, kept in registers; each block of B staged in the warp's shared slots (indices s_j, centres s_c, force
// and torque sums s_f[k * 32 + slot]) while the lanes rotate over it (block_step), a warp barrier between
// steps. B's sums go to global memory once its block is done, A's once all of B is: the caller makes sure
// no other warp writes cells a and b meanwhile. Within a cell (a == b): blocks of B up to A's own, the
// diagonal by half the steps.
template <bool PBC, bool ENERGY, int NL, int NQ, typename Real, typename Acc>
__device__ __forceinline__ void warp_cell_pair(int a, int b, int lane, int* s_j, Vec4<Real>* s_c, Acc* s_f,
                                               const Vec4<Real>* __restrict__ c, const Box<Real>& box,
                                               const int* __restrict__ start, const int* __restrict__ order,
                                               const MoleculeModel<Real>& model, Acc* __restrict__ force,
                                               Acc* __restrict__ torque, MoleculeAcc<Real, Acc>& acc) {
  const bool same = a == b;
  const int na = start[a + 1] - start[a], nb = start[b + 1] - start[b];
  for (int ba = 0; ba * 32 < na; ++ba) {  // the whole warp runs every loop: na, nb are the warp's
    const int ia = ba * 32 + lane;
    const bool active = ia < na;
    const int i = active ? order[start[a] + ia] : order[start[a]];
    const Vec4<Real> ci = c[i];
    const ShapedSites<NL, NQ, Real> si(model, i);
    Acc fi[6] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
    const int blocks_b = same ? ba + 1 : (nb + 31) / 32;
    for (int bb = 0; bb < blocks_b; ++bb) {
      const int jb = bb * 32 + lane;
      const int nbj = min(32, nb - bb * 32);
      const bool diagonal = same && bb == ba;
      __syncwarp();  // the previous block of B is committed before its slots are reused
      if (jb < nb) {
        s_j[lane] = order[start[b] + jb];
        s_c[lane] = c[s_j[lane]];
      }
#pragma unroll
      for (int k = 0; k < 6; ++k) s_f[k * 32 + lane] = Acc(0);
      __syncwarp();
      for (int s = diagonal ? 1 : 0; s <= (diagonal ? 16 : 31); ++s) {
        block_step<PBC, ENERGY>(lane, s, diagonal, active, i, ci, si, nbj, s_j, s_c, s_f, box, model, acc, fi);
        __syncwarp();  // the next step hands this slot to another lane
      }
      if (jb < nb) {  // slot lane of B, by the lane that staged it
        const int j = s_j[lane];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          force[3 * j + k] += s_f[k * 32 + lane];
          torque[3 * j + k] += s_f[(3 + k) * 32 + lane];
        }
      }
    }
    __syncwarp();  // B's commits (the same cell, intra-cell) land before A's
    if (active) add_to_molecule(i, fi, force, torque);
  }
}

// parity_block_csr: the port's thread-block processor on the same layers, a block of 32 threads per cell
// pair (a cell of molecules holds tens of them: about 25 in water's 9 A cells), warp_cell_pair's loops.
// Each cell belongs to one block of the launch.
template <typename Real, typename Acc, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(32)
molecule_parity_block(const int npairs, const int2* __restrict__ pairs, const Vec4<Real>* __restrict__ c,
                      const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order,
                      MOLECULE_ARGS, const int slot0) {
  __shared__ int s_j[32];
  __shared__ Vec4<Real> s_c[32];
  __shared__ Acc s_f[6 * 32];
  const MoleculeModel<Real> model(params, span, comp, A, E);
  MoleculeAcc<Real, Acc> acc;
  const int a = pairs[blockIdx.x].x, b = pairs[blockIdx.x].y;
  if (start[a + 1] > start[a] && start[b + 1] > start[b]) {  // the whole block takes the same branch
    warp_cell_pair<PBC, ENERGY, NL, NQ>(a, b, threadIdx.x, s_j, s_c, s_f, c, box, start, order, model, force, torque,
                                        acc);
  }
  block_end<32, ENERGY>(acc, partial, count, slot0 + blockIdx.x);
}

// The warp-block processors: a persistent kernel per layer whose warps take jobs from a lock-free scheduler
// (one atomicAdd on the launch's counter per job, the port's "atomic" scheduler). A job is a cell pair of the
// layer, or one side of it; its warp takes all its warp blocks (32 molecules of A each). The energy, virial
// and pair count go to the job's own slot (slot0 + job), not the block's: which warp takes which job varies
// from run to run, the sums' order does not, and the results are the same bits run after run.
//   kMolTwoPass: jobs (A, B) and (B, A), each writing its own side only (one_side_lane): twice the pair
//     bodies, no writes to the other cell.
//   kMolShared: one job per pair, Newton3 with B staged in the warp's shared slots (warp_cell_pair); the
//     intra-cell pass is one-sided in both (the port's processCell).
constexpr int kMolTwoPass = 0, kMolShared = 1;
constexpr int kMolWarps = 4;

template <typename Real, typename Acc, bool PBC, bool ENERGY, int MODE, int NL, int NQ>
__global__ void __launch_bounds__(kMolWarps * 32)
molecule_parity_warpblock(const int npairs, const int2* __restrict__ pairs, const Vec4<Real>* __restrict__ c,
                          const Box<Real> box, const int* __restrict__ start, const int* __restrict__ order,
                          MOLECULE_ARGS, const int slot0, int* __restrict__ counter) {
  __shared__ int s_j[kMolWarps][32];
  __shared__ Vec4<Real> s_c[kMolWarps][32];
  __shared__ Acc s_f[kMolWarps][6 * 32];
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int jobs = MODE == kMolTwoPass ? 2 * npairs : npairs;
  MoleculeAcc<Real, Acc> acc;
  while (true) {
    int job = 0;
    if (lane == 0) job = atomicAdd(counter, 1);
    job = __shfl_sync(0xffffffffu, job, 0);
    if (job >= jobs) break;
    const int p = job < npairs ? job : job - npairs;
    const int a = job < npairs ? pairs[p].x : pairs[p].y, b = job < npairs ? pairs[p].y : pairs[p].x;
    if (a == b && job >= npairs) continue;  // a cell with itself is one job
    if (MODE == kMolTwoPass || a == b) {
      for (int w = 0; w * 32 < start[a + 1] - start[a]; ++w) {
        one_side_lane<PBC, ENERGY, NL, NQ>(a, b, w, lane, c, box, start, order, model, force, torque, acc);
      }
    } else if (start[a + 1] > start[a] && start[b + 1] > start[b]) {
      warp_cell_pair<PBC, ENERGY, NL, NQ>(a, b, lane, s_j[warp], s_c[warp], s_f[warp], c, box, start, order, model,
                                          force, torque, acc);
    }
    if constexpr (ENERGY) job_sums(acc, lane, partial, count, slot0 + job);
    __syncwarp();
  }
}

// The Verlet list over the centres: thread t takes molecule order[t] and writes its padded row
// list[i * cap ...] and counts[i].
template <typename Real, bool PBC>
__global__ void molecule_list_build(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                                    const int* __restrict__ cell, const int* __restrict__ start,
                                    const int* __restrict__ order, const int nx, const int ny, const int nz,
                                    const int px, const int py, const int pz, const Real reach2, const int cap,
                                    int* __restrict__ list, int* __restrict__ counts, int* __restrict__ longest,
                                    const int* __restrict__ guard) {
  if (molecule_skipped(guard)) return;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= m) return;
  const int i = order[t];
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const int n = list_row_build<PBC>(i, c, box, cell, start, order, g, reach2, cap, list + static_cast<size_t>(i) * cap);
  counts[i] = min(n, cap);
  if (n > cap) atomicMax(longest, n);
}

// The same rows by a warp per molecule: the lanes test 32 candidates of a cell at once and a ballot places
// the ones within reach in candidate order, so every row is the one molecule_list_build writes (entry by
// entry). Beyond cap neither writes: a longer row keeps cap entries (the traversals read no further) and
// the longest such row goes into *longest (the host widens the rows and builds again, or reports it).
template <typename Real, bool PBC>
__global__ void molecule_list_build_warp(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                                         const int* __restrict__ cell, const int* __restrict__ start,
                                         const int* __restrict__ order, const int nx, const int ny, const int nz,
                                         const int px, const int py, const int pz, const Real reach2, const int cap,
                                         int* __restrict__ list, int* __restrict__ counts, int* __restrict__ longest,
                                         const int* __restrict__ guard) {
  if (molecule_skipped(guard)) return;
  const int lane = threadIdx.x & 31;
  const int w = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5);
  if (w >= m) return;  // the whole warp: w is the warp's
  const int i = order[w];
  const MoleculeGrid g{nx, ny, nz, px, py, pz};
  const Vec4<Real> ci = c[i];
  int* __restrict__ row = list + static_cast<size_t>(i) * cap;
  int n = 0;
  for_shell_cells(cell[i], g, [&](int nb) {
    const int end = start[nb + 1];
    for (int base = start[nb]; base < end; base += 32) {  // every lane runs every round: the ballot's
      const int q = base + lane;
      int j = -1;
      bool take = false;
      if (q < end) {
        j = order[q];
        Real dx, dy, dz;
        take = j != i && centre_separation<PBC>(ci, c[j], box, dx, dy, dz) < reach2;
      }
      const unsigned int mask = __ballot_sync(0xffffffffu, take);
      const int at = n + __popc(mask & ((1u << lane) - 1u));
      if (take && at < cap) row[at] = j;
      n += __popc(mask);
    }
  });
  if (lane == 0) {
    counts[i] = min(n, cap);
    if (n > cap) atomicMax(longest, n);
  }
}

// verlet_thread_padded: thread t takes molecule order[t] over its row (both directions: no Newton3).
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_verlet_thread(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                       const int* __restrict__ order, const int* __restrict__ list, const int* __restrict__ counts,
                       const int cap, MOLECULE_ARGS) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  MoleculeAcc<Real, Acc> acc;
  if (t < m) {
    const int i = order[t];
    if constexpr (NL + NQ > 0) {
      list_row<PBC, ENERGY, NL, NQ>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, 0, 1);
    } else if (model.uniform()) {  // the same call twice: each copy compiled knowing how the sites are found
      list_row<PBC, ENERGY>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, 0, 1);
    } else {
      list_row<PBC, ENERGY>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, 0, 1);
    }
    acc.store(i, force, torque);
  }
  block_end<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// verlet_warp_padded: a group of `lanes` lanes of a warp (a power of two, 2 to 32: molecules_cuda.lanes()
// picks it from the rows' length) takes molecule order[w], lane l of the group every lanes-th entry of
// its row from l; then a sum over the group's lanes. Fewer lanes than 32 leave fewer of them idle on a
// row's last stride and inside the cutoff test.
template <typename Real, typename Acc, int BLOCK, bool PBC, bool ENERGY, int NL, int NQ>
__global__ void __launch_bounds__(BLOCK)
molecule_verlet_warp(const int m, const Vec4<Real>* __restrict__ c, const Box<Real> box,
                     const int* __restrict__ order, const int* __restrict__ list, const int* __restrict__ counts,
                     const int cap, const int lanes, MOLECULE_ARGS) {
  const MoleculeModel<Real> model(params, span, comp, A, E);
  const int t = blockIdx.x * BLOCK + threadIdx.x;
  const int lane = t & (lanes - 1), w = t / lanes;
  MoleculeAcc<Real, Acc> acc;
  int i = -1;
  if (w < m) {  // the lanes of a group take the same branch
    i = order[w];
    if constexpr (NL + NQ > 0) {
      list_row<PBC, ENERGY, NL, NQ>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, lane,
                                    lanes);
    } else if (model.uniform()) {  // the same call twice: each copy compiled knowing how the sites are found
      list_row<PBC, ENERGY>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, lane, lanes);
    } else {
      list_row<PBC, ENERGY>(i, c, box, list + static_cast<size_t>(i) * cap, counts[i], model, acc, lane, lanes);
    }
  }
  group_store(acc, i, lane, lanes, force, torque);  // every lane of the warp, in or out of range
  block_end<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

#undef MOLECULE_ARGS
