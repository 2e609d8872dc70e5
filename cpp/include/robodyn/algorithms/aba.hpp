// Articulated-body forward dynamics, Featherstone 2008 (RBDA) Table 7.1, in the book's names,
// body coordinates, every joint kind (revolute, prismatic, free-flyer) in the same three loops.
//
// One change from the table: a (and c) are the classical accelerations of the body origins
// (rnea.hpp's choice), a = (wd, a') with a' the acceleration of the origin in body axes.
// Then the bias force needs no linear velocity, pA = (w x Ibar w, w x (w x h)), and
//   c = (w' x wr, E^T (w_p x (w_p x r)) + 2 w' x vr + wr x vr)
// for a joint of relative velocity S qd = (wr, vr) under a parent turning at w_p
// (w' = E^T w_p: revolute wr = qd z, vr = 0; prismatic wr = 0, vr = qd z; free-flyer both).
//
// Body 0 is the world: v_0 = 0, a_0 = -gravity (in world axes). A free-flyer is the
// articulated root (body 1): S = 1, so U = IA, D = IA (6x6, factorised as L diag L^T) and
// its acceleration is IA^-1 (tau - pA); it passes nothing on. Revolute, prismatic and
// free-flyer differ only in S (which entry of U, D, u; c above).
//
// The per-body zeros (a body on the world moves about one axis; a tip's articulated inertia
// is a constant) are not special-cased here: the generated code and the operation counts fold
// them (tracing.hpp, counting.hpp).
#pragma once

#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// Ia = IA - U Ud' (upper triangle) and pa = pA + Ia c + Ud u for a 1-DOF joint on axis k (2: revolute, whose
// c_2 = 0; 5: prismatic, whose c_0 = c_1 = c_2 = 0). kZ: no armature, so Ia S = 0 and
// Ud_k = 1: row and column k of Ia are exactly zero and are skipped.
template <int k, bool kZ, class S>
ROBODYN_INLINE void articulated_step(const Eigen::Matrix<S, 6, 6>& IA,
                                     const Eigen::Matrix<S, 6, 1>& U, const S& D,
                                     const Eigen::Matrix<S, 6, 1>& pA, const S& u,
                                     const Eigen::Matrix<S, 6, 1>& c, Eigen::Matrix<S, 6, 6>& Ia,
                                     Eigen::Matrix<S, 6, 1>& pa) {
  const S invD = S(1) / D;
  S Ud[6];
  ROBODYN_UNROLL
  for (int j = 0; j < 6; ++j) Ud[j] = kZ && j == k ? S(1) : S(U[j] * invD);
  // rows and columns computed: all but k when kZ; columns of the non-zero entries of c:
  // 0, 1, 3, 4, 5 (revolute), 3, 4, 5 (prismatic; 3, 4 when kZ)
  constexpr int N = kZ ? 5 : 6, NC = k == 2 ? 5 : (kZ ? 2 : 3);
  auto idx = [](int x) { return kZ && x >= k ? x + 1 : x; };
  auto ic = [](int y) { return k == 2 ? (y < 2 ? y : y + 1) : 3 + y; };
  if (kZ)
    for (int j = 0; j < 6; ++j) Ia(k, j) = Ia(j, k) = S(0);
  ROBODYN_UNROLL
  for (int x = 0; x < N; ++x)
    ROBODYN_UNROLL
    for (int y = x; y < N; ++y) {
      const int a = idx(x), b = idx(y);
      Ia(a, b) = IA(a, b) - Ud[a] * U[b];
    }
  ROBODYN_UNROLL
  for (int a = 0; a < 6; ++a) {
    if (kZ && a == k) {
      pa[a] = pA[a] + u;
      continue;
    }
    S t = pA[a] + Ud[a] * u;
    ROBODYN_UNROLL
    for (int y = 0; y < NC; ++y)
      t += (a <= ic(y) ? Ia(a, ic(y)) : Ia(ic(y), a)) * c[ic(y)];
    pa[a] = t;
  }
}

// v_i = iX_λ(i) v_λ(i) + S_i qd_i and c_i for a joint of type t (the header's classical
// form): from the parent's angular velocity wp and |wp|^2 (wwp), body i's angular velocity w,
// |w|^2 (ww) and c, x = qd_i
template <JointType t, class S, class Link>
ROBODYN_INLINE void joint_velocity(const Link& X, const V3T<S>& wp, const S& wwp, const S* x,
                                   V3T<S>& w, S& ww, V6T<S>& c) {
  // w' = E^T w_p, and E^T (w_p x (w_p x r)) = E^T ((w_p . r) w_p - |w_p|^2 r)
  w = X.ET(wp);
  const V3T<S>& r = X.r();
  const std::array<bool, 3> nz = X.r_nz();
  const S wr = X.dot_r(wp);
  V3T<S> k;
  for (int j = 0; j < 3; ++j) k[j] = nz[j] ? S(wr * wp[j] - wwp * r[j]) : S(wr * wp[j]);
  const V3T<S> kb = X.ET(k);
  // c, w = w' + wr, and |w|^2 from |w'|^2 = |w_p|^2
  if constexpr (t == JointType::Revolute) {
    c << w[1] * x[0], -(w[0] * x[0]), S(0), kb;
    ww = wwp + x[0] * (w[2] + w[2] + x[0]);
    w[2] += x[0];
  } else if constexpr (t == JointType::Prismatic) {
    const S x2 = x[0] + x[0];
    c << S(0), S(0), S(0), kb[0] + w[1] * x2, kb[1] - w[0] * x2, kb[2];
    ww = wwp;
  } else {
    const V3T<S> wr3(x[0], x[1], x[2]), vr(x[3], x[4], x[5]);
    c << cross<S>(w, wr3), kb + S(2) * cross<S>(w, vr) + cross<S>(wr3, vr);
    w += wr3;
    ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
  }
}

// IA_i = I_i (upper triangle) and pA_i = v_i x* I_i v_i = (w x Ibar w, (w . h) w - |w|^2 h)
// for body i's angular velocity w, |w|^2 = ww (the classical form needs no linear velocity)
template <class S>
ROBODYN_INLINE void rigid_articulated(const Model& m, int i, const V3T<S>& w, const S& ww,
                                      Eigen::Matrix<S, 6, 6>& IA, V6T<S>& pA) {
  const Vec3& h = m.h[i];
  const auto& hz = m.h_nz[i];
  const S wh = dot_const<S>(w[0], w[1], w[2], h, hz);
  const V3T<S> Iw = sym_mul<S>(m.Ibar[i], m.I_nz[i], w);
  pA << cross<S>(w, Iw), V3T<S>(hz[0] ? S(wh * w[0] - ww * S(h[0])) : S(wh * w[0]),
                                hz[1] ? S(wh * w[1] - ww * S(h[1])) : S(wh * w[1]),
                                hz[2] ? S(wh * w[2] - ww * S(h[2])) : S(wh * w[2]));
  IA.template topLeftCorner<3, 3>() = m.Ibar[i].template cast<S>();
  IA.template topRightCorner<3, 3>() = skew<S>(V3T<S>(h.template cast<S>()));
  IA(3, 4) = IA(3, 5) = IA(4, 5) = S(0);
  for (int j = 0; j < 3; ++j) IA(3 + j, 3 + j) = S(m.mass[i]);
}

// U_i = IA_i S_i, D_i = S_i^T U_i + armature, u_i = tau_i - S_i^T pA_i - damping qd_i
// - friction sign(qd_i): for a 1-DOF joint into d.U, d.D, d.u; for a free-flyer (S = 1:
// U = D = IA) D factorised into d.D_free (ldlt6) and u into d.u_free. False when D is not positive
// definite.
template <class S>
ROBODYN_INLINE bool joint_inertia(const Model& m, DataTpl<S>& d, int i, const S* qd,
                                  const S* tau) {
  const int iv = m.iv[i];
  if (m.type[i] == JointType::FreeFlyer) {
    d.D_free = d.IA[i].template selfadjointView<Eigen::Upper>();
    if (!ldlt6<S>(d.D_free)) return false;
    for (int j = 0; j < 6; ++j) d.u_free[j] = tau[iv + j] - d.pA[i][j];
    return true;
  }
  const int k = m.type[i] == JointType::Revolute ? 2 : 5;  // S_i = e_k
  for (int j = 0; j < 6; ++j) d.U[i][j] = j <= k ? d.IA[i](j, k) : d.IA[i](k, j);
  S Di = d.U[i][k];
  add_armature(m, i, Di);
  if (!positive(Di)) return false;
  d.D[i] = Di;
  S ui = tau[iv] - d.pA[i][k];
  add_joint_friction<-1, S>(m, i, qd[iv], ui);
  d.u[i] = ui;
  return true;
}

// Body i's articulated inertia and bias force passed to its parent p (1-DOF joint):
// Ia = IA_i - U_i D_i^-1 U_i^T, pa = pA_i + Ia c_i + U_i D_i^-1 u_i, then
// IA_p += pX_i^* Ia iX_p, pA_p += pX_i^* pa. Without armature Ia S = 0: row and column k of Ia
// are zero and skipped (articulated_step, add_transport's kZ2)
template <class S>
ROBODYN_INLINE void articulated_to_parent(const Model& m, DataTpl<S>& d, int i, int p) {
  const bool kz = m.armature[i] == 0;
  const bool rev = m.type[i] == JointType::Revolute;
  Eigen::Matrix<S, 6, 6> Ia;
  V6T<S> pa;
  if (rev && kz)
    articulated_step<2, true, S>(d.IA[i], d.U[i], d.D[i], d.pA[i], d.u[i], d.c_bias[i], Ia, pa);
  else if (rev)
    articulated_step<2, false, S>(d.IA[i], d.U[i], d.D[i], d.pA[i], d.u[i], d.c_bias[i], Ia, pa);
  else if (kz)
    articulated_step<5, true, S>(d.IA[i], d.U[i], d.D[i], d.pA[i], d.u[i], d.c_bias[i], Ia, pa);
  else
    articulated_step<5, false, S>(d.IA[i], d.U[i], d.D[i], d.pA[i], d.u[i], d.c_bias[i], Ia, pa);
  const Xup<S> X(m, d, i);
  if (rev && kz)
    X.template add_transport<true>(Ia, d.IA[p]);
  else
    X.template add_transport<false>(Ia, d.IA[p]);
  V3T<S> np = d.pA[p].template head<3>(), fp = d.pA[p].template tail<3>();
  X.apply_transpose(V3T<S>(pa.template head<3>()), V3T<S>(pa.template tail<3>()), np, fp);
  d.pA[p] << np, fp;
}

// qdd_i = D_i^-1 (u_i - U_i^T a') and a_i = a' + S_i qdd_i (into a' = (wd, a)) for a joint of
// type t; a free-flyer (U = D = IA): qdd = IA^-1 u - a', a = IA^-1 u
template <JointType t, class S>
ROBODYN_INLINE void joint_acceleration(const DataTpl<S>& d, int i, S* x, V3T<S>& wd,
                                       V3T<S>& a) {
  if constexpr (t == JointType::FreeFlyer) {
    V6T<S> ab = d.u_free;
    ldlt6_solve<S>(d.D_free, ab);
    for (int j = 0; j < 3; ++j) {
      x[j] = ab[j] - wd[j];
      x[3 + j] = ab[3 + j] - a[j];
    }
    wd = ab.template head<3>();
    a = ab.template tail<3>();
  } else {
    const V6T<S>& U = d.U[i];
    x[0] = (d.u[i] - (U[0] * wd[0] + U[1] * wd[1] + U[2] * wd[2] + U[3] * a[0] + U[4] * a[1] +
                      U[5] * a[2])) / d.D[i];
    add_joint_motion(t, x, wd, a);
  }
}

}  // namespace detail

// qdd = FD(q, qd, tau): q (nq,), qd, tau, qdd (nv,). Joint accelerations for the applied
// generalized forces tau, with armature, and joint friction on the 1-DOF joints
// (tau - damping qd - friction sign(qd) drives the joint). Returns false when an articulated
// joint inertia D_i is not positive definite. qdd may alias the inputs (they are read in the
// first two passes).
template <class S>
bool aba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  update_kinematics(m, d, q, 1);
  // v_0 = 0, a_0 = -a_g
  d.v_ang[0].setZero();
  d.w_sq[0] = S(0);
  d.a_ang[0].setZero();
  d.a_lin[0] = -m.gravity.template cast<S>();
  // pass 1, base to tip (one dispatch per body on the link kind: X's kind and the joint type
  // are compile-time constants inside)
  for (int i = 1; i <= m.n; ++i) with_link(m, i, [&](auto K) ROBODYN_INLINE_LAMBDA {
    const int p = m.parent[i];
    // v_i = iX_λ(i) v_λ(i) + S_i qd_i, c_i = c_J + v_i x v_J
    detail::joint_velocity<joint_of(decltype(K)::value)>(Xup<S>(m, d, i, K), d.v_ang[p], d.w_sq[p],
                                                         qd + m.iv[i], d.v_ang[i], d.w_sq[i],
                                                         d.c_bias[i]);
    // IA_i = I_i, pA_i = v_i x* I_i v_i
    detail::rigid_articulated(m, i, d.v_ang[i], d.w_sq[i], d.IA[i], d.pA[i]);
  });
  // pass 2, tip to base
  for (int i = m.n; i >= 1; --i) {
    // U_i = IA_i S_i, D_i = S_i^T U_i, u_i = tau_i - S_i^T pA_i (with the joint terms)
    if (!detail::joint_inertia(m, d, i, qd, tau)) return false;
    const int p = m.parent[i];
    if (p == 0) continue;
    // Ia = IA_i - U_i D_i^-1 U_i^T, pa = pA_i + Ia c_i + U_i D_i^-1 u_i,
    // IA_λ(i) += λ(i)X_i^* Ia iX_λ(i), pA_λ(i) += λ(i)X_i^* pa
    detail::articulated_to_parent(m, d, i, p);
  }
  // pass 3, base to tip
  for (int i = 1; i <= m.n; ++i) with_link(m, i, [&](auto K) ROBODYN_INLINE_LAMBDA {
    const int p = m.parent[i];
    // a' = iX_λ(i) a_λ(i) + c_i
    V3T<S> wd, a;
    Xup<S>(m, d, i, K).apply(d.a_ang[p], d.a_lin[p], wd, a);
    wd += d.c_bias[i].template head<3>();
    a += d.c_bias[i].template tail<3>();
    // qdd_i = D_i^-1 (u_i - U_i^T a'), a_i = a' + S_i qdd_i
    detail::joint_acceleration<joint_of(decltype(K)::value)>(d, i, qdd + m.iv[i], wd, a);
    d.a_ang[i] = wd;
    d.a_lin[i] = a;
  });
  return true;
}

}  // namespace robodyn
