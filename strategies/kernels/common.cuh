// Shared by every kernel: vector type, precision traits, minimum image, the per-thread
// accumulator and the block reduction of energy, virial and pair count.
//
// Pair functors live in headers of their own (lennard_jones.cuh, ...): strategies/cuda.py puts
// the problem's functor ahead of a kernel file, and every traversal kernel takes it as
// `template <typename> class Functor`. A functor F<Real> provides:
//   explicit F(const Real* params)          constants in the host's params() order
//   P bind(Real wi, Real wj) const          optional: the pair of two particles whose positions carry
//                                           wi and wj in their fourth component (what a particle
//                                           carries: pair_table.cuh); without it, the functor itself
// and the pair P (the functor itself, or what bind returns):
//   bool inside(Real r2) const              r2 within the cutoff
//   Real force_over_r(Real r2, Real& u) const   |F| / r (positive = repulsive), pair energy u
// Every traversal binds each pair before it tests the cutoff: `const auto& fp = bind_pair(f, pi.w, pj.w)`.
//
// Compiled by NVRTC through CuPy (strategies/cuda.py inlines this header) and by nvcc in the
// CI compile check, so no system headers. Types are chosen on purpose: Real is the compute
// type (float or double), Acc the accumulation type (float, or double in mixed and fp64
// modes, Fixed in the fixed-point mode); literals are typed through Real(...) / Acc(...) or an f
// suffix.
#pragma once

// 64-bit fixed point, the accumulation type of precision mode `fixed` (OpenMM's approach): a
// sum in units of 2^-32. Each term is rounded to the nearest unit once, when it is converted
// (Acc(x), ties to even, as numpy's rint); the sums are integer additions, associative, so
// their order (threads, colours, atomics) changes no bit. The additions wrap (unsigned
// arithmetic, no undefined overflow): a total that fits is exact whatever wrapped on the way,
// and Problem.make keeps every total below 2^30. No implicit conversion from a float: a sum
// that would add a float without Acc(...) does not compile.
struct Fixed {
  long long v;
  Fixed() = default;
  __device__ __forceinline__ explicit Fixed(int x) : v(static_cast<long long>(x) * 4294967296ll) {}
  __device__ __forceinline__ explicit Fixed(float x) : v(__float2ll_rn(x * 4294967296.0f)) {}
  __device__ __forceinline__ explicit Fixed(double x) : v(__double2ll_rn(x * 4294967296.0)) {}
  static __device__ __forceinline__ Fixed raw(long long r) {
    Fixed f;
    f.v = r;
    return f;
  }
  // two's-complement wrap-around through unsigned arithmetic (signed overflow is undefined)
  static __device__ __forceinline__ long long wrap(unsigned long long x) { return static_cast<long long>(x); }
  __device__ __forceinline__ Fixed& operator+=(Fixed o) {
    v = wrap(static_cast<unsigned long long>(v) + static_cast<unsigned long long>(o.v));
    return *this;
  }
  __device__ __forceinline__ Fixed& operator-=(Fixed o) {
    v = wrap(static_cast<unsigned long long>(v) - static_cast<unsigned long long>(o.v));
    return *this;
  }
  __device__ __forceinline__ Fixed operator-() const { return raw(wrap(0ull - static_cast<unsigned long long>(v))); }
};

__device__ __forceinline__ Fixed operator+(Fixed a, Fixed b) { return a += b; }
__device__ __forceinline__ Fixed operator-(Fixed a, Fixed b) { return a -= b; }

// What the kernels do with an Acc, for Fixed: shuffles, atomics, loads and stores past L1.
__device__ __forceinline__ Fixed __shfl_sync(unsigned mask, Fixed x, int src, int width = 32) {
  return Fixed::raw(__shfl_sync(mask, x.v, src, width));
}
__device__ __forceinline__ Fixed __shfl_xor_sync(unsigned mask, Fixed x, int lane_mask, int width = 32) {
  return Fixed::raw(__shfl_xor_sync(mask, x.v, lane_mask, width));
}
__device__ __forceinline__ Fixed __shfl_down_sync(unsigned mask, Fixed x, unsigned delta, int width = 32) {
  return Fixed::raw(__shfl_down_sync(mask, x.v, delta, width));
}
__device__ __forceinline__ Fixed __shfl_up_sync(unsigned mask, Fixed x, unsigned delta, int width = 32) {
  return Fixed::raw(__shfl_up_sync(mask, x.v, delta, width));
}
__device__ __forceinline__ Fixed atomicAdd(Fixed* p, Fixed x) {
  return Fixed::raw(static_cast<long long>(
      atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(x.v))));
}
__device__ __forceinline__ Fixed __ldcg(const Fixed* p) { return Fixed::raw(__ldcg(reinterpret_cast<const long long*>(p))); }
__device__ __forceinline__ void __stcg(Fixed* p, Fixed x) { __stcg(reinterpret_cast<long long*>(p), x.v); }

// w / 2^shift, shift 0 or 1 (totals of traversals that saw every pair from both sides): a
// multiplication by 0.5 in float, exact; an arithmetic shift in fixed point, exact because such
// a total is a sum of equal pairs of integers.
template <typename Acc>
__device__ __forceinline__ Acc halved(Acc w, int shift) {
  return shift ? w * Acc(0.5) : w;
}
template <>
__device__ __forceinline__ Fixed halved<Fixed>(Fixed w, int shift) {
  return Fixed::raw(w.v >> shift);
}

// The calling lane's provisional slot in cell c: the active lanes of one cell take theirs with one atomic on
// counts[c] (particles given in space order share cells), in lane order within the warp. The binning's
// counting sorts (binning.cu bin_count, molecules.cu molecule_bin_count) call it.
__device__ __forceinline__ int claim_cell_slot(int* __restrict__ counts, int c) {
  const unsigned int active = __activemask();
  const unsigned int peers = __match_any_sync(active, c);
  const int lane = threadIdx.x & 31, leader = __ffs(peers) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(&counts[c], __popc(peers));
  base = __shfl_sync(active, base, leader);
  return base + __popc(peers & ((1u << lane) - 1u));
}

template <typename Real>
struct alignas(16) Vec4 {
  Real x, y, z, w;
};

template <typename Real>
struct Math;

template <>
struct Math<float> {
  static __device__ __forceinline__ float rint(float x) { return rintf(x); }
  static __device__ __forceinline__ float floor(float x) { return floorf(x); }
  // Approximate reciprocal (MUFU.RCP, <= 2 ulp): its error is far below the rounding of
  // float coordinates, which dominates the fp32 force error. The .ftz form is the one
  // instruction: __fdividef(1, x) gives the same bits for every normal x but adds four
  // instructions per pair to rescale subnormal x (an r^2 below 1.2e-38, which no pair has; 0 gives
  // infinity either way).
  static __device__ __forceinline__ float rcp(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
  }
};

template <>
struct Math<double> {
  static __device__ __forceinline__ double rint(double x) { return ::rint(x); }
  static __device__ __forceinline__ double floor(double x) { return ::floor(x); }
  static __device__ __forceinline__ double rcp(double x) { return 1.0 / x; }
};

// Orthorhombic box: lengths and inverse lengths; the inverse is 0 on an open axis, which
// makes the minimum-image shift vanish there without a branch.
template <typename Real>
struct Box {
  Real lx, ly, lz, ilx, ily, ilz;
};

template <bool PBC, typename Real>
__device__ __forceinline__ Real min_image(Real d, Real len, Real inv_len) {
  if constexpr (PBC) d -= len * Math<Real>::rint(d * inv_len);
  return d;
}

// d = r_i - r_j (minimum image on periodic axes); returns |d|^2.
template <bool PBC, typename Real>
__device__ __forceinline__ Real separation(const Vec4<Real>& pi, const Vec4<Real>& pj, const Box<Real>& box, Real& dx,
                                           Real& dy, Real& dz) {
  dx = min_image<PBC>(pi.x - pj.x, box.lx, box.ilx);
  dy = min_image<PBC>(pi.y - pj.y, box.ly, box.ily);
  dz = min_image<PBC>(pi.z - pj.z, box.lz, box.ilz);
  return dx * dx + dy * dy + dz * dz;
}

// Energy, then the virial's 6 independent components (xx, xy, xz, yy, yz, zz).
constexpr int kSums = 7;

// Whether A and B are one type (NVRTC builds without the standard headers).
template <class A, class B>
struct SameType {
  static constexpr bool value = false;
};
template <class A>
struct SameType<A, A> {
  static constexpr bool value = true;
};

// Whether a functor offers force_over_r_split (its kSplitEnergy, lennard_jones.cuh); false where it
// does not say (a potential need not).
template <class F, class = void>
struct SplitEnergy {
  static constexpr bool value = false;
};
template <class F>
struct SplitEnergy<F, decltype(void(F::kSplitEnergy))> {
  static constexpr bool value = F::kSplitEnergy;
};

// Whether a functor binds pairs to what their particles carry (bind(wi, wj)).
template <class F, class = void>
struct Binds {
  static constexpr bool value = false;
};
template <class F>
struct Binds<F, decltype(void(&F::bind))> {
  static constexpr bool value = true;
};

// The pair of two particles carrying wi and wj: f.bind(wi, wj), or f itself where f has no bind.
template <class F, typename Real>
__device__ __forceinline__ decltype(auto) bind_pair(const F& f, Real wi, Real wj) {
  if constexpr (Binds<F>::value) {
    return f.bind(wi, wj);
  } else {
    return (f);
  }
}

// Whether a functor's table is to be staged in shared memory (its kSharedTable, pair_table.cuh);
// false where it does not say.
template <class F, class = void>
struct SharedTable {
  static constexpr bool value = false;
};
template <class F>
struct SharedTable<F, decltype(void(F::kSharedTable))> {
  static constexpr bool value = F::kSharedTable;
};

// A kernel's first step where its functor's table goes to shared memory (every thread of the block
// calls it): the table copied into the block's dynamic shared memory, and the functor pointed at it.
template <int BLOCK, class F>
__device__ __forceinline__ void stage_table(F& f) {
  if constexpr (SharedTable<F>::value) {
    using Real = typename F::RealType;
    extern __shared__ __align__(16) unsigned char s_dynamic[];
    Real* s = reinterpret_cast<Real*>(s_dynamic);
    const int m = f.table_values();
    for (int k = threadIdx.x; k < m; k += BLOCK) s[k] = __ldg(f.table + k);
    __syncthreads();
    f.table = s;
  }
}

// One thread's sums. pair() takes d = r_i - r_j inside the cutoff and returns the force on i
// (Newton3 traversals subtract it from j themselves); with ENERGY it also adds the pair energy,
// the pair virial r (x) f and one to the pair count (ENERGY = false: the forces-only flavour of
// a kernel, where none of that is computed). add() also sums the force into fx, fy, fz: the
// full-shell form, where every pair is visited from both sides and the final reduction halves
// energy and virial.
template <typename Real, typename Acc, bool ENERGY = true>
struct Accumulator {
  Acc fx = Acc(0), fy = Acc(0), fz = Acc(0);
  Acc s[kSums] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  unsigned int pairs = 0u;

  template <class Functor>
  __device__ __forceinline__ void add(const Functor& f, Real dx, Real dy, Real dz, Real r2) {
    Real ax, ay, az;
    pair(f, dx, dy, dz, r2, ax, ay, az);
    fx += Acc(ax);
    fy += Acc(ay);
    fz += Acc(az);
  }

  // The pair kept where `in` (inside the cutoff), without a branch: the body runs and the force
  // over r is selected (zero outside), so the sums take the same bits as add() where `in` and
  // are unchanged elsewhere. For loops where most candidates interact (a Verlet row), whose
  // warps would run the body anyway. The functor is evaluated at every r2 (beyond the cutoff,
  // infinity for padding): what it gives there is selected away (or its adds predicated off),
  // never multiplied.
  // VIRIAL = false: energy and count only, the pair's virial left to row_virial().
  // PREDICATED: the sums' adds predicated on `in` instead of the force selected (one select a
  // pair fewer; with energy in fp32 also the energy's select), the same bits. Written as a branch,
  // ptxas predicates the forces flavour's adds but makes the energy flavour's a branch per pair
  // (BSSY, BRA, BSYNC), so those are spelled out in PTX. It paid in the packed loops and the energy
  // flavours only, where verlet_force takes it (docs/decisions/pair-body.md).
  // With the energy split (kSplit: the functor's force_over_r_split) the energy sum takes fma(ua,
  // ub, sum) a pair, and take_shift() the shift off once for the pairs added so: one add a pair fewer.
  template <bool VIRIAL, bool PREDICATED, class Functor>
  static constexpr bool kSplit = PREDICATED && ENERGY && !VIRIAL && SameType<Real, float>::value &&
                                 SameType<Acc, float>::value && SplitEnergy<Functor>::value;

  template <bool VIRIAL = true, bool PREDICATED = false, class Functor>
  __device__ __forceinline__ void add_where(const Functor& f, Real dx, Real dy, Real dz, Real r2, bool in) {
    if constexpr (kSplit<VIRIAL, PREDICATED, Functor>) {
      Real ua, ub;
      const Real all = f.force_over_r_split(r2, ua, ub);
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\t"
          "@p fma.rn.f32 %0, %6, %7, %0;\n\t@p fma.rn.f32 %1, %6, %8, %1;\n\t@p fma.rn.f32 %2, %6, %9, %2;\n\t"
          "@p fma.rn.f32 %3, %10, %11, %3;\n\t@p add.u32 %4, %4, 1;\n\t}"
          : "+f"(fx), "+f"(fy), "+f"(fz), "+f"(s[0]), "+r"(pairs)
          : "r"(static_cast<int>(in)), "f"(all), "f"(dx), "f"(dy), "f"(dz), "f"(ua), "f"(ub));
      return;
    }
    Real u;
    const Real all = f.force_over_r(r2, u);  // evaluated for every candidate, then kept or not
    if constexpr (PREDICATED && ENERGY && !VIRIAL && SameType<Real, float>::value && SameType<Acc, float>::value) {
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\t"
          "@p fma.rn.f32 %0, %6, %7, %0;\n\t@p fma.rn.f32 %1, %6, %8, %1;\n\t@p fma.rn.f32 %2, %6, %9, %2;\n\t"
          "@p add.f32 %3, %3, %10;\n\t@p add.u32 %4, %4, 1;\n\t}"
          : "+f"(fx), "+f"(fy), "+f"(fz), "+f"(s[0]), "+r"(pairs)
          : "r"(static_cast<int>(in)), "f"(all), "f"(dx), "f"(dy), "f"(dz), "f"(u));
    } else if constexpr (PREDICATED && !ENERGY) {
      if (in) {
        fx += Acc(all * dx);
        fy += Acc(all * dy);
        fz += Acc(all * dz);
      }
    } else {
      const Real fr = in ? all : Real(0);
      const Real ax = fr * dx, ay = fr * dy, az = fr * dz;
      fx += Acc(ax);
      fy += Acc(ay);
      fz += Acc(az);
      if constexpr (ENERGY) {
        if constexpr (VIRIAL) {
          energy_virial(in ? u : Real(0), ax, ay, az, dx, dy, dz);
        } else {
          s[0] += Acc(in ? u : Real(0));
        }
        pairs += in ? 1u : 0u;
      }
    }
  }

  // The shift of the pairs add_where<VIRIAL, PREDICATED> added since the count was `from`, where
  // their energy was split (kSplit): taken off once.
  template <bool VIRIAL, bool PREDICATED, class Functor>
  __device__ __forceinline__ void take_shift(const Functor& f, unsigned int from) {
    if constexpr (kSplit<VIRIAL, PREDICATED, Functor>) {
      s[0] = fma(-f.energy_shift(), static_cast<Real>(pairs - from), s[0]);
    }
  }

  // The virial of the pairs summed into (fx, fy, fz) without theirs (add_where<false>), from the
  // force on i and i's position: 2 r_i (x) F_i. Over all rows of a full list whose pairs all take
  // d = r_i - r_j (no image), sum_i 2 r_i (x) F_i is the sum over both directions of d (x) f, what
  // energy_virial adds pair by pair (the F.r virial of LAMMPS, GROMACS's single-sum virial).
  // energy_virial's terms with 2 F_i for the pair force and r_i for d (no energy), the products
  // in Real as the pair terms are (the mixed mode: float arithmetic, double sums).
  __device__ __forceinline__ void row_virial(Real x, Real y, Real z) {
    if constexpr (ENERGY) {
      energy_virial(Real(0), Real(2) * static_cast<Real>(fx), Real(2) * static_cast<Real>(fy),
                    Real(2) * static_cast<Real>(fz), x, y, z);
    }
  }

  template <class Functor>
  __device__ __forceinline__ void pair(const Functor& f, Real dx, Real dy, Real dz, Real r2, Real& ax, Real& ay,
                                       Real& az) {
    Real u;
    const Real fr = f.force_over_r(r2, u);  // u unused without ENERGY: the compiler drops it
    ax = fr * dx;
    ay = fr * dy;
    az = fr * dz;
    if constexpr (ENERGY) {
      energy_virial(u, ax, ay, az, dx, dy, dz);
      ++pairs;
    }
  }

  // The pair energy u and the virial of the pair force (ax, ay, az) at separation d.
  __device__ __forceinline__ void energy_virial(Real u, Real ax, Real ay, Real az, Real dx, Real dy, Real dz) {
    s[0] += Acc(u);
    s[1] += Acc(ax * dx);
    s[2] += Acc(ax * dy);
    s[3] += Acc(ax * dz);
    s[4] += Acc(ay * dy);
    s[5] += Acc(ay * dz);
    s[6] += Acc(az * dz);
  }
};

// The same, without a branch: every lane computes the pair body and keeps it where `in` (inside
// the cutoff and this lane's pair), zero force otherwise. For warps whose lanes mostly disagree
// about `in` (cluster pairs), where a branch would run both sides anyway. The force is selected,
// not multiplied by zero, so that a NaN distance (padding) or r2 = 0 (a particle with itself)
// leaves no trace.
template <typename Real, typename Acc, bool ENERGY, class Functor>
__device__ __forceinline__ void pair_selected(Accumulator<Real, Acc, ENERGY>& acc, const Functor& f, Real dx, Real dy,
                                              Real dz, Real r2, bool in, Real& ax, Real& ay, Real& az) {
  Real u;
  const Real fr = f.force_over_r(r2, u);
  ax = in ? fr * dx : Real(0);
  ay = in ? fr * dy : Real(0);
  az = in ? fr * dz : Real(0);
  if constexpr (ENERGY) {
    if (in) {
      acc.energy_virial(u, ax, ay, az, dx, dy, dz);
      ++acc.pairs;
    }
  }
}

// r_i - s: the position of i as seen from a neighbour cell whose particles sit one box length
// s away across a periodic boundary (s = 0 inside the box). Applied once per cell pair, so that
// the pair loop needs no minimum image.
template <typename Real>
__device__ __forceinline__ Vec4<Real> shifted(const Vec4<Real>& p, Real sx, Real sy, Real sz) {
  return {p.x - sx, p.y - sy, p.z - sz, p.w};
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// Sum kSums values and a count over the whole block (every thread must call it): warp sums,
// then the warps' sums in warp 0. Thread 0 returns with the block's totals in v and n. Fixed
// order: deterministic. Reuses its shared arrays: a caller that calls it again in one launch
// puts a __syncthreads() between the calls.
template <int BLOCK, typename Acc>
__device__ __forceinline__ void block_reduce(Acc (&v)[kSums], unsigned long long& n) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "block must be whole warps, at most 1024 threads");
  constexpr int kWarps = BLOCK / 32;
  __shared__ Acc s_v[kWarps][kSums];
  __shared__ unsigned long long s_n[kWarps];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kSums; ++k) v[k] = warp_sum(v[k]);
  n = warp_sum(n);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) s_v[warp][k] = v[k];
    s_n[warp] = n;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] = lane < kWarps ? s_v[lane][k] : Acc(0);
    n = lane < kWarps ? s_n[lane] : 0ull;
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] = warp_sum(v[k]);
    n = warp_sum(n);
  }
}

// block_reduce, then thread 0 writes the totals to partial[slot * kSums + k] and count[slot].
template <int BLOCK, typename Acc>
__device__ __forceinline__ void block_sums(Acc (&v)[kSums], unsigned long long n, Acc* __restrict__ partial,
                                           unsigned long long* __restrict__ count, int slot) {
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) partial[slot * kSums + k] = v[k];
    count[slot] = n;
  }
}

// One pair seen from i with Newton3: inside the cutoff, adds the pair's sums to acc and its
// force on i to (fx, fy, fz), and returns true with that force in (ax, ay, az) for the caller to
// subtract from j wherever j's force lives (global memory, a shared cache, a warp sum). PBC:
// minimum image per pair; the cell traversals pass PBC = false and a pi already shifted to
// j's cell's image instead.
template <bool PBC, typename Real, typename Acc, bool ENERGY, class F>
__device__ __forceinline__ bool newton3_pair(Accumulator<Real, Acc, ENERGY>& acc, const F& f, const Box<Real>& box,
                                             const Vec4<Real>& pi, const Vec4<Real>& pj, Acc& fx, Acc& fy, Acc& fz,
                                             Real& ax, Real& ay, Real& az) {
  Real dx, dy, dz;
  const Real r2 = separation<PBC>(pi, pj, box, dx, dy, dz);
  const auto& fp = bind_pair(f, pi.w, pj.w);
  if (!fp.inside(r2)) return false;
  acc.pair(fp, dx, dy, dz, r2, ax, ay, az);
  fx += Acc(ax);
  fy += Acc(ay);
  fz += Acc(az);
  return true;
}

// *p -= (ax, ay, az) at p[0], p[stride], p[2 stride]
template <typename Acc, typename Real>
__device__ __forceinline__ void subtract3(Acc* p, int stride, Real ax, Real ay, Real az) {
  p[0] -= Acc(ax);
  p[stride] -= Acc(ay);
  p[2 * stride] -= Acc(az);
}

// block_sums() where the kernel computes energy and virial (ENERGY), nothing otherwise.
template <int BLOCK, bool ENERGY, typename Real, typename Acc>
__device__ __forceinline__ void accumulator_sums(Accumulator<Real, Acc, ENERGY>& acc, Acc* __restrict__ partial,
                                                 unsigned long long* __restrict__ count, int slot) {
  if constexpr (ENERGY) block_sums<BLOCK>(acc.s, static_cast<unsigned long long>(acc.pairs), partial, count, slot);
}

// The totals of a reduction, written as every strategy returns them: out[0] = energy,
// out[1..9] = the symmetric 3x3 virial (row-major), out_count[0] = pairs; sums and count halved
// where `shift` is 1 (every pair visited from both sides).
template <typename Acc>
__device__ __forceinline__ void write_totals(const Acc (&w)[kSums], unsigned long long m, int shift,
                                             Acc* __restrict__ out, unsigned long long* __restrict__ out_count) {
  const Acc xy = halved(w[2], shift), xz = halved(w[3], shift), yz = halved(w[5], shift);
  out[0] = halved(w[0], shift);
  out[1] = halved(w[1], shift);
  out[2] = xy;
  out[3] = xz;
  out[4] = xy;
  out[5] = halved(w[4], shift);
  out[6] = yz;
  out[7] = xz;
  out[8] = yz;
  out[9] = halved(w[6], shift);
  out_count[0] = m >> shift;
}

// Thread 0, after its block's sums are stored: the store made visible, then the block's ticket.
// Whether the block is the last of `members` to arrive (the others' stores visible to it after a
// __threadfence of its own). The two-level reductions' step (reduce_partials, fold_in_last_block).
__device__ __forceinline__ bool arrive_last(unsigned int* __restrict__ ticket, int members) {
  __threadfence();
  return atomicAdd(ticket, 1u) == static_cast<unsigned int>(members - 1);
}

// v and n: the sums of slots [first, first + count) of partial and pcount, a slot a thread (BLOCK
// apart), read past L1 (other SMs wrote them), not yet summed over the block. Then a
// __syncthreads() (block_reduce's shared arrays may still be read) and block_reduce or block_sums.
template <int BLOCK, typename Acc>
__device__ __forceinline__ void load_slots(const Acc* __restrict__ partial, const unsigned long long* __restrict__ pcount,
                                           int first, int count, Acc (&v)[kSums], unsigned long long& n) {
#pragma unroll
  for (int k = 0; k < kSums; ++k) v[k] = Acc(0);
  n = 0ull;
  for (int q = threadIdx.x; q < count; q += BLOCK) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) v[k] += __ldcg(partial + (first + q) * kSums + k);
    n += __ldcg(pcount + first + q);
  }
}

// The final reduction folded into a kernel of nblocks blocks, in two levels and a fixed order:
// every block writes its sums to partial[slot]; the last block of each group of BLOCK slots to
// finish (ticket[1 + g]) sums the group's, a slot a thread, into partial[nblocks + g]; the last
// group to finish (ticket[0]) sums the groups' and writes out[0] = energy, out[1..9] = the
// symmetric virial, both halved, and out_count[0] = pairs >> shift. Each finisher resets the
// ticket it took, for the next launch. Which blocks finish last changes no sum: deterministic.
// partial and pcount hold nblocks + groups slots, ticket 1 + groups counters (groups =
// ceil(nblocks / BLOCK); strategies/cells_cuda.py, fold_groups). The one-level form (the last
// block summing all nblocks slots, a thread adding nblocks / BLOCK of them one after another)
// waited one memory latency per slot. Every thread of every block must call it.
template <int BLOCK, typename Acc>
__device__ __forceinline__ void fold_in_last_block(Acc (&v)[kSums], unsigned long long n, Acc* __restrict__ partial,
                                                   unsigned long long* __restrict__ pcount, int slot, int nblocks,
                                                   unsigned int* __restrict__ ticket, int shift,
                                                   Acc* __restrict__ out, unsigned long long* __restrict__ out_count) {
  __shared__ bool s_group, s_last;
  const int g = slot / BLOCK, groups = (nblocks + BLOCK - 1) / BLOCK;
  const int members = min(BLOCK, nblocks - g * BLOCK);
  block_sums<BLOCK>(v, n, partial, pcount, slot);
  if (threadIdx.x == 0) s_group = arrive_last(&ticket[1 + g], members);
  __syncthreads();
  if (!s_group) return;
  __threadfence();
  load_slots<BLOCK>(partial, pcount, g * BLOCK, members, v, n);
  __syncthreads();
  block_sums<BLOCK>(v, n, partial, pcount, nblocks + g);
  if (threadIdx.x == 0) {
    ticket[1 + g] = 0u;
    s_last = arrive_last(&ticket[0], groups);
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  load_slots<BLOCK>(partial, pcount, nblocks, groups, v, n);
  __syncthreads();
  block_reduce<BLOCK>(v, n);
  if (threadIdx.x == 0) {
    write_totals(v, n, shift, out, out_count);
    ticket[0] = 0u;
  }
}
