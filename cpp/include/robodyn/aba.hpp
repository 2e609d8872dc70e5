// Articulated-body forward dynamics (Featherstone 2008, Table 7.1), written with the classical
// acceleration of each body origin (as rnea.hpp) instead of the spatial one.
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

namespace detail {

// rows of B times [r]: each row b becomes b x r (zeros of a constant r skipped)
template <class S>
ROBODYN_INLINE M3T<S> times_skew(const M3T<S>& B, const V3T<S>& r, const std::array<bool, 3>& nz,
                                 const Vec3& rc, bool constant) {
  M3T<S> K;
  for (int k = 0; k < 3; ++k) {
    const V3T<S> row = B.row(k).transpose();
    K.row(k) = (constant ? cross_const<S>(row, rc, nz) : cross<S>(row, r)).transpose();
  }
  return K;
}

// Moves a symmetric 6x6 inertia [A B; B' C] (blocks about a point, [angular; linear]) to a point
// displaced by -r: A - K - K' - [r] C [r], B - T', C with K = B [r], T = C [r]; general r
template <class S>
ROBODYN_INLINE void shift_general(const V3T<S>& r, const std::array<bool, 3>& nz, const Vec3& rc,
                                  bool constant, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  const M3T<S> T = times_skew<S>(C, r, nz, rc, constant);
  const M3T<S> K = times_skew<S>(B, r, nz, rc, constant);
  // [r] T is symmetric: its upper triangle, entry (a, b) = (r x T_col b)_a
  constexpr int kNext[3] = {1, 2, 0}, kPrev[3] = {2, 0, 1};
  for (int a = 0; a < 3; ++a)
    for (int b = a; b < 3; ++b) {
      const int a1 = kNext[a], a2 = kPrev[a];
      S rt(0);
      const bool n1 = constant ? nz[a1] : true, n2 = constant ? nz[a2] : true;
      if (n1 && n2) rt = r[a1] * T(a2, b) - r[a2] * T(a1, b);
      else if (n1) rt = r[a1] * T(a2, b);
      else if (n2) rt = -(r[a2] * T(a1, b));
      A(a, b) = A(a, b) - K(a, b) - K(b, a) - rt;
      A(b, a) = A(a, b);
    }
  B -= T.transpose();
}

// the same for r = l e_x (l2 = 2 l, ll = l^2: model constants); kZ2: row and column 2 of A and row 2 of B zero
template <bool kZ2, class S>
ROBODYN_INLINE void shift_x(double l, double l2, double ll, M3T<S>& A, M3T<S>& B,
                            const M3T<S>& C) {
  const S L(l), L2(l2), LL(ll);
  A(0, 1) -= L * B(0, 2);
  A(1, 1) += LL * C(2, 2) - L2 * B(1, 2);
  if (kZ2) {
    A(0, 2) = L * B(0, 1);
    A(1, 2) = L * B(1, 1) - LL * C(2, 1);
    A(2, 2) = LL * C(1, 1);
  } else {
    A(0, 2) += L * B(0, 1);
    A(1, 2) += L * (B(1, 1) - B(2, 2)) - LL * C(2, 1);
    A(2, 2) += LL * C(1, 1) + L2 * B(2, 1);
  }
  A(1, 0) = A(0, 1);
  A(2, 0) = A(0, 2);
  A(2, 1) = A(1, 2);
  for (int j = 0; j < 3; ++j) {
    B(1, j) -= L * C(j, 2);
    B(2, j) = kZ2 ? S(L * C(j, 1)) : S(B(2, j) + L * C(j, 1));
  }
}

// the same for r = l e_z
template <class S>
ROBODYN_INLINE void shift_z(double l, double l2, double ll, M3T<S>& A, M3T<S>& B,
                            const M3T<S>& C) {
  const S L(l), L2(l2), LL(ll);
  A(0, 0) += LL * C(1, 1) - L2 * B(0, 1);
  A(0, 1) += L * (B(0, 0) - B(1, 1)) - LL * C(1, 0);
  A(0, 2) -= L * B(2, 1);
  A(1, 1) += LL * C(0, 0) + L2 * B(1, 0);
  A(1, 2) += L * B(2, 0);
  A(1, 0) = A(0, 1);
  A(2, 0) = A(0, 2);
  A(2, 1) = A(1, 2);
  for (int j = 0; j < 3; ++j) {
    const S b0 = B(0, j) - L * C(j, 1);
    B(1, j) += L * C(j, 0);
    B(0, j) = b0;
  }
}

// X^T Ia X for the parent-to-body transform of body i, added to IAp. z2: row and column 2 of Ia
// are zero (a revolute joint without armature: Ia S = 0). For a revolute joint with a rotation
// about x and an offset (a, 0, d) (DH links) the transform is taken in four steps, each cheap:
// Rz(q), a shift along x by a (x is fixed by the next step), Rx(alpha), a shift along z by d.
template <class S>
void add_articulated_to_parent(const Model& m, const DataTpl<S>& d, int i, bool z2,
                               const Eigen::Matrix<S, 6, 6>& Ia, Eigen::Matrix<S, 6, 6>& IAp) {
  static const std::array<bool, 3> kFull{{true, true, true}};
  const bool rev = m.type[i] == JointType::Revolute;
  M3T<S> A = Ia.template topLeftCorner<3, 3>();
  M3T<S> B = Ia.template topRightCorner<3, 3>();
  M3T<S> C = Ia.template bottomRightCorner<3, 3>();
  if (rev) {
    const PlaneRot<S> R = plane_z(d, i);
    if (z2) {
      rotate_sym_plane<0, 1, 2, true>(R, A);
      rotate_gen_plane<0, 1, 2, true>(R, B);
    } else {
      rotate_sym_plane<0, 1, 2>(R, A);
      rotate_gen_plane<0, 1, 2>(R, B);
    }
    rotate_sym_plane<0, 1, 2>(R, C);
  }
  const ConstRotation& Rc = m.Rc[i];
  const auto& nz = m.pc_nz[i];
  if (rev && Rc.kind == ConstRotation::RotX && !nz[1]) {
    const Vec3& r = m.pc[i];
    const auto& sq = m.pcsq[i];
    if (nz[0]) {
      if (z2)
        shift_x<true>(r[0], sq[0], sq[1], A, B, C);
      else
        shift_x<false>(r[0], sq[0], sq[1], A, B, C);
    }
    const PlaneRot<S> P = plane_of<S>(Rc);
    rotate_sym_plane<1, 2, 0>(P, A);
    rotate_gen_plane<1, 2, 0>(P, B);
    rotate_sym_plane<1, 2, 0>(P, C);
    if (nz[2]) shift_z(r[2], sq[2], sq[3], A, B, C);
  } else {
    A = rotate_const<true, S>(Rc, A);
    B = rotate_const<false, S>(Rc, B);
    C = rotate_const<true, S>(Rc, C);
    if (rev)
      shift_general<S>(V3T<S>(m.pc[i].template cast<S>()), nz, m.pc[i], true, A, B, C);
    else
      shift_general<S>(d.r[i], kFull, m.pc[i], false, A, B, C);
  }
  for (int a = 0; a < 3; ++a)
    for (int b = a; b < 3; ++b) {
      IAp(a, b) += A(a, b);
      IAp(3 + a, 3 + b) += C(a, b);
      if (b != a) {
        IAp(b, a) = IAp(a, b);
        IAp(3 + b, 3 + a) = IAp(3 + a, 3 + b);
      }
    }
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      IAp(a, 3 + b) += B(a, b);
      IAp(3 + b, a) = IAp(a, 3 + b);
    }
}

// Ia = IA - U Ud' and pa = pA + Ia c + Ud u for a revolute joint (c2 = 0). kZ2: no armature,
// so row and column 2 of Ia are exactly zero and are skipped (fixed index lists, unrolled).
template <bool kZ2, class S>
ROBODYN_INLINE void articulated_step(const Eigen::Matrix<S, 6, 6>& IA,
                                     const Eigen::Matrix<S, 6, 1>& U,
                                     const Eigen::Matrix<S, 6, 1>& Ud,
                                     const Eigen::Matrix<S, 6, 1>& pA, const S& u,
                                     const Eigen::Matrix<S, 6, 1>& c, Eigen::Matrix<S, 6, 6>& Ia,
                                     Eigen::Matrix<S, 6, 1>& pa) {
  constexpr int kIdx5[5] = {0, 1, 3, 4, 5};
  constexpr int kIdx6[6] = {0, 1, 2, 3, 4, 5};
  constexpr int N = kZ2 ? 5 : 6;
  const int* idx = kZ2 ? kIdx5 : kIdx6;
  if (kZ2) {
    for (int k = 0; k < 6; ++k) Ia(2, k) = Ia(k, 2) = S(0);
  }
  for (int x = 0; x < N; ++x)
    for (int y = x; y < N; ++y) {
      const int a = idx[x], b = idx[y];
      Ia(a, b) = IA(a, b) - Ud[a] * U[b];
      Ia(b, a) = Ia(a, b);
    }
  for (int a = 0; a < 6; ++a) {
    S t = pA[a] + Ud[a] * u;
    if (!(kZ2 && a == 2))
      t += Ia(a, 0) * c[0] + Ia(a, 1) * c[1] + Ia(a, 3) * c[3] + Ia(a, 4) * c[4] +
           Ia(a, 5) * c[5];
    pa[a] = t;
  }
}

// the same for a sliding joint (c0 = c1 = c2 = 0)
template <class S>
ROBODYN_INLINE void articulated_step_prismatic(
    const Eigen::Matrix<S, 6, 6>& IA, const Eigen::Matrix<S, 6, 1>& U,
    const Eigen::Matrix<S, 6, 1>& Ud, const Eigen::Matrix<S, 6, 1>& pA, const S& u,
    const Eigen::Matrix<S, 6, 1>& c, Eigen::Matrix<S, 6, 6>& Ia, Eigen::Matrix<S, 6, 1>& pa) {
  for (int a = 0; a < 6; ++a)
    for (int b = a; b < 6; ++b) {
      Ia(a, b) = IA(a, b) - Ud[a] * U[b];
      Ia(b, a) = Ia(a, b);
    }
  for (int a = 0; a < 6; ++a)
    pa[a] = pA[a] + Ud[a] * u + Ia(a, 3) * c[3] + Ia(a, 4) * c[4] + Ia(a, 5) * c[5];
}

}  // namespace detail

// qdd = FD(q, qd, tau): joint accelerations for applied joint torques tau, with armature and
// joint friction (tau - damping qd - friction sign(qd) drives the joint). Returns false when
// an articulated joint inertia D_i is not positive.
//
// Motion is (wd, a'), a' the classical acceleration of the body origin; a body's force is
// I (wd, a') + p with p = (w x Ibar w, w x (w x h)) (no linear velocity needed), and
// (wd, a')_i = X_i (wd, a')_p + c_i + S qdd with c_i = (w' x z u, E^T (w_p x (w_p x r)))
// for a revolute joint (w' = E^T w_p), (0, E^T (w_p x (w_p x r)) + 2 w' x z u) for a sliding one.
template <class S>
bool aba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  static const std::array<bool, 3> kFull{{true, true, true}};
  update_kinematics(m, d, q, 1);
  // pass 1: angular velocities, velocity terms c_i and p_i, rigid inertias
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const bool rev = m.type[i] == JointType::Revolute;
    const S u = qd[i - 1];
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    V6& c = d.cbias[i];
    V6& pb = d.pA[i];
    if (p == 0 && rev) {
      // w = u z: Ibar w = u Ibar e_z, p = (u (-(Ibar w)_1, (Ibar w)_0, 0), -u^2 (h0, h1, 0))
      const S uu = u * u;
      const Mat3& I = m.Ibar[i];
      const auto& iz = m.I_nz[i];
      const S Iw0 = iz[4] ? S(u * S(I(0, 2))) : S(0), Iw1 = iz[5] ? S(u * S(I(1, 2))) : S(0);
      c.setZero();
      pb << -(u * Iw1), u * Iw0, S(0), hz[0] ? S(-(uu * S(h[0]))) : S(0),
          hz[1] ? S(-(uu * S(h[1]))) : S(0), S(0);
      d.w[i] = V3T<S>(S(0), S(0), u);
      d.w2[i] = uu;
    } else {
      V3T<S> w, k;
      if (p == 0) {
        w.setZero();
        k.setZero();
      } else {
        const V3T<S>& wp = d.w[p];
        const S& wwp = d.w2[p];
        const bool const_r = rev;
        const Vec3& rc = m.pc[i];
        const auto& nz = rev ? m.pc_nz[i] : kFull;
        const V3T<S> r = const_r ? V3T<S>(rc.template cast<S>()) : d.r[i];
        if (m.root_rev[p]) {
          // w_p = u_p z: w_p x (w_p x r) = -u_p^2 (r0, r1, 0)
          w = applyET_z(m, d, i, wp[2]);
          k = V3T<S>(nz[0] ? S(-(wwp * r[0])) : S(0), nz[1] ? S(-(wwp * r[1])) : S(0), S(0));
        } else {
          w = applyET(m, d, i, wp);
          // (w_p . r) w_p - |w_p|^2 r
          const S wr = const_r ? dot_const<S>(wp[0], wp[1], wp[2], rc, nz) : S(wp.dot(r));
          for (int j = 0; j < 3; ++j) k[j] = nz[j] ? S(wr * wp[j] - wwp * r[j]) : S(wr * wp[j]);
        }
      }
      const V3T<S> cl = p == 0 ? k : applyET(m, d, i, k);
      if (rev) {
        c << w[1] * u, -(w[0] * u), S(0), cl;
        w[2] += u;
      } else {
        const S u2 = u + u;
        c << S(0), S(0), S(0), cl[0] + w[1] * u2, cl[1] - w[0] * u2, cl[2];
      }
      const S ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
      const S wh = dot_const<S>(w[0], w[1], w[2], h, hz);
      const V3T<S> Iw = sym_mul<S>(m.Ibar[i], m.I_nz[i], w);
      pb << cross<S>(w, Iw), V3T<S>(hz[0] ? S(wh * w[0] - ww * S(h[0])) : S(wh * w[0]),
                                    hz[1] ? S(wh * w[1] - ww * S(h[1])) : S(wh * w[1]),
                                    hz[2] ? S(wh * w[2] - ww * S(h[2])) : S(wh * w[2]));
      d.w[i] = w;
      d.w2[i] = ww;
    }
    M6& IA = d.IA[i];
    const M3T<S> hx = skew<S>(V3T<S>(h.template cast<S>()));
    IA.template topLeftCorner<3, 3>() = m.Ibar[i].template cast<S>();
    IA.template topRightCorner<3, 3>() = hx;
    IA.template bottomLeftCorner<3, 3>() = -hx;
    IA.template bottomRightCorner<3, 3>().setZero();
    for (int j = 0; j < 3; ++j) IA(3 + j, 3 + j) = S(m.mass[i]);
  }
  // pass 2: articulated inertias, tip to base
  for (int i = m.n; i >= 1; --i) {
    const bool rev = m.type[i] == JointType::Revolute;
    const int k = rev ? 2 : 5;
    d.U[i] = d.IA[i].col(k);
    S Di = d.U[i][k];
    if (m.armature[i] != 0) Di += S(m.armature[i]);
    if (!(Di > S(0))) return false;
    d.D[i] = Di;
    S ui = tau[i - 1] - d.pA[i][k];
    if (m.damping[i] != 0) ui -= S(m.damping[i]) * qd[i - 1];
    if (m.friction[i] != 0) ui -= S(m.friction[i]) * detail::signum(qd[i - 1]);
    d.u[i] = ui;
    const int p = m.parent[i];
    if (p == 0) continue;
    // Ia = IA - U U'/D (symmetric rank-1 update), pa = pA + Ia c + U u/D. Without armature
    // Ia S = 0 exactly: row and column k of Ia are zero and are not computed.
    const bool z2 = rev && m.armature[i] == 0;
    const S invD = S(1) / Di;
    const V6 Ud = d.U[i] * invD;
    // c: (c0, c1, 0, c3, c4, c5) for a revolute joint, (0, 0, 0, c3, c4, c5) for a sliding one
    M6 Ia;
    V6 pa;
    if (z2)
      detail::articulated_step<true, S>(d.IA[i], d.U[i], Ud, d.pA[i], ui, d.cbias[i], Ia, pa);
    else if (rev)
      detail::articulated_step<false, S>(d.IA[i], d.U[i], Ud, d.pA[i], ui, d.cbias[i], Ia, pa);
    else
      detail::articulated_step_prismatic<S>(d.IA[i], d.U[i], Ud, d.pA[i], ui, d.cbias[i], Ia,
                                            pa);
    if (m.root_rev[p]) {
      // The parent turns on the base: of its articulated inertia only the column of its joint
      // axis S_p is ever used (U_p, D_p; its own acceleration is S_p qdd_p), and of its bias
      // force only S_p' pA_p. With v = X S_p (S_p seen from body i): column = X^T Ia v, whose
      // entry on S_p is v' Ia v and whose linear part is E (Ia v)_lin; bias += v' pa.
      V3T<S> va, vl;
      parent_axis_motion(m, d, i, va, vl);
      V6 v;
      v << va, vl;
      V6 g;
      for (int a = 0; a < 6; ++a) {
        if (z2 && a == 2) {
          g[a] = S(0);
          continue;
        }
        S t(0);
        bool any = false;
        for (int b = 0; b < 6; ++b) {
          if (z2 && b == 2) continue;
          const S x = Ia(a, b) * v[b];
          t = any ? S(t + x) : x;
          any = true;
        }
        g[a] = t;
      }
      S vg(0), vp(0);
      for (int a = 0; a < 6; ++a) {
        if (!(z2 && a == 2)) vg = a == 0 ? S(v[0] * g[0]) : S(vg + v[a] * g[a]);
        vp = a == 0 ? S(v[0] * pa[0]) : S(vp + v[a] * pa[a]);
      }
      const V3T<S> gl = applyE(m, d, i, V3T<S>(g.template tail<3>()));
      M6& IAp = d.IA[p];
      IAp(2, 2) += vg;
      for (int j = 0; j < 3; ++j) {
        IAp(3 + j, 2) += gl[j];
        IAp(2, 3 + j) = IAp(3 + j, 2);
      }
      d.pA[p][2] += vp;
      continue;
    }
    detail::add_articulated_to_parent<S>(m, d, i, z2, Ia, d.IA[p]);
    const V3T<S> Ef = applyE(m, d, i, V3T<S>(pa.template tail<3>()));
    d.pA[p].template head<3>() +=
        applyE(m, d, i, V3T<S>(pa.template head<3>())) - cross_r(m, d, i, Ef);
    d.pA[p].template tail<3>() += Ef;
  }
  // pass 3: accelerations, base to tip
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const bool rev = m.type[i] == JointType::Revolute;
    const V6& c = d.cbias[i];
    const V6& U = d.U[i];
    V3T<S> wd, a;
    S x = d.u[i];
    if (p == 0) {
      // the base is at rest: wd = 0, a' = -gravity
      wd.setZero();
      a = gravity_in_root(m, d, i);
      x -= U[3] * a[0] + U[4] * a[1] + U[5] * a[2];
    } else {
      if (m.root_rev[p]) {
        // wd_p = ud_p z: wd_p x r = ud_p (-r1, r0, 0)
        const S& udp = d.wd[p][2];
        const auto& nz = rev ? m.pc_nz[i] : kFull;
        const V3T<S> r = rev ? V3T<S>(m.pc[i].template cast<S>()) : d.r[i];
        const V3T<S> wr(nz[1] ? S(-(udp * r[1])) : S(0), nz[0] ? S(udp * r[0]) : S(0), S(0));
        wd = applyET_z(m, d, i, udp);
        a = applyET(m, d, i, V3T<S>(d.al[p] + wr));
      } else {
        wd = applyET(m, d, i, d.wd[p]);
        a = applyET(m, d, i, V3T<S>(d.al[p] + cross_r(m, d, i, d.wd[p])));
      }
      if (rev) {
        wd[0] += c[0];
        wd[1] += c[1];
      }
      a += c.template tail<3>();
      x -= U[0] * wd[0] + U[1] * wd[1] + U[2] * wd[2] + U[3] * a[0] + U[4] * a[1] + U[5] * a[2];
    }
    const S qddi = x / d.D[i];
    if (rev)
      wd[2] += qddi;
    else
      a[2] += qddi;
    d.wd[i] = wd;
    d.al[i] = a;
    qdd[i - 1] = qddi;
  }
  return true;
}

}  // namespace robodyn
