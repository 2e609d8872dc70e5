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
template <bool kVel, bool kAcc, bool kJoint, class S>
void rnea_sweep(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  update_kinematics(m, d, q, 1);
  // base: v = 0, a = -gravity (fictitious upward acceleration, Featherstone 5.3)
  d.al[0] = -m.gravity.template cast<S>();
  // forward pass: body velocities, accelerations and net forces
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const bool rev = m.type[i] == JointType::Revolute;
    V3T<S> w, v, wd, a;
    // a_i = X_i a_p + S qdd_i + v_i x S qd_i        (base: angular part zero, skipped)
    if (p > 0) {
      wd = applyET(m, d, i, d.wd[p]);
      a = applyET(m, d, i, V3T<S>(d.al[p] + cross_r(m, d, i, d.wd[p])));
    } else {
      wd.setZero();
      a = applyET(m, d, i, d.al[0]);
    }
    if (kAcc) {
      if (rev)
        wd[2] += qdd[i - 1];
      else
        a[2] += qdd[i - 1];
    }
    if (kVel) {
      // v_i = X_i v_p + S qd_i                       (base: zero, skipped)
      const S u = qd[i - 1];
      if (p > 0) {
        w = applyET(m, d, i, d.w[p]);
        v = applyET(m, d, i, V3T<S>(d.vl[p] + cross_r(m, d, i, d.w[p])));
      } else {
        w.setZero();
        v.setZero();
      }
      if (rev) {
        // v x (z u, 0) = (w x z u, v x z u): 4 mul, 4 add (z x z = 0)
        if (p > 0) {
          wd[0] += w[1] * u;
          wd[1] -= w[0] * u;
          a[0] += v[1] * u;
          a[1] -= v[0] * u;
        }
        w[2] += u;
      } else {
        // v x (0, z u) = (0, w x z u)
        if (p > 0) {
          a[0] += w[1] * u;
          a[1] -= w[0] * u;
        }
        v[2] += u;
      }
      d.w[i] = w;
      d.vl[i] = v;
    }
    d.wd[i] = wd;
    d.al[i] = a;
    // f_i = I a_i + v_i x* I v_i, with I = (mass, h, Ibar):
    //   I (w, v) = (Ibar w + h x v, mass v - h x w)
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    const S mass(m.mass[i]);
    V3T<S> fn = sym_mul<S>(m.Ibar[i], m.I_nz[i], wd) + const_cross<S>(h, hz, a);
    V3T<S> ff = mass * a - const_cross<S>(h, hz, wd);
    if (kVel) {
      const V3T<S> Lw = sym_mul<S>(m.Ibar[i], m.I_nz[i], w) + const_cross<S>(h, hz, v);
      const V3T<S> Lv = mass * v - const_cross<S>(h, hz, w);
      fn += cross<S>(w, Lw) + cross<S>(v, Lv);
      ff += cross<S>(w, Lv);
    }
    d.fn[i] = fn;
    d.ff[i] = ff;
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
    if (p > 0) {
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
