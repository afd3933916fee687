// Over 600 lines: the search, the gather, the two force kernels and the (experimental) prune share
// the entry encoding and the cluster layout defined below; split, each would have to repeat them.
// Cluster pairs on the GPU (strategies/clusterpair/gpu.py, clusterpair_warp_padded): the GROMACS
// nbnxm design (Pall & Hess 2013) with a full list and no atomics, so that results are bitwise
// repeatable. The list holds the cluster pairs whose bounding boxes come within r_list
// and a particle pair within it at the search; the cutoff is tested per particle pair in the
// force kernel.
//
// Clusters. The shared binning (binning.cu) sorts the particles into a grid of (nx, ny, nz)
// cells whose x-y columns have side about (8 / density)^(1/3) and whose nz thin layers only keep
// the rank step short; inside a cell the order is by z, so each column's particles come out
// sorted by z. Each column is cut into runs of kCluster = 8 (the last run padded: member -1,
// position NaN).
//
//   cp_columns  (one block) clusters per column and their exclusive scan: cstart[c], and the
//               total in cstart[ncols]
//   cp_fill     (a warp per column) members, the positions of the build (xbuild, in cluster
//               order, padding NaN; ref in input order for the displacement check), each
//               cluster's bounding box and column
//   cp_search   (a warp per i-cluster) every j-cluster of the columns within reach, under each
//               periodic image, whose bounding box comes closer than r_list = cutoff + skin to
//               the i-cluster's (the lanes test 32 boxes at a time, only the clusters holding
//               particles of the binning's z-layers within reach) and that has a particle pair within
//               r_list (the whole warp tests the 64 pairs of such a box pair). The cluster with
//               itself (no image) is left out (the force kernel's own step). Entries are written
//               in candidate order (deterministic) into padded rows; a row longer than the
//               capacity raises *overflow and is never written past it. Entry word:
//               j-cluster << 5 | image code
//   cp_gather   (every step) the positions in cluster order, each taken to the image nearest its
//               position at the build (x - L rint((x - xbuild) / L)), so that the image of an
//               entry, fixed at the search, stays valid as the MD loop wraps positions; padding
//               gets NaN (every distance to it fails the cutoff test)
//   cp_force    a warp per i-cluster: lane = 4 a + b holds i-particle a; an entry is two steps of
//               8 x 4 pairs (lane: i-particle a against j-particle b of one half of the
//               j-cluster), the entry's image applied once to the i-positions and the next
//               entry's positions loaded while this one is computed; first the cluster with
//               itself (a != b). The i-forces are summed over the 4 lanes of a (and over the
//               SPLIT warps sharing a row, in order) and written in input order; every pair is
//               seen from both clusters (full list), so energy and virial are halved by the
//               reduction. Block 0 clears *flag and counts the rebuild.
//   cp_force_n3 the Newton3 form (clusterpair_warp_newton3) on a half list (cp_search with HALF:
//               each cluster pair under one image only, the j-cluster above the i-cluster, or
//               the cluster with its own image under the upper of the two codes): each pair once,
//               its force added to i in registers and subtracted from j. Lane 8 c + j holds
//               j-particle j of the entry and i-particles c and c + 4; the pair body runs without a
//               branch (the lanes of a warp rarely agree about the cutoff). Per entry, the 4 lanes
//               of a j-particle sum its force by a two-level reduce-scatter (3 components in, one
//               per lane out) and 24 lanes add the j-cluster's 8 x 3 components to fc (cluster
//               order, 96 contiguous bytes) with one atomic instruction; the i-forces go to fc the
//               same way once per row. Float atomics sum in scheduling order: not bitwise
//               repeatable. cp_scatter writes fc to the forces in input order.
//   cp_prune_check, cp_prune  (launch parameters prune, rolling) the inner list: see the end of
//               this file; the force kernels then read its rows instead of the outer ones
// The displacement check is verlet_check (verlet.cu) on ref; every build kernel is guarded by
// its flag.
#include "cells.cuh"

constexpr int kCluster = 8;
constexpr int kHalf = 4;
constexpr int kCodeBits = 5;
constexpr int kJShift = 5;

__device__ __forceinline__ bool cp_skipped(const int* guard) { return guard != nullptr && *guard == 0; }

// cstart[c] = clusters in the columns before c; cstart[ncols] = all of them. One block of BLOCK
// threads walks the columns BLOCK at a time with a running carry.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
cp_columns(const int* __restrict__ start, const int ncols, const int nz, int* __restrict__ cstart,
           const int* __restrict__ guard) {
  if (cp_skipped(guard)) return;
  __shared__ int s_warp[BLOCK / 32];
  __shared__ int s_carry;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) s_carry = 0;
  __syncthreads();
  for (int base = 0; base < ncols; base += BLOCK) {
    const int c = base + threadIdx.x;
    const int v = c < ncols ? (start[(c + 1) * nz] - start[c * nz] + kCluster - 1) / kCluster : 0;
    int x = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, x, off);
      if (lane >= off) x += y;
    }
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    if (warp == 0) {
      int w = lane < BLOCK / 32 ? s_warp[lane] : 0;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, w, off);
        if (lane >= off) w += y;
      }
      if (lane < BLOCK / 32) s_warp[lane] = w;
    }
    __syncthreads();
    const int before = s_carry + (warp ? s_warp[warp - 1] : 0) + x - v;
    if (c < ncols) cstart[c] = before;
    const int total = s_warp[BLOCK / 32 - 1];
    __syncthreads();
    if (threadIdx.x == 0) s_carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) cstart[ncols] = s_carry;
}

template <typename Real>
__device__ __forceinline__ Real not_a_number() {
  if constexpr (sizeof(Real) == 4) {
    return __int_as_float(0x7fc00000);
  } else {
    return __longlong_as_double(0x7ff8000000000000ll);
  }
}

template <typename Real>
__global__ void cp_fill(const Vec4<Real>* __restrict__ sorted, const int* __restrict__ order,
                        const int* __restrict__ start, const int* __restrict__ cstart, const int ncols, const int nz,
                        int* __restrict__ member, Vec4<Real>* __restrict__ xbuild, Vec4<Real>* __restrict__ ref,
                        Vec4<Real>* __restrict__ lo, Vec4<Real>* __restrict__ hi, int* __restrict__ ccol,
                        const int* __restrict__ guard) {
  if (cp_skipped(guard)) return;
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * (blockDim.x >> 5);
  for (int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); c < ncols; c += warps) {
    const int b = start[c * nz], count = start[(c + 1) * nz] - b;
    const int first = cstart[c], slots = (cstart[c + 1] - first) * kCluster;
    for (int k0 = 0; k0 < slots; k0 += 32) {  // slots is a multiple of 8: groups of 8 lanes stay whole
      const int k = k0 + lane;
      const bool on = k < slots;
      const bool real = k < count;
      const Real nan = not_a_number<Real>();
      Vec4<Real> p = real ? sorted[b + k] : Vec4<Real>{nan, nan, nan, Real(0)};  // padding: NaN
      const int s = first * kCluster + k;
      if (on) {
        member[s] = real ? order[b + k] : -1;
        xbuild[s] = p;
        if (real) ref[order[b + k]] = p;
      }
      Real l[3] = {p.x, p.y, p.z}, h[3] = {p.x, p.y, p.z};
#pragma unroll
      for (int off = 1; off < kCluster; off <<= 1) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
          l[a] = fmin(l[a], __shfl_xor_sync(0xffffffffu, l[a], off));  // fmin, fmax: NaN (padding) ignored
          h[a] = fmax(h[a], __shfl_xor_sync(0xffffffffu, h[a], off));
        }
      }
      if (on && (k & (kCluster - 1)) == 0) {
        lo[s / kCluster] = {l[0], l[1], l[2], Real(0)};
        hi[s / kCluster] = {h[0], h[1], h[2], Real(0)};
        ccol[s / kCluster] = c;
      }
    }
  }
}

// Column x of a neighbour offset: the wrapped index and the image (-1, 0, +1) of its particles as
// seen from the i-cluster, or false beyond an open axis.
__device__ __forceinline__ bool column_axis(int c, int o, int n, bool periodic, int& x, int& image) {
  const int raw = c + o;
  image = raw < 0 ? -1 : (raw >= n ? 1 : 0);
  if (image != 0 && !periodic) return false;
  x = raw - image * n;
  return true;
}

template <typename Real>
__device__ __forceinline__ Real gap(Real lo_i, Real hi_i, Real lo_j, Real hi_j) {
  return max(Real(0), max(lo_j - hi_i, lo_i - hi_j));
}

template <typename Real, int BLOCK, bool HALF>
__global__ void __launch_bounds__(BLOCK, 1)
cp_search(const Vec4<Real>* __restrict__ xbuild, const int* __restrict__ member, const Vec4<Real>* __restrict__ lo,
          const Vec4<Real>* __restrict__ hi, const int* __restrict__ ccol, const int* __restrict__ cstart,
          const int* __restrict__ start, const Grid g, const Box<Real> box, const int reach_x, const int reach_y,
          const Real rlist, const Real margin, const int cap, int* __restrict__ ent, int* __restrict__ len, int* __restrict__ overflow,
          const int* __restrict__ guard) {
  if (cp_skipped(guard)) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int a = lane >> 2, b = lane & (kHalf - 1);
  const int ncl = cstart[g.nx * g.ny];
  const int ic = blockIdx.x * (BLOCK / 32) + warp;
  if (ic >= ncl) return;  // whole warps: no block-wide barrier below
  const Real rlist2 = rlist * rlist;
  const Vec4<Real> pi = xbuild[ic * kCluster + a];
  const Vec4<Real> li = lo[ic], hi_ = hi[ic];
  const int c = ccol[ic];
  const int cx = c / g.ny, cy = c % g.ny;
  const Real sx = box.lx / Real(g.nx), sy = box.ly / Real(g.ny);
  const bool pz = (g.pmask & 4) != 0;
  // the z-range a j-particle must lie in to come within r_list of an i-particle (with a margin
  // for rounding)
  const Real zmin = li.z - rlist - margin, zmax = hi_.z + rlist + margin;
  const Real half_lz = Real(0.5) * box.lz;
  const Real isz = Real(g.nz) / box.lz;
  int count = 0;
  for (int ox = -reach_x; ox <= reach_x; ++ox) {
    int x, imx;
    if (!column_axis(cx, ox, g.nx, g.pmask & 1, x, imx)) continue;
    const Real shx = Real(imx) * box.lx;
    // the column's x-range seen from i (every particle of column x lies in it)
    const Real gx = gap(li.x, hi_.x, -Real(0.5) * box.lx + Real(x) * sx + shx,
                        -Real(0.5) * box.lx + Real(x + 1) * sx + shx);
    for (int oy = -reach_y; oy <= reach_y; ++oy) {
      int y, imy;
      if (!column_axis(cy, oy, g.ny, g.pmask & 2, y, imy)) continue;
      const Real shy = Real(imy) * box.ly;
      const Real gy = gap(li.y, hi_.y, -Real(0.5) * box.ly + Real(y) * sy + shy,
                          -Real(0.5) * box.ly + Real(y + 1) * sy + shy);
      if (gx * gx + gy * gy >= rlist2 * Real(1.0001)) continue;  // margin: rounding of the column edges
      const int col = x * g.ny + y;
      const int jb = cstart[col], pb = start[col * g.nz];
#pragma unroll 1
      for (int imz = -1; imz <= 1; ++imz) {
        // an image along z only where i's reach crosses that face of the box
        if (imz != 0 && !(pz && (imz < 0 ? zmin < -half_lz : zmax > half_lz))) continue;
        const Real shz = Real(imz) * box.lz;
        // only a particle with z in [zmin, zmax] (seen from i) can come within r_list of one of
        // i's: the column's z-layers of the binning that hold such particles (one layer more on
        // each side: the layer of a z is computed again here), and the clusters that hold their
        // particles (a column's particles are in layer order, cluster k holding its 8 k-th)
        const int l0 = min(max(static_cast<int>(Math<Real>::floor((zmin - shz + half_lz) * isz)) - 1, 0), g.nz - 1);
        const int l1 = min(max(static_cast<int>(Math<Real>::floor((zmax - shz + half_lz) * isz)) + 1, 0), g.nz - 1);
        int first = jb + (start[col * g.nz + l0] - pb) / kCluster;
        const int last = jb + (start[col * g.nz + l1 + 1] - pb + kCluster - 1) / kCluster;
        if (HALF) first = max(first, ic);  // the half list keeps no j-cluster below i
        const Vec4<Real> sh = {shx, shy, shz, Real(0)};
        for (int j0 = first; j0 < last; j0 += 32) {
          const int jc = j0 + lane;
          bool pass = false;
          const int code = (imx + 1) * 9 + (imy + 1) * 3 + (imz + 1);
          // the cluster with itself without an image is the force kernel's own step; a half list
          // keeps each cluster pair once: j above i, or the upper of the two codes of i with itself
          const bool wanted = HALF ? (jc > ic || (jc == ic && code > 13)) : !(jc == ic && code == 13);
          if (jc < last && wanted) {
            const Vec4<Real> lj = lo[jc], hj = hi[jc];
            const Real bx = gap(li.x, hi_.x, lj.x + sh.x, hj.x + sh.x);
            const Real by = gap(li.y, hi_.y, lj.y + sh.y, hj.y + sh.y);
            const Real bz = gap(li.z, hi_.z, lj.z + sh.z, hj.z + sh.z);
            pass = bx * bx + by * by + bz * bz < rlist2;
          }
          unsigned int todo = __ballot_sync(0xffffffffu, pass);
          while (todo) {  // each box pair by the whole warp: is some particle pair within r_list?
            const int t = __ffs(todo) - 1;
            todo &= todo - 1u;
            const int jt = j0 + t;
            const Vec4<Real> p0 = xbuild[jt * kCluster + b], p1 = xbuild[jt * kCluster + kHalf + b];
            const Real x0 = pi.x - (p0.x + sh.x), y0 = pi.y - (p0.y + sh.y), z0 = pi.z - (p0.z + sh.z);
            const Real x1 = pi.x - (p1.x + sh.x), y1 = pi.y - (p1.y + sh.y), z1 = pi.z - (p1.z + sh.z);
            const bool within = x0 * x0 + y0 * y0 + z0 * z0 < rlist2 || x1 * x1 + y1 * y1 + z1 * z1 < rlist2;
            if (__any_sync(0xffffffffu, within)) {  // padding is NaN: never within
              if (lane == 0 && count < cap) {
                ent[static_cast<long long>(ic) * cap + count] = (jt << kJShift) | code;
              }
              ++count;
            }
          }
        }
      }
    }
  }
  if (lane == 0) {
    len[ic] = min(count, cap);
    if (count > cap) atomicMax(overflow, count);
  }
}

template <typename Real>
__global__ void cp_gather(const Vec4<Real>* __restrict__ pos, const int* __restrict__ member,
                          const Vec4<Real>* __restrict__ xbuild, const int* __restrict__ cstart, const int ncols,
                          const Box<Real> box, Vec4<Real>* __restrict__ xc) {
  const int slots = cstart[ncols] * kCluster;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += gridDim.x * blockDim.x) {
    const int i = member[s];
    Vec4<Real> p;
    if (i >= 0) {
      p = pos[i];
      const Vec4<Real> b = xbuild[s];
      p.x -= box.lx * Math<Real>::rint((p.x - b.x) * box.ilx);
      p.y -= box.ly * Math<Real>::rint((p.y - b.y) * box.ily);
      p.z -= box.lz * Math<Real>::rint((p.z - b.z) * box.ilz);
    } else {  // padding: NaN, so that every distance to it fails the cutoff test
      const Real nan = not_a_number<Real>();
      p = {nan, nan, nan, Real(0)};
    }
    xc[s] = p;
  }
}

// One pair, of particles carrying wi and wj (padding is NaN: outside the cutoff).
template <typename Real, typename Acc, bool ENERGY, class F>
__device__ __forceinline__ void cp_pair(Accumulator<Real, Acc, ENERGY>& acc, const F& f, Real wi, Real wj, Real dx,
                                        Real dy, Real dz) {
  const Real r2 = dx * dx + dy * dy + dz * dz;
  const auto& fp = bind_pair(f, wi, wj);
  if (fp.inside(r2)) acc.add(fp, dx, dy, dz, r2);
}

// One warp's share of an i-cluster's row: entries [k_begin, k_end). The next entry's two half
// j-clusters are loaded while the current one is computed (software pipelining: the loads are
// the latency a warp would otherwise wait on).
template <typename Real, typename Acc, bool ENERGY, class F>
__device__ __forceinline__ void cp_row(Accumulator<Real, Acc, ENERGY>& acc, const F& f,
                                       const Vec4<Real>* __restrict__ xc, const int* __restrict__ row, int k_begin,
                                       int k_end, const Vec4<Real>& pi, const Vec4<Real>* s_shift, int lane, int b) {
  for (int k0 = k_begin; k0 < k_end; k0 += 32) {
    const int mine = k0 + lane < k_end ? row[k0 + lane] : 0;
    const int steps = min(32, k_end - k0);
    int e = __shfl_sync(0xffffffffu, mine, 0);
    const Vec4<Real>* pj = xc + (e >> kJShift) * kCluster + b;
    Vec4<Real> q0 = pj[0], q1 = pj[kHalf];
    for (int t = 0; t < steps; ++t) {
      const int en = __shfl_sync(0xffffffffu, mine, min(t + 1, steps - 1));
      const Vec4<Real>* pn = xc + (en >> kJShift) * kCluster + b;
      const Vec4<Real> n0 = pn[0], n1 = pn[kHalf];  // in flight while this entry is computed
      const Vec4<Real> sh = s_shift[e & ((1 << kCodeBits) - 1)];
      const Real xs = pi.x - sh.x, ys = pi.y - sh.y, zs = pi.z - sh.z;
      cp_pair(acc, f, pi.w, q0.w, xs - q0.x, ys - q0.y, zs - q0.z);
      cp_pair(acc, f, pi.w, q1.w, xs - q1.x, ys - q1.y, zs - q1.z);
      e = en;
      q0 = n0;
      q1 = n1;
    }
  }
}

// The 27 image shifts of the entry codes, into shared memory (the caller's barrier follows).
template <typename Real>
__device__ __forceinline__ void cp_shifts(Vec4<Real> (&s_shift)[27], const Box<Real>& box) {
  if (threadIdx.x < 27) {
    const int c = threadIdx.x;
    s_shift[c] = {Real(c / 9 - 1) * box.lx, Real((c / 3) % 3 - 1) * box.ly, Real(c % 3 - 1) * box.lz, Real(0)};
  }
}

// What both force kernels do first: the image shifts, and (block 0) the rebuild of this step, if
// any, counted and its flag cleared (the build is complete by now); with parts > 0 (launch
// parameter prune) the inner list's flags too: flag[1] (the parts a displacement pruned) cleared
// and flag[2] (the rolling step) advanced. Every thread of the block calls it (a barrier).
template <typename Real>
__device__ __forceinline__ void cp_prologue(Vec4<Real> (&s_shift)[27], const Box<Real>& box, int* __restrict__ flag,
                                            unsigned int* __restrict__ rebuilds, int parts) {
  cp_shifts(s_shift, box);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (*flag) {
      *flag = 0;
      ++*rebuilds;
    }
    if (parts > 0) {
      flag[1] = 0;
      ++flag[2];
    }
  }
  __syncthreads();
}

// SPLIT warps per i-cluster (launch parameter split): each takes a contiguous share of the row;
// their i-forces are summed in warp order through shared memory (deterministic). For small
// systems, where one warp per cluster leaves the GPU mostly idle.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, int BLOCK, int SPLIT>
__global__ void __launch_bounds__(BLOCK)
cp_force(const Vec4<Real>* __restrict__ xc, const int* __restrict__ member, const int* __restrict__ ent,
         const int* __restrict__ len, const int* __restrict__ cstart, const int ncols, const int cap,
         const Box<Real> box, const Real* __restrict__ params, Acc* __restrict__ forces, Acc* __restrict__ partial,
         unsigned long long* __restrict__ count, int* __restrict__ flag, unsigned int* __restrict__ rebuilds,
         const int parts) {
  static_assert(BLOCK % 32 == 0 && (BLOCK / 32) % SPLIT == 0, "whole warps, whole clusters per block");
  constexpr int kWarps = BLOCK / 32;
  __shared__ Vec4<Real> s_shift[27];
  __shared__ Acc s_f[SPLIT > 1 ? kWarps : 1][kCluster][3];
  cp_prologue(s_shift, box, flag, rebuilds, parts);
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int a = lane >> 2, b = lane & (kHalf - 1);
  const int ic = blockIdx.x * (kWarps / SPLIT) + warp / SPLIT;
  const int part = warp % SPLIT;
  const int ncl = cstart[ncols];
  int i = -1;
  if (ic < ncl) {  // warp-uniform
    i = member[ic * kCluster + a];
    const Vec4<Real> pi = xc[ic * kCluster + a];
    const int m = len[ic];
    if (part == 0) {  // the cluster with itself: 8 x 8 pairs less each particle with itself
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int q = h * kHalf + b;
        const Vec4<Real> pj = xc[ic * kCluster + q];
        if (q != a) cp_pair(acc, f, pi.w, pj.w, pi.x - pj.x, pi.y - pj.y, pi.z - pj.z);
      }
    }
    cp_row(acc, f, xc, ent + static_cast<long long>(ic) * cap, part * m / SPLIT, (part + 1) * m / SPLIT, pi, s_shift,
           lane, b);
  }
  acc.fx += __shfl_xor_sync(0xffffffffu, acc.fx, 1);
  acc.fy += __shfl_xor_sync(0xffffffffu, acc.fy, 1);
  acc.fz += __shfl_xor_sync(0xffffffffu, acc.fz, 1);
  acc.fx += __shfl_xor_sync(0xffffffffu, acc.fx, 2);
  acc.fy += __shfl_xor_sync(0xffffffffu, acc.fy, 2);
  acc.fz += __shfl_xor_sync(0xffffffffu, acc.fz, 2);
  if constexpr (SPLIT > 1) {
    if (b == 0) {
      s_f[warp][a][0] = acc.fx;
      s_f[warp][a][1] = acc.fy;
      s_f[warp][a][2] = acc.fz;
    }
    __syncthreads();
    if (part == 0 && b == 0) {
      for (int w = 1; w < SPLIT; ++w) {
        acc.fx += s_f[warp + w][a][0];
        acc.fy += s_f[warp + w][a][1];
        acc.fz += s_f[warp + w][a][2];
      }
    }
  }
  if (i >= 0 && b == 0 && part == 0) {
    forces[3 * i] = acc.fx;
    forces[3 * i + 1] = acc.fy;
    forces[3 * i + 2] = acc.fz;
  }
  accumulator_sums<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// The Newton3 kernel's lanes: lane = 8 c + j holds j-particle j of the entry's j-cluster and the
// i-particles c and c + 4 (c = 0..3), so that a j-force is summed over 4 lanes only.
constexpr int kIGroups = 4;

// The type a j-force is summed in over its lanes before its one atomic: Real in the float modes
// (8 terms summed in float, rounded once into Acc), Acc in fixed point, where every term must be
// rounded alone so that no order shows in the bits.
template <typename Real, typename Acc>
struct JSum {
  using type = Real;
};
template <typename Real>
struct JSum<Real, Fixed> {
  using type = Fixed;
};

// Two pairs of one lane, i-particles i0 and i1 against one j-particle at q (shifted to the
// entry's image) carrying qw: their forces added to i0's (f0) and i1's (f1) sums; returns the force on j.
template <typename Real, typename Acc, bool ENERGY, class F, typename G = typename JSum<Real, Acc>::type>
__device__ __forceinline__ void n3_pairs(Accumulator<Real, Acc, ENERGY>& acc, const F& f, const Vec4<Real>& i0,
                                         const Vec4<Real>& i1, Real qx, Real qy, Real qz, Real qw, bool on0, bool on1,
                                         Acc (&f0)[3], Acc (&f1)[3], G& gx, G& gy, G& gz) {
  Real ax, ay, az, bx, by, bz;
  {
    const Real dx = i0.x - qx, dy = i0.y - qy, dz = i0.z - qz;
    const Real r2 = dx * dx + dy * dy + dz * dz;
    const auto& fp = bind_pair(f, i0.w, qw);
    pair_selected(acc, fp, dx, dy, dz, r2, on0 && fp.inside(r2), ax, ay, az);
  }
  {
    const Real dx = i1.x - qx, dy = i1.y - qy, dz = i1.z - qz;
    const Real r2 = dx * dx + dy * dy + dz * dz;
    const auto& fp = bind_pair(f, i1.w, qw);
    pair_selected(acc, fp, dx, dy, dz, r2, on1 && fp.inside(r2), bx, by, bz);
  }
  f0[0] += Acc(ax);
  f0[1] += Acc(ay);
  f0[2] += Acc(az);
  f1[0] += Acc(bx);
  f1[1] += Acc(by);
  f1[2] += Acc(bz);
  gx = -(G(ax) + G(bx));
  gy = -(G(ay) + G(by));
  gz = -(G(az) + G(bz));
}

// keep + the partner's send across lane bit `bit`: the lanes with the bit set keep the upper
// half of v, the others the lower half (a reduce-scatter level).
template <int HALF_LEN, int N, typename T>
__device__ __forceinline__ void scatter_level(T (&v)[N], int lane, int bit) {
  const bool up = (lane & bit) != 0;
#pragma unroll
  for (int k = 0; k < HALF_LEN; ++k) {
    const T send = up ? v[k] : v[k + HALF_LEN];
    const T keep = up ? v[k + HALF_LEN] : v[k];
    v[k] = keep + __shfl_xor_sync(0xffffffffu, send, bit);
  }
}

// The force on j-particle j (lane 8 c + j), summed over its 4 lanes by a reduce-scatter over
// lane bits 16 and 8, after which lane 8 c + j holds component c: the lanes c < 3 add it at
// fc[at] = fc[24 jc + 3 j + c] (24 lanes, the j-cluster's 96 contiguous bytes, one atomic
// instruction).
template <typename G, typename Acc>
__device__ __forceinline__ void n3_flush_j(Acc* __restrict__ fc, int at, int lane, int c, G gx, G gy, G gz) {
  G v[4] = {gx, gy, gz, G(0)};
  scatter_level<2>(v, lane, 16);
  scatter_level<1>(v, lane, 8);
  if (c < 3) atomicAdd(fc + at, Acc(v[0]));
}

// Newton3 cluster pairs on a half list (see the head of this file). fc: the forces in cluster
// order (zero before the launch); cp_scatter writes them in input order.
template <typename Real, typename Acc, template <typename> class Functor, bool ENERGY, int BLOCK, int SPLIT>
__global__ void __launch_bounds__(BLOCK)
cp_force_n3(const Vec4<Real>* __restrict__ xc, const int* __restrict__ ent, const int* __restrict__ len,
            const int* __restrict__ cstart, const int ncols, const int cap, const Box<Real> box,
            const Real* __restrict__ params, Acc* __restrict__ fc, Acc* __restrict__ partial,
            unsigned long long* __restrict__ count, int* __restrict__ flag, unsigned int* __restrict__ rebuilds,
            const int parts) {
  static_assert(BLOCK % 32 == 0 && (BLOCK / 32) % SPLIT == 0, "whole warps, whole clusters per block");
  static_assert(kIGroups * 2 == kCluster, "two i-particles per lane");
  constexpr int kWarps = BLOCK / 32;
  __shared__ Vec4<Real> s_shift[27];
  cp_prologue(s_shift, box, flag, rebuilds, parts);
  const Functor<Real> f(params);
  Accumulator<Real, Acc, ENERGY> acc;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = lane >> 3, j = lane & (kCluster - 1);
  const int joff = 3 * j + c;  // this lane's j-force component in a j-cluster's 24 (c < 3)
  const int ic = blockIdx.x * (kWarps / SPLIT) + warp / SPLIT;
  const int part = warp % SPLIT;
  const int ncl = cstart[ncols];
  if (ic < ncl) {  // warp-uniform
    const Vec4<Real> i0 = xc[ic * kCluster + c], i1 = xc[ic * kCluster + kIGroups + c];
    Acc f0[3] = {Acc(0), Acc(0), Acc(0)}, f1[3] = {Acc(0), Acc(0), Acc(0)};
    typename JSum<Real, Acc>::type gx, gy, gz;
    if (part == 0) {  // the cluster with itself: the pairs i < j
      const Vec4<Real> q = xc[ic * kCluster + j];
      n3_pairs(acc, f, i0, i1, q.x, q.y, q.z, q.w, j > c, j > kIGroups + c, f0, f1, gx, gy, gz);
      n3_flush_j(fc, ic * (kCluster * 3) + joff, lane, c, gx, gy, gz);
    }
    const int* __restrict__ row = ent + static_cast<long long>(ic) * cap;
    const int m = len[ic];
    const int k_begin = part * m / SPLIT, k_end = (part + 1) * m / SPLIT;
    for (int k0 = k_begin; k0 < k_end; k0 += 32) {
      const int mine = k0 + lane < k_end ? row[k0 + lane] : 0;
      const int steps = min(32, k_end - k0);
      int e = __shfl_sync(0xffffffffu, mine, 0);
      Vec4<Real> q = xc[(e >> kJShift) * kCluster + j];
      for (int t = 0; t < steps; ++t) {
        const int en = __shfl_sync(0xffffffffu, mine, min(t + 1, steps - 1));
        const Vec4<Real> qn = xc[(en >> kJShift) * kCluster + j];  // in flight while this entry is computed
        const Vec4<Real> sh = s_shift[e & ((1 << kCodeBits) - 1)];
        // the j-particle at the entry's image (seen from i: q + shift, i.e. i - shift - q)
        n3_pairs(acc, f, i0, i1, q.x + sh.x, q.y + sh.y, q.z + sh.z, q.w, true, true, f0, f1, gx, gy, gz);
        n3_flush_j(fc, (e >> kJShift) * (kCluster * 3) + joff, lane, c, gx, gy, gz);
        e = en;
        q = qn;
      }
    }
    // the i-forces: lane 8 c + j holds (f0, f1) of i-particles c and 4 + c; summed over the 8
    // lanes j by a reduce-scatter over lane bits 4, 2, 1, after which lane 8 c + j holds value j
    // of (f0 x, y, z, f1 x, y, z, -, -), added by the lanes j < 6
    Acc v[8] = {f0[0], f0[1], f0[2], f1[0], f1[1], f1[2], Acc(0), Acc(0)};
    scatter_level<4>(v, lane, 4);
    scatter_level<2>(v, lane, 2);
    scatter_level<1>(v, lane, 1);
    if (j < 6) atomicAdd(fc + (ic * kCluster + (j < 3 ? c : kIGroups + c)) * 3 + (j < 3 ? j : j - 3), v[0]);
  }
  accumulator_sums<BLOCK, ENERGY>(acc, partial, count, blockIdx.x);
}

// forces (input order) from fc (cluster order); padding slots are skipped.
template <typename Acc>
__global__ void cp_scatter(const Acc* __restrict__ fc, const int* __restrict__ member, const int* __restrict__ cstart,
                           const int ncols, Acc* __restrict__ forces) {
  const int slots = cstart[ncols] * kCluster;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += gridDim.x * blockDim.x) {
    const int i = member[s];
    if (i >= 0) {
      forces[3 * i] = fc[3 * s];
      forces[3 * i + 1] = fc[3 * s + 1];
      forces[3 * i + 2] = fc[3 * s + 2];
    }
  }
}

// ---- The inner list (launch parameters prune and rolling; strategies/clusterpair/gpu.py) -------
// The outer list (r_list = cutoff + skin, rebuilt where a particle moved beyond skin / 2) pruned to
// the entries with a particle pair within r_in = cutoff + prune at the positions of now (GROMACS's
// dynamic pruning), into rows of the same storage, which the force kernels read instead. The
// i-clusters are dealt into `parts` parts (ic % parts). Part k's rows hold every pair within the
// cutoff while no particle has moved more than prune / 2 since that part's prune: snap[k] holds
// the positions (cluster order, as xc) of then, and cp_prune_check raises bit k of flag[1] where
// some particle lies further. A step prunes the parts whose bit is set, every part after a rebuild
// (flag[0]), and with parts > 1 part flag[2] % parts besides (the rolling prune: each part pruned
// again every `parts` steps, so that the trigger rarely fires and a step's share stays 1 / parts).
// The force kernels' block 0 clears flag[1] and advances flag[2] (cp_prologue). An entry the prune
// drops has no pair within the cutoff while its part is valid: it adds nothing (full list: not even
// a rounding), so the sums are those of the outer list.

// The parts this step prunes (a bit each); the same in every thread of the launch.
__device__ __forceinline__ unsigned int pruned_parts(const int* __restrict__ flag, int parts) {
  const unsigned int all = (1u << parts) - 1u;
  unsigned int bits = flag[0] ? all : static_cast<unsigned int>(flag[1]);
  if (parts > 1) bits |= 1u << (static_cast<unsigned int>(flag[2]) % static_cast<unsigned int>(parts));
  return bits & all;
}

// Bit k of flag[1] where a particle (a slot that holds one) lies further than prune / 2 from snap[k].
template <typename Real>
__global__ void cp_prune_check(const Vec4<Real>* __restrict__ xc, const int* __restrict__ member,
                               const int* __restrict__ cstart, const int ncols, const Vec4<Real>* __restrict__ snap,
                               const int stride, const int parts, const Real half_inner2, int* __restrict__ flag) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int bits = 0u;
  if (s < cstart[ncols] * kCluster && member[s] >= 0) {
    const Vec4<Real> p = xc[s];
    for (int k = 0; k < parts; ++k) {
      const Vec4<Real> q = snap[static_cast<long long>(k) * stride + s];
      const Real dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
      if (!(dx * dx + dy * dy + dz * dz <= half_inner2)) bits |= 1u << k;  // NaN moves too
    }
  }
  bits = __reduce_or_sync(0xffffffffu, bits);
  if (bits && (threadIdx.x & 31) == 0) atomicOr(flag + 1, static_cast<int>(bits));
}

// A warp per i-cluster: its 8 positions into the snapshot of every part pruned now; where its own
// part is one of them, its inner row from its outer row (entries kept in order: deterministic).
// Block 0 counts the parts pruned (prunes).
template <typename Real, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
cp_prune(const Vec4<Real>* __restrict__ xc, const int* __restrict__ ent, const int* __restrict__ len,
         const int* __restrict__ cstart, const int ncols, const int cap, const Box<Real> box, const Real rin2,
         const int parts, const int stride, int* __restrict__ ient, int* __restrict__ ilen,
         Vec4<Real>* __restrict__ snap, const int* __restrict__ flag, unsigned int* __restrict__ prunes) {
  __shared__ Vec4<Real> s_shift[27];
  cp_shifts(s_shift, box);
  __syncthreads();
  const unsigned int todo = pruned_parts(flag, parts);
  if (blockIdx.x == 0 && threadIdx.x == 0) *prunes += __popc(todo);
  const int lane = threadIdx.x & 31;
  const int ic = blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  if (todo == 0u || ic >= cstart[ncols]) return;  // whole warps
  if (lane < kCluster) {
    const Vec4<Real> p = xc[ic * kCluster + lane];
    for (int k = 0; k < parts; ++k) {
      if ((todo >> k) & 1u) snap[static_cast<long long>(k) * stride + ic * kCluster + lane] = p;
    }
  }
  if (!((todo >> (ic % parts)) & 1u)) return;
  const int a = lane >> 2, b = lane & (kHalf - 1);
  const Vec4<Real> pi = xc[ic * kCluster + a];
  const int m = len[ic];
  const int* __restrict__ row = ent + static_cast<long long>(ic) * cap;
  int* __restrict__ out = ient + static_cast<long long>(ic) * cap;
  int kept = 0;
  for (int k0 = 0; k0 < m; k0 += 32) {
    const int mine = k0 + lane < m ? row[k0 + lane] : 0;
    const int steps = min(32, m - k0);
    for (int t = 0; t < steps; ++t) {
      const int e = __shfl_sync(0xffffffffu, mine, t);
      const Vec4<Real>* pj = xc + (e >> kJShift) * kCluster + b;
      const Vec4<Real> q0 = pj[0], q1 = pj[kHalf];
      const Vec4<Real> sh = s_shift[e & ((1 << kCodeBits) - 1)];
      const Real xs = pi.x - sh.x, ys = pi.y - sh.y, zs = pi.z - sh.z;
      const Real x0 = xs - q0.x, y0 = ys - q0.y, z0 = zs - q0.z;
      const Real x1 = xs - q1.x, y1 = ys - q1.y, z1 = zs - q1.z;
      const bool within = x0 * x0 + y0 * y0 + z0 * z0 < rin2 || x1 * x1 + y1 * y1 + z1 * z1 < rin2;
      if (__any_sync(0xffffffffu, within)) {  // padding is NaN: never within
        if (lane == 0) out[kept] = e;
        ++kept;
      }
    }
  }
  if (lane == 0) ilen[ic] = kept;
}
