// The joint-torque regressor Y(q, qd, qdd) with tau = Y pi (rigid-body terms), and the
// Slotine-Li form Y(q, qd, v, a) with Y pi = M(q) a + C(q, qd) v + g(q) (C of coriolis.hpp,
// Mdot - 2C skew), both linear in the dynamic parameters
//   pi_i = [m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]      (Pinocchio's order)
// of each moving body i, in its user link frame (the URDF / DH frame of the body, Model's
// frame_R, frame_p) about that frame's origin.
//
// The force on body i is f_i = A_i pi_i (a 6 x 10 matrix of its motion in its own frame) and
// tau_k = sum over the subtree of k of S_k' f_i, so column block i of row k is (S_k seen in the
// frame of i)' A_i for every ancestor k of i (k = i included). Base-frame S_k, v_i and a_i
// come from the sweep of rnea_derivatives.hpp.
//
// In the frame of i, with v = (w, l), a = (aw, al) and beta = al + w x l the classical
// acceleration of the origin (gravity included):
//   f_ang = Ib aw + w x (Ib w) - beta x h,   f_lin = m beta + ([aw] + [w][w]) h
// Slotine-Li: f = I ar + (v x* I vr - I (v x vr) + vr x* I v) / 2, vr, ar the body velocity
// and acceleration (gravity included) of the reference motion (v, a) with the actual S' = v x S.
#pragma once

#include "robodyn/algorithms/rnea_derivatives.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// d(Ib y)/d(Ixx, Ixy, Iyy, Ixz, Iyz, Izz), 3 x 6
template <class S>
ROBODYN_INLINE Eigen::Matrix<S, 3, 6> inertia_lin(const V3T<S>& y) {
  Eigen::Matrix<S, 3, 6> L;
  L << y[0], y[1], S(0), y[2], S(0), S(0),
       S(0), y[0], y[1], S(0), y[2], S(0),
       S(0), S(0), S(0), y[0], y[1], y[2];
  return L;
}

// K(y): the force I y as a linear function of pi (6 x 10)
template <class S>
ROBODYN_INLINE Eigen::Matrix<S, 6, 10> inertia_regressor(const V6T<S>& y) {
  const V3T<S> yw = y.template head<3>(), yl = y.template tail<3>();
  Eigen::Matrix<S, 6, 10> K = Eigen::Matrix<S, 6, 10>::Zero();
  K.template block<3, 3>(0, 1) = -skew<S>(yl);
  K.template block<3, 6>(0, 4) = inertia_lin<S>(yw);
  K.template block<3, 1>(3, 0) = yl;
  K.template block<3, 3>(3, 1) = skew<S>(yw);
  return K;
}

// x x* F applied to each column of a 6 x 10 force matrix
template <class S>
ROBODYN_INLINE Eigen::Matrix<S, 6, 10> crf_cols(const V6T<S>& x, const Eigen::Matrix<S, 6, 10>& F) {
  Eigen::Matrix<S, 6, 10> R;
  for (int c = 0; c < 10; ++c) R.col(c) = crf<S>(x, V6T<S>(F.col(c)));
  return R;
}

// a base-frame motion vector seen in the frame (R, p) (pose in the base frame)
template <class S>
ROBODYN_INLINE V6T<S> motion_in(const M3T<S>& R, const V3T<S>& p, const V6T<S>& x) {
  const V3T<S> xw = x.template head<3>();
  V6T<S> r;
  r << V3T<S>(R.transpose() * xw),
      V3T<S>(R.transpose() * V3T<S>(V3T<S>(x.template tail<3>()) + cross<S>(xw, p)));
  return r;
}

// rows of Y for body i: Y(c, 10 (i - 1) + .) = S_c' A_i for the axes c of i and of its
// ancestors (S_c seen in body i's user frame (R, p)); Y is (nv, 10 n) row-major
template <class S>
ROBODYN_INLINE void regressor_rows(const Model& m, const DataTpl<S>& d, int i, const M3T<S>& R,
                                   const V3T<S>& p, const Eigen::Matrix<S, 6, 10>& A, S* Y) {
  const int n = m.n;
  for (int k = i; k > 0; k = m.parent[k])
    for (int a = m.iv[k]; a < m.iv[k] + joint_nv(m.type[k]); ++a) {
      const V6T<S> s = motion_in<S>(R, p, d.S_world[a]);
      S* row = Y + a * 10 * n + 10 * (i - 1);
      for (int c = 0; c < 10; ++c) row[c] = s.dot(A.col(c));
    }
}

// pose of body i's user frame in the base frame
template <class S>
ROBODYN_INLINE void user_frame(const Model& m, const DataTpl<S>& d, int i, M3T<S>& R,
                               V3T<S>& p) {
  R = d.world_R[i] * m.frame_R[i - 1].template cast<S>();
  p = d.world_p[i] + d.world_R[i] * m.frame_p[i - 1].template cast<S>();
}

}  // namespace detail

// Y(q, qd, qdd): (nv, 10 n) row-major (n moving bodies), tau_rigid = Y pi.
template <class S>
void regressor(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* Y) {
  const int n = m.n;
  detail::world_sweep<false>(m, d, q, qd, qd, qdd);
  for (int k = 0; k < 10 * n * m.nv; ++k) Y[k] = S(0);
  for (int i = 1; i <= n; ++i) {
    M3T<S> R;
    V3T<S> p;
    detail::user_frame(m, d, i, R, p);
    const V6T<S> v = detail::motion_in<S>(R, p, d.v_world[i]);
    const V6T<S> a = detail::motion_in<S>(R, p, d.a_world[i]);
    const V3T<S> w = v.template head<3>(), l = v.template tail<3>();
    const V3T<S> aw = a.template head<3>();
    const V3T<S> beta = V3T<S>(a.template tail<3>()) + cross<S>(w, l);
    Eigen::Matrix<S, 6, 10> A = Eigen::Matrix<S, 6, 10>::Zero();
    // angular rows: -[beta] h + (L(aw) + [w] L(w)) Ib
    A.template block<3, 3>(0, 1) = -skew<S>(beta);
    const Eigen::Matrix<S, 3, 6> Lw = detail::inertia_lin<S>(w);
    A.template block<3, 6>(0, 4) = detail::inertia_lin<S>(aw);
    for (int c = 0; c < 6; ++c)
      A.template block<3, 1>(0, 4 + c) += cross<S>(w, V3T<S>(Lw.col(c)));
    // linear rows: m beta + ([aw] + [w][w]) h
    A.template block<3, 1>(3, 0) = beta;
    const M3T<S> Ww = skew<S>(w);
    A.template block<3, 3>(3, 1) = skew<S>(aw) + Ww * Ww;
    detail::regressor_rows(m, d, i, R, p, A, Y);
  }
}

// Slotine-Li regressor Y(q, qd, v, a): (nv, 10 n) row-major, Y pi = M a + C(q, qd) v + g.
template <class S>
void regressor_slotine_li(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* v,
                          const S* a, S* Y) {
  using V6 = V6T<S>;
  const int n = m.n;
  // d.v_world: actual body velocities; d.a_world: reference accelerations
  // J a + Jdot(q, qd) v - gravity
  detail::world_sweep<false>(m, d, q, qd, v, a);
  for (int k = 0; k < 10 * n * m.nv; ++k) Y[k] = S(0);
  for (int i = 1; i <= n; ++i) {
    // reference body velocity J_i v
    const int p0 = m.parent[i];
    V6 vref = p0 > 0 ? d.v_ref_world[p0] : V6(V6::Zero());
    for (int c = m.iv[i]; c < m.iv[i] + joint_nv(m.type[i]); ++c) vref += d.S_world[c] * v[c];
    d.v_ref_world[i] = vref;
    M3T<S> R;
    V3T<S> p;
    detail::user_frame(m, d, i, R, p);
    const V6 vu = detail::motion_in<S>(R, p, d.v_world[i]);
    const V6 vr = detail::motion_in<S>(R, p, d.v_ref_world[i]);
    const V6 ar = detail::motion_in<S>(R, p, d.a_world[i]);
    const Eigen::Matrix<S, 6, 10> A =
        detail::inertia_regressor<S>(ar) +
        S(0.5) * (detail::crf_cols<S>(vu, detail::inertia_regressor<S>(vr)) -
                  detail::inertia_regressor<S>(detail::crm<S>(vu, vr)) +
                  detail::crf_cols<S>(vr, detail::inertia_regressor<S>(vu)));
    detail::regressor_rows(m, d, i, R, p, A, Y);
  }
}

}  // namespace robodyn
