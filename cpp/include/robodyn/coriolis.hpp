// Coriolis matrix C(q, qd) with C qd = the velocity-product torques and Mdot - 2C skew.
//
// In base-frame coordinates, with joint axes s_j, body velocities v_i and inertias I_i,
//   C = sum_i J_i^T (I_i Jdot_i + B_i J_i),   B_i = (v_i x* I_i - I_i v_i x + T(I_i v_i)) / 2,
// where T(f) m = m x* f is skew-symmetric, so Mdot - 2C = sum_i (Jdot^T I J - J^T I Jdot)
// - sum_i J^T T J is skew (the velocity-dependent inertia rate is split evenly). Summing I_i
// and B_i over subtrees (composites) gives C_kj = s_k' (Ic_k sdot_j + Bc_k s_j) for j an
// ancestor of k (or k), and C_jk = s_j' (Ic_k sdot_k + Bc_k s_k) for j a strict ancestor of k.
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

// C(q, qd), (n, n) row-major into out.
template <class S>
void coriolis_matrix(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 3);
  // base-frame joint axes, body velocities, inertias and Coriolis operators
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const V3T<S> z = d.oR[i].col(2);
    V6 s;
    if (m.type[i] == JointType::Revolute)
      s << z, cross<S>(d.op[i], z);
    else
      s << V3T<S>::Zero(), z;
    d.sw[i] = s;
    d.vw[i] = (p > 0 ? d.vw[p] : V6::Zero()) + s * qd[i - 1];
    const V6& v = d.vw[i];
    // sdot = v x s (motion cross product)
    const V3T<S> vw = v.template head<3>(), vv = v.template tail<3>();
    d.swd[i] << cross<S>(vw, V3T<S>(s.template head<3>())),
        cross<S>(vw, V3T<S>(s.template tail<3>())) + cross<S>(vv, V3T<S>(s.template head<3>()));
    // inertia in base coordinates
    const M3T<S>& R = d.oR[i];
    const V3T<S>& o = d.op[i];
    const S mass(m.mass[i]);
    const V3T<S> y = R * m.h[i].template cast<S>();
    const M3T<S> ox = skew<S>(o), yx = skew<S>(y);
    const M3T<S> Ib = R * m.Ibar[i].template cast<S>() * R.transpose() - ox * yx - yx * ox -
                      mass * (ox * ox);
    const M3T<S> hx = skew<S>(V3T<S>(y + mass * o));
    M6& I = d.Iw[i];
    I << Ib, hx, -hx, mass * M3T<S>::Identity();
    // B = (crf(v) I - I crm(v) + T(I v)) / 2
    M6 crm = M6::Zero();
    crm.template topLeftCorner<3, 3>() = skew<S>(vw);
    crm.template bottomLeftCorner<3, 3>() = skew<S>(vv);
    crm.template bottomRightCorner<3, 3>() = skew<S>(vw);
    const V6 f = I * v;
    M6 T = M6::Zero();
    const M3T<S> nx = skew<S>(V3T<S>(f.template head<3>()));
    const M3T<S> fx = skew<S>(V3T<S>(f.template tail<3>()));
    T.template topLeftCorner<3, 3>() = -nx;
    T.template topRightCorner<3, 3>() = -fx;
    T.template bottomLeftCorner<3, 3>() = -fx;
    d.Bw[i] = S(0.5) * (-crm.transpose() * I - I * crm + T);
  }
  // composites, tip to base (base coordinates: a plain sum)
  for (int i = m.n; i >= 1; --i) {
    const int p = m.parent[i];
    if (p > 0) {
      d.Iw[p] += d.Iw[i];
      d.Bw[p] += d.Bw[i];
    }
  }
  for (int k = 0; k < m.n * m.n; ++k) out[k] = S(0);
  for (int k = 1; k <= m.n; ++k) {
    const V6 F1 = d.Iw[k] * d.sw[k];
    const V6 F2 = d.Bw[k].transpose() * d.sw[k];
    const V6 G = d.Iw[k] * d.swd[k] + d.Bw[k] * d.sw[k];
    for (int j = k; j > 0; j = m.parent[j]) {
      out[(k - 1) * m.n + (j - 1)] = F1.dot(d.swd[j]) + F2.dot(d.sw[j]);
      if (j != k) out[(j - 1) * m.n + (k - 1)] = d.sw[j].dot(G);
    }
  }
}

}  // namespace robodyn
