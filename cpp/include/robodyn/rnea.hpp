// Recursive Newton-Euler inverse dynamics (Featherstone 2008, Table 5.1) and its reductions:
// bias torques C(q, qd) qd + g(q) and gravity torques g(q).
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

namespace detail {

// sign(x) as -1, 0, +1 (Coulomb friction is zero at rest)
template <class S>
inline S signum(const S& x) {
  return x > S(0) ? S(1) : (x < S(0) ? S(-1) : S(0));
}

// One Newton-Euler sweep. kVel: velocity terms on; kAcc: joint accelerations on;
// kJoint: armature, viscous and Coulomb friction added to the joint torques.
// W = [wd] + [w][w], the matrix taking a body-fixed offset c to the acceleration
// wd x c + w x (w x c) of that point relative to the origin: 6 mul, 9 add
template <class S>
ROBODYN_INLINE M3T<S> accel_matrix(const V3T<S>& w, const V3T<S>& wd) {
  const S xx = w[0] * w[0], yy = w[1] * w[1], zz = w[2] * w[2];
  const S xy = w[0] * w[1], xz = w[0] * w[2], yz = w[1] * w[2];
  M3T<S> W;
  W << -(yy + zz), xy - wd[2], xz + wd[1],
       xy + wd[2], -(xx + zz), yz - wd[0],
       xz - wd[1], yz + wd[0], -(xx + yy);
  return W;
}

// W c for a constant c with known zeros
template <class S>
ROBODYN_INLINE V3T<S> accel_apply(const M3T<S>& W, const Vec3& c, const std::array<bool, 3>& nz) {
  return V3T<S>(dot_const<S>(W(0, 0), W(0, 1), W(0, 2), c, nz),
                dot_const<S>(W(1, 0), W(1, 1), W(1, 2), c, nz),
                dot_const<S>(W(2, 0), W(2, 1), W(2, 2), c, nz));
}

// the moment of the relative inertial forces about the origin, n = sum r x (W r) dm, from
// [n] = W J - J W^T (J the second moment of mass): the skew part of W J, 6 sparse dot products
template <class S>
ROBODYN_INLINE V3T<S> moment_from_W(const M3T<S>& W, const Mat3& J, const std::array<bool, 6>& nz) {
  const bool diagonal = nz[0] && nz[1] && nz[2] && !nz[3] && !nz[4] && !nz[5];
  if (diagonal) {
    // (W J)_ij = W_ij J_jj: 6 mul, 3 add
    const S J0(J(0, 0)), J1(J(1, 1)), J2(J(2, 2));
    return V3T<S>(W(2, 1) * J1 - W(1, 2) * J2, W(0, 2) * J2 - W(2, 0) * J0,
                  W(1, 0) * J0 - W(0, 1) * J1);
  }
  if (nz[0] && nz[1] && nz[2] && nz[3] && nz[4] && nz[5]) {
    // full J: 18 mul, 15 add
    const M3T<S> Js = J.template cast<S>();
    auto WJ = [&](int i, int j) {
      return W(i, 0) * Js(0, j) + W(i, 1) * Js(1, j) + W(i, 2) * Js(2, j);
    };
    return V3T<S>(WJ(2, 1) - WJ(1, 2), WJ(0, 2) - WJ(2, 0), WJ(1, 0) - WJ(0, 1));
  }
  // other patterns: (W J)_ij = sum_k W_ik J_kj, skipping zero J_kj (J: xx yy zz xy xz yz)
  const int id[3][3] = {{0, 3, 4}, {3, 1, 5}, {4, 5, 2}};
  auto WJ = [&](int i, int j) {
    S acc(0);
    bool any = false;
    for (int k = 0; k < 3; ++k) {
      if (!nz[id[k][j]]) continue;
      const S t = W(i, k) * S(J(k, j));
      acc = any ? S(acc + t) : t;
      any = true;
    }
    return acc;
  };
  return V3T<S>(WJ(2, 1) - WJ(1, 2), WJ(0, 2) - WJ(2, 0), WJ(1, 0) - WJ(0, 1));
}

// W v for W = [[W00, W01, 0], [W10, W11, 0], [0, 0, 0]] (a body turning about its parent's z
// axis only) and a constant v with known zeros
template <class S>
ROBODYN_INLINE V3T<S> planar_apply(const S& W00, const S& W01, const S& W10, const S& W11,
                                   const Vec3& v, const std::array<bool, 3>& nz) {
  auto row = [&](const S& a, const S& b) -> S {
    if (nz[0] && nz[1]) return a * S(v[0]) + b * S(v[1]);
    if (nz[0]) return a * S(v[0]);
    if (nz[1]) return b * S(v[1]);
    return S(0);
  };
  return V3T<S>(row(W00, W01), row(W10, W11), S(0));
}

// (h x a)_z = h0 a1 - h1 a0 for a constant h and an a, both with known zeros
template <class S>
ROBODYN_INLINE S cross_z_sparse(const Vec3& h, const std::array<bool, 3>& hz, const V3T<S>& a,
                                const std::array<bool, 3>& az) {
  const bool p1 = hz[0] && az[1], p2 = hz[1] && az[0];
  if (p1 && p2) return S(h[0]) * a[1] - S(h[1]) * a[0];
  if (p1) return S(h[0]) * a[1];
  if (p2) return -(S(h[1]) * a[0]);
  return S(0);
}

template <bool kVel, bool kAcc, bool kJoint, class S>
void rnea_sweep(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  static_assert(kVel || !kAcc, "accelerations without velocities are not used");
  update_kinematics(m, d, q, 1);
  // The spatial recursion a_i = X a_p + S qdd + v x S qd, f = I a + v x* I v, written with the
  // classical acceleration of the body origin a' = a + w x v (no linear velocity needed) and
  // W = [wd] + [w][w] (Balafoutis):  a'_i = E^T (a'_p + W_p r) [+ 2 w x z u + z ud],
  //   n_i = skew(W_i J_i) + h x a' (= Ibar wd + w x (Ibar w) + h x a'),  f_i = mass a' + W_i h.
  // Without velocities (gravity torques) w = wd = 0: a'_i = E^T a'_p, n = h x a', f = mass a'.
  // Base: w = wd = 0, a' = -gravity (fictitious upward acceleration, Featherstone 5.3).
  // A revolute body on the base has w = u z, wd = ud z and a sparse W; its children see the
  // parent's w and wd along their parent's z axis: both are written out with their zeros.
  d.al[0] = -m.gravity.template cast<S>();
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const bool rev = m.type[i] == JointType::Revolute;
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    if (!kVel && m.root_rev[i]) {
      // only the joint torque (h x a')_z is read from a body turning on the base
      const V3T<S> a = gravity_in_root(m, d, i);
      d.al[i] = a;
      d.fn[i] = V3T<S>(S(0), S(0), cross_z_sparse<S>(h, hz, a, gravity_in_root_nz(m, i)));
      d.ff[i].setZero();
      continue;
    }
    if (!kVel) {
      const V3T<S> a = p == 0 ? gravity_in_root(m, d, i) : applyET(m, d, i, d.al[p]);
      d.al[i] = a;
      d.fn[i] = const_cross<S>(h, hz, a);
      d.ff[i] = S(m.mass[i]) * a;
      continue;
    }
    const S u = qd[i - 1];
    if (p == 0 && rev) {
      // w = u z, wd = ud z: W = [[-u^2, -ud, 0], [ud, -u^2, 0], [0, 0, 0]]
      const V3T<S> a = gravity_in_root(m, d, i);
      const S uu = u * u;
      const S ud = kAcc ? qdd[i - 1] : S(0);
      d.w[i] = V3T<S>(S(0), S(0), u);
      d.wd[i] = V3T<S>(S(0), S(0), ud);
      d.al[i] = a;
      M3T<S>& W = d.W[i];
      W.setZero();
      W(0, 0) = W(1, 1) = -uu;
      W(0, 1) = -ud;
      W(1, 0) = ud;
      // Only the joint torque n_z is ever read from this body (it has no parent to push its
      // force to): n_z = (skew(W J))_z + (h x a')_z = ud Ibar22 + h0 a'1 - h1 a'0, with the
      // zeros of a' (gravity_in_root_nz: only a'_z for gravity along the axis)
      const auto az = gravity_in_root_nz(m, i);
      S nz_ = cross_z_sparse<S>(h, hz, a, az);
      if (kAcc && m.I_nz[i][2]) {
        const S t = ud * S(m.Ibar[i](2, 2));
        nz_ = (hz[0] && az[1]) || (hz[1] && az[0]) ? S(nz_ + t) : t;
      }
      d.fn[i] = V3T<S>(S(0), S(0), nz_);
      d.ff[i].setZero();
      continue;
    }
    V3T<S> w, wd, a;
    if (p > 0 && m.root_rev[p]) {
      // the parent turns about its own z only: W_p = [[-u_p^2, -ud_p, 0], [ud_p, -u_p^2, 0], 0]
      const M3T<S>& Wp = d.W[p];
      const V3T<S> Wr = rev ? planar_apply<S>(Wp(0, 0), Wp(0, 1), Wp(1, 0), Wp(1, 1), m.pc[i],
                                              m.pc_nz[i])
                            : V3T<S>(Wp(0, 0) * d.r[i][0] + Wp(0, 1) * d.r[i][1],
                                     Wp(1, 0) * d.r[i][0] + Wp(1, 1) * d.r[i][1], S(0));
      a = applyET(m, d, i, V3T<S>(d.al[p] + Wr));
      w = applyET_z(m, d, i, d.w[p][2]);
      wd = kAcc ? applyET_z(m, d, i, d.wd[p][2]) : V3T<S>(S(0), S(0), S(0));
    } else if (p > 0) {
      // a'_p + W_p r, r constant for a revolute joint (zeros skipped)
      const V3T<S> Wr = rev ? accel_apply<S>(d.W[p], m.pc[i], m.pc_nz[i])
                            : V3T<S>(d.W[p] * d.r[i]);
      a = applyET(m, d, i, V3T<S>(d.al[p] + Wr));
      wd = applyET(m, d, i, d.wd[p]);
      w = applyET(m, d, i, d.w[p]);
    } else {
      // a prismatic joint on the base
      a = gravity_in_root(m, d, i);
      wd.setZero();
      w.setZero();
    }
    if (p > 0) {
      if (rev) {
        // wd += w_p x z u: 2 mul, 2 add
        wd[0] += w[1] * u;
        wd[1] -= w[0] * u;
      } else {
        // Coriolis term 2 w x z u of a sliding joint
        const S u2 = u + u;
        a[0] += w[1] * u2;
        a[1] -= w[0] * u2;
      }
    }
    if (rev)
      w[2] += u;
    if (kAcc) {
      if (rev)
        wd[2] += qdd[i - 1];
      else
        a[2] += qdd[i - 1];
    }
    d.w[i] = w;
    d.wd[i] = wd;
    d.al[i] = a;
    if (p == 0) {
      // prismatic on the base: w = wd = 0
      d.W[i].setZero();
      d.fn[i] = const_cross<S>(h, hz, a);
      d.ff[i] = S(m.mass[i]) * a;
      continue;
    }
    d.W[i] = accel_matrix<S>(w, wd);
    // net force on the body, moment about its origin
    d.fn[i] = moment_from_W<S>(d.W[i], m.J[i], m.J_nz[i]) + const_cross<S>(h, hz, a);
    d.ff[i] = S(m.mass[i]) * a + accel_apply<S>(d.W[i], h, hz);
  }
  // backward pass: project on the joint axis, push the force to the parent
  for (int i = m.n; i >= 1; --i) {
    const bool rev = m.type[i] == JointType::Revolute;
    S t = rev ? d.fn[i][2] : d.ff[i][2];
    if (kJoint) {
      if (kAcc && m.armature[i] != 0) t += S(m.armature[i]) * qdd[i - 1];
      if (m.damping[i] != 0) t += S(m.damping[i]) * qd[i - 1];
      if (m.friction[i] != 0) t += S(m.friction[i]) * signum(qd[i - 1]);
    }
    tau[i - 1] = t;
    const int p = m.parent[i];
    if (p > 0 && m.root_rev[p]) {
      // a parent on the base needs only its joint torque: n_p,z += (X_i S_p)' f_i
      V3T<S> va, vl;
      parent_axis_motion(m, d, i, va, vl);
      d.fn[p][2] += va.dot(d.fn[i]) + vl.dot(d.ff[i]);
    } else if (p > 0) {
      // f_p += X_i^T f_i: (E n + r x E f, E f)
      const V3T<S> Ef = applyE(m, d, i, d.ff[i]);
      d.fn[p] += applyE(m, d, i, d.fn[i]) - cross_r(m, d, i, Ef);
      d.ff[p] += Ef;
    }
  }
}

}  // namespace detail

// Inverse dynamics: tau = M(q) qdd + C(q, qd) qd + g(q) + armature qdd + damping qd
//                         + friction sign(qd).  q, qd, qdd, tau: (n,).
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
