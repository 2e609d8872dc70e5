// Coriolis matrix C(q, qd) with C qd = the velocity-product torques and Mdot - 2C skew.
//
// In base-frame coordinates, with joint axes s_j, body velocities v_i and inertias I_i,
//   C = sum_i J_i^T (I_i Jdot_i + B_i J_i),   B_i = (v_i x* I_i - I_i v_i x + T(I_i v_i)) / 2,
// where T(f) m = m x* f is skew-symmetric, so Mdot - 2C = sum_i (Jdot^T I J - J^T I Jdot)
// - sum_i J^T T J is skew (the velocity-dependent inertia rate is split evenly). Summing I_i
// and B_i over subtrees (composites) gives C_kj = s_k' (Ic_k sdot_j + Bc_k s_j) for j an
// ancestor of k (or k), and C_jk = s_j' (Ic_k sdot_k + Bc_k s_k) for j a strict ancestor of k.
#pragma once

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

// C(q, qd), (nv, nv) row-major into out. The axes s_c of every velocity coordinate c in base
// coordinates (joint_axes_world: one for a 1-DOF joint, a free-flyer's six) into d.S_world and
// their rates sdot_c = v_i x s_c (the axes are fixed in body i) into d.Sdot_world.
template <class S>
void coriolis_matrix(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  using V6 = V6T<S>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 3);
  const int nv = m.nv;
  // base-frame joint axes, body velocities, inertias and Coriolis operators
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const int k0 = m.iv[i], nj = joint_nv(m.type[i]);
    joint_axes_world<S>(m.type[i], d.world_R[i], d.world_p[i], &d.S_world[k0]);
    V6 v = p > 0 ? d.v_world[p] : V6::Zero();
    for (int k = k0; k < k0 + nj; ++k) v += d.S_world[k] * qd[k];
    d.v_world[i] = v;
    for (int k = k0; k < k0 + nj; ++k) d.Sdot_world[k] = detail::crm<S>(v, d.S_world[k]);
    const V6& vi = d.v_world[i];
    // inertia in base coordinates
    V3T<S> c;
    M3T<S> Ib;
    detail::world_inertia(m, d, i, c, Ib);
    const M3T<S> hx = skew<S>(c);
    M6& I = d.I_world[i];
    I << Ib, hx, -hx, S(m.mass[i]) * M3T<S>::Identity();
    // B = (crf(v) I - I crm(v) + T(I v)) / 2, crf(v) = -crm(v)'
    const M6 crm = detail::crm_matrix<S>(vi);
    const V6 f = I * vi;
    M6 T = M6::Zero();
    const M3T<S> nx = skew<S>(V3T<S>(f.template head<3>()));
    const M3T<S> fx = skew<S>(V3T<S>(f.template tail<3>()));
    T.template topLeftCorner<3, 3>() = -nx;
    T.template topRightCorner<3, 3>() = -fx;
    T.template bottomLeftCorner<3, 3>() = -fx;
    d.B_world[i] = S(0.5) * (-crm.transpose() * I - I * crm + T);
  }
  // composites, tip to base (base coordinates: a plain sum)
  sum_subtrees<false>(m, d.I_world, d.B_world);
  // C_ac = s_a' (Ic_k sdot_c + Bc_k s_c) for an axis c of k or of an ancestor of k (a an axis
  // of k), and C_ca = s_c' (Ic_k sdot_a + Bc_k s_a) for c on a strict ancestor
  for (int k = 0; k < nv * nv; ++k) out[k] = S(0);
  for (int k = 1; k <= m.n; ++k) {
    for (int a = 0; a < joint_nv(m.type[k]); ++a) {
      const int row = m.iv[k] + a;
      const V6& s = d.S_world[row];
      const V6 F1 = d.I_world[k] * s;
      const V6 F2 = d.B_world[k].transpose() * s;
      const V6 G = d.I_world[k] * d.Sdot_world[row] + d.B_world[k] * s;
      for (int j = k; j > 0; j = m.parent[j])
        for (int col = m.iv[j]; col < m.iv[j] + joint_nv(m.type[j]); ++col) {
          out[row * nv + col] = F1.dot(d.Sdot_world[col]) + F2.dot(d.S_world[col]);
          if (j != k) out[col * nv + row] = d.S_world[col].dot(G);
        }
    }
  }
}

}  // namespace robodyn
