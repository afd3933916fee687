// Ewald's reciprocal part (mdcore/ewald.py has the formulas): the structure factors S(k) of the
// charges, then the energy, the virial and the weights W(k) = 2 A(k) S(k), then each charge's force.
//
// The wave vectors live on a grid of (kx + 1)(2 ky + 1)(2 kz + 1) entries, n_x = 0..kx outermost,
// then n_y = -ky..ky, then n_z = -kz..kz innermost; A(k) is zero at the entries outside the half
// space (n_x = 0 with n_y < 0, or n_y = 0 and n_z <= 0), so that every kernel walks the grid
// without a test and those entries add nothing. A charge arrives as {s_x, s_y, s_z, q} with s its
// position in fractions of the box (in [0, 1)): the phase k . r is 2 pi (n . s), and n . s less its
// nearest integer is a fraction of a turn in [-1/2, 1/2], where float's SFU sincos (__sincosf) is
// accurate to about 1e-6 (it is not for the hundreds of radians a raw k . r reaches).
//
// Structure factors, one kernel per strategy:
//   kspace_s_kloop    a thread per k over all charges (OpenMM's calculateEwaldCosSinSums, GOMC's
//                     later branch): no atomics, the charges read by every thread (broadcast)
//   kspace_s_atomic   a thread per (charge, k), atomicAdd into S(k) (GOMC's MolExchangeReciprocal)
//   kspace_s_staged   a 2-D grid of k x chunks of 64 charges staged in shared memory, atomicAdd of
//                     each chunk's sum (GOMC's main branch)
//   kspace_s_rows     a thread per (n_x, n_y, a segment of SEG n_z) and chunk of the charges: one
//                     sincos per charge and segment, then exp(i 2 pi s_z) multiplied in for each next
//                     n_z (a recurrence instead of SEG sincos: complex multiplies on the FMA pipe, or
//                     with CHEB the three-term recurrence, half the multiplies: RunPhase);
//                     kspace_fold adds the chunks' partial sums in order
//   kspace_s_mirror   the rows kernel with n_z and -n_z from one phase: a thread per (n_x, n_y, run of
//                     SEG n >= 0), four sums per n that give both entries (with the three-term recurrence,
//                     three instructions a wave vector and charge where kspace_s_rows takes four)
// Forces: kspace_f_direct (a thread per charge over every k, a sincos each: OpenMM's
// calculateEwaldForces), kspace_f_staged (the same with the weights staged in shared memory tiles)
// and kspace_f_rows (the recurrence along n_z, chunks of the rows over blockIdx.y, their partial
// forces added by kspace_fold).
//
// Real: float or double (the phases and products); Acc: float or double (the sums).
#pragma once

struct KGrid {
  int kx, ky, kz;  // the largest |n| per axis
  int KZ, NYZ;     // 2 kz + 1, (2 ky + 1)(2 kz + 1)
  int G;           // grid entries: (kx + 1) NYZ
};

template <typename Real>
struct Turn;

template <>
struct Turn<float> {
  static __device__ __forceinline__ float reduce(float t) { return t - rintf(t); }
  static __device__ __forceinline__ void sincos(float t, float* s, float* c) {
    __sincosf(6.28318530717958647692f * t, s, c);
  }
};

template <>
struct Turn<double> {
  static __device__ __forceinline__ double reduce(double t) { return t - rint(t); }
  static __device__ __forceinline__ void sincos(double t, double* s, double* c) { sincospi(2.0 * t, s, c); }
};

template <typename Real>
struct Pair;
template <>
struct Pair<float> {
  typedef float2 T;
};
template <>
struct Pair<double> {
  typedef double2 T;
};

__device__ __forceinline__ void grid_n(int g, const KGrid& k, int& nx, int& ny, int& nz) {
  nx = g / k.NYZ;
  const int r = g - nx * k.NYZ;
  ny = r / k.KZ;
  nz = r - ny * k.KZ - k.kz;
  ny -= k.ky;
}

template <typename Real>
__device__ __forceinline__ void turn_sincos(Real nx, Real ny, Real nz, const Real* p, Real* s, Real* c) {
  Real t = nx * p[0] + ny * p[1] + nz * p[2];
  Turn<Real>::sincos(Turn<Real>::reduce(t), s, c);
}

// the same at n_z = 0: a row's phase (kspace_s_mirror)
template <typename Real>
__device__ __forceinline__ void row_sincos(int nx, int ny, const Real* p, Real* s, Real* c) {
  Turn<Real>::sincos(Turn<Real>::reduce(Real(nx) * p[0] + Real(ny) * p[1]), s, c);
}

// The phase e^{i(t + n f)} along a run of n_z (the rows kernels): (c, s) now, from one sincos at the run's
// first n_z. next() moves to n + 1 by a complex multiply with e^{i f} = (cz, sz) (two FMUL, two FFMA), or
// with CHEB by the three-term recurrence x(n+1) = 2 cos(f) x(n) - x(n-1) (one FFMA a component, the
// previous phase in registers: seeded once a run by a rotation backwards). In float the recurrence
// drifts about ten times as far over a run of 16 (1e-5 of the phase's unit circle, against 1e-6).
template <typename Real, bool CHEB>
struct RunPhase {
  Real c, s, cz, sz, pc, ps, tz;
  __device__ __forceinline__ RunPhase(Real c0, Real s0, Real cz_, Real sz_) : c(c0), s(s0), cz(cz_), sz(sz_) {
    if constexpr (CHEB) {
      pc = c * cz + s * sz;  // n - 1
      ps = s * cz - c * sz;
      tz = cz + cz;
    }
  }
  // a run's start in five words, made once and read by many threads (kspace_s_mirror's tile): (c, s) and
  // (2 cos f, the phase at n - 1) with CHEB, else (cos f, sin f)
  static __device__ __forceinline__ void stage(Real* w, Real c0, Real s0, Real cz_, Real sz_) {
    const RunPhase p(c0, s0, cz_, sz_);
    w[0] = p.c, w[1] = p.s;
    if constexpr (CHEB) {
      w[2] = p.tz, w[3] = p.pc, w[4] = p.ps;
    } else {
      w[2] = cz_, w[3] = sz_, w[4] = Real(0);
    }
  }
  __device__ __forceinline__ explicit RunPhase(const Real* w) : c(w[0]), s(w[1]) {
    if constexpr (CHEB) {
      tz = w[2], pc = w[3], ps = w[4];
    } else {
      cz = w[2], sz = w[3];
    }
  }
  __device__ __forceinline__ void next() {
    if constexpr (CHEB) {
      const Real nc = tz * c - pc, ns = tz * s - ps;
      pc = c, ps = s, c = nc, s = ns;
    } else {
      const Real nc = c * cz - s * sz;
      s = s * cz + c * sz;
      c = nc;
    }
  }
};

// ---- structure factors ----------------------------------------------------------------------

template <typename Real, typename Acc>
__global__ void kspace_s_kloop(const Real* __restrict__ sq, const int n, const KGrid k, Acc* __restrict__ S) {
  for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < k.G; g += gridDim.x * blockDim.x) {
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    const Real fx = Real(nx), fy = Real(ny), fz = Real(nz);
    Acc re = Acc(0), im = Acc(0);
    for (int j = 0; j < n; ++j) {
      const Real* p = sq + 4 * j;
      Real s, c;
      turn_sincos(fx, fy, fz, p, &s, &c);
      re += Acc(p[3] * c);
      im += Acc(p[3] * s);
    }
    S[2 * g] = re;
    S[2 * g + 1] = im;
  }
}

template <typename Real, typename Acc>
__global__ void kspace_s_atomic(const Real* __restrict__ sq, const int n, const KGrid k, Acc* __restrict__ S) {
  const long long total = static_cast<long long>(n) * k.G;
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < total;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(p / k.G);
    const int g = static_cast<int>(p - static_cast<long long>(j) * k.G);
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    const Real* a = sq + 4 * j;
    Real s, c;
    turn_sincos(Real(nx), Real(ny), Real(nz), a, &s, &c);
    atomicAdd(S + 2 * g, Acc(a[3] * c));
    atomicAdd(S + 2 * g + 1, Acc(a[3] * s));
  }
}

template <typename Real, typename Acc, int CHUNK>
__global__ void kspace_s_staged(const Real* __restrict__ sq, const int n, const KGrid k, Acc* __restrict__ S) {
  __shared__ Real tile[4 * CHUNK];
  for (int c0 = blockIdx.y * CHUNK; c0 < n; c0 += gridDim.y * CHUNK) {
    const int m = min(CHUNK, n - c0);
    __syncthreads();
    for (int i = threadIdx.x; i < 4 * m; i += blockDim.x) tile[i] = sq[4 * c0 + i];
    __syncthreads();
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < k.G; g += gridDim.x * blockDim.x) {
      int nx, ny, nz;
      grid_n(g, k, nx, ny, nz);
      const Real fx = Real(nx), fy = Real(ny), fz = Real(nz);
      Acc re = Acc(0), im = Acc(0);
      for (int j = 0; j < m; ++j) {
        Real s, c;
        turn_sincos(fx, fy, fz, tile + 4 * j, &s, &c);
        re += Acc(tile[4 * j + 3] * c);
        im += Acc(tile[4 * j + 3] * s);
      }
      atomicAdd(S + 2 * g, re);
      atomicAdd(S + 2 * g + 1, im);
    }
  }
}

// a thread per (n_x, n_y, segment of SEG n_z) over one chunk of the charges (blockIdx.y): the charges
// staged a block at a time with exp(i 2 pi s_z). The rows alone are too few threads for the GPU (5,724
// at kmax 26): the chunks multiply them, each writing its partial sums to part[chunk], which
// kspace_fold adds in chunk order (the same bits every run).
template <typename Real, typename Acc, int SEG, int BLOCK, bool CHEB>
__global__ void __launch_bounds__(BLOCK) kspace_s_rows(const Real* __restrict__ sq, const int n, const int chunk,
                                                       const KGrid k, Acc* __restrict__ part) {
  __shared__ Real tile[6 * BLOCK];
  const int segs = (k.KZ + SEG - 1) / SEG;
  const int rows = (k.kx + 1) * (2 * k.ky + 1) * segs;
  const int first = blockIdx.y * chunk, last = min(n, first + chunk);
  Acc* out = part + 2ll * k.G * blockIdx.y;
  for (int base = blockIdx.x * BLOCK; base < rows; base += gridDim.x * BLOCK) {  // uniform over the block
    const int w = base + threadIdx.x;
    const int row = w / segs, seg = w - (w / segs) * segs;
    const int nx = row / (2 * k.ky + 1), ny = row - nx * (2 * k.ky + 1) - k.ky;
    const int nz0 = seg * SEG - k.kz;
    const int g0 = (nx * (2 * k.ky + 1) + ny + k.ky) * k.KZ + seg * SEG;
    const int mine = w < rows ? min(SEG, k.KZ - seg * SEG) : 0;  // the entries this thread owns
    for (int z = 0; z < mine; ++z) out[2 * (g0 + z)] = out[2 * (g0 + z) + 1] = Acc(0);
    for (int a0 = first; a0 < last; a0 += BLOCK) {
      const int m = min(BLOCK, last - a0);
      __syncthreads();
      if (threadIdx.x < m) {
        const Real* p = sq + 4 * (a0 + threadIdx.x);
        Real* t = tile + 6 * threadIdx.x;
        t[0] = p[0], t[1] = p[1], t[2] = p[2], t[3] = p[3];
        Turn<Real>::sincos(Turn<Real>::reduce(p[2]), t + 5, t + 4);
      }
      __syncthreads();
      if (w >= rows) continue;
      // the tile's sums in Real (a tile of at most BLOCK charges), added to the Acc sums in memory after it
      Real re[SEG], im[SEG];
#pragma unroll
      for (int z = 0; z < SEG; ++z) re[z] = im[z] = Real(0);
      int j = 0;
      for (; j + 1 < m; j += 2) {  // two charges at once: two independent recurrence chains
        const Real* t = tile + 6 * j;
        const Real* u = t + 6;
        Real s, c, s2, c2;
        turn_sincos(Real(nx), Real(ny), Real(nz0), t, &s, &c);
        turn_sincos(Real(nx), Real(ny), Real(nz0), u, &s2, &c2);
        const Real q = t[3], q2 = u[3];
        RunPhase<Real, CHEB> a(c, s, t[4], t[5]), b(c2, s2, u[4], u[5]);
#pragma unroll
        for (int z = 0; z < SEG; ++z) {
          re[z] += q * a.c;
          re[z] += q2 * b.c;
          im[z] += q * a.s;
          im[z] += q2 * b.s;
          a.next();
          b.next();
        }
      }
      for (; j < m; ++j) {
        const Real* t = tile + 6 * j;
        Real s, c;
        turn_sincos(Real(nx), Real(ny), Real(nz0), t, &s, &c);
        const Real q = t[3];
        RunPhase<Real, CHEB> a(c, s, t[4], t[5]);
#pragma unroll
        for (int z = 0; z < SEG; ++z) {
          re[z] += q * a.c;
          im[z] += q * a.s;
          a.next();
        }
      }
#pragma unroll
      for (int z = 0; z < SEG; ++z) {
        if (z < mine) {
          out[2 * (g0 + z)] += Acc(re[z]);
          out[2 * (g0 + z) + 1] += Acc(im[z]);
        }
      }
    }
  }
}

// a thread per (n_x, n_y) row and run of SEG n >= 0 over one chunk of the charges (blockIdx.y), the
// entries n_z = +n and -n together. A charge's phase there is e^{i t} e^{+-i n f} (t the row's phase,
// f = 2 pi s_z): with a = q cos t, b = q sin t and (c, s) = e^{i n f}, the sums P = sum a c, Q = sum b s,
// R = sum b c and T = sum a s give S(+n) = (P - Q) + i (R + T) and S(-n) = (P + Q) + i (R - T), four FFMA
// and one step of the recurrence for two wave vectors where kspace_s_rows takes two FFMA and a step for
// one. The threads of a block share their run, so that e^{i n0 f} at its start is one sincos per charge
// and block, made by the thread that stages the charge.
template <typename Real, typename Acc, int SEG, int BLOCK, bool CHEB>
__global__ void __launch_bounds__(BLOCK) kspace_s_mirror(const Real* __restrict__ sq, const int n, const int chunk,
                                                         const KGrid k, Acc* __restrict__ part) {
  __shared__ Real tile[8 * BLOCK];
  const int R = (k.kx + 1) * (2 * k.ky + 1);
  const int rblocks = (R + BLOCK - 1) / BLOCK;
  const int segs = (k.kz + SEG) / SEG;  // the runs over n = 0..kz
  const int first = blockIdx.y * chunk, last = min(n, first + chunk);
  Acc* out = part + 2ll * k.G * blockIdx.y;
  for (int b = blockIdx.x; b < segs * rblocks; b += gridDim.x) {  // uniform over the block
    const int seg = b / rblocks;
    const int row = (b - seg * rblocks) * BLOCK + threadIdx.x;
    const int n0 = seg * SEG;
    const int nx = row / (2 * k.ky + 1), ny = row - nx * (2 * k.ky + 1) - k.ky;
    const int mid = row * k.KZ + k.kz;  // the row's entry n_z = 0
    const int mine = row < R ? min(SEG, k.kz + 1 - n0) : 0;  // the n this thread owns
    for (int z = 0; z < mine; ++z) {
      out[2 * (mid + n0 + z)] = out[2 * (mid + n0 + z) + 1] = Acc(0);
      out[2 * (mid - n0 - z)] = out[2 * (mid - n0 - z) + 1] = Acc(0);
    }
    for (int a0 = first; a0 < last; a0 += BLOCK) {
      const int m = min(BLOCK, last - a0);
      __syncthreads();
      if (threadIdx.x < m) {  // s_x, s_y, q, the run's start e^{i n0 f} with its step (RunPhase::stage)
        const Real* p = sq + 4 * (a0 + threadIdx.x);
        Real* t = tile + 8 * threadIdx.x;
        Real cz, sz, c0, s0;
        Turn<Real>::sincos(Turn<Real>::reduce(p[2]), &sz, &cz);
        Turn<Real>::sincos(Turn<Real>::reduce(Real(n0) * p[2]), &s0, &c0);
        t[0] = p[0], t[1] = p[1], t[2] = p[3];
        RunPhase<Real, CHEB>::stage(t + 3, c0, s0, cz, sz);
      }
      __syncthreads();
      if (row >= R) continue;
      Real P[SEG], Q[SEG], RS[SEG], T[SEG];
#pragma unroll
      for (int z = 0; z < SEG; ++z) P[z] = Q[z] = RS[z] = T[z] = Real(0);
      int j = 0;
      for (; j + 1 < m; j += 2) {  // two charges at once: two independent recurrence chains
        const Real* t = tile + 8 * j;
        const Real* u = t + 8;
        Real st, ct, su, cu;
        row_sincos(nx, ny, t, &st, &ct);
        row_sincos(nx, ny, u, &su, &cu);
        const Real at = t[2] * ct, bt = t[2] * st, au = u[2] * cu, bu = u[2] * su;
        RunPhase<Real, CHEB> x(t + 3), y(u + 3);
#pragma unroll
        for (int z = 0; z < SEG; ++z) {
          P[z] += at * x.c;
          P[z] += au * y.c;
          Q[z] += bt * x.s;
          Q[z] += bu * y.s;
          RS[z] += bt * x.c;
          RS[z] += bu * y.c;
          T[z] += at * x.s;
          T[z] += au * y.s;
          x.next();
          y.next();
        }
      }
      for (; j < m; ++j) {
        const Real* t = tile + 8 * j;
        Real st, ct;
        row_sincos(nx, ny, t, &st, &ct);
        const Real at = t[2] * ct, bt = t[2] * st;
        RunPhase<Real, CHEB> x(t + 3);
#pragma unroll
        for (int z = 0; z < SEG; ++z) {
          P[z] += at * x.c;
          Q[z] += bt * x.s;
          RS[z] += bt * x.c;
          T[z] += at * x.s;
          x.next();
        }
      }
#pragma unroll
      for (int z = 0; z < SEG; ++z) {
        if (z < mine) {
          const int g = mid + n0 + z, h = mid - n0 - z;
          out[2 * g] += Acc(P[z] - Q[z]);
          out[2 * g + 1] += Acc(RS[z] + T[z]);
          if (h != g) {  // n = 0 is one entry
            out[2 * h] += Acc(P[z] + Q[z]);
            out[2 * h + 1] += Acc(RS[z] - T[z]);
          }
        }
      }
    }
  }
}

// out[i] (or out[3 index[i / 3] + i % 3] with an index) = the chunks' partial sums part[c][i] added in chunk order
template <typename Acc>
__global__ void kspace_fold(const Acc* __restrict__ part, const int chunks, const int len, const int* __restrict__ index,
                            Acc* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x) {
    Acc x = part[i];
    for (int c = 1; c < chunks; ++c) x += part[static_cast<long long>(len) * c + i];
    out[index ? 3 * index[i / 3] + i % 3 : i] = x;
  }
}

// ---- energy, virial and weights -------------------------------------------------------------

// Per grid entry: e = A |S|^2 into the energy, e (delta_ab - 2 k_a k_b (1/k^2 + 1/(4 alpha^2))) into
// the virial, W = 2 A S for the forces. Each block's 7 sums (energy, xx xy xz yy yz zz) to
// parts[7 * block]: the host adds the blocks in order.
template <typename Real, typename Acc, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    kspace_energy(const Acc* __restrict__ S, const Real* __restrict__ A, const KGrid k, const double twopi_lx,
                  const double twopi_ly, const double twopi_lz, const double quarter_alpha2, Real* __restrict__ W,
                  Acc* __restrict__ parts) {
  Acc v[7];
#pragma unroll
  for (int c = 0; c < 7; ++c) v[c] = Acc(0);
  for (int g = blockIdx.x * BLOCK + threadIdx.x; g < k.G; g += gridDim.x * BLOCK) {
    const Acc re = S[2 * g], im = S[2 * g + 1];
    const Acc a = Acc(A[g]);
    W[2 * g] = Real(Acc(2) * a * re);
    W[2 * g + 1] = Real(Acc(2) * a * im);
    if (a == Acc(0)) continue;
    int nx, ny, nz;
    grid_n(g, k, nx, ny, nz);
    const Acc kv[3] = {Acc(nx) * Acc(twopi_lx), Acc(ny) * Acc(twopi_ly), Acc(nz) * Acc(twopi_lz)};
    const Acc e = a * (re * re + im * im);
    const Acc k2 = kv[0] * kv[0] + kv[1] * kv[1] + kv[2] * kv[2];
    const Acc h = Acc(2) * (Acc(1) / k2 + Acc(quarter_alpha2));
    v[0] += e;
    v[1] += e * (Acc(1) - h * kv[0] * kv[0]);
    v[2] -= e * h * kv[0] * kv[1];
    v[3] -= e * h * kv[0] * kv[2];
    v[4] += e * (Acc(1) - h * kv[1] * kv[1]);
    v[5] -= e * h * kv[1] * kv[2];
    v[6] += e * (Acc(1) - h * kv[2] * kv[2]);
  }
  __shared__ Acc red[7][BLOCK / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int c = 0; c < 7; ++c) {
    Acc x = v[c];
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    if (lane == 0) red[c][warp] = x;
  }
  __syncthreads();
  if (threadIdx.x < 7) {
    Acc x = Acc(0);
    for (int w = 0; w < BLOCK / 32; ++w) x += red[threadIdx.x][w];
    parts[7 * blockIdx.x + threadIdx.x] = x;
  }
}

// ---- forces ---------------------------------------------------------------------------------

// F_j = q_j sum_k (W_re sin - W_im cos) k, k = 2 pi n / L: the n-weighted sums per thread, scaled at the end.
template <typename Real, typename Acc>
__device__ __forceinline__ void store_force(Acc fx, Acc fy, Acc fz, const Real q, const int to, const double twopi_lx,
                                            const double twopi_ly, const double twopi_lz, Acc* __restrict__ F) {
  F[3 * to] = Acc(q) * fx * Acc(twopi_lx);
  F[3 * to + 1] = Acc(q) * fy * Acc(twopi_ly);
  F[3 * to + 2] = Acc(q) * fz * Acc(twopi_lz);
}

template <typename Real, typename Acc>
__global__ void kspace_f_direct(const Real* __restrict__ sq, const int* __restrict__ index, const int n,
                                const Real* __restrict__ W, const KGrid k, const double twopi_lx,
                                const double twopi_ly, const double twopi_lz, Acc* __restrict__ F) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
    const Real* p = sq + 4 * j;
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    int g = 0;
    for (int nx = 0; nx <= k.kx; ++nx) {
      for (int ny = -k.ky; ny <= k.ky; ++ny) {
        for (int nz = -k.kz; nz <= k.kz; ++nz, ++g) {
          Real s, c;
          turn_sincos(Real(nx), Real(ny), Real(nz), p, &s, &c);
          const Acc v = Acc(W[2 * g] * s - W[2 * g + 1] * c);
          fx += v * Acc(nx);
          fy += v * Acc(ny);
          fz += v * Acc(nz);
        }
      }
    }
    store_force<Real, Acc>(fx, fy, fz, p[3], index[j], twopi_lx, twopi_ly, twopi_lz, F);
  }
}

template <typename Real, typename Acc, int TILE>
__global__ void kspace_f_staged(const Real* __restrict__ sq, const int* __restrict__ index, const int n,
                                const Real* __restrict__ W, const KGrid k, const double twopi_lx,
                                const double twopi_ly, const double twopi_lz, Acc* __restrict__ F) {
  __shared__ Real tile[5 * TILE];  // W_re, W_im, n_x, n_y, n_z
  for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {  // uniform
    const int j = base + threadIdx.x;
    const bool live = j < n;
    const Real* p = sq + 4 * (live ? j : 0);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int g0 = 0; g0 < k.G; g0 += TILE) {
      const int m = min(TILE, k.G - g0);
      __syncthreads();
      for (int i = threadIdx.x; i < m; i += blockDim.x) {
        int nx, ny, nz;
        grid_n(g0 + i, k, nx, ny, nz);
        tile[5 * i] = W[2 * (g0 + i)], tile[5 * i + 1] = W[2 * (g0 + i) + 1];
        tile[5 * i + 2] = Real(nx), tile[5 * i + 3] = Real(ny), tile[5 * i + 4] = Real(nz);
      }
      __syncthreads();
      if (live) {
        for (int i = 0; i < m; ++i) {
          const Real* t = tile + 5 * i;
          Real s, c;
          turn_sincos(t[2], t[3], t[4], p, &s, &c);
          const Acc v = Acc(t[0] * s - t[1] * c);
          fx += v * Acc(t[2]);
          fy += v * Acc(t[3]);
          fz += v * Acc(t[4]);
        }
      }
    }
    if (live) store_force<Real, Acc>(fx, fy, fz, p[3], index[j], twopi_lx, twopi_ly, twopi_lz, F);
  }
}

// a thread per charge over one chunk of the (n_x, n_y) rows (blockIdx.y), TROWS rows of weights at a time
// staged in shared memory (KZ float2 or double2 each, dynamic): one sincos per run of SEG n_z, the next
// n_z by the recurrence. Each chunk's partial forces go to part[chunk] (3 per charge, in the order sent),
// which kspace_fold adds in chunk order into the forces.
template <typename Real, typename Acc, int SEG, int BLOCK, int TROWS, bool CHEB>
__global__ void __launch_bounds__(BLOCK)
    kspace_f_rows(const Real* __restrict__ sq, const int n, const Real* __restrict__ W, const KGrid k,
                  const int rows_per_chunk, const double twopi_lx, const double twopi_ly, const double twopi_lz,
                  Acc* __restrict__ part) {
  typedef typename Pair<Real>::T Real2;
  extern __shared__ unsigned char smem[];
  Real2* tile = reinterpret_cast<Real2*>(smem);
  const int R = (k.kx + 1) * (2 * k.ky + 1);
  const int KP = (k.KZ + SEG - 1) / SEG * SEG;  // a row in shared memory, zero-padded to whole runs
  const int r_first = blockIdx.y * rows_per_chunk, r_last = min(R, r_first + rows_per_chunk);
  const Real2* w2 = reinterpret_cast<const Real2*>(W);
  Acc* out = part + 3ll * n * blockIdx.y;
  for (int base = blockIdx.x * BLOCK; base < n; base += gridDim.x * BLOCK) {  // uniform over the block
    const int j = base + threadIdx.x;
    const bool live = j < n;
    const Real* p = sq + 4 * (live ? j : 0);
    Real sz, cz;
    Turn<Real>::sincos(Turn<Real>::reduce(p[2]), &sz, &cz);
    Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
    for (int r0 = r_first; r0 < r_last; r0 += TROWS) {
      const int nr = min(TROWS, r_last - r0);
      __syncthreads();
      for (int i = threadIdx.x; i < nr * KP; i += BLOCK) {
        const int r = i / KP, z = i - r * KP;
        tile[i] = z < k.KZ ? w2[(r0 + r) * k.KZ + z] : Real2{Real(0), Real(0)};
      }
      __syncthreads();
      if (!live) continue;
      for (int r = 0; r < nr; ++r) {
        const int row = r0 + r;
        const int nx = row / (2 * k.ky + 1), ny = row - nx * (2 * k.ky + 1) - k.ky;
        const Real2* wr = tile + r * KP;
        Real rowsum = Real(0), rz = Real(0);
        for (int z0 = 0; z0 < KP; z0 += SEG) {
          Real s, c;
          turn_sincos(Real(nx), Real(ny), Real(z0 - k.kz), p, &s, &c);
          RunPhase<Real, CHEB> a(c, s, cz, sz);
          Real part_ = Real(0), partz = Real(0);  // sum v and sum v z over the run (z from 0)
#pragma unroll
          for (int z = 0; z < SEG; ++z) {
            const Real2 wz = wr[z0 + z];
            const Real v = wz.x * a.s - wz.y * a.c;
            part_ += v;
            partz += v * Real(z);
            a.next();
          }
          rowsum += part_;
          rz += partz + part_ * Real(z0 - k.kz);
        }
        fx += Acc(rowsum) * Acc(nx);
        fy += Acc(rowsum) * Acc(ny);
        fz += Acc(rz);
      }
    }
    if (live) {
      out[3 * j] = Acc(p[3]) * fx * Acc(twopi_lx);
      out[3 * j + 1] = Acc(p[3]) * fy * Acc(twopi_ly);
      out[3 * j + 2] = Acc(p[3]) * fz * Acc(twopi_lz);
    }
  }
}
