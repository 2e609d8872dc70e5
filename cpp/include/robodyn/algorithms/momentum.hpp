// Momentum and centre of mass of a tree of bodies on joints of any kind (joint.hpp), free-
// floating or fixed: body 0 is the world; q (nq,), qd (nv,).
#pragma once

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

// Total momentum of the bodies, [angular about the world origin; linear] in world axes:
// out (6,). (World = the base frame of a fixed-base model.)
template <class S>
void momentum(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  update_kinematics(m, d, q, 3);
  V3T<S> L(S(0), S(0), S(0)), P(S(0), S(0), S(0));
  for (int i = 1; i <= m.n; ++i) {
    body_velocity(m, d, i, qd);
    const V6T<S> h = body_momentum(m, d, i);
    const V3T<S> n = h.template head<3>(), f = h.template tail<3>();
    // to world axes, moment about the world origin
    const V3T<S> F = d.world_R[i] * f;
    L += d.world_R[i] * n + cross<S>(d.world_p[i], F);
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
    mc += S(m.mass[i]) * d.world_p[i] + d.world_R[i] * m.h[i].template cast<S>();
    mt += S(m.mass[i]);
  }
  if (!(mt > S(0))) return false;
  for (int k = 0; k < 3; ++k) out[k] = mc[k] / mt;
  return true;
}

}  // namespace robodyn
