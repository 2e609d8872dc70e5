// Composite-rigid-body mass matrix (Featherstone 2008, Table 6.2) and forward dynamics by
// mass matrix + Cholesky.
#pragma once

#include <cmath>

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

// Joint-space inertia matrix M(q) + diag(armature), written into d.M (both triangles).
namespace detail {

// the symmetric parallel-axis shift of a composite moved by r with first moment y:
//   -[r][y] - [y][r] - m [r][r] = 2 (r.z) 1 - (r z' + z r'),  z = y + (m/2) r,
// added to A; zero components of a constant r are skipped
template <class S>
ROBODYN_INLINE void add_parallel_axis(const V3T<S>& r, const std::array<bool, 3>& nz,
                                      const V3T<S>& z, M3T<S>& A) {
  S p[3];
  for (int k = 0; k < 3; ++k) p[k] = nz[k] ? S(r[k] * z[k]) : S(0);
  auto sum2 = [&](int i, int j) -> S {  // 2 (p_i + p_j), skipping zeros
    const S t = nz[i] && nz[j] ? S(p[i] + p[j]) : (nz[i] ? p[i] : (nz[j] ? p[j] : S(0)));
    return nz[i] || nz[j] ? S(t + t) : S(0);
  };
  if (nz[1] || nz[2]) A(0, 0) += sum2(1, 2);
  if (nz[0] || nz[2]) A(1, 1) += sum2(0, 2);
  if (nz[0] || nz[1]) A(2, 2) += sum2(0, 1);
  const int ij[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  for (const auto& e : ij) {
    const int i = e[0], j = e[1];
    if (!nz[i] && !nz[j]) continue;
    S t = nz[i] && nz[j] ? S(r[i] * z[j] + z[i] * r[j]) : (nz[i] ? S(r[i] * z[j]) : S(z[i] * r[j]));
    A(i, j) -= t;
    A(j, i) = A(i, j);
  }
}

// a' A a for symmetric A and a = X_i S_p's angular part (for a revolute i: a = Rz^T kz with
// a_2 = kz_2 constant, the zeros of kz known)
template <class S>
ROBODYN_INLINE S axis_quadratic(const Model& m, int i, const M3T<S>& A, const V3T<S>& a) {
  const bool rev = m.type[i] == JointType::Revolute;
  const auto& kn = m.kz_nz[i];
  const bool n01 = !rev || kn[0] || kn[1], n2 = !rev || kn[2];
  const bool nz[3] = {n01, n01, n2};
  S acc(0);
  bool any = false;
  auto add = [&](const S& x) {
    acc = any ? S(acc + x) : x;
    any = true;
  };
  for (int k = 0; k < 3; ++k) {
    if (!nz[k]) continue;
    const S kk = rev && k == 2 ? S(m.kz22[i]) : S(a[k] * a[k]);
    add(kk * A(k, k));
    for (int l = k + 1; l < 3; ++l) {
      if (!nz[l]) continue;
      const S t = (a[k] * a[l]) * A(k, l);
      add(t + t);
    }
  }
  return acc;
}

// the composite inertia of body i (d.Im, d.Ih, d.II: mass, first moment, rotational inertia
// about the origin) moved to its parent and added to the parent's: X^T Ic X in (m, h, Ibar)
// form, for a revolute or prismatic joint
template <class S>
ROBODYN_INLINE void add_composite_to_parent(const Model& m, DataTpl<S>& d, int i) {
  static const std::array<bool, 3> kFull{{true, true, true}};
  const int p = m.parent[i];
  const bool rev = m.type[i] == JointType::Revolute;
  const V3T<S> r = rev ? V3T<S>(m.pc[i].template cast<S>()) : d.r[i];
  const std::array<bool, 3>& nz = rev ? m.pc_nz[i] : kFull;
  // y = E h, z = y + (m/2) r
  const V3T<S> y = applyE(m, d, i, d.Ih[i]);
  const S half = S(0.5) * d.Im[i];
  V3T<S> z = y, mr;
  for (int k = 0; k < 3; ++k) {
    mr[k] = nz[k] ? S(d.Im[i] * r[k]) : S(0);
    if (nz[k]) z[k] += half * r[k];
  }
  M3T<S> Ip = rotate_to_parent<true, S>(m, d, i, d.II[i]);
  add_parallel_axis<S>(r, nz, z, Ip);
  d.II[p] += Ip;
  for (int k = 0; k < 3; ++k) d.Ih[p][k] += nz[k] ? S(y[k] + mr[k]) : y[k];
  d.Im[p] += d.Im[i];
}

}  // namespace detail

// Joint-space inertia matrix M(q) + diag(armature), written into d.M (both triangles).
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q) {
  update_kinematics(m, d, q, 1);
  // composite inertias, tip to base: I_p += X^T I_i X in (mass, h, Ibar) form
  for (int i = 1; i <= m.n; ++i) {
    d.Im[i] = S(m.mass[i]);
    d.Ih[i] = m.h[i].template cast<S>();
    d.II[i] = m.Ibar[i].template cast<S>();
  }
  for (int i = m.n; i >= 1; --i) {
    const int p = m.parent[i];
    if (p == 0) continue;
    const bool rev = m.type[i] == JointType::Revolute;
    if (m.root_rev[p]) {
      // p turns on the base: only M_pp = S_p' Ic_p S_p is needed. With (a, l) = X_i S_p,
      // body i adds a' II a + 2 h.(l x a) + mass |l|^2 (revolute i: l x a and |l|^2 are
      // constants turned about z)
      V3T<S> a, l;
      parent_axis_motion(m, d, i, a, l);
      d.ax[i] << a, l;
      S lxa_h, mll;
      if (rev) {
        const V3T<S> lxa = rotzT_const<S>(d.c[i], d.s[i], m.kzk[i], m.kzk_nz[i]);
        const auto& kn = m.kzk_nz[i];
        const bool n01 = kn[0] || kn[1];
        lxa_h = n01 ? S(d.Ih[i][0] * lxa[0] + d.Ih[i][1] * lxa[1]) : S(0);
        if (kn[2]) lxa_h = n01 ? S(lxa_h + d.Ih[i][2] * lxa[2]) : S(d.Ih[i][2] * lxa[2]);
        mll = d.Im[i] * S(m.kzr2[i]);
      } else {
        lxa_h = d.Ih[i].dot(cross<S>(l, a));
        mll = d.Im[i] * l.dot(l);
      }
      d.II[p](2, 2) += detail::axis_quadratic<S>(m, i, d.II[i], a) + (lxa_h + lxa_h) + mll;
      continue;
    }
    detail::add_composite_to_parent(m, d, i);
  }
  // columns: F = Ic_i S_i carried down the path to the base; other branches stay zero
  d.size_mass_matrix();
  d.M.setZero();
  for (int i = 1; i <= m.n; ++i) {
    V3T<S> Fn, Ff;
    if (m.type[i] == JointType::Revolute) {
      Fn = d.II[i].col(2);
      Ff = V3T<S>(-d.Ih[i][1], d.Ih[i][0], S(0));
      d.M(i - 1, i - 1) = Fn[2];
    } else {
      Fn = V3T<S>(d.Ih[i][1], -d.Ih[i][0], S(0));
      Ff = V3T<S>(S(0), S(0), d.Im[i]);
      d.M(i - 1, i - 1) = Ff[2];
    }
    if (m.armature[i] != 0) d.M(i - 1, i - 1) += S(m.armature[i]);
    for (int j = i; m.parent[j] > 0; j = m.parent[j]) {
      if (m.root_rev[m.parent[j]]) {
        // the last step, to a parent on the base: M_ip = (X_j S_p)' F
        const int p = m.parent[j];
        const auto& v = d.ax[j];
        const S Mij = v[0] * Fn[0] + v[1] * Fn[1] + v[2] * Fn[2] + v[3] * Ff[0] +
                      v[4] * Ff[1] + v[5] * Ff[2];
        d.M(i - 1, p - 1) = Mij;
        d.M(p - 1, i - 1) = Mij;
        break;
      }
      const V3T<S> Ef = applyE(m, d, j, Ff);
      Fn = applyE(m, d, j, Fn) - cross_r(m, d, j, Ef);
      Ff = Ef;
      const int p = m.parent[j];
      const S Mij = m.type[p] == JointType::Revolute ? Fn[2] : Ff[2];
      d.M(i - 1, p - 1) = Mij;
      d.M(p - 1, i - 1) = Mij;
    }
  }
}

// In-place Cholesky M = L L^T on the lower triangle of d.M, then solves L L^T x = b (in b).
// Returns false when M is not positive definite.
template <class S>
bool cholesky_solve(DataTpl<S>& d, S* b) {
  using std::sqrt;
  auto& M = d.M;
  const int n = d.nv;
  for (int j = 0; j < n; ++j) {
    S djj = M(j, j);
    for (int k = 0; k < j; ++k) djj -= M(j, k) * M(j, k);
    if (!(djj > S(0))) return false;
    const S ljj = sqrt(djj);
    M(j, j) = ljj;
    const S inv = S(1) / ljj;
    for (int i = j + 1; i < n; ++i) {
      S x = M(i, j);
      for (int k = 0; k < j; ++k) x -= M(i, k) * M(j, k);
      M(i, j) = x * inv;
    }
  }
  for (int i = 0; i < n; ++i) {
    S x = b[i];
    for (int k = 0; k < i; ++k) x -= M(i, k) * b[k];
    b[i] = x / M(i, i);
  }
  for (int i = n - 1; i >= 0; --i) {
    S x = b[i];
    for (int k = i + 1; k < n; ++k) x -= M(k, i) * b[k];
    b[i] = x / M(i, i);
  }
  return true;
}

// Forward dynamics by M(q) qdd = tau - C qd - g - damping qd - friction sign(qd).
// Returns false when M is not positive definite.
template <class S>
bool forward_dynamics_crba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau,
                           S* qdd) {
  // inputs are read before qdd is written: qdd may alias q, qd or tau
  bias_torques(m, d, q, qd, d.tmp.data());
  crba(m, d, q);
  for (int i = 0; i < m.n; ++i) {
    S rhs = tau[i] - d.tmp[i];
    if (m.damping[i + 1] != 0) rhs -= S(m.damping[i + 1]) * qd[i];
    if (m.friction[i + 1] != 0) rhs -= S(m.friction[i + 1]) * detail::signum(qd[i]);
    d.tmp[i] = rhs;
  }
  for (int i = 0; i < m.n; ++i) qdd[i] = d.tmp[i];
  return cholesky_solve(d, qdd);
}

}  // namespace robodyn
