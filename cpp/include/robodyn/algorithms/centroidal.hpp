// The centroidal momentum matrix A_G(q) (Orin, Lee & Goswami 2013): h_G = A_G(q) v, the
// spatial momentum of the bodies [angular about the centre of mass; linear] in world axes
// (the base frame of a fixed-base model), for fixed and free-floating models alike.
//
// Column j of A_G is the momentum of the subtree that joint j carries when v_j = 1 and every
// other speed is zero: the subtree's composite inertia times joint j's motion. Everything is
// summed in world axes about the world origin, where composite inertias add without transforms
// (Orin et al., eq. 16-17, with world instead of centroidal coordinates until the last step):
// one pass of per-body world inertias, one tip-to-root pass of sums, then one 6-vector per
// column moved from the world origin to the centre of mass. O(n); rigid bodies only (rotor
// inertia, armature, is not part of the bodies' momentum).
#pragma once

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

// A_G(q): out (6, nv) row-major, rows [angular about the centre of mass; linear], world axes;
// column j multiplies v_j (a free-flyer's six columns: its angular then linear velocity, both
// in its own frame). Uses d.IC_world_m, d.IC_world_h, d.IC_world_I as scratch. Returns false
// when the bodies have no mass (no centre of mass).
template <class S>
bool centroidal_momentum_matrix(const Model& m, DataTpl<S>& d, const S* q, S* out) {
  update_kinematics(m, d, q, 3);
  // world inertia of each body about the world origin (mass, first moment, rotational
  // inertia), then each subtree's sum, tip to root (body 0 gathers the whole system)
  d.IC_world_m[0] = S(0);
  d.IC_world_h[0].setZero();
  d.IC_world_I[0].setZero();
  for (int i = 1; i <= m.n; ++i) {
    d.IC_world_m[i] = S(m.mass[i]);
    detail::world_inertia(m, d, i, d.IC_world_h[i], d.IC_world_I[i]);
  }
  sum_subtrees<true>(m, d.IC_world_m, d.IC_world_h, d.IC_world_I);
  if (!(d.IC_world_m[0] > S(0))) return false;
  const V3T<S> com = d.IC_world_h[0] / d.IC_world_m[0];
  const int nv = m.nv;
  // column c: the subtree's momentum for the world motion (w, v_O) (v_O: the velocity of the
  // point at the world origin), n_O = I_O w + c x v_O, f = m v_O - c x w; moment about the
  // centre of mass n_G = n_O - com x f
  auto column = [&](int i, int c, const V3T<S>& w, const V3T<S>& vo) {
    V6T<S> x;
    x << w, vo;
    const V6T<S> h =
        detail::inertia_mul<S>(d.IC_world_m[i], d.IC_world_h[i], d.IC_world_I[i], x);
    const V3T<S> f = h.template tail<3>();
    const V3T<S> n = V3T<S>(h.template head<3>()) - cross<S>(com, f);
    for (int k = 0; k < 3; ++k) {
      out[k * nv + c] = n[k];
      out[(k + 3) * nv + c] = f[k];
    }
  };
  // joint i's motion S in world axes about the world origin (a turn about the axis z through
  // the body origin p moves the world origin with p x z)
  V6T<S> s[6];
  for (int i = 1; i <= m.n; ++i) {
    joint_axes_world<S>(m.type[i], d.world_R[i], d.world_p[i], s);
    for (int k = 0; k < joint_nv(m.type[i]); ++k)
      column(i, m.iv[i] + k, s[k].template head<3>(), s[k].template tail<3>());
  }
  return true;
}

}  // namespace robodyn
