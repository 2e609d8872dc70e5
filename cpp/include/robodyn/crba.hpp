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
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q) {
  update_kinematics(m, d, q, 2);
  // composite inertias, tip to base: I_p += X^T I_i X in (mass, h, Ibar) form
  for (int i = 1; i <= m.n; ++i) {
    d.Im[i] = S(m.mass[i]);
    d.Ih[i] = m.h[i].template cast<S>();
    d.II[i] = m.Ibar[i].template cast<S>();
  }
  for (int i = m.n; i >= 1; --i) {
    const int p = m.parent[i];
    if (p == 0) continue;
    const M3T<S>& E = d.E[i];
    const V3T<S>& r = d.r[i];
    const V3T<S> y = E * d.Ih[i];
    const M3T<S> rx = skew<S>(r);
    const M3T<S> yx = skew<S>(y);
    d.II[p] += E * d.II[i] * E.transpose() - rx * yx - yx * rx - d.Im[i] * (rx * rx);
    d.Ih[p] += y + d.Im[i] * r;
    d.Im[p] += d.Im[i];
  }
  // columns: F = Ic_i S_i carried down the path to the base; other branches stay zero
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
  const int n = d.n;
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
