// The ls1-MarDyn CUDA port's strategies (the port's developer notes): the parity-plane domain traverser with three
// cell processors, parity_thread (the port's REFERENCE_IMPLEMENTATION: one thread per cell pair),
// parity_block (the thread-block processor) and parity_warpblock (the warp-block processor), and
// per-cell potential/virial statistics.
//
// Storage: the CSR cell storage of cells.cuh (MarDyn's cellStartIndices); binning, zeroing and
// gathering forces are the kernels of binning.cu. Every processor adds the energy, virial and
// pair count of each pair to the statistics of both of its cells (a pair inside one cell: twice
// to that cell), so the per-cell sums count every pair twice; reduce_partials halves them.
//
// Written for independent thread scheduling (Volta and later): nothing assumes lanes of a warp
// run in lock-step. Shared-memory hand-overs inside a warp are ordered by __syncwarp(), warp
// collectives are *_sync, and spin locks are taken by one lane while the others wait at
// __syncwarp().
#include "cells.cuh"

// One launch of the parity-plane traverser (strategies/schedules.py parity_launches): block or
// job index -> (iu, iv, il) in the du x dv grid of a layer and the layer; cell A = start + iu gu
// + iv gv + il gl; cell B = A + d, wrapped on periodic axes. d = 0: the intra-cell pass.
struct Layer {
  int start, du, dv, nl, gu, gv, gl, dx, dy, dz;
};

__device__ __forceinline__ int layer_size(const Layer& L) { return L.du * L.dv * L.nl; }
__device__ __forceinline__ bool layer_intra(const Layer& L) { return (L.dx | L.dy | L.dz) == 0; }

// Cells a and b = a + d of launch index idx, and the shift from a to b's image (B wrapped past a
// periodic boundary sits one box length from where a + d expects it).
template <typename Real>
__device__ __forceinline__ void layer_pair(const Layer& L, const Grid& g, const Box<Real>& box, int idx, int& a,
                                           int& b, Shift<Real>& sh) {
  const int iu = idx % L.du, iv = (idx / L.du) % L.dv, il = idx / (L.du * L.dv);
  a = L.start + iu * L.gu + iv * L.gv + il * L.gl;
  const int az = a % g.nz, ay = (a / g.nz) % g.ny, ax = a / (g.nz * g.ny);
  b = (wrap(ax + L.dx, g.nx) * g.ny + wrap(ay + L.dy, g.ny)) * g.nz + wrap(az + L.dz, g.nz);
  sh = {wrap_shift(ax + L.dx, g.nx, box.lx), wrap_shift(ay + L.dy, g.ny, box.ly), wrap_shift(az + L.dz, g.nz, box.lz)};
}

// Add a thread's (or lane 0's warp-summed) statistics to cell c: plain read-modify-write. Only
// for processors whose launch gives each cell to one block.
template <typename Acc>
__device__ __forceinline__ void add_cell_stats(Acc* __restrict__ cstat, unsigned long long* __restrict__ ccount, int c,
                                               const Acc (&v)[kSums], unsigned long long n, int times) {
#pragma unroll
  for (int k = 0; k < kSums; ++k) cstat[c * kSums + k] += v[k];
  ccount[c] += n;
  if (times == 2) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) cstat[c * kSums + k] += v[k];
    ccount[c] += n;
  }
}

// "Global Statistics": the block's values summed inside each warp without locking, then over
// the warps (block_reduce), then added by thread 0 to cells a and b (a == b: twice).
template <int BLOCK, typename Acc>
__device__ __forceinline__ void block_cell_stats(Acc (&v)[kSums], unsigned long long n, Acc* __restrict__ cstat,
                                                 unsigned long long* __restrict__ ccount, int a, int b) {
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
    add_cell_stats(cstat, ccount, a, v, n, a == b ? 2 : 1);
    if (a != b) add_cell_stats(cstat, ccount, b, v, n, 1);
  }
}

// --- reference cell processor (REFERENCE_IMPLEMENTATION) --------------------------------------

// The port's listings "reference inter-cell / intra-cell block processing": one thread walks
// all molecule pairs of its cell pair and stores both sides: c08's pair_cells_thread, whose
// intra-cell loop takes j > i where the listing takes B < A (the same pairs).
// Same traversal as the fast processors, one thread per cell pair instead of one block.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY>
__global__ void __launch_bounds__(32)
parity_thread(const Cells<Real, Acc, kCsr> cells, const Layer L, const Grid g, const Box<Real> box,
              const Real* __restrict__ fparams, Acc* __restrict__ cstat, unsigned long long* __restrict__ ccount) {
  const int t = blockIdx.x * 32 + threadIdx.x;
  if (t >= layer_size(L)) return;
  int a, b;
  Shift<Real> sh;
  layer_pair(L, g, box, t, a, b, sh);
  const Functor<Real> f(fparams);
  Accumulator<Real, Acc, ENERGY> acc;
  pair_cells_thread(cells, a, b, f, box, sh, acc);
  if constexpr (ENERGY) {
    add_cell_stats(cstat, ccount, a, acc.s, acc.pairs, a == b ? 2 : 1);
    if (a != b) add_cell_stats(cstat, ccount, b, acc.s, acc.pairs, 1);
  }
}

// --- thread-block cell processor --------------------------------------------------------------

// One block per cell pair. Both cells are cut into blocks of BLOCK molecules, one per thread:
// thread t keeps molecule t of block A in registers; block B is staged in shared memory with a
// shared force accumulator (Newton3). A block pair is processed as warp blocks of 32: in round k
// warp w meets warp block (w + k) mod W of B, its lanes rotating over the 32 molecules so that no
// two lanes touch one B molecule at once (__syncwarp() between steps); rounds are separated by a
// block barrier, W per block pair instead of one per molecule. Intra-cell: block pairs bB <= bA;
// inside one block, warp pairs once (rounds 0..W/2) and molecule pairs once (shifts 1..16).
template <typename Real, typename Acc, template <typename> class Functor, int BLOCK, bool ENERGY>
__global__ void __launch_bounds__(BLOCK, BLOCK < 512 ? 512 / BLOCK : 1)  // room for 128 registers
parity_block(const Cells<Real, Acc, kCsr> cells, const Layer L, const Grid g, const Box<Real> box,
             const Real* __restrict__ fparams, Acc* __restrict__ cstat, unsigned long long* __restrict__ ccount) {
  constexpr int kWarps = BLOCK / 32;
  __shared__ Vec4<Real> s_pos[BLOCK];
  __shared__ Acc s_f[3][BLOCK];
  int a, b;
  Shift<Real> sh;
  layer_pair(L, g, box, blockIdx.x, a, b, sh);
  const int na = cells.count(a), nb = cells.count(b);
  const bool same = a == b;
  if (na == 0 || nb == 0 || (same && na < 2)) return;  // the whole block leaves together
  const Functor<Real> f(fparams);
  Accumulator<Real, Acc, ENERGY> acc;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nblocks_a = (na + BLOCK - 1) / BLOCK, nblocks_b = (nb + BLOCK - 1) / BLOCK;
  for (int ba = 0; ba < nblocks_a; ++ba) {
    const int ia = ba * BLOCK + threadIdx.x;
    const bool active = ia < na;
    Vec4<Real> pi = {Real(0), Real(0), Real(0), Real(0)};
    if (active) pi = shifted(cells.p(a, ia), sh.x, sh.y, sh.z);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    const int bb_end = same ? ba + 1 : nblocks_b;
    for (int bb = 0; bb < bb_end; ++bb) {
      const bool self_block = same && bb == ba;
      const int jb = bb * BLOCK + threadIdx.x;
      __syncthreads();  // the previous block B is committed before its slots are reused
      if (jb < nb) s_pos[threadIdx.x] = cells.p(b, jb);
      s_f[0][threadIdx.x] = Acc(0);
      s_f[1][threadIdx.x] = Acc(0);
      s_f[2][threadIdx.x] = Acc(0);
      __syncthreads();
      const int rounds = self_block ? kWarps / 2 + 1 : kWarps;
      for (int k = 0; k < rounds; ++k) {
        const int wb = (warp + k) % kWarps;
        const bool diagonal = self_block && k == 0;  // a warp block with itself
        // with W even, round W/2 pairs warp w with w + W/2 from both sides: keep one; a warp
        // block without molecules (the ends of A and B) has nothing to do but the barrier
        const bool run = !(self_block && k > 0 && 2 * k == kWarps && warp >= kWarps / 2) &&
                         ba * BLOCK + warp * 32 < na && bb * BLOCK + wb * 32 < nb;
        if (run) {
          for (int s = diagonal ? 1 : 0; s <= (diagonal ? 16 : 31); ++s) {
            const int slot = wb * 32 + ((lane + s) & 31);
            const int j = bb * BLOCK + slot;
            Real ax, ay, az;
            if (active && j < nb && !(diagonal && s == 16 && lane >= 16) &&
                newton3_pair<false>(acc, f, box, pi, s_pos[slot], fx, fy, fz, ax, ay, az)) {
              subtract3(&s_f[0][slot], BLOCK, ax, ay, az);
            }
            __syncwarp();  // the next step hands this B molecule to another lane
          }
        }
        __syncthreads();  // the next round gives this warp block of B to another warp
      }
      if (jb < nb) {  // block B belongs to this block alone in this launch
        Acc* fj = cells.f(b, jb);
        fj[0] += s_f[0][threadIdx.x];
        fj[1] += s_f[1][threadIdx.x];
        fj[2] += s_f[2][threadIdx.x];
      }
    }
    if (active) {  // thread t also committed slot t of B: the same thread, so ordered
      Acc* fi = cells.f(a, ia);
      fi[0] += fx;
      fi[1] += fy;
      fi[2] += fz;
    }
  }
  if constexpr (ENERGY) {
    unsigned long long pairs = acc.pairs;
    block_cell_stats<BLOCK>(acc.s, pairs, cstat, ccount, a, b);
  }
}

// --- warp-block cell processor ---------------------------------------------------------------

constexpr int kTwoPass = 0;     // Newton3 by computing A->B and B->A, each writing its own side
constexpr int kSharedCache = 1; // one pass; B's forces gathered in shared memory, then committed
constexpr int kMutex = 0;       // the port's scheduler: a global mutex, warps of a block joined
constexpr int kAtomic = 1;      // lock-free: one atomicAdd on a warp-block counter per warp job
constexpr int kLockCommit = 0;  // per-cell locks around commits to cell B and cell statistics
constexpr int kAtomicCommit = 1;
constexpr int kQueue = 4;       // jobs per warp claimed per lock (the port's WBM_QUEUE_SIZE)

constexpr int kErrMutex = 1;    // error bits (strategies/parity.py names them)
constexpr int kErrCellLock = 2;

// Scheduler state of one launch, zeroed before the traversal.
struct Sched {
  int mutex, job, wb, counter;
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spin lock with a time bound: false after budget_ns without the lock, or at once when an error
// bit is already set (a lost lock must not hang the harness; the caller raises an error bit).
__device__ __forceinline__ bool acquire(int* lock, const int* error, unsigned long long budget_ns) {
  if (atomicCAS(lock, 0, 1) == 0) {
    __threadfence();
    return true;
  }
  const unsigned long long t0 = global_ns();
  unsigned int pause = 16u;
  while (atomicCAS(lock, 0, 1) != 0) {
    // after one timeout anywhere the result is lost: give up at once instead of waiting again
    if (global_ns() - t0 > budget_ns || *static_cast<const volatile int*>(error)) return false;
    __nanosleep(pause);  // short back-off: a lock is held for a few memory round trips
    pause = pause < 256u ? 2u * pause : pause;
  }
  __threadfence();
  return true;
}

__device__ __forceinline__ void release(int* lock) {
  __threadfence();
  atomicExch(lock, 0);
}

// Jobs of a launch: intra-cell, job j is cell j's pass; two-pass, jobs j < P are (A, B) and
// j >= P are (B, A); shared cache, (A, B) with A the fuller cell (more warps per job).
template <int MODE>
__device__ __forceinline__ int job_count(const Layer& L) {
  return (MODE == kTwoPass && !layer_intra(L)) ? 2 * layer_size(L) : layer_size(L);
}

__device__ __forceinline__ int cell_count(const int* __restrict__ start, int c) { return start[c + 1] - start[c]; }

// The cells (a, b) of job j and the shift from a to b's image: two-pass jobs j >= P and
// shared-cache jobs with the fuller cell second are the launch's pair the other way round.
template <int MODE, typename Real>
__device__ __forceinline__ void job_cells(const int* __restrict__ start, const Layer& L, const Grid& g,
                                          const Box<Real>& box, int j, int& a, int& b, Shift<Real>& sh) {
  const int pairs = layer_size(L);
  int c0, c1;
  layer_pair(L, g, box, j < pairs ? j : j - pairs, c0, c1, sh);
  const bool swap = MODE == kTwoPass ? j >= pairs : cell_count(start, c1) > cell_count(start, c0);
  a = swap ? c1 : c0;
  b = swap ? c0 : c1;
  if (swap) sh = {-sh.x, -sh.y, -sh.z};
}

// Warp blocks (32 molecules of A) of a job; 0 when it has no pairs.
__device__ __forceinline__ int job_warp_blocks(const int* __restrict__ start, int a, int b) {
  const int na = cell_count(start, a), nb = cell_count(start, b);
  if (na == 0 || nb == 0 || (a == b && na < 2)) return 0;
  return (na + 31) >> 5;
}

// Job table of both schedulers, all launches at once (blockIdx.y = launch): the warp
// blocks of every job (launch l's jobs start at offsets[l]); a scan (CuPy) and warpblock_job_table
// turn them into a table from warp-block index to job.
template <int MODE>
__global__ void warpblock_job_sizes(const int* __restrict__ start, const Layer* __restrict__ layers,
                              const int* __restrict__ offsets, const Grid g, int* __restrict__ sizes) {
  const Layer L = layers[blockIdx.y];
  const int jobs = job_count<MODE>(L);
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < jobs; j += gridDim.x * blockDim.x) {
    int a, b;
    Shift<float> unused;  // sizes need the cells only
    job_cells<MODE>(start, L, g, Box<float>{}, j, a, b, unused);
    sizes[offsets[blockIdx.y] + j] = job_warp_blocks(start, a, b);
  }
}

// ends: inclusive scan of the sizes over all launches. first[i] = the warp-block index where
// job i starts (first[total_jobs] = all warp blocks); table[w] = the job of warp block w.
__global__ void warpblock_job_table(const int* __restrict__ ends, const int total_jobs, int* __restrict__ table,
                              int* __restrict__ first) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_jobs; i += gridDim.x * blockDim.x) {
    const int begin = i ? ends[i - 1] : 0;
    first[i] = begin;
    if (i == total_jobs - 1) first[total_jobs] = ends[i];
    for (int w = begin; w < ends[i]; ++w) table[w] = i;
  }
}

// One warp block of A against all of B, writing only A (two-pass, and the intra-cell pass of
// both variants, which is the port's processCell: every pair from both sides).
template <typename Real, typename Acc, bool ENERGY, class F>
__device__ __forceinline__ void warp_job_one_side(const Cells<Real, Acc, kCsr>& cells, int a, int b, int wblock,
                                                  const F& f, const Box<Real>& box, const Shift<Real>& sh,
                                                  Accumulator<Real, Acc, ENERGY>& acc, int lane) {
  const int na = cells.count(a), nb = cells.count(b);
  const int ia = wblock * 32 + lane;
  if (ia >= na) return;
  const Vec4<Real> pi = shifted(cells.p(a, ia), sh.x, sh.y, sh.z);
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
  for (int jb = 0; jb < nb; ++jb) {
    Real ax, ay, az;  // j's side is not written: its own job computes it
    if (a != b || jb != ia) newton3_pair<false>(acc, f, box, pi, cells.p(b, jb), fx, fy, fz, ax, ay, az);
  }
  Acc* fi = cells.f(a, ia);  // molecule ia of A is in this one job of the launch
  fi[0] += fx;
  fi[1] += fy;
  fi[2] += fz;
}

// Add v to *p past L1 (another SM may have written p under the same lock).
template <typename T>
__device__ __forceinline__ void add_l2(T* p, T v) {
  __stcg(p, __ldcg(p) + v);
}

// One warp block of A against B in chunks of 32 with Newton3 (the port's listing "inter-cell
// block processing with shared memory cache"): a chunk of B is staged in this warp's shared
// slots, lanes rotate over it, then the chunk's forces are committed to B, which other warps
// (other warp blocks of A) update too: under B's cell lock, or with atomics.
template <typename Real, typename Acc, bool ENERGY, class F, int COMMIT>
__device__ __forceinline__ void warp_job_shared(const Cells<Real, Acc, kCsr>& cells, int a, int b, int wblock,
                                                const F& f, const Box<Real>& box, const Shift<Real>& sh,
                                                Accumulator<Real, Acc, ENERGY>& acc, int lane, Vec4<Real>* s_pos,
                                                Acc (*s_f)[32], int* locks, int* error, unsigned long long budget_ns) {
  const int na = cells.count(a), nb = cells.count(b);
  const int ia = wblock * 32 + lane;
  const bool active = ia < na;
  Vec4<Real> pi = {Real(0), Real(0), Real(0), Real(0)};
  if (active) pi = shifted(cells.p(a, ia), sh.x, sh.y, sh.z);
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
  for (int j0 = 0; j0 < nb; j0 += 32) {
    const int jl = j0 + lane;
    if (jl < nb) s_pos[lane] = cells.p(b, jl);
    s_f[0][lane] = Acc(0);
    s_f[1][lane] = Acc(0);
    s_f[2][lane] = Acc(0);
    __syncwarp();
    for (int s = 0; s < 32; ++s) {
      const int slot = (lane + s) & 31;
      Real ax, ay, az;
      if (active && j0 + slot < nb && newton3_pair<false>(acc, f, box, pi, s_pos[slot], fx, fy, fz, ax, ay, az)) {
        subtract3(&s_f[0][slot], 32, ax, ay, az);
      }
      __syncwarp();
    }
    if (COMMIT == kLockCommit) {
      int held = 1;
      if (lane == 0) held = acquire(&locks[b], error, budget_ns);
      held = __shfl_sync(0xffffffffu, held, 0);
      if (!held && lane == 0) atomicOr(error, kErrCellLock);
      if (jl < nb) {
        Acc* fj = cells.f(b, jl);
        if (held) {
          add_l2(fj + 0, s_f[0][lane]);
          add_l2(fj + 1, s_f[1][lane]);
          add_l2(fj + 2, s_f[2][lane]);
        } else {  // timed out: stay race-free, the error bit fails the result anyway
          atomicAdd(fj + 0, s_f[0][lane]);
          atomicAdd(fj + 1, s_f[1][lane]);
          atomicAdd(fj + 2, s_f[2][lane]);
        }
      }
      __syncwarp();
      if (lane == 0 && held) release(&locks[b]);
    } else if (jl < nb) {
      Acc* fj = cells.f(b, jl);
      atomicAdd(fj + 0, s_f[0][lane]);
      atomicAdd(fj + 1, s_f[1][lane]);
      atomicAdd(fj + 2, s_f[2][lane]);
    }
    __syncwarp();  // this warp's shared slots are free for the next chunk
  }
  if (active) {
    Acc* fi = cells.f(a, ia);
    fi[0] += fx;
    fi[1] += fy;
    fi[2] += fz;
  }
}

// Lane 0 adds the warp's statistics of one job to cell c, which other warps update too.
template <int COMMIT, typename Acc>
__device__ __forceinline__ void commit_cell_stats(Acc* cstat, unsigned long long* ccount, int c, const Acc (&v)[kSums],
                                                  unsigned long long n, int* locks, int* error,
                                                  unsigned long long budget_ns) {
  if (COMMIT == kLockCommit) {
    if (acquire(&locks[c], error, budget_ns)) {
#pragma unroll
      for (int k = 0; k < kSums; ++k) add_l2(cstat + c * kSums + k, v[k]);
      add_l2(ccount + c, n);
      release(&locks[c]);
      return;
    }
    atomicOr(error, kErrCellLock);
  }
#pragma unroll
  for (int k = 0; k < kSums; ++k) atomicAdd(cstat + c * kSums + k, v[k]);
  atomicAdd(ccount + c, n);
}

// One warp-block job: its cells from the job table, the processor, then the warp's statistics
// to its cells (warp sum, then lane 0).
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, int MODE, int COMMIT>
__device__ __forceinline__ void run_job(const Cells<Real, Acc, kCsr>& cells, const Layer& L, const Grid& g,
                                        const Box<Real>& box, const Functor<Real>& f, Acc* cstat,
                                        unsigned long long* ccount, const int* __restrict__ table,
                                        const int* __restrict__ job_first, const int offset, const int wb, int* locks,
                                        int* error, const unsigned long long budget_ns, Vec4<Real>* s_pos,
                                        Acc (*s_f)[32], const int lane) {
  const int job = table[wb];  // global job index; its warp blocks start at job_first[job]
  int a, b;
  Shift<Real> sh;
  job_cells<MODE>(cells.start, L, g, box, job - offset, a, b, sh);
  const int w = wb - job_first[job];
  const bool intra = layer_intra(L);
  Accumulator<Real, Acc, ENERGY> acc;
  if (MODE == kTwoPass || intra) {
    warp_job_one_side(cells, a, b, w, f, box, sh, acc, lane);
  } else {
    warp_job_shared<Real, Acc, ENERGY, Functor<Real>, COMMIT>(cells, a, b, w, f, box, sh, acc, lane, s_pos, s_f, locks,
                                                              error, budget_ns);
  }
  if constexpr (ENERGY) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) acc.s[k] = warp_sum(acc.s[k]);
    const unsigned long long n = warp_sum(static_cast<unsigned long long>(acc.pairs));
    if (lane == 0 && n) {
      commit_cell_stats<COMMIT>(cstat, ccount, a, acc.s, n, locks, error, budget_ns);
      if (MODE == kSharedCache && !intra) commit_cell_stats<COMMIT>(cstat, ccount, b, acc.s, n, locks, error, budget_ns);
    }
  }
  __syncwarp();
}

// The persistent kernel of one launch: about as many blocks as fit on the GPU at once, taking
// warp-block jobs until the launch has none left. Jobs are numbered by the job table (warp
// block w of the launch = table entry first + w, in job order, empty jobs absent).
//   kMutex (the port's scheduler): the warps of a block are joined: thread 0 takes the global
//     mutex once per round and claims kQueue jobs for every warp of the block, then the warps
//     run them (a barrier per round).
//   kAtomic: each warp claims its next job alone with one atomicAdd, no lock and no barrier.
template <typename Real, typename Acc, template <typename> class Functor, int WARPS, bool ENERGY, int MODE, int SCHED,
          int COMMIT>
__global__ void __launch_bounds__(WARPS * 32)
parity_warpblock(const Cells<Real, Acc, kCsr> cells, const Layer L, const Grid g, const Box<Real> box,
    const Real* __restrict__ fparams, Acc* __restrict__ cstat, unsigned long long* __restrict__ ccount,
    Sched* __restrict__ sched, const int* __restrict__ table, const int* __restrict__ job_first, const int offset,
    int* __restrict__ locks, int* __restrict__ error, const unsigned long long budget_ns) {
  __shared__ Vec4<Real> s_pos[WARPS][32];
  __shared__ Acc s_f[WARPS][3][32];
  const Functor<Real> f(fparams);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int jobs = job_count<MODE>(L);
  const int first = job_first[offset];
  const int total = job_first[offset + jobs] - first;  // warp blocks of this launch
  if (SCHED == kMutex) {
    __shared__ int s_base, s_taken;
    while (true) {
      __syncthreads();  // every warp has read the previous round's claim
      if (threadIdx.x == 0) {
        int base = 0, taken = 0;
        if (acquire(&sched->mutex, error, budget_ns)) {
          volatile Sched* vs = sched;
          base = vs->counter;
          taken = min(WARPS * kQueue, total - base);
          taken = taken > 0 ? taken : 0;
          vs->counter = base + taken;
          release(&sched->mutex);
        } else {
          atomicOr(error, kErrMutex);
        }
        s_base = base;
        s_taken = taken;
      }
      __syncthreads();
      const int base = s_base, taken = s_taken;
      if (taken == 0) break;
      for (int q = warp; q < taken; q += WARPS) {
        run_job<Real, Acc, Functor, ENERGY, MODE, COMMIT>(cells, L, g, box, f, cstat, ccount, table, job_first, offset,
                                                       first + base + q, locks, error, budget_ns, s_pos[warp],
                                                       s_f[warp], lane);
      }
    }
  } else {
    while (true) {
      int w = 0;
      if (lane == 0) w = atomicAdd(&sched->counter, 1);
      w = __shfl_sync(0xffffffffu, w, 0);
      if (w >= total) break;
      run_job<Real, Acc, Functor, ENERGY, MODE, COMMIT>(cells, L, g, box, f, cstat, ccount, table, job_first, offset,
                                                     first + w, locks, error, budget_ns, s_pos[warp], s_f[warp], lane);
    }
  }
}
