// Dynamics of trees whose joints may be of any kind (joint.hpp), used for free-floating
// systems: body 1 on a free-flyer joint, the others revolute or prismatic. Featherstone's
// spatial algorithms as written in the book (RNEA Table 5.1, CRBA Table 6.2, ABA Table 7.1),
// in body coordinates, each spatial vector [angular; linear] held as two 3-vectors, with the
// joint kind deciding only S (add_joint_motion, joint_force) and the link transform (linkE,
// linkET, link_cross_r). Body 0 is the world: v_0 = 0, a_0 = -gravity (in world axes).
//
// Sizes: q (nq,), v / qd, qdd, tau (nv,); the free-flyer's block of tau is the wrench on the
// base in base axes [moment about the base origin; force], its block of qdd the derivative of
// the body twist (w, v) in base axes (the spatial acceleration of the base in base axes).
#pragma once

#include <cmath>

#include "robodyn/crba.hpp"
#include "robodyn/data.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {
namespace floating {

namespace detail {

// the spatial inertia (mass, h, Ibar) of body i times the motion (w, v):
// (Ibar w + h x v, mass v - h x w)
template <class S>
ROBODYN_INLINE void inertia_times(const Model& m, int i, const V3T<S>& w, const V3T<S>& v,
                                  V3T<S>& n, V3T<S>& f) {
  const V3T<S> h = m.h[i].template cast<S>();
  n = sym_mul<S>(m.Ibar[i], m.I_nz[i], w) + cross<S>(h, v);
  f = S(m.mass[i]) * v - cross<S>(h, w);
}

// v x* (I v) for the body velocity (w, v) of body i (the velocity-product force)
template <class S>
ROBODYN_INLINE void bias_force(const Model& m, int i, const V3T<S>& w, const V3T<S>& v,
                               V3T<S>& n, V3T<S>& f) {
  V3T<S> hn, hf;
  inertia_times<S>(m, i, w, v, hn, hf);
  n = cross<S>(w, hn) + cross<S>(v, hf);
  f = cross<S>(w, hf);
}

// joint terms of a 1-DOF joint: armature qdd + damping qd + friction sign(qd)
template <bool kAcc, class S>
ROBODYN_INLINE S joint_terms(const Model& m, int i, const S* qd, const S* qdd) {
  const int k = m.iv[i];
  S t(0);
  if (kAcc && m.armature[i] != 0) t += S(m.armature[i]) * qdd[k];
  if (m.damping[i] != 0) t += S(m.damping[i]) * qd[k];
  if (m.friction[i] != 0) t += S(m.friction[i]) * robodyn::detail::signum(qd[k]);
  return t;
}

// index of a 1-DOF joint's motion axis in a 6-vector: rotation about z or sliding along z
inline int axis_index(JointType t) { return t == JointType::Revolute ? 2 : 5; }

}  // namespace detail

// Mass matrix M(q) + diag(armature) (Table 6.2) into d.M, (nv, nv), both triangles.
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q) {
  update_kinematics(m, d, q, 1);
  // composite inertias, tip to base: Ic_p += X^T Ic_i X (a free-flyer is the root)
  for (int i = 1; i <= m.n; ++i) {
    d.Im[i] = S(m.mass[i]);
    d.Ih[i] = m.h[i].template cast<S>();
    d.II[i] = m.Ibar[i].template cast<S>();
  }
  for (int i = m.n; i >= 1; --i)
    if (m.parent[i] > 0) robodyn::detail::add_composite_to_parent(m, d, i);
  // column of each joint axis s: F = Ic_i s carried down the path to the base,
  // M(j, col) = S_j' F on the way
  d.size_mass_matrix();
  d.M.setZero();
  S row[6];
  for (int i = 1; i <= m.n; ++i) {
    const JointType t = m.type[i];
    for (int k = 0; k < joint_nv(t); ++k) {
      const int s = t == JointType::FreeFlyer ? k : detail::axis_index(t);
      const int col = m.iv[i] + k;
      // Ic e_s = (II e_s, e_s x h) for an angular axis, (h x e, mass e) for a linear one
      V3T<S> e(S(0), S(0), S(0)), Fn, Ff;
      e[s % 3] = S(1);
      if (s < 3) {
        Fn = d.II[i].col(s);
        Ff = cross<S>(e, d.Ih[i]);
      } else {
        Fn = cross<S>(d.Ih[i], e);
        Ff = d.Im[i] * e;
      }
      joint_force(t, Fn, Ff, row);
      for (int r = 0; r < joint_nv(t); ++r) d.M(m.iv[i] + r, col) = row[r];
      if (m.armature[i] != 0) d.M(col, col) += S(m.armature[i]);
      for (int j = i; m.parent[j] > 0; j = m.parent[j]) {
        const int p = m.parent[j];
        V3T<S> n(S(0), S(0), S(0)), f(S(0), S(0), S(0));
        add_force_to_parent(m, d, j, Fn, Ff, n, f);
        Fn = n;
        Ff = f;
        joint_force(m.type[p], Fn, Ff, row);
        for (int r = 0; r < joint_nv(m.type[p]); ++r) {
          d.M(m.iv[p] + r, col) = row[r];
          d.M(col, m.iv[p] + r) = row[r];
        }
      }
    }
  }
}

// Forward dynamics by M(q) qdd = tau - C qd - g - damping qd - friction sign(qd), Cholesky.
// Returns false when M is not positive definite. qdd may alias the inputs.
template <class S>
bool forward_dynamics_crba(const Model& m, DataTpl<S>& d, const S* q, const S* qd,
                           const S* tau, S* qdd) {
  robodyn::bias_torques(m, d, q, qd, d.tmp.data());
  floating::crba(m, d, q);
  for (int k = 0; k < m.nv; ++k) d.tmp[k] = tau[k] - d.tmp[k];
  for (int i = 1; i <= m.n; ++i)
    if (m.type[i] != JointType::FreeFlyer)
      d.tmp[m.iv[i]] -= detail::joint_terms<false, S>(m, i, qd, nullptr);
  for (int k = 0; k < m.nv; ++k) qdd[k] = d.tmp[k];
  return cholesky_solve(d, qdd);
}

}  // namespace floating

// Total momentum of the bodies, [angular about the world origin; linear] in world axes:
// out (6,). (World = the base frame of a fixed-base model.)
template <class S>
void momentum(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  update_kinematics(m, d, q, 3);
  V3T<S> L(S(0), S(0), S(0)), P(S(0), S(0), S(0));
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    V3T<S> w, v, n, f;
    motion_to_body(m, d, i, d.w[p], d.vl[p], w, v);
    add_joint_motion(m.type[i], qd + m.iv[i], w, v);
    d.w[i] = w;
    d.vl[i] = v;
    floating::detail::inertia_times<S>(m, i, w, v, n, f);
    // to world axes, moment about the world origin
    const V3T<S> F = d.oR[i] * f;
    L += d.oR[i] * n + cross<S>(d.op[i], F);
    P += F;
  }
  for (int k = 0; k < 3; ++k) {
    out[k] = L[k];
    out[3 + k] = P[k];
  }
}

// Centre of mass of the bodies in world (base) coordinates, out (3,). Returns false when the
// bodies have no mass.
template <class S>
bool center_of_mass(const Model& m, DataTpl<S>& d, const S* q, S* out) {
  update_kinematics(m, d, q, 3);
  V3T<S> mc(S(0), S(0), S(0));
  S mt(0);
  for (int i = 1; i <= m.n; ++i) {
    mc += S(m.mass[i]) * d.op[i] + d.oR[i] * m.h[i].template cast<S>();
    mt += S(m.mass[i]);
  }
  if (!(mt > S(0))) return false;
  for (int k = 0; k < 3; ++k) out[k] = mc[k] / mt;
  return true;
}

}  // namespace robodyn
