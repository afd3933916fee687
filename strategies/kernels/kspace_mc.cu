// Monte-Carlo moves in Ewald's reciprocal space (strategies/kspace_mc.py): the energy change of a
// molecule moved rigidly, dS(k) = sum_a q_a (exp(2 pi i n . s'_a) - exp(2 pi i n . s_a)) and
// dE = sum_k A(k) (2 Re(S* dS) + |dS|^2), with S(k) kept on the device (kspace.cu's grid and A).
//
// A move m: molecule move_mol[m], rotation R = move_rt[12 m .. 12 m + 8] (row-major) about the
// molecule's centre (the mean of its atoms, unwrapped by minimum image from its first atom), then the
// shift move_rt[12 m + 9 .. 12 m + 11], in length units; move_u[m] the uniform number of the
// Metropolis test. A molecule's atoms are atoms[start[mol] .. start[mol + 1]) (at most MAXA), each
// read from sq as {s_x, s_y, s_z, q} in fractions of the box.
//
// Batches of independent trial moves from one state, a block per move:
//   mc_batch_kloop    a thread per k over the molecule's atoms read from global memory (the old ones
//                     from sq, the new ones as mc_trial wrote them)
//   mc_batch_staged   the same with the old and new atoms staged in shared memory
//   mc_batch_atomic   a thread per (atom, k) adding into the move's dS with atomics (GOMC's
//                     MolExchangeReciprocal), then mc_batch_sum
//   mc_batch_rows     a thread per (n_x, n_y, run of SEG n_z), atoms staged, the recurrence along n_z
// The Metropolis loop, mc_loop_rows: one block runs the moves one after another (accept or reject on
// the device, S and the atoms updated on acceptance, no host round trip). mc_loop_grid: the same loop
// with each move's wave vectors spread over a grid of blocks, all resident at once, two grid barriers
// a move.
#pragma once
#include "kspace.cu"

constexpr int MAXA = 64;

struct MoveBox {
  double lx, ly, lz;
};

// thread-parallel staging of move m's molecule: old and new {s, q} into old_[4 i], neu[4 i]; returns
// the atom count. Every thread of the block must call it (it synchronises).
template <typename Real>
__device__ int stage_move(const Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                          const int mol, const Real* __restrict__ rt, const MoveBox b, Real* old_, Real* neu,
                          Real* centre) {
  const int first = start[mol], na = start[mol + 1] - first;
  const Real L[3] = {Real(b.lx), Real(b.ly), Real(b.lz)};
  const int a0 = atoms[first];
  for (int i = threadIdx.x; i < na; i += blockDim.x) {
    const int a = atoms[first + i];
    for (int d = 0; d < 3; ++d) {
      const Real s0 = sq[4 * a0 + d], s = sq[4 * a + d];
      const Real u = s - s0;
      old_[4 * i + d] = s;
      neu[4 * i + d] = (s0 + (u - rint(u))) * L[d];  // unwrapped, in length units for now
    }
    old_[4 * i + 3] = neu[4 * i + 3] = sq[4 * a + 3];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Real c[3] = {Real(0), Real(0), Real(0)};
    for (int i = 0; i < na; ++i)
      for (int d = 0; d < 3; ++d) c[d] += neu[4 * i + d];
    for (int d = 0; d < 3; ++d) centre[d] = c[d] / Real(na);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < na; i += blockDim.x) {
    const Real x[3] = {neu[4 * i] - centre[0], neu[4 * i + 1] - centre[1], neu[4 * i + 2] - centre[2]};
    for (int d = 0; d < 3; ++d) {
      const Real y = rt[3 * d] * x[0] + rt[3 * d + 1] * x[1] + rt[3 * d + 2] * x[2] + centre[d] + rt[9 + d];
      neu[4 * i + d] = y / L[d];
    }
  }
  __syncthreads();
  return na;
}

template <typename Acc, int BLOCK>
__device__ Acc block_sum(Acc v, Acc* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  Acc t = Acc(0);
  if (threadIdx.x == 0)
    for (int w = 0; w < BLOCK / 32; ++w) t += red[w];
  return t;  // in thread 0
}

// dS at grid entry (nx, ny, nz) from staged old and new atoms
template <typename Real, typename Acc>
__device__ __forceinline__ void delta_s(const Real fx, const Real fy, const Real fz, const Real* old_, const Real* neu,
                                        const int na, Acc& dr, Acc& di) {
  Real r = Real(0), i = Real(0);
  for (int a = 0; a < na; ++a) {
    Real s1, c1, s0, c0;
    turn_sincos(fx, fy, fz, neu + 4 * a, &s1, &c1);
    turn_sincos(fx, fy, fz, old_ + 4 * a, &s0, &c0);
    const Real q = old_[4 * a + 3];
    r += q * (c1 - c0);
    i += q * (s1 - s0);
  }
  dr = Acc(r), di = Acc(i);
}

template <typename Acc>
__device__ __forceinline__ Acc change(const Acc a, const Acc sr, const Acc si, const Acc dr, const Acc di) {
  return a * (Acc(2) * (sr * dr + si * di) + dr * dr + di * di);
}

// the new atoms of every move of a batch, for the kernels that read them from global memory:
// trial[(MAXA * m + i) * 4 ..] = {s', q} of atom i of move m's molecule
template <typename Real>
__global__ void mc_trial(const Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                         const int* __restrict__ move_mol, const Real* __restrict__ move_rt, const MoveBox b,
                         Real* __restrict__ trial) {
  __shared__ Real old_[4 * MAXA], neu[4 * MAXA], centre[3];
  const int m = blockIdx.x;
  const int na = stage_move(sq, start, atoms, move_mol[m], move_rt + 12 * m, b, old_, neu, centre);
  for (int i = threadIdx.x; i < 4 * na; i += blockDim.x) trial[4 * MAXA * m + i] = neu[i];
}

template <typename Real, typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_batch_kloop(const Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                   const int* __restrict__ move_mol, const Real* __restrict__ trial, const Acc* __restrict__ S,
                   const Real* __restrict__ A, const KGrid k, Acc* __restrict__ dE) {
  __shared__ Acc red[BLOCK / 32];
  const int m = blockIdx.x, mol = move_mol[m];
  const int first = start[mol], na = start[mol + 1] - first;
  const Real* neu = trial + 4 * MAXA * m;
  Acc e = Acc(0);
  for (int g = threadIdx.x; g < k.G; g += BLOCK) {
    const Real a = A[g];
    if (a == Real(0)) continue;
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    Real r = Real(0), im = Real(0);
    for (int i = 0; i < na; ++i) {
      const Real* o = sq + 4 * atoms[first + i];
      Real s1, c1, s0, c0;
      turn_sincos(Real(nx), Real(ny), Real(nz), neu + 4 * i, &s1, &c1);
      turn_sincos(Real(nx), Real(ny), Real(nz), o, &s0, &c0);
      r += o[3] * (c1 - c0);
      im += o[3] * (s1 - s0);
    }
    e += change(Acc(a), S[2 * g], S[2 * g + 1], Acc(r), Acc(im));
  }
  const Acc t = block_sum<Acc, BLOCK>(e, red);
  if (threadIdx.x == 0) dE[m] = t;
}

template <typename Real, typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_batch_staged(const Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                    const int* __restrict__ move_mol, const Real* __restrict__ move_rt, const MoveBox b,
                    const Acc* __restrict__ S, const Real* __restrict__ A, const KGrid k, Acc* __restrict__ dE) {
  __shared__ Real old_[4 * MAXA], neu[4 * MAXA], centre[3];
  __shared__ Acc red[BLOCK / 32];
  const int m = blockIdx.x;
  const int na = stage_move(sq, start, atoms, move_mol[m], move_rt + 12 * m, b, old_, neu, centre);
  Acc e = Acc(0);
  for (int g = threadIdx.x; g < k.G; g += BLOCK) {
    const Real a = A[g];
    if (a == Real(0)) continue;
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    Acc dr, di;
    delta_s(Real(nx), Real(ny), Real(nz), old_, neu, na, dr, di);
    e += change(Acc(a), S[2 * g], S[2 * g + 1], dr, di);
  }
  const Acc t = block_sum<Acc, BLOCK>(e, red);
  if (threadIdx.x == 0) dE[m] = t;
}

// a thread per (atom, k) of move blockIdx.y: atomicAdd of q (e' - e) into dS[2 G m ..]
template <typename Real, typename Acc>
__global__ void mc_batch_atomic(const Real* __restrict__ sq, const int* __restrict__ start,
                                const int* __restrict__ atoms, const int* __restrict__ move_mol,
                                const Real* __restrict__ trial, const Real* __restrict__ A, const KGrid k,
                                Acc* __restrict__ dS) {
  const int m = blockIdx.y, mol = move_mol[m];
  const int first = start[mol], na = start[mol + 1] - first;
  Acc* out = dS + 2ll * k.G * m;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < na * k.G; p += gridDim.x * blockDim.x) {
    const int i = p / k.G, g = p - i * k.G;
    if (A[g] == Real(0)) continue;
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    const Real* o = sq + 4 * atoms[first + i];
    Real s1, c1, s0, c0;
    turn_sincos(Real(nx), Real(ny), Real(nz), trial + 4 * MAXA * m + 4 * i, &s1, &c1);
    turn_sincos(Real(nx), Real(ny), Real(nz), o, &s0, &c0);
    atomicAdd(out + 2 * g, Acc(o[3] * (c1 - c0)));
    atomicAdd(out + 2 * g + 1, Acc(o[3] * (s1 - s0)));
  }
}

template <typename Real, typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_batch_sum(const Acc* __restrict__ dS, const Acc* __restrict__ S, const Real* __restrict__ A, const KGrid k,
                 Acc* __restrict__ dE) {
  __shared__ Acc red[BLOCK / 32];
  const int m = blockIdx.x;
  const Acc* d = dS + 2ll * k.G * m;
  Acc e = Acc(0);
  for (int g = threadIdx.x; g < k.G; g += BLOCK) e += change(Acc(A[g]), S[2 * g], S[2 * g + 1], d[2 * g], d[2 * g + 1]);
  const Acc t = block_sum<Acc, BLOCK>(e, red);
  if (threadIdx.x == 0) dE[m] = t;
}

// dS over one run of SEG n_z from (nx, ny, nz0), the recurrence along n_z for each atom; into dr[], di[]
template <typename Real, typename Acc, int SEG>
__device__ __forceinline__ void delta_run(const int nx, const int ny, const int nz0, const Real* old_, const Real* neu,
                                          const int na, Real* dr, Real* di) {
#pragma unroll
  for (int z = 0; z < SEG; ++z) dr[z] = di[z] = Real(0);
  for (int a = 0; a < 2 * na; ++a) {  // the new atoms (+q), then the old ones (-q)
    const Real* p = a < na ? neu + 4 * a : old_ + 4 * (a - na);
    const Real q = a < na ? p[3] : -p[3];
    Real s, c, sz, cz;
    turn_sincos(Real(nx), Real(ny), Real(nz0), p, &s, &c);
    Turn<Real>::sincos(Turn<Real>::reduce(p[2]), &sz, &cz);
#pragma unroll
    for (int z = 0; z < SEG; ++z) {
      dr[z] += q * c;
      di[z] += q * s;
      const Real cn = c * cz - s * sz;
      s = s * cz + c * sz;
      c = cn;
    }
  }
}

// A thread's share of one move's runs of n_z (runs first, first + stride, ...): dS of each entry into dS
// (KEEP; the batch keeps none) and the thread's part of dE, returned. take_runs adds the same entries' dS to S (the move accepted).
template <typename Real, typename Acc, int SEG, bool KEEP>
__device__ __forceinline__ Acc move_runs(const int first, const int stride, const int rows, const int segs,
                                         const KGrid& k, const Real* old_, const Real* neu, const int na,
                                         const Acc* __restrict__ S, const Real* __restrict__ A, Acc* __restrict__ dS) {
  Acc e = Acc(0);
  for (int w = first; w < rows; w += stride) {
    const int row = w / segs, seg = w - row * segs;
    const int nx = row / (2 * k.ky + 1), ny = row - nx * (2 * k.ky + 1) - k.ky;
    Real dr[SEG], di[SEG];
    delta_run<Real, Acc, SEG>(nx, ny, seg * SEG - k.kz, old_, neu, na, dr, di);
    const int g0 = row * k.KZ + seg * SEG;
#pragma unroll
    for (int z = 0; z < SEG; ++z) {
      if (seg * SEG + z < k.KZ) {
        const int g = g0 + z;
        e += change(Acc(A[g]), S[2 * g], S[2 * g + 1], Acc(dr[z]), Acc(di[z]));
        if constexpr (KEEP) {
          dS[2 * g] = Acc(dr[z]);
          dS[2 * g + 1] = Acc(di[z]);
        }
      }
    }
  }
  return e;
}

template <typename Real, typename Acc, int SEG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_batch_rows(const Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                  const int* __restrict__ move_mol, const Real* __restrict__ move_rt, const MoveBox b,
                  const Acc* __restrict__ S, const Real* __restrict__ A, const KGrid k, Acc* __restrict__ dE) {
  __shared__ Real old_[4 * MAXA], neu[4 * MAXA], centre[3];
  __shared__ Acc red[BLOCK / 32];
  const int m = blockIdx.x;
  const int na = stage_move(sq, start, atoms, move_mol[m], move_rt + 12 * m, b, old_, neu, centre);
  const int segs = (k.KZ + SEG - 1) / SEG, rows = (k.kx + 1) * (2 * k.ky + 1) * segs;
  const Acc e = move_runs<Real, Acc, SEG, false>(threadIdx.x, BLOCK, rows, segs, k, old_, neu, na, S, A, nullptr);
  const Acc t = block_sum<Acc, BLOCK>(e, red);
  if (threadIdx.x == 0) dE[m] = t;
}

template <typename Acc, int SEG>
__device__ __forceinline__ void take_runs(const int first, const int stride, const int rows, const int segs,
                                          const KGrid& k, Acc* __restrict__ S, const Acc* __restrict__ dS) {
  for (int w = first; w < rows; w += stride) {
    const int row = w / segs, seg = w - row * segs;
    const int g0 = row * k.KZ + seg * SEG;
    for (int z = 0; z < SEG && seg * SEG + z < k.KZ; ++z) {
      S[2 * (g0 + z)] += dS[2 * (g0 + z)];
      S[2 * (g0 + z) + 1] += dS[2 * (g0 + z) + 1];
    }
  }
}

// The Metropolis loop: one block, moves 0..count-1 in order. dE[m] and accepted[m] recorded; on
// acceptance S += dS (each thread its own entries, kept in dS between the two passes) and the atoms'
// new fractions (wrapped into [0, 1)) written to sq.
template <typename Real, typename Acc, int SEG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_loop_rows(Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                 const int* __restrict__ move_mol, const Real* __restrict__ move_rt, const Real* __restrict__ move_u,
                 const int count, const double beta, const MoveBox b, Acc* __restrict__ S, const Real* __restrict__ A,
                 const KGrid k, Acc* __restrict__ dS, Acc* __restrict__ dE, int* __restrict__ accepted) {
  __shared__ Real old_[4 * MAXA], neu[4 * MAXA], centre[3];
  __shared__ Acc red[BLOCK / 32];
  __shared__ int take;
  const int segs = (k.KZ + SEG - 1) / SEG, rows = (k.kx + 1) * (2 * k.ky + 1) * segs;
  for (int m = 0; m < count; ++m) {
    const int mol = move_mol[m];
    const int na = stage_move(sq, start, atoms, mol, move_rt + 12 * m, b, old_, neu, centre);
    const Acc e = move_runs<Real, Acc, SEG, true>(threadIdx.x, BLOCK, rows, segs, k, old_, neu, na, S, A, dS);
    const Acc t = block_sum<Acc, BLOCK>(e, red);
    if (threadIdx.x == 0) {
      const double d = static_cast<double>(t);
      const int ok = d <= 0.0 || static_cast<double>(move_u[m]) < exp(-beta * d);
      dE[m] = t;
      accepted[m] = ok;
      take = ok;
    }
    __syncthreads();
    if (take) {
      take_runs<Acc, SEG>(threadIdx.x, BLOCK, rows, segs, k, S, dS);  // the entries this thread wrote
      const int first = start[mol];
      for (int i = threadIdx.x; i < na; i += BLOCK) {
        const int a = atoms[first + i];
        for (int d = 0; d < 3; ++d) sq[4 * a + d] = neu[4 * i + d] - floor(neu[4 * i + d]);
      }
    }
    __syncthreads();
  }
}

// A barrier across the grid's blocks, which must all be resident at once (the host launches at most
// one per SM). bar[0] counts arrivals, bar[1] is the generation: the last block to arrive resets the
// count and moves the generation on, the others wait for it to move. A wait longer than kBarrierCycles
// sets *failed (the blocks were not all resident) instead of hanging; every thread returns false then.
constexpr long long kBarrierCycles = 4000000000LL;  // about 2 s at 2 GHz

__device__ __forceinline__ bool grid_barrier(unsigned int* bar, const unsigned int blocks, int* failed) {
  __shared__ int s_ok;
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned int* generation = bar + 1;
    const unsigned int g = *generation;  // read before arriving: it cannot move until this block arrives
    __threadfence();
    int ok = 1;
    if (atomicAdd(bar, 1u) == blocks - 1u) {
      atomicExch(bar, 0u);
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      const long long t0 = clock64();
      while (*generation == g) {
        if (clock64() - t0 > kBarrierCycles || *reinterpret_cast<volatile int*>(failed)) {
          atomicExch(failed, 1);
          ok = 0;
          break;
        }
        __nanosleep(32);
      }
    }
    s_ok = ok;
  }
  __syncthreads();
  __threadfence();  // every thread: its loads after the barrier see what other blocks wrote before it
  return s_ok != 0;
}

// The Metropolis loop on a grid: every block stages the move, takes its share of the n_z runs (block b,
// thread t: run b * BLOCK + t, then every gridDim.x * BLOCK further) and writes its partial dE. After a
// grid barrier every block sums the partials in one fixed order, so that all of them take the same
// decision from the same bits; each block adds its own runs' dS to S on acceptance, block 0 writes the
// atoms, and a second barrier makes them visible to the next move's staging. partial: gridDim.x
// entries; bar: two zeroed counters; *failed set where a barrier timed out (the moves after it not run).
template <typename Real, typename Acc, int SEG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mc_loop_grid(Real* __restrict__ sq, const int* __restrict__ start, const int* __restrict__ atoms,
                 const int* __restrict__ move_mol, const Real* __restrict__ move_rt, const Real* __restrict__ move_u,
                 const int count, const double beta, const MoveBox b, Acc* __restrict__ S, const Real* __restrict__ A,
                 const KGrid k, Acc* __restrict__ dS, Acc* __restrict__ dE, int* __restrict__ accepted,
                 Acc* __restrict__ partial, unsigned int* __restrict__ bar, int* __restrict__ failed) {
  __shared__ Real old_[4 * MAXA], neu[4 * MAXA], centre[3];
  __shared__ Acc red[BLOCK / 32];
  __shared__ int take;
  const int segs = (k.KZ + SEG - 1) / SEG, rows = (k.kx + 1) * (2 * k.ky + 1) * segs;
  const int first_run = blockIdx.x * BLOCK + threadIdx.x, stride = gridDim.x * BLOCK;
  for (int m = 0; m < count; ++m) {
    const int mol = move_mol[m];
    const int na = stage_move(sq, start, atoms, mol, move_rt + 12 * m, b, old_, neu, centre);
    const Acc e = move_runs<Real, Acc, SEG, true>(first_run, stride, rows, segs, k, old_, neu, na, S, A, dS);
    const Acc t = block_sum<Acc, BLOCK>(e, red);
    if (threadIdx.x == 0) partial[blockIdx.x] = t;
    if (!grid_barrier(bar, gridDim.x, failed)) return;
    if (threadIdx.x < 32) {  // a lane's strided share in order, then a butterfly: the same bits in every lane
      Acc v = Acc(0);
      for (int i = threadIdx.x; i < static_cast<int>(gridDim.x); i += 32) v += __ldcg(partial + i);  // from L2
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (threadIdx.x == 0) {
        const double d = static_cast<double>(v);
        const int ok = d <= 0.0 || static_cast<double>(move_u[m]) < exp(-beta * d);
        take = ok;
        if (blockIdx.x == 0) {
          dE[m] = v;
          accepted[m] = ok;
        }
      }
    }
    __syncthreads();
    if (take) {
      take_runs<Acc, SEG>(first_run, stride, rows, segs, k, S, dS);  // the entries this thread wrote
      if (blockIdx.x == 0) {
        const int first = start[mol];
        for (int i = threadIdx.x; i < na; i += BLOCK) {
          const int a = atoms[first + i];
          for (int d = 0; d < 3; ++d) sq[4 * a + d] = neu[4 * i + d] - floor(neu[4 * i + d]);
        }
      }
    }
    // the atoms written, and every block past reading the partials before the next move rewrites them
    if (!grid_barrier(bar, gridDim.x, failed)) return;
  }
}
