// The fused MD steps' own kernels (strategies/integrate_fused.py): the opening kick and drift of a
// run of steps; the state to input order where the loop reads it; a rebuild's positions to input
// order and its state to the new slot order; the per-particle half-skins of launch parameter adapt.
#include "verlet_md.cuh"

// The opening half kick and drift of a run of fused steps, from the forces the last closing kick
// kept (integrate.cu's kick_drift in slot order), with the next positions and trigger.
template <typename Real, typename Acc>
__global__ void verlet_open(const MdStep<Real, Acc> md, const Box<Real> box, const int n) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  int bits = 0;
  if (s < n) {
    const long long k = 3LL * s;
    bits = md_drift<1>(md, box, s, md.f[k], md.f[k + 1], md.f[k + 2]);
  }
  md_flags(md, bits);  // every lane: no return above
}

// The state between slot order and input order (order: slot -> particle): verlet_unsort writes x
// and v (and the positions, Real(x) as kick_drift writes them) in input order, where the loop reads
// the state (kinetic energy, frames). A rebuild takes the state to the new slot order through
// verlet_stage (before the binning: the positions the binning reads, in input order; the state
// copied aside in the old slot order, xt and vt; inv, the old order's inverse) and verlet_resort
// (after it: xs[s'] = xt[inv[order[s']]]), the same values the plain loop's binning and sort give,
// with one scattered store of 16 bytes and one of 4 a particle where going through input order took
// nine of 4. The two are guarded by *guard as
// the rebuild is; grid-stride: a skipped launch costs few blocks. The three copies stay written out,
// loads first: a helper taking one coordinate at a time cost 14 us a rebuild at LJ 1M.
template <typename Real, typename Acc>
__global__ void verlet_unsort(const int* __restrict__ order, const Acc* __restrict__ xs, const Acc* __restrict__ vs,
                              const int n, Acc* __restrict__ x, Acc* __restrict__ v, Vec4<Real>* __restrict__ pos) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s, i = 3LL * order[s];
    const Acc a = xs[k], b = xs[k + 1], c = xs[k + 2];
    x[i] = a;
    x[i + 1] = b;
    x[i + 2] = c;
    v[i] = vs[k];
    v[i + 1] = vs[k + 1];
    v[i + 2] = vs[k + 2];
    Vec4<Real>& p = pos[order[s]];
    p.x = static_cast<Real>(a);
    p.y = static_cast<Real>(b);
    p.z = static_cast<Real>(c);
  }
}

// Launch parameter adapt: the half-skin of a particle's next rows (verlet_build ADAPT) from its velocity,
// hmin + kdt |v|, at most hcap, in Real (a heuristic: any h >= 0 keeps the list exact). One expression for
// the fused steps (verlet_stage) and the plain ones (verlet_half_skins): the same h, so the same rows.
template <typename Real, typename Acc>
__device__ __forceinline__ Real adapt_half_skin(Acc u, Acc v, Acc w, Real kdt, Real hmin, Real hcap) {
  const Real ur = static_cast<Real>(u), vr = static_cast<Real>(v), wr = static_cast<Real>(w);
  return min(hcap, hmin + kdt * sqrt(ur * ur + vr * vr + wr * wr));
}

// The plain MD steps' counterpart of verlet_stage's half-skins (guarded as the binning that follows): the
// w of each particle's position (input order) from its velocity (v: input order, 3 a particle).
template <typename Real, typename Acc>
__global__ void verlet_half_skins(const Acc* __restrict__ v, const int n, Vec4<Real>* __restrict__ pos,
                                  const int* __restrict__ guard, const Real kdt, const Real hmin, const Real hcap) {
  if (guard != nullptr && *guard == 0) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const long long k = 3LL * i;
    pos[i].w = adapt_half_skin(v[k], v[k + 1], v[k + 2], kdt, hmin, hcap);
  }
}

// ref: the last build's positions in slot order (their w is the particle's).
// kdt >= 0 (launch parameter adapt): w, the half-skin of the particle's next rows (adapt_half_skin);
// kdt < 0: ref's w as it was.
template <typename Real, typename Acc>
__global__ void verlet_stage(const int* __restrict__ order, const Acc* __restrict__ xs, const Acc* __restrict__ vs,
                             const Vec4<Real>* __restrict__ ref, const int n, Acc* __restrict__ xt,
                             Acc* __restrict__ vt, Vec4<Real>* __restrict__ pos, int* __restrict__ inv,
                             const int* __restrict__ guard, const Real kdt, const Real hmin, const Real hcap) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s;
    const int i = order[s];
    const Acc a = xs[k], b = xs[k + 1], c = xs[k + 2];
    const Acc u = vs[k], v = vs[k + 1], w = vs[k + 2];
    xt[k] = a;
    xt[k + 1] = b;
    xt[k + 2] = c;
    vt[k] = u;
    vt[k + 1] = v;
    vt[k + 2] = w;
    const Real h = kdt < Real(0) ? ref[s].w : adapt_half_skin(u, v, w, kdt, hmin, hcap);
    pos[i] = Vec4<Real>{static_cast<Real>(a), static_cast<Real>(b), static_cast<Real>(c), h};
    inv[i] = s;
  }
}

template <typename Acc>
__global__ void verlet_resort(const int* __restrict__ order, const int* __restrict__ inv, const Acc* __restrict__ xt,
                              const Acc* __restrict__ vt, const int n, Acc* __restrict__ xs, Acc* __restrict__ vs,
                              const int* __restrict__ guard) {
  if (guard != nullptr && *guard == 0) return;
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const long long k = 3LL * s, t = 3LL * inv[order[s]];
    xs[k] = xt[t];
    xs[k + 1] = xt[t + 1];
    xs[k + 2] = xt[t + 2];
    vs[k] = vt[t];
    vs[k + 1] = vt[t + 1];
    vs[k + 2] = vt[t + 2];
  }
}
