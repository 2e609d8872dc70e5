// Articulated-body forward dynamics (Featherstone 2008, Table 7.1).
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

namespace detail {

// rows of B times [r]: each row b becomes b x r (zeros of a constant r skipped)
template <class S>
ROBODYN_INLINE M3T<S> times_skew(const M3T<S>& B, const V3T<S>& r, const std::array<bool, 3>& nz,
                                 const Vec3& rc, bool constant) {
  M3T<S> K;
  for (int k = 0; k < 3; ++k) {
    const V3T<S> row = B.row(k).transpose();
    K.row(k) = (constant ? cross_const<S>(row, rc, nz) : cross<S>(row, r)).transpose();
  }
  return K;
}

// X^T IA X for the parent-to-body transform of body i, on 3x3 blocks IA = [A B; B' C]:
// A_p = A' - K - K' - [r] C'[r],  B_p = B' - T',  C_p = C',  where A' = E A E^T (etc.),
// T = C'[r] and K = B'[r]; added to IAp
template <class S>
void add_articulated_to_parent(const Model& m, const DataTpl<S>& d, int i,
                               const Eigen::Matrix<S, 6, 6>& Ia, Eigen::Matrix<S, 6, 6>& IAp) {
  static const std::array<bool, 3> kFull{{true, true, true}};
  const bool rev = m.type[i] == JointType::Revolute;
  const std::array<bool, 3>& nz = rev ? m.pc_nz[i] : kFull;
  const V3T<S>& r = d.r[i];
  const M3T<S> A = rotate_to_parent<true, S>(m, d, i, Ia.template topLeftCorner<3, 3>());
  const M3T<S> B = rotate_to_parent<false, S>(m, d, i, Ia.template topRightCorner<3, 3>());
  const M3T<S> C = rotate_to_parent<true, S>(m, d, i, Ia.template bottomRightCorner<3, 3>());
  const M3T<S> T = times_skew<S>(C, r, nz, m.pc[i], rev);
  const M3T<S> K = times_skew<S>(B, r, nz, m.pc[i], rev);
  // [r] T = -(T' [r])' ... computed column by column as r x T_col
  M3T<S> rT;
  for (int k = 0; k < 3; ++k) {
    const V3T<S> col = T.col(k);
    rT.col(k) = rev ? const_cross<S>(m.pc[i], nz, col) : cross<S>(r, col);
  }
  for (int a = 0; a < 3; ++a)
    for (int b = a; b < 3; ++b) {
      const S v = A(a, b) - K(a, b) - K(b, a) - rT(a, b);
      IAp(a, b) += v;
      if (b != a) IAp(b, a) += v;
      const S c = C(a, b);
      IAp(3 + a, 3 + b) += c;
      if (b != a) IAp(3 + b, 3 + a) += c;
    }
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      const S v = B(a, b) - T(b, a);
      IAp(a, 3 + b) += v;
      IAp(3 + b, a) += v;
    }
}

}  // namespace detail

// qdd = FD(q, qd, tau): joint accelerations for applied joint torques tau, with armature and
// joint friction (tau - damping qd - friction sign(qd) drives the joint). Returns false when
// an articulated joint inertia D_i is not positive.
template <class S>
bool aba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 1);
  // pass 1: velocities, velocity-product accelerations, rigid inertias and bias forces
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    V3T<S> w = applyET(m, d, i, d.w[p]);
    V3T<S> v = applyET(m, d, i, V3T<S>(d.vl[p] + cross_r(m, d, i, d.w[p])));
    const S qdi = qd[i - 1];
    if (m.type[i] == JointType::Revolute) {
      d.cbias[i] << cross_z<S>(w, qdi), cross_z<S>(v, qdi);
      w[2] += qdi;
    } else {
      d.cbias[i] << V3T<S>::Zero(), cross_z<S>(w, qdi);
      v[2] += qdi;
    }
    d.w[i] = w;
    d.vl[i] = v;
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    const S mass(m.mass[i]);
    M6& IA = d.IA[i];
    const M3T<S> hx = skew<S>(V3T<S>(h.template cast<S>()));
    IA.template topLeftCorner<3, 3>() = m.Ibar[i].template cast<S>();
    IA.template topRightCorner<3, 3>() = hx;
    IA.template bottomLeftCorner<3, 3>() = -hx;
    IA.template bottomRightCorner<3, 3>().setZero();
    for (int k = 0; k < 3; ++k) IA(3 + k, 3 + k) = mass;
    // bias force v x* I v, I v = (Ibar w + h x v, mass v - h x w)
    const V3T<S> Lw = sym_mul<S>(m.Ibar[i], m.I_nz[i], w) + const_cross<S>(h, hz, v);
    const V3T<S> Lv = mass * v - const_cross<S>(h, hz, w);
    d.pA[i] << cross<S>(w, Lw) + cross<S>(v, Lv), cross<S>(w, Lv);
  }
  // pass 2: articulated inertias, tip to base
  for (int i = m.n; i >= 1; --i) {
    const int k = m.type[i] == JointType::Revolute ? 2 : 5;
    d.U[i] = d.IA[i].col(k);
    S Di = d.U[i][k];
    if (m.armature[i] != 0) Di += S(m.armature[i]);
    if (!(Di > S(0))) return false;
    d.D[i] = Di;
    S ui = tau[i - 1] - d.pA[i][k];
    if (m.damping[i] != 0) ui -= S(m.damping[i]) * qd[i - 1];
    if (m.friction[i] != 0) ui -= S(m.friction[i]) * detail::signum(qd[i - 1]);
    d.u[i] = ui;
    const int p = m.parent[i];
    if (p == 0) continue;
    // Ia = IA - U U'/D (symmetric rank-1 update), pa = pA + Ia c + U u/D
    const S invD = S(1) / Di;
    const V6 Ud = d.U[i] * invD;
    M6 Ia;
    for (int a = 0; a < 6; ++a)
      for (int b = a; b < 6; ++b) {
        Ia(a, b) = d.IA[i](a, b) - Ud[a] * d.U[i][b];
        Ia(b, a) = Ia(a, b);
      }
    // c has zeros: (w x z u, v x z u) for a revolute joint, (0, w x z u) for a prismatic one
    const V6& c = d.cbias[i];
    const bool rev = k == 2;
    V6 pa;
    for (int a = 0; a < 6; ++a) {
      S t = d.pA[i][a] + Ud[a] * ui;
      if (rev) t += Ia(a, 0) * c[0] + Ia(a, 1) * c[1];
      t += Ia(a, 3) * c[3] + Ia(a, 4) * c[4];
      pa[a] = t;
    }
    detail::add_articulated_to_parent<S>(m, d, i, Ia, d.IA[p]);
    const V3T<S> Ef = applyE(m, d, i, V3T<S>(pa.template tail<3>()));
    d.pA[p].template head<3>() +=
        applyE(m, d, i, V3T<S>(pa.template head<3>())) - cross_r(m, d, i, Ef);
    d.pA[p].template tail<3>() += Ef;
  }
  // pass 3: accelerations, base to tip
  d.wd[0].setZero();
  d.al[0] = -m.gravity.template cast<S>();
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    V3T<S> wd = applyET(m, d, i, d.wd[p]) + d.cbias[i].template head<3>();
    V3T<S> a = applyET(m, d, i, V3T<S>(d.al[p] + cross_r(m, d, i, d.wd[p]))) +
               d.cbias[i].template tail<3>();
    const S qddi =
        (d.u[i] - d.U[i].template head<3>().dot(wd) - d.U[i].template tail<3>().dot(a)) / d.D[i];
    if (m.type[i] == JointType::Revolute)
      wd[2] += qddi;
    else
      a[2] += qddi;
    d.wd[i] = wd;
    d.al[i] = a;
    qdd[i - 1] = qddi;
  }
  return true;
}

}  // namespace robodyn
