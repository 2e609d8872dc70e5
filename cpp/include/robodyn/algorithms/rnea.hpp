// Recursive Newton-Euler inverse dynamics (Featherstone 2008, Table 5.1) and its reductions:
// bias torques C(q, qd) qd + g(q) and gravity torques g(q), for fixed and free-floating bases.
#pragma once

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// W = [wd] + [w][w], the matrix taking a body-fixed offset c to the acceleration
// wd x c + w x (w x c) of that point relative to the origin: 6 mul, 9 add
template <class S>
ROBODYN_INLINE M3T<S> accel_matrix(const V3T<S>& w, const V3T<S>& wd) {
  const S xx = w[0] * w[0], yy = w[1] * w[1], zz = w[2] * w[2];
  const S xy = w[0] * w[1], xz = w[0] * w[2], yz = w[1] * w[2];
  // entry by entry: Eigen's comma initializer is not always inlined in a large unit
  M3T<S> W;
  W(0, 0) = -(yy + zz);
  W(0, 1) = xy - wd[2];
  W(0, 2) = xz + wd[1];
  W(1, 0) = xy + wd[2];
  W(1, 1) = -(xx + zz);
  W(1, 2) = yz - wd[0];
  W(2, 0) = xz - wd[1];
  W(2, 1) = yz + wd[0];
  W(2, 2) = -(xx + yy);
  return W;
}

// W c for a constant c with known zeros
template <class S>
ROBODYN_INLINE V3T<S> accel_apply(const M3T<S>& W, const Vec3& c, const std::array<bool, 3>& nz) {
  return V3T<S>(dot_const<S>(W(0, 0), W(0, 1), W(0, 2), c, nz),
                dot_const<S>(W(1, 0), W(1, 1), W(1, 2), c, nz),
                dot_const<S>(W(2, 0), W(2, 1), W(2, 2), c, nz));
}

// (W J)_ij = sum_k W_ik J_kj, the terms with a zero J_kj left out (nz: J's non-zero entries
// xx yy zz xy xz yz)
template <class S>
ROBODYN_INLINE S WJ_entry(const M3T<S>& W, const Mat3& J, const std::array<bool, 6>& nz, int i,
                          int j) {
  constexpr int id[3][3] = {{0, 3, 4}, {3, 1, 5}, {4, 5, 2}};
  S acc(0);
  bool any = false;
  for (int k = 0; k < 3; ++k) {
    if (!nz[id[k][j]]) continue;
    const S t = W(i, k) * S(J(k, j));
    acc = any ? S(acc + t) : t;
    any = true;
  }
  return acc;
}

// (W J)_ij for a full J: 3 mul, 2 add
template <class S>
ROBODYN_INLINE S WJ_full(const M3T<S>& W, const Mat3& J, int i, int j) {
  return W(i, 0) * S(J(0, j)) + W(i, 1) * S(J(1, j)) + W(i, 2) * S(J(2, j));
}

// the moment of the relative inertial forces about the origin, n = sum r x (W r) dm, from
// [n] = W J - J W^T (J the second moment of mass): the skew part of W J, 6 sparse dot products
template <class S>
ROBODYN_INLINE V3T<S> moment_from_W(const M3T<S>& W, const Mat3& J, const std::array<bool, 6>& nz) {
  // J diagonal ((W J)_ij = W_ij J_jj): 6 mul, 3 add; double takes this path whenever the
  // products of inertia are zero (a zero moment is multiplied, not skipped)
  const bool diagonal = !(nz[3] | nz[4] | nz[5]) && (!kSkipZeros<S> || (nz[0] & nz[1] & nz[2]));
  if (diagonal) {
    const S J0(J(0, 0)), J1(J(1, 1)), J2(J(2, 2));
    return V3T<S>(W(2, 1) * J1 - W(1, 2) * J2, W(0, 2) * J2 - W(2, 0) * J0,
                  W(1, 0) * J0 - W(0, 1) * J1);
  }
  if (!kSkipZeros<S> || (nz[0] & nz[1] & nz[2] & nz[3] & nz[4] & nz[5])) {
    // full J: 18 mul, 15 add
    return V3T<S>(WJ_full<S>(W, J, 2, 1) - WJ_full<S>(W, J, 1, 2),
                  WJ_full<S>(W, J, 0, 2) - WJ_full<S>(W, J, 2, 0),
                  WJ_full<S>(W, J, 1, 0) - WJ_full<S>(W, J, 0, 1));
  }
  // other patterns
  return V3T<S>(WJ_entry<S>(W, J, nz, 2, 1) - WJ_entry<S>(W, J, nz, 1, 2),
                WJ_entry<S>(W, J, nz, 0, 2) - WJ_entry<S>(W, J, nz, 2, 0),
                WJ_entry<S>(W, J, nz, 1, 0) - WJ_entry<S>(W, J, nz, 0, 1));
}

// One Newton-Euler sweep (RBDA Table 5.1; names in docs/notation.md). kVel: velocity terms
// on; kAcc: joint accelerations on; kJoint: armature, viscous and Coulomb friction added to the
// 1-DOF joint forces. Any joint kind: revolute, prismatic, and a free-flyer (body 1).
//
// Table 5.1's a_i = X_i a_p + S_i qdd_i + v_i x S_i qd_i, f_i = I_i a_i + v_i x* I_i v_i is
// written with the classical acceleration of the body origin a'_i = a_i + w_i x v_i (the linear
// velocity is never needed) and W_i = [wd_i] + [w_i][w_i] (Balafoutis):
//   w_i   = E^T w_p + wJ                       (v_i, angular; wJ, vJ: S qd)
//   wd_i  = E^T wd_p + (E^T w_p) x wJ + wJd      (a_i, angular; wJd, vJd: S qdd)
//   a'_i  = E^T (a'_p + W_p r) + 2 (E^T w_p) x vJ + wJ x vJ + vJd
//   n_i   = skew(W_i J_i) + h_i x a'_i  (= Ibar wd + w x Ibar w + h x a'),  f_i = mass a' + W_i h
//   tau_i = S_i' (n_i, f_i);  (n_p, f_p) += X_i' (n_i, f_i)
// (add_joint_classical in joint.hpp holds the joint terms of each kind). Body 0 is the world:
// w_0 = wd_0 = 0, W_0 = 0, a'_0 = -gravity (Featherstone 5.3), and the loops treat the bodies
// on it like any other (the zeros that follow are folded by the generated code and the
// operation counts, tracing.hpp and counting.hpp). Without velocities (gravity torques)
// w = wd = 0 and a'_i = E^T a'_p.
template <bool kVel, bool kAcc, bool kJoint, class S>
void rnea_sweep(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  static_assert(kVel || !kAcc, "accelerations without velocities are not used");
  update_kinematics(m, d, q, 1);
  d.v_ang[0].setZero();
  d.a_ang[0].setZero();
  d.W_acc[0].setZero();
  d.a_lin[0] = -m.gravity.template cast<S>();
  // one dispatch on the link kind per body (with_link): X and the joint type are known
  // inside each loop body
  for (int i = 1; i <= m.n; ++i) with_link(m, i, [&](auto K) ROBODYN_INLINE_LAMBDA {
    constexpr JointType type = joint_of(decltype(K)::value);
    const int p = m.parent[i];
    const Xup<S> X(m, d, i, K);
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    if (!kVel) {
      const V3T<S> a = X.ET(d.a_lin[p]);
      d.a_lin[i] = a;
      d.f_ang[i] = const_cross<S>(h, hz, a);
      d.f_lin[i] = S(m.mass[i]) * a;
      return;
    }
    // the parent's motion seen from body i: w = E^T w_p, wd = E^T wd_p, a = E^T (a'_p + W_p r)
    V3T<S> w = X.ET(d.v_ang[p]), wd = X.ET(d.a_ang[p]);
    V3T<S> a = X.ET(V3T<S>(d.a_lin[p] + X.times_r(d.W_acc[p])));
    // + the joint's motion S qd, S qdd and its velocity products
    const int k = m.iv[i];
    add_joint_classical<kAcc, S>(type, true, qd + k, qdd + k, w, wd, a);
    d.v_ang[i] = w;
    d.a_ang[i] = wd;
    d.a_lin[i] = a;
    d.W_acc[i] = accel_matrix<S>(w, wd);
    // net force on the body, moment about its origin
    d.f_ang[i] = moment_from_W<S>(d.W_acc[i], m.J[i], m.J_nz[i]) + const_cross<S>(h, hz, a);
    d.f_lin[i] = S(m.mass[i]) * a + accel_apply<S>(d.W_acc[i], h, hz);
  });
  // backward pass: project on the joint axes, push the force to the parent
  for (int i = m.n; i >= 1; --i) with_link(m, i, [&](auto K) ROBODYN_INLINE_LAMBDA {
    constexpr JointType type = joint_of(decltype(K)::value);
    const int k = m.iv[i];
    if (type == JointType::FreeFlyer) {
      joint_force(type, d.f_ang[i], d.f_lin[i], tau + k);
    } else {
      // read qd, qdd before tau is written (tau may alias them)
      S t = type == JointType::Revolute ? d.f_ang[i][2] : d.f_lin[i][2];
      if (kJoint) add_joint_terms<kAcc, S>(m, i, qd, qdd, t);
      tau[k] = t;
    }
    const int p = m.parent[i];
    if (p > 0) Xup<S>(m, d, i, K).apply_transpose(d.f_ang[i], d.f_lin[i], d.f_ang[p], d.f_lin[p]);
  });
}

}  // namespace detail

// Inverse dynamics: tau = M(q) qdd + C(q, qd) qd + g(q) + armature qdd + damping qd
//                         + friction sign(qd).  q (nq,), qd, qdd, tau (nv,). With a free-flyer
// (body 1) its block of tau is the wrench on the base in base axes [moment about the base
// origin; force] and its block of qdd the spatial acceleration of the base in base axes.
template <class S>
void rnea(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  detail::rnea_sweep<true, true, true, S>(m, d, q, qd, qdd, tau);
}

// Bias torques C(q, qd) qd + g(q) (rigid-body terms only: no friction).
template <class S>
void bias_torques(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* tau) {
  detail::rnea_sweep<true, false, false, S>(m, d, q, qd, nullptr, tau);
}

// Gravity torques g(q) = dV/dq.
template <class S>
void gravity_torques(const Model& m, DataTpl<S>& d, const S* q, S* tau) {
  detail::rnea_sweep<false, false, false, S>(m, d, q, nullptr, nullptr, tau);
}

}  // namespace robodyn
