// Rigid molecules: ls1-MarDyn's molecule-pair body (its PotForce), the one body every molecule kernel
// calls (molecules.cu). The host side is strategies/molecules_cuda.py; the float64 reference,
// written independently, reference/molecules.py; the CPU traversals' body, strategies/molecules_cpu.py.
//
// Sites. Each site s of a molecule carries two Vec4 in the lab frame, written once per evaluation by
// molecule_sites() from the quaternions (the CUDA port's convertQuaternionsToRotations):
//   A[s] = (a, m)      a: the offset from the molecule's centre of mass; m: the charge or moment
//   E[s] = (e, kind)   e: the dipole's or quadrupole's unit direction; for a Lennard-Jones centre
//                      (sigma, sqrt(epsilon), 0, kind) instead (it has no direction)
// Molecule i's sites: span[i] = (first, lj, q, end), its Lennard-Jones centres [first, lj), its charges
// [lj, q), its dipoles and quadrupoles [q, end) (molecule_span); comp[i] its component. One 16-byte load
// gives a partner's sites: the body's loads of j depend on j alone, not on a chain of lookups. With one
// component the host passes no spans, and the sites follow from the index (MoleculeModel::sites_of).
//
// The pair of molecules i and j with centres d = c_i - c_j apart (within the cutoff): every site of i
// against every site of j, Lennard-Jones centres with Lennard-Jones centres (epsilon = xi sqrt(eps_s
// eps_t), sigma = eta (sigma_s + sigma_t) / 2, xi and eta per pair of components), electrostatic sites
// with electrostatic sites. Each electrostatic term is u(|r|, cos_s, cos_t, g), cos_s = e_s.r / |r|,
// cos_t = e_t.r / |r|, g = e_s.e_t (r = d + a_s - a_t); from its partial derivatives the force on s
//   f = (-u_r / |r| + (cos_s p_s + cos_t p_t) / |r|) r - p_s e_s - p_t e_t,   p = u_cos / |r|
// and the orientation's own torque tau_s = -p_s (e_s x r) - u_g (e_s x e_t). The molecule's torque
// about its centre is the sum over its sites of a_s x f + tau_s. The body returns the force and the
// torque on i and the energy; the torque on j follows from the angular momentum the pair conserves,
//   tau_j = -tau_i - d x F_i,
// which the Newton3 kernels use. With a switch (rs < rc) the pair's energy, force and torques are
// scaled by S(|d|) = 1 - 10 x^3 + 15 x^4 - 6 x^5, x = (|d| - rs) / (rc - rs), and the force on i gains
// -u S'(|d|) d / |d|.
//
// Every function here is __host__ __device__: the CI test (tests/test_gpu_molecules.py) compiles the body
// for the host with nvcc and checks it against the CPU traversals' body, no GPU needed.
//
// Sites are grouped by kind within a molecule (molecules_cuda.body_sites): its Lennard-Jones centres, then
// its charges, then its dipoles and quadrupoles. The body loops over Lennard-Jones centres with
// Lennard-Jones centres and charges with charges in lean loops of their own (a water pair is one and nine
// of those), and takes the multipole terms through the general form above only where a component has
// dipoles or quadrupoles. For one component of Lennard-Jones centres and charges alone the kernels take
// molecule_pair_shaped instead: the same loops with their lengths known at compile time, molecule i's
// sites held in registers across its partners (pair_body chooses, from the kernels' NL and NQ).
//
// Parameters (device array in the compute type, host order in molecules_cuda.params()):
//   0 rc^2, 1 rs, 2 rc, 3 k (Coulomb constant), 4 k_rf, 5 c_rf, 6 rf for dipoles, 7 C (components),
//   8 .. 8 + C^2 xi, then C^2 eta (row i, column j: components i and j), then per component the ends of
//   its kinds within a molecule: Lennard-Jones centres, charges, all sites (3 C).
#pragma once
#include "common.cuh"

constexpr int kSiteLJ = 0, kSiteCharge = 1, kSiteDipole = 2, kSiteQuadrupole = 3;
constexpr int kMoleculeHeader = 8;

// The parameter array's length for C components.
__host__ __device__ constexpr int molecule_params_size(int C) { return kMoleculeHeader + 2 * C * C + 3 * C; }

// 1 / sqrt(x) and 1 / x: the approximate instructions on the device in float (rsqrtf <= 2 ulp,
// rcp.approx.ftz <= 2 ulp: far below the rounding of float coordinates), correctly rounded otherwise
// and on the host (where the CI test runs the body).
__host__ __device__ __forceinline__ float mol_rsqrt(float x) {
#ifdef __CUDA_ARCH__
  return rsqrtf(x);
#else
  return 1.0f / sqrtf(x);
#endif
}
__host__ __device__ __forceinline__ double mol_rsqrt(double x) { return 1.0 / sqrt(x); }
__host__ __device__ __forceinline__ float mol_rcp(float x) {
#ifdef __CUDA_ARCH__
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return 1.0f / x;
#endif
}
__host__ __device__ __forceinline__ double mol_rcp(double x) { return 1.0 / x; }

template <typename Real>
struct MoleculeModel {
  Real rc2, rs, rc, k, krf, crf, rfdd;
  int C;
  int n0, l0, q0;  // component 0's sites, and the ends of its Lennard-Jones centres and charges
  const Real* xi;
  const Real* eta;
  const Real* ends;  // per component: the ends of its Lennard-Jones centres, its charges, its sites
  const int4* __restrict__ span;
  const int* __restrict__ comp;
  const Vec4<Real>* __restrict__ A;
  const Vec4<Real>* __restrict__ E;

  __host__ __device__ __forceinline__ MoleculeModel(const Real* __restrict__ p, const int4* __restrict__ span_,
                                           const int* __restrict__ comp_, const Vec4<Real>* __restrict__ A_,
                                           const Vec4<Real>* __restrict__ E_)
      : rc2(p[0]), rs(p[1]), rc(p[2]), k(p[3]), krf(p[4]), crf(p[5]), rfdd(p[6]), C(static_cast<int>(p[7])),
        xi(p + kMoleculeHeader), eta(p + kMoleculeHeader + static_cast<int>(p[7]) * static_cast<int>(p[7])),
        ends(p + kMoleculeHeader + 2 * static_cast<int>(p[7]) * static_cast<int>(p[7])), span(span_), comp(comp_),
        A(A_), E(E_) {
    n0 = static_cast<int>(ends[2]);
    l0 = static_cast<int>(ends[0]);
    q0 = static_cast<int>(ends[1]);
  }

  // Every molecule of component 0 (the host passes no spans): a molecule's sites follow from its index and
  // a Lennard-Jones centre's (sigma, sqrt(eps)) from molecule 0's, the same address in every lane.
  __host__ __device__ __forceinline__ bool uniform() const { return span == nullptr; }

  // Molecule i's sites (first, lj, q, end): by arithmetic where uniform, else its span.
  __host__ __device__ __forceinline__ int4 sites_of(int i) const {
    if (uniform()) {
      const int f = i * n0;
      return make_int4(f, f + l0, f + q0, f + n0);
    }
    return span[i];
  }
};

// Molecule i's span from its first site, the next molecule's, its component and the parameters' ends.
template <typename Real>
__host__ __device__ __forceinline__ int4 molecule_span(const Real* p, int first, int next, int comp) {
  const int C = static_cast<int>(p[7]);
  const Real* ends = p + kMoleculeHeader + 2 * C * C + 3 * comp;
  return make_int4(first, first + static_cast<int>(ends[0]), first + static_cast<int>(ends[1]), next);
}

// What a molecule pair gives molecule i: force, torque about its centre, and the pair's energy.
template <typename Real>
struct MoleculePairResult {
  Real fx, fy, fz, tx, ty, tz, u;
};

// The force on s and the orientations' torques from u's partial derivatives (ps, pt already over |r|).
template <typename Real>
__host__ __device__ __forceinline__ void site_generic(Real ur, Real ps, Real pt, Real ug, Real cs, Real ct, Real inv,
                                                      Real rx, Real ry, Real rz, const Vec4<Real>& es,
                                                      const Vec4<Real>& et, Real& fx, Real& fy, Real& fz, Real& ox,
                                                      Real& oy, Real& oz) {
  const Real fac = -ur * inv + (cs * ps + ct * pt) * inv;
  fx = fac * rx - ps * es.x - pt * et.x;
  fy = fac * ry - ps * es.y - pt * et.y;
  fz = fac * rz - ps * es.z - pt * et.z;
  const Real gx = es.y * et.z - es.z * et.y;
  const Real gy = es.z * et.x - es.x * et.z;
  const Real gz = es.x * et.y - es.y * et.x;
  ox = -ps * (es.y * rz - es.z * ry) - ug * gx;  // tau_s
  oy = -ps * (es.z * rx - es.x * rz) - ug * gy;
  oz = -ps * (es.x * ry - es.y * rx) - ug * gz;
}

// Two electrostatic sites (kinds from E.w; charge or moment from A.w) at r = r_s - r_t: the force on
// s, the torque of s's orientation, and the energy.
template <typename Real>
__host__ __device__ __forceinline__ Real site_electrostatic(const MoleculeModel<Real>& m, const Vec4<Real>& as,
                                                   const Vec4<Real>& es, const Vec4<Real>& at, const Vec4<Real>& et,
                                                   Real rx, Real ry, Real rz, Real& fx, Real& fy, Real& fz, Real& ox,
                                                   Real& oy, Real& oz) {
  const int ks = static_cast<int>(es.w), kt = static_cast<int>(et.w);
  const Real r2 = rx * rx + ry * ry + rz * rz;
  const Real inv = mol_rsqrt(r2);
  const Real inv2 = inv * inv;
  const Real cs = (es.x * rx + es.y * ry + es.z * rz) * inv;
  const Real ct = (et.x * rx + et.y * ry + et.z * rz) * inv;
  const Real g = es.x * et.x + es.y * et.y + es.z * et.z;
  const Real p = m.k * as.w * at.w;
  const Real z = Real(0);
  Real u, ur, ps = z, pt = z, ug = z;
  if (ks == kSiteCharge && kt == kSiteCharge) {  // p (1/r + k_rf r^2 - c_rf)
    u = p * (inv + m.krf * r2 - m.crf);
    ur = p * (-inv2 + Real(2) * m.krf * r2 * inv);
  } else if (ks == kSiteCharge && kt == kSiteDipole) {  // p cos_t / r^2
    u = p * ct * inv2;
    ur = -Real(2) * u * inv;
    pt = p * inv2 * inv;
  } else if (ks == kSiteDipole && kt == kSiteCharge) {  // -p cos_s / r^2
    u = -p * cs * inv2;
    ur = -Real(2) * u * inv;
    ps = -p * inv2 * inv;
  } else if (ks == kSiteDipole && kt == kSiteDipole) {  // p (g - 3 cos_s cos_t) / r^3 - p rf g
    const Real f3 = p * inv2 * inv;
    const Real ud = f3 * (g - Real(3) * cs * ct);
    ur = -Real(3) * ud * inv;
    ps = -Real(3) * f3 * ct * inv;
    pt = -Real(3) * f3 * cs * inv;
    ug = f3 - p * m.rfdd;
    u = ud - p * m.rfdd * g;
  } else if (ks == kSiteCharge && kt == kSiteQuadrupole) {  // p (3 cos_t^2 - 1) / (2 r^3)
    const Real f3 = Real(0.5) * p * inv2 * inv;
    u = f3 * (Real(3) * ct * ct - Real(1));
    ur = -Real(3) * u * inv;
    pt = Real(6) * f3 * ct * inv;
  } else if (ks == kSiteQuadrupole && kt == kSiteCharge) {
    const Real f3 = Real(0.5) * p * inv2 * inv;
    u = f3 * (Real(3) * cs * cs - Real(1));
    ur = -Real(3) * u * inv;
    ps = Real(6) * f3 * cs * inv;
  } else if (ks == kSiteDipole && kt == kSiteQuadrupole) {  // 3/2 p (-cos_s (5 cos_t^2 - 1) + 2 g cos_t) / r^4
    const Real f4 = Real(1.5) * p * inv2 * inv2;
    u = f4 * (-cs * (Real(5) * ct * ct - Real(1)) + Real(2) * g * ct);
    ur = -Real(4) * u * inv;
    ps = f4 * (Real(1) - Real(5) * ct * ct) * inv;
    pt = Real(2) * f4 * (g - Real(5) * cs * ct) * inv;
    ug = Real(2) * f4 * ct;
  } else if (ks == kSiteQuadrupole && kt == kSiteDipole) {  // the same with r -> -r, cos_s <-> -cos_t
    const Real f4 = Real(1.5) * p * inv2 * inv2;
    u = f4 * (ct * (Real(5) * cs * cs - Real(1)) - Real(2) * g * cs);
    ur = -Real(4) * u * inv;
    ps = -Real(2) * f4 * (g - Real(5) * cs * ct) * inv;
    pt = -f4 * (Real(1) - Real(5) * cs * cs) * inv;
    ug = -Real(2) * f4 * cs;
  } else {  // quadrupole - quadrupole: 3/4 p / r^5 (1 - 5 (cs^2 + ct^2) - 15 cs^2 ct^2 + 2 (g - 5 cs ct)^2)
    const Real f5 = Real(0.75) * p * inv2 * inv2 * inv;
    const Real term = g - Real(5) * cs * ct;
    const Real c2s = cs * cs, c2t = ct * ct;
    u = f5 * (Real(1) - Real(5) * (c2s + c2t) - Real(15) * c2s * c2t + Real(2) * term * term);
    ur = -Real(5) * u * inv;
    ps = -Real(10) * f5 * (cs + Real(3) * cs * c2t + Real(2) * ct * term) * inv;
    pt = -Real(10) * f5 * (ct + Real(3) * c2s * ct + Real(2) * cs * term) * inv;
    ug = Real(4) * f5 * term;
  }
  site_generic(ur, ps, pt, ug, cs, ct, inv, rx, ry, rz, es, et, fx, fy, fz, ox, oy, oz);
  return u;
}

// The force g on site s (at offset a from its molecule's centre) added to the molecule's force, and its
// lever-arm torque a x g.
template <typename Real>
__host__ __device__ __forceinline__ void add_site_force(MoleculePairResult<Real>& o, const Vec4<Real>& a, Real gx,
                                                        Real gy, Real gz) {
  o.fx += gx;
  o.fy += gy;
  o.fz += gz;
  o.tx += a.y * gz - a.z * gy;
  o.ty += a.z * gx - a.x * gz;
  o.tz += a.x * gy - a.y * gx;
}

// Lennard-Jones centre s (offset as, parameters es) against centre t (at, et) of the molecule d away:
// 4 eps ((sig/r)^12 - (sig/r)^6) into u, the force on s into g (E.x sigma, E.y sqrt(eps)).
template <typename Real>
__host__ __device__ __forceinline__ void lj_site_pair(const Vec4<Real>& as, const Vec4<Real>& es, const Vec4<Real>& at,
                                                      const Vec4<Real>& et, Real xi, Real heta, Real dx, Real dy,
                                                      Real dz, Real& u, Real& gx, Real& gy, Real& gz) {
  const Real rx = dx + as.x - at.x, ry = dy + as.y - at.y, rz = dz + as.z - at.z;
  const Real ir2 = mol_rcp(rx * rx + ry * ry + rz * rz);
  const Real ep = xi * es.y * et.y;
  const Real sg = heta * (es.x + et.x);
  Real l6 = sg * sg * ir2;
  l6 = l6 * l6 * l6;
  u += Real(4) * ep * l6 * (l6 - Real(1));
  const Real fac = Real(24) * ep * l6 * (Real(2) * l6 - Real(1)) * ir2;
  gx += fac * rx;
  gy += fac * ry;
  gz += fac * rz;
}

// Charge s (offset as, kq = k q_s) against charge t (at, at.w = q_t) of the molecule d away, with the
// reaction field's k_rf and c_rf:
// k q_s q_t (1/r + k_rf r^2 - c_rf) into u, the force on s into g.
template <typename Real>
__host__ __device__ __forceinline__ void charge_site_pair(Real krf, Real crf, const Vec4<Real>& as, Real kq,
                                                          const Vec4<Real>& at, Real dx, Real dy, Real dz, Real& u,
                                                          Real& gx, Real& gy, Real& gz) {
  const Real rx = dx + as.x - at.x, ry = dy + as.y - at.y, rz = dz + as.z - at.z;
  const Real r2 = rx * rx + ry * ry + rz * rz;
  const Real inv = mol_rsqrt(r2);
  const Real p = kq * at.w;
  u += p * (inv + krf * r2 - crf);
  const Real fac = p * (inv * inv * inv - Real(2) * krf);
  gx += fac * rx;
  gy += fac * ry;
  gz += fac * rz;
}

// The switch where rs < rc: the pair's energy, force and torque scaled by S(|d|), and the force on i
// gains -u S'(|d|) d / |d|.
template <typename Real>
__host__ __device__ __forceinline__ void switch_pair(const MoleculeModel<Real>& m, MoleculePairResult<Real>& o, Real dx,
                                                     Real dy, Real dz) {
  if (m.rs < m.rc) {
    const Real r = sqrt(dx * dx + dy * dy + dz * dz);
    if (r > m.rs) {
      const Real x = (r - m.rs) / (m.rc - m.rs);
      const Real sw = Real(1) - x * x * x * (Real(10) - Real(15) * x + Real(6) * x * x);
      const Real gs = Real(30) * x * x * (Real(1) - x) * (Real(1) - x) / (m.rc - m.rs) * o.u / r;  // -u S'(r) / r
      o.fx = sw * o.fx + gs * dx;
      o.fy = sw * o.fy + gs * dy;
      o.fz = sw * o.fz + gs * dz;
      o.tx *= sw;
      o.ty *= sw;
      o.tz *= sw;
      o.u *= sw;
    }
  }
}

// Molecules i and j, centres d = c_i - c_j apart (inside the cutoff): the force and torque on i and
// the pair's energy, with the switch where rs < rc. Sums over the site pairs in the compute type: a
// site's force over its partners first, then into the molecule's force and torque.
template <typename Real>
__host__ __device__ __forceinline__ MoleculePairResult<Real> molecule_pair(const MoleculeModel<Real>& m, int i, int j,
                                                                   Real dx, Real dy, Real dz) {
  MoleculePairResult<Real> o{Real(0), Real(0), Real(0), Real(0), Real(0), Real(0), Real(0)};
  const int ci = m.uniform() ? 0 : m.comp[i], cj = m.uniform() ? 0 : m.comp[j];
  const int4 I = m.sites_of(i), J = m.sites_of(j);
  const int si = I.x, li = I.y, qi = I.z, ni = I.w, sj = J.x, lj = J.y, qj = J.z, nj = J.w;
  if (li > si && lj > sj) {  // Lennard-Jones centres: 4 eps ((sig/r)^12 - (sig/r)^6); E.x sigma, E.y sqrt(eps)
    const Real xi = m.xi[ci * m.C + cj], heta = Real(0.5) * m.eta[ci * m.C + cj];
    for (int s = si; s < li; ++s) {
      const Vec4<Real> as = m.A[s], es = m.E[s];
      Real gx = Real(0), gy = Real(0), gz = Real(0);
      for (int t = sj; t < lj; ++t) {
        const Vec4<Real> at = m.A[t], et = m.E[m.uniform() ? t - sj : t];
        lj_site_pair(as, es, at, et, xi, heta, dx, dy, dz, o.u, gx, gy, gz);
      }
      add_site_force(o, as, gx, gy, gz);
    }
  }
  for (int s = li; s < qi; ++s) {  // charges: k q_s q_t (1/r + k_rf r^2 - c_rf)
    const Vec4<Real> as = m.A[s];
    const Real kq = m.k * as.w;
    Real gx = Real(0), gy = Real(0), gz = Real(0);
    for (int t = lj; t < qj; ++t) {
      const Vec4<Real> at = m.A[t];
      charge_site_pair(m.krf, m.crf, as, kq, at, dx, dy, dz, o.u, gx, gy, gz);
    }
    add_site_force(o, as, gx, gy, gz);
  }
  if (ni > qi || nj > qj) {  // dipoles and quadrupoles with every electrostatic site of the other molecule
    for (int s = li; s < ni; ++s) {
      const Vec4<Real> as = m.A[s], es = m.E[s];
      for (int t = (s < qi ? qj : lj); t < nj; ++t) {
        const Vec4<Real> at = m.A[t], et = m.E[t];
        const Real rx = dx + as.x - at.x, ry = dy + as.y - at.y, rz = dz + as.z - at.z;
        Real fx, fy, fz, ox = Real(0), oy = Real(0), oz = Real(0);
        o.u += site_electrostatic(m, as, es, at, et, rx, ry, rz, fx, fy, fz, ox, oy, oz);
        add_site_force(o, as, fx, fy, fz);
        o.tx += ox;
        o.ty += oy;
        o.tz += oz;
      }
    }
  }
  switch_pair(m, o, dx, dy, dz);
  return o;
}

// A uniform system's molecules of NL Lennard-Jones centres and then NQ charges, no dipoles or quadrupoles
// (molecules_cuda.site_shape): molecule i's site offsets held in registers for all its partners, and the
// Lennard-Jones centres' (sigma, sqrt(eps), 0, kind), molecule 0's (the same in every molecule). The
// traversals load them once per molecule i where molecule_pair's loops, their bounds known only at run
// time, load them again for every partner. NL = NQ = 0: the general body, which holds nothing.
template <int NL, int NQ, typename Real>
struct ShapedSites {
  Vec4<Real> a[NL + NQ];
  Vec4<Real> e[NL > 0 ? NL : 1];

  __host__ __device__ __forceinline__ ShapedSites(const MoleculeModel<Real>& m, int i) {
#pragma unroll
    for (int s = 0; s < NL + NQ; ++s) a[s] = m.A[i * (NL + NQ) + s];
#pragma unroll
    for (int s = 0; s < NL; ++s) e[s] = m.E[s];
  }
};

template <typename Real>
struct ShapedSites<0, 0, Real> {
  __host__ __device__ __forceinline__ ShapedSites(const MoleculeModel<Real>&, int) {}
};

// molecule_pair for those molecules, its loops unrolled: i's sites from `si`, j's from A at j (NL + NQ).
// The same operations in the same order as molecule_pair on the same values (the same bits on the host,
// tests/test_gpu_molecules.py; on the device the compiler may fuse other multiply-adds).
template <int NL, int NQ, typename Real>
__host__ __device__ __forceinline__ MoleculePairResult<Real> molecule_pair_shaped(const MoleculeModel<Real>& m,
                                                                          const ShapedSites<NL, NQ, Real>& si, int j,
                                                                          Real dx, Real dy, Real dz) {
  MoleculePairResult<Real> o{Real(0), Real(0), Real(0), Real(0), Real(0), Real(0), Real(0)};
  const Vec4<Real>* __restrict__ aj = m.A + j * (NL + NQ);
  if constexpr (NL > 0) {
    const Real xi = m.xi[0], heta = Real(0.5) * m.eta[0];
#pragma unroll
    for (int s = 0; s < NL; ++s) {
      const Vec4<Real> as = si.a[s], es = si.e[s];
      Real gx = Real(0), gy = Real(0), gz = Real(0);
#pragma unroll
      for (int t = 0; t < NL; ++t) {
        const Vec4<Real> at = aj[t], et = si.e[t];
        lj_site_pair(as, es, at, et, xi, heta, dx, dy, dz, o.u, gx, gy, gz);
      }
      add_site_force(o, as, gx, gy, gz);
    }
  }
#pragma unroll
  for (int s = NL; s < NL + NQ; ++s) {
    const Vec4<Real> as = si.a[s];
    const Real kq = m.k * as.w;
    Real gx = Real(0), gy = Real(0), gz = Real(0);
#pragma unroll
    for (int t = NL; t < NL + NQ; ++t) {
      const Vec4<Real> at = aj[t];
      charge_site_pair(m.krf, m.crf, as, kq, at, dx, dy, dz, o.u, gx, gy, gz);
    }
    add_site_force(o, as, gx, gy, gz);
  }
  switch_pair(m, o, dx, dy, dz);
  return o;
}

// The molecule-pair body every traversal calls, with molecule i's sites `si` loaded for it: unrolled for a
// fixed shape (NL + NQ > 0), molecule_pair's general loops otherwise.
template <int NL, int NQ, typename Real>
__host__ __device__ __forceinline__ MoleculePairResult<Real> pair_body(const MoleculeModel<Real>& m,
                                                               const ShapedSites<NL, NQ, Real>& si, int i, int j,
                                                               Real dx, Real dy, Real dz) {
  if constexpr (NL + NQ > 0) {
    return molecule_pair_shaped<NL, NQ>(m, si, j, dx, dy, dz);
  } else {
    return molecule_pair(m, i, j, dx, dy, dz);
  }
}

// The torque on j of the pair whose force and torque on i are o, at d = c_i - c_j: -tau_i - d x F_i.
template <typename Real>
__host__ __device__ __forceinline__ void torque_on_j(const MoleculePairResult<Real>& o, Real dx, Real dy, Real dz,
                                                     Real& tx, Real& ty, Real& tz) {
  tx = -o.tx - (dy * o.fz - dz * o.fy);
  ty = -o.ty - (dz * o.fx - dx * o.fz);
  tz = -o.tz - (dx * o.fy - dy * o.fx);
}

// A body-frame vector turned by the unit quaternion (w, x, y, z): R(q) p (the lab frame).
template <typename Real>
__host__ __device__ __forceinline__ void rotate(Real w, Real x, Real y, Real z, Real px, Real py, Real pz, Real& ox,
                                                Real& oy, Real& oz) {
  const Real r00 = Real(1) - Real(2) * (y * y + z * z), r01 = Real(2) * (x * y - w * z), r02 = Real(2) * (x * z + w * y);
  const Real r10 = Real(2) * (x * y + w * z), r11 = Real(1) - Real(2) * (x * x + z * z), r12 = Real(2) * (y * z - w * x);
  const Real r20 = Real(2) * (x * z - w * y), r21 = Real(2) * (y * z + w * x), r22 = Real(1) - Real(2) * (x * x + y * y);
  ox = r00 * px + r01 * py + r02 * pz;
  oy = r10 * px + r11 * py + r12 * pz;
  oz = r20 * px + r21 * py + r22 * pz;
}

// One site in the lab frame (molecule_sites' work): A = (R(q) p, m); E = (R(q) d, kind), or for a
// Lennard-Jones centre its (sigma, sqrt(epsilon), 0, kind) as it is (it has no direction to turn).
template <typename Real>
__host__ __device__ __forceinline__ void turn_site(Real w, Real x, Real y, Real z, const Vec4<Real>& bodyA,
                                                   const Vec4<Real>& bodyE, Vec4<Real>& A, Vec4<Real>& E) {
  A = bodyA;
  rotate(w, x, y, z, bodyA.x, bodyA.y, bodyA.z, A.x, A.y, A.z);
  E = bodyE;
  if (static_cast<int>(bodyE.w) != kSiteLJ) rotate(w, x, y, z, bodyE.x, bodyE.y, bodyE.z, E.x, E.y, E.z);
}
