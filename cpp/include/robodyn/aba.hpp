// Articulated-body forward dynamics (Featherstone 2008, Table 7.1).
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

namespace detail {

// X^T IA X for the parent-to-body transform X = (E, r), on 3x3 blocks IA = [A B; B' C]:
// A_p = A' - B'[r] + [r]B'^T - [r]C'[r],  B_p = B' + [r]C',  C_p = C', with A' = E A E^T etc.
template <class S>
inline void add_articulated_to_parent(const M3T<S>& E, const V3T<S>& r,
                                      const Eigen::Matrix<S, 6, 6>& Ia,
                                      Eigen::Matrix<S, 6, 6>& IAp) {
  const M3T<S> A = E * Ia.template topLeftCorner<3, 3>() * E.transpose();
  const M3T<S> B = E * Ia.template topRightCorner<3, 3>() * E.transpose();
  const M3T<S> C = E * Ia.template bottomRightCorner<3, 3>() * E.transpose();
  const M3T<S> rx = skew<S>(r);
  const M3T<S> rxC = rx * C;
  const M3T<S> Bp = B + rxC;
  const M3T<S> Brx = B * rx;
  IAp.template topLeftCorner<3, 3>() += A - Brx - Brx.transpose() - rxC * rx;
  IAp.template topRightCorner<3, 3>() += Bp;
  IAp.template bottomLeftCorner<3, 3>() += Bp.transpose();
  IAp.template bottomRightCorner<3, 3>() += C;
}

}  // namespace detail

// qdd = FD(q, qd, tau): joint accelerations for applied joint torques tau, with armature and
// joint friction (tau - damping qd - friction sign(qd) drives the joint). Returns false when
// an articulated joint inertia D_i is not positive.
template <class S>
bool aba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 2);
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
    const V3T<S> h = m.h[i].template cast<S>();
    const S mass(m.mass[i]);
    M6& IA = d.IA[i];
    const M3T<S> hx = skew<S>(h);
    IA.template topLeftCorner<3, 3>() = m.Ibar[i].template cast<S>();
    IA.template topRightCorner<3, 3>() = hx;
    IA.template bottomLeftCorner<3, 3>() = -hx;
    IA.template bottomRightCorner<3, 3>() = mass * M3T<S>::Identity();
    const V3T<S> Lw = sym_mul<S>(m.Ibar[i], w) + cross<S>(h, v);
    const V3T<S> Lv = mass * v - cross<S>(h, w);
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
    const S invD = S(1) / Di;
    const V6 Ud = d.U[i] * invD;
    const M6 Ia = d.IA[i] - Ud * d.U[i].transpose();
    const V6 pa = d.pA[i] + Ia * d.cbias[i] + Ud * ui;
    detail::add_articulated_to_parent<S>(d.E[i], d.r[i], Ia, d.IA[p]);
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
