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

// C(q, qd), (nv, nv) row-major into out. A free-flyer (body 1) has six axes, the columns of
// its motion subspace in base coordinates, s_c = X_{0,1} e_c, fixed in the body (sdot = v x s);
// every other joint one.
template <class S>
void coriolis_matrix(const Model& m, DataTpl<S>& d, const S* q, const S* qd, S* out) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 3);
  const int nv = m.nv;
  // the axes of body i: columns of d.Sf for a free-flyer, else d.sw[i]
  auto axis = [&](int i, int c) -> const V6& { return m.type[i] == JointType::FreeFlyer ? d.Sf[c] : d.sw[i]; };
  auto axis_rate = [&](int i, int c) -> const V6& {
    return m.type[i] == JointType::FreeFlyer ? d.Sfd[c] : d.swd[i];
  };
  // sdot = v x s (motion cross product)
  auto cross_motion = [](const V6& v, const V6& s) {
    const V3T<S> vw = v.template head<3>(), vv = v.template tail<3>();
    const V3T<S> sw = s.template head<3>(), sv = s.template tail<3>();
    V6 r;
    r << cross<S>(vw, sw), cross<S>(vw, sv) + cross<S>(vv, sw);
    return r;
  };
  // base-frame joint axes, body velocities, inertias and Coriolis operators
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const S* qdi = qd + m.iv[i];
    V6 v = p > 0 ? d.vw[p] : V6::Zero();
    if (m.type[i] == JointType::FreeFlyer) {
      for (int c = 0; c < 6; ++c) {
        const V3T<S> e = d.oR[i].col(c % 3);
        if (c < 3)
          d.Sf[c] << e, cross<S>(d.op[i], e);
        else
          d.Sf[c] << V3T<S>::Zero(), e;
        v += d.Sf[c] * qdi[c];
      }
      d.vw[i] = v;
      for (int c = 0; c < 6; ++c) d.Sfd[c] = cross_motion(v, d.Sf[c]);
    } else {
      const V3T<S> z = d.oR[i].col(2);
      V6 s;
      if (m.type[i] == JointType::Revolute)
        s << z, cross<S>(d.op[i], z);
      else
        s << V3T<S>::Zero(), z;
      d.sw[i] = s;
      d.vw[i] = v + s * qdi[0];
      d.swd[i] = cross_motion(d.vw[i], s);
    }
    const V6& vi = d.vw[i];
    const V3T<S> vw = vi.template head<3>(), vv = vi.template tail<3>();
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
    const V6 f = I * vi;
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
  // C_ac = s_a' (Ic_k sdot_c + Bc_k s_c) for an axis c of k or of an ancestor of k (a an axis
  // of k), and C_ca = s_c' (Ic_k sdot_a + Bc_k s_a) for c on a strict ancestor
  for (int k = 0; k < nv * nv; ++k) out[k] = S(0);
  for (int k = 1; k <= m.n; ++k) {
    for (int a = 0; a < joint_nv(m.type[k]); ++a) {
      const int row = m.iv[k] + a;
      const V6 F1 = d.Iw[k] * axis(k, a);
      const V6 F2 = d.Bw[k].transpose() * axis(k, a);
      const V6 G = d.Iw[k] * axis_rate(k, a) + d.Bw[k] * axis(k, a);
      for (int j = k; j > 0; j = m.parent[j])
        for (int c = 0; c < joint_nv(m.type[j]); ++c) {
          const int col = m.iv[j] + c;
          out[row * nv + col] = F1.dot(axis_rate(j, c)) + F2.dot(axis(j, c));
          if (j != k) out[col * nv + row] = axis(j, c).dot(G);
        }
    }
  }
}

}  // namespace robodyn
