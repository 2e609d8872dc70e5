// Momentum and centre of mass of a tree of bodies on joints of any kind (joint.hpp), free-
// floating or fixed: body 0 is the world; q (nq,), qd (nv,).
#pragma once

#include <cmath>

#include "robodyn/data.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {
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

}  // namespace detail

// Total momentum of the bodies, [angular about the world origin; linear] in world axes:
// out (6,). (World = the base frame of a fixed-base model.)
template <class S>
void momentum(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  update_kinematics(m, d, q, 3);
  V3T<S> L(S(0), S(0), S(0)), P(S(0), S(0), S(0));
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    V3T<S> w, v, n, f;
    Xup<S>(m, d, i).apply(d.w[p], d.vl[p], w, v);
    add_joint_motion(m.type[i], qd + m.iv[i], w, v);
    d.w[i] = w;
    d.vl[i] = v;
    detail::inertia_times<S>(m, i, w, v, n, f);
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
