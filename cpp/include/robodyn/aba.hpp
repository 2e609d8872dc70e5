// Articulated-body forward dynamics, Featherstone 2008 (RBDA) Table 7.1, in the book's names,
// body coordinates, every joint kind (revolute, prismatic, free-flyer) in the same three loops.
//
// One change from the table: a (and c) are the classical accelerations of the body origins
// (rnea.hpp's choice), a = (wd, a') with a' the acceleration of the origin in body axes.
// Then the bias force needs no linear velocity, pA = (w x Ibar w, w x (w x h)), and
//   c = (w' x wr, E^T (w_p x (w_p x r)) + 2 w' x vr + wr x vr)
// for a joint of relative velocity S qd = (wr, vr) under a parent turning at w_p
// (w' = E^T w_p: revolute wr = qd z, vr = 0; prismatic wr = 0, vr = qd z; free-flyer both).
//
// Body 0 is the world: v_0 = 0, a_0 = -gravity (in world axes). A free-flyer is the
// articulated root (body 1): S = 1, so U = IA, D = IA (6x6, factorised as L diag L^T) and
// its acceleration is IA^-1 (tau - pA); it passes nothing on. Revolute, prismatic and
// free-flyer differ only in S (which entry of U, D, u; c above).
//
// Two savings for a revolute joint on the world stay, because tests/test_opcount.py holds
// aba at or below McMillan & Orin's 224n - 259 multiplications (RBDA Table 10.1) from n = 2
// and without them the generic DH chains count 268 at n = 2 (182 with them) and 86 more
// at every n: (1) such a body skips the world's zero motion in passes 1 and 3 (w = qd z,
// c = 0, a' = E^T a_0 from the constant Rc^T a_0); (2) a body whose parent is such a body
// passes it only what the root uses, IA_p S_p and S_p' pA_p (so IA_p is complete only in
// column 2, pA_p only in entry 2). The generated code (tracing.hpp) folds the same zeros.
#pragma once

#include "robodyn/data.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/spatial.hpp"

// fixed-count loops over the entries of 6-vectors and 6x6 matrices: unrolled (their index
// lists are compile-time constants)
#if defined(__GNUC__) && !defined(__clang__)
#define ROBODYN_UNROLL _Pragma("GCC unroll 8")
#elif defined(__clang__)
#define ROBODYN_UNROLL _Pragma("unroll")
#else
#define ROBODYN_UNROLL
#endif

namespace robodyn {

namespace detail {

// [A B; B' C] moved by r = l e_x (see shift_dense); kZ2: row and column 2 of A and row 2 of B
// are zero
template <bool kZ2, class S>
ROBODYN_INLINE void shift_x(double l, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  const S L(l), L2(l + l), LL(l * l);
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
ROBODYN_INLINE void shift_z(double l, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  const S L(l), L2(l + l), LL(l * l);
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

// Moves [A B; B' C] to a point displaced by -r, every entry (no branches): A - K - K' - [r] T,
// B - T', C with K = B [r], T = C [r] ([r] T is symmetric)
template <class S>
ROBODYN_INLINE void shift_dense(const V3T<S>& r, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  M3T<S> T, K;
  ROBODYN_UNROLL
  for (int a = 0; a < 3; ++a) {
    T(a, 0) = C(a, 1) * r[2] - C(a, 2) * r[1];
    T(a, 1) = C(a, 2) * r[0] - C(a, 0) * r[2];
    T(a, 2) = C(a, 0) * r[1] - C(a, 1) * r[0];
    K(a, 0) = B(a, 1) * r[2] - B(a, 2) * r[1];
    K(a, 1) = B(a, 2) * r[0] - B(a, 0) * r[2];
    K(a, 2) = B(a, 0) * r[1] - B(a, 1) * r[0];
  }
  ROBODYN_UNROLL
  for (int a = 0; a < 3; ++a)
    ROBODYN_UNROLL
    for (int b = a; b < 3; ++b) {
      const int a1 = (a + 1) % 3, a2 = (a + 2) % 3;
      A(a, b) = A(a, b) - K(a, b) - K(b, a) - (r[a1] * T(a2, b) - r[a2] * T(a1, b));
      A(b, a) = A(a, b);
    }
  B -= T.transpose();
}

// IA_p += X^T Ia X (upper triangles): body i's articulated inertia Ia = [A B; B' C] (about its
// origin, body axes; read from the upper triangle) in parent coordinates. kZ2: row and column 2
// of Ia are zero (a revolute joint without armature: Ia S = 0). X = (E, r) with E = Rc Rz(q):
// turned by Rz(q) (revolute), then a DH link (Rc a rotation about x, r = (a, 0, d)) in three
// cheap steps: a shift along x by a (x is fixed by the next step), Rx(alpha), a shift along z
// by d; any other link moved by Rc^T r, then turned by Rc (a signed permutation: while adding).
template <bool kZ2, class S>
void add_articulated_to_parent(const Model& m, const DataTpl<S>& d, int i,
                               const Eigen::Matrix<S, 6, 6>& Ia, Eigen::Matrix<S, 6, 6>& IAp) {
  M3T<S> A, B, C;
  ROBODYN_UNROLL
  for (int a = 0; a < 3; ++a)
    ROBODYN_UNROLL
    for (int b = a; b < 3; ++b) {
      A(a, b) = A(b, a) = Ia(a, b);
      C(a, b) = C(b, a) = Ia(3 + a, 3 + b);
    }
  B = Ia.template topRightCorner<3, 3>();
  const JointType t = m.type[i];
  if (t == JointType::Revolute) {
    const PlaneRot<S> R = plane_z(d, i);
    rotate_sym_plane<0, 1, 2, kZ2>(R, A);
    rotate_gen_plane<0, 1, 2, kZ2>(R, B);
    rotate_sym_plane<0, 1, 2>(R, C);
  }
  const ConstRotation& Rc = m.Rc[i];
  const V3T<S> r = t == JointType::Revolute ? V3T<S>(m.pc[i].template cast<S>()) : d.r[i];
  if (m.link[i] == LinkKind::RevDH) {
    shift_x<kZ2>(m.pc[i][0], A, B, C);
    const PlaneRot<S> P = plane_of<S>(Rc);
    rotate_sym_plane<1, 2, 0>(P, A);
    rotate_gen_plane<1, 2, 0>(P, B);
    rotate_sym_plane<1, 2, 0>(P, C);
    shift_z(m.pc[i][2], A, B, C);
  } else if (t == JointType::FreeFlyer) {
    const M3T<S>& E = d.E[i];
    A = E * A * E.transpose();
    B = E * B * E.transpose();
    C = E * C * E.transpose();
    shift_dense<S>(r, A, B, C);
  } else {
    shift_dense<S>(rotcT<S>(Rc, r), A, B, C);
    if (Rc.kind == ConstRotation::Permutation) {
      // (Rc M Rc')(a, b) = +-M(iperm a, iperm b)
      ROBODYN_UNROLL
      for (int a = 0; a < 3; ++a) {
        const int pa = Rc.iperm[a];
        ROBODYN_UNROLL
        for (int b = 0; b < 3; ++b) {
          const int pb = Rc.iperm[b];
          const bool flip = Rc.ineg[a] != Rc.ineg[b];
          if (b >= a) {
            IAp(a, b) += flip ? S(-A(pa, pb)) : A(pa, pb);
            IAp(3 + a, 3 + b) += flip ? S(-C(pa, pb)) : C(pa, pb);
          }
          IAp(a, 3 + b) += flip ? S(-B(pa, pb)) : B(pa, pb);
        }
      }
      return;
    }
    A = rotate_const<true, S>(Rc, A);
    B = rotate_const<false, S>(Rc, B);
    C = rotate_const<true, S>(Rc, C);
  }
  ROBODYN_UNROLL
  for (int a = 0; a < 3; ++a) {
    ROBODYN_UNROLL
    for (int b = a; b < 3; ++b) {
      IAp(a, b) += A(a, b);
      IAp(3 + a, 3 + b) += C(a, b);
    }
    ROBODYN_UNROLL
    for (int b = 0; b < 3; ++b) IAp(a, 3 + b) += B(a, b);
  }
}

// Ia = IA - U Ud' (upper triangle) and pa = pA + Ia c + Ud u for a 1-DOF joint on axis k (2: revolute, whose
// c_2 = 0; 5: prismatic, whose c_0 = c_1 = c_2 = 0). kZ: no armature, so Ia S = 0 and
// Ud_k = 1: row and column k of Ia are exactly zero and are skipped.
template <int k, bool kZ, class S>
ROBODYN_INLINE void articulated_step(const Eigen::Matrix<S, 6, 6>& IA,
                                     const Eigen::Matrix<S, 6, 1>& U, const S& D,
                                     const Eigen::Matrix<S, 6, 1>& pA, const S& u,
                                     const Eigen::Matrix<S, 6, 1>& c, Eigen::Matrix<S, 6, 6>& Ia,
                                     Eigen::Matrix<S, 6, 1>& pa) {
  const S invD = S(1) / D;
  S Ud[6];
  ROBODYN_UNROLL
  for (int j = 0; j < 6; ++j) Ud[j] = kZ && j == k ? S(1) : S(U[j] * invD);
  // rows and columns computed: all but k when kZ; columns of the non-zero entries of c:
  // 0, 1, 3, 4, 5 (revolute), 3, 4, 5 (prismatic; 3, 4 when kZ)
  constexpr int N = kZ ? 5 : 6, NC = k == 2 ? 5 : (kZ ? 2 : 3);
  auto idx = [](int x) { return kZ && x >= k ? x + 1 : x; };
  auto ic = [](int y) { return k == 2 ? (y < 2 ? y : y + 1) : 3 + y; };
  if (kZ)
    for (int j = 0; j < 6; ++j) Ia(k, j) = Ia(j, k) = S(0);
  ROBODYN_UNROLL
  for (int x = 0; x < N; ++x)
    ROBODYN_UNROLL
    for (int y = x; y < N; ++y) {
      const int a = idx(x), b = idx(y);
      Ia(a, b) = IA(a, b) - Ud[a] * U[b];
    }
  ROBODYN_UNROLL
  for (int a = 0; a < 6; ++a) {
    if (kZ && a == k) {
      pa[a] = pA[a] + u;
      continue;
    }
    S t = pA[a] + Ud[a] * u;
    ROBODYN_UNROLL
    for (int y = 0; y < NC; ++y)
      t += (a <= ic(y) ? Ia(a, ic(y)) : Ia(ic(y), a)) * c[ic(y)];
    pa[a] = t;
  }
}

// In-place L diag(D) L' of a symmetric positive definite 6x6 matrix: L (unit, strictly lower)
// and D (diagonal) overwrite the lower triangle of A. Returns false when a pivot is not
// positive.
template <class S>
bool ldlt6(Eigen::Matrix<S, 6, 6>& A) {
  for (int j = 0; j < 6; ++j) {
    S dj = A(j, j);
    for (int k = 0; k < j; ++k) dj -= A(j, k) * A(k, j);
    if (!(dj > S(0))) return false;
    A(j, j) = dj;
    const S inv = S(1) / dj;
    for (int i = j + 1; i < 6; ++i) {
      // A(j, i) (upper) keeps L(i, k) D(k) for the next columns; A(i, j) = L(i, j)
      S x = A(i, j);
      for (int k = 0; k < j; ++k) x -= A(i, k) * A(k, j);
      A(j, i) = x;
      A(i, j) = x * inv;
    }
  }
  return true;
}

// x = (L diag(D) L')^-1 x for ldlt6's factor
template <class S>
void ldlt6_solve(const Eigen::Matrix<S, 6, 6>& F, Eigen::Matrix<S, 6, 1>& x) {
  for (int i = 1; i < 6; ++i)
    for (int k = 0; k < i; ++k) x[i] -= F(i, k) * x[k];
  for (int i = 0; i < 6; ++i) x[i] /= F(i, i);
  for (int i = 4; i >= 0; --i)
    for (int k = i + 1; k < 6; ++k) x[i] -= F(k, i) * x[k];
}

}  // namespace detail

// qdd = FD(q, qd, tau): q (nq,), qd, tau, qdd (nv,). Joint accelerations for the applied
// generalized forces tau, with armature, and joint friction on the 1-DOF joints
// (tau - damping qd - friction sign(qd) drives the joint). Returns false when an articulated
// joint inertia D_i is not positive definite. qdd may alias the inputs (they are read in the
// first two passes).
template <class S>
bool aba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  update_kinematics(m, d, q, 1);
  // the world: at rest, accelerating at -gravity
  d.w[0].setZero();
  d.w2[0] = S(0);
  d.wd[0].setZero();
  d.al[0] = -m.gravity.template cast<S>();
  // pass 1, base to tip: v_i = X v_p + S qd (angular part), c_i, IA_i = I_i, pA_i = v x* I v
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const JointType t = m.type[i];
    const S* x = qd + m.iv[i];
    V6& c = d.cbias[i];
    const Vec3& h = m.h[i];
    const auto& hz = m.h_nz[i];
    if (p == 0 && t == JointType::Revolute) {
      // on the world (see the header): w = qd z, c = 0, Ibar w = qd Ibar e_z,
      // pA = (qd (-(Ibar w)_1, (Ibar w)_0, 0), -qd^2 (h_0, h_1, 0))
      const S u = x[0], uu = u * u;
      const Mat3& I = m.Ibar[i];
      const auto& iz = m.I_nz[i];
      const S Iw0 = iz[4] ? S(u * S(I(0, 2))) : S(0), Iw1 = iz[5] ? S(u * S(I(1, 2))) : S(0);
      c.setZero();
      d.pA[i] << -(u * Iw1), u * Iw0, S(0), hz[0] ? S(-(uu * S(h[0]))) : S(0),
          hz[1] ? S(-(uu * S(h[1]))) : S(0), S(0);
      d.w[i] = V3T<S>(S(0), S(0), u);
      d.w2[i] = uu;
    } else {
      const V3T<S>& wp = d.w[p];
      // w' = E^T w_p, and E^T (w_p x (w_p x r)) = E^T ((w_p . r) w_p - |w_p|^2 r)
      const Xup<S> X(m, d, i);
      V3T<S> w = X.ET(wp);
      const bool rev = t == JointType::Revolute;
      const std::array<bool, 3> kFull{{true, true, true}};
      const auto& nz = rev ? m.pc_nz[i] : kFull;
      const V3T<S> r = rev ? V3T<S>(m.pc[i].template cast<S>()) : d.r[i];
      const S wr = rev ? dot_const<S>(wp[0], wp[1], wp[2], m.pc[i], nz) : S(wp.dot(r));
      V3T<S> k;
      for (int j = 0; j < 3; ++j) k[j] = nz[j] ? S(wr * wp[j] - d.w2[p] * r[j]) : S(wr * wp[j]);
      const V3T<S> kb = X.ET(k);
      // c, w = w' + wr, and |w|^2 from |w'|^2 = |w_p|^2
      S ww;
      switch (t) {
        case JointType::Revolute:
          c << w[1] * x[0], -(w[0] * x[0]), S(0), kb;
          ww = d.w2[p] + x[0] * (w[2] + w[2] + x[0]);
          w[2] += x[0];
          break;
        case JointType::Prismatic: {
          const S x2 = x[0] + x[0];
          c << S(0), S(0), S(0), kb[0] + w[1] * x2, kb[1] - w[0] * x2, kb[2];
          ww = d.w2[p];
          break;
        }
        default: {
          const V3T<S> wr3(x[0], x[1], x[2]), vr(x[3], x[4], x[5]);
          c << cross<S>(w, wr3), kb + S(2) * cross<S>(w, vr) + cross<S>(wr3, vr);
          w += wr3;
          ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
          break;
        }
      }
      // pA = (w x Ibar w, w x (w x h)) = (w x Ibar w, (w . h) w - |w|^2 h)
      const S wh = dot_const<S>(w[0], w[1], w[2], h, hz);
      const V3T<S> Iw = sym_mul<S>(m.Ibar[i], m.I_nz[i], w);
      d.pA[i] << cross<S>(w, Iw), V3T<S>(hz[0] ? S(wh * w[0] - ww * S(h[0])) : S(wh * w[0]),
                                         hz[1] ? S(wh * w[1] - ww * S(h[1])) : S(wh * w[1]),
                                         hz[2] ? S(wh * w[2] - ww * S(h[2])) : S(wh * w[2]));
      d.w[i] = w;
      d.w2[i] = ww;
    }
    // IA = I = [Ibar, [h]; [h]', mass 1] (upper triangle)
    M6& IA = d.IA[i];
    IA.template topLeftCorner<3, 3>() = m.Ibar[i].template cast<S>();
    IA.template topRightCorner<3, 3>() = skew<S>(V3T<S>(h.template cast<S>()));
    IA(3, 4) = IA(3, 5) = IA(4, 5) = S(0);
    for (int j = 0; j < 3; ++j) IA(3 + j, 3 + j) = S(m.mass[i]);
  }
  // pass 2, tip to base: U = IA S, D = S' U (+ armature), u = tau - S' pA; passed to the
  // parent: Ia = IA - U D^-1 U', pa = pA + Ia c + U D^-1 u, IA_p += X^T Ia X, pA_p += X^T pa
  for (int i = m.n; i >= 1; --i) {
    const JointType t = m.type[i];
    const int p = m.parent[i];
    if (t == JointType::FreeFlyer) {
      // S = 1: U = D = IA, u = tau - pA; the root (build_model): nothing passed on
      d.Uf = d.IA[i].template selfadjointView<Eigen::Upper>();
      if (!detail::ldlt6<S>(d.Uf)) return false;
      for (int j = 0; j < 6; ++j) d.uf[j] = tau[m.iv[i] + j] - d.pA[i][j];
      continue;
    }
    const int k = t == JointType::Revolute ? 2 : 5;
    const int iv = m.iv[i];
    for (int j = 0; j < 6; ++j) d.U[i][j] = j <= k ? d.IA[i](j, k) : d.IA[i](k, j);
    S Di = d.U[i][k];
    if (m.armature[i] != 0) Di += S(m.armature[i]);
    if (!(Di > S(0))) return false;
    d.D[i] = Di;
    S ui = tau[iv] - d.pA[i][k];
    if (m.damping[i] != 0) ui -= S(m.damping[i]) * qd[iv];
    if (m.friction[i] != 0) ui -= S(m.friction[i]) * detail::signum(qd[iv]);
    d.u[i] = ui;
    if (p == 0) continue;
    const bool kz = m.armature[i] == 0;
    M6 Ia;
    V6 pa;
    if (k == 2 && kz)
      detail::articulated_step<2, true, S>(d.IA[i], d.U[i], Di, d.pA[i], ui, d.cbias[i], Ia, pa);
    else if (k == 2)
      detail::articulated_step<2, false, S>(d.IA[i], d.U[i], Di, d.pA[i], ui, d.cbias[i], Ia, pa);
    else if (kz)
      detail::articulated_step<5, true, S>(d.IA[i], d.U[i], Di, d.pA[i], ui, d.cbias[i], Ia, pa);
    else
      detail::articulated_step<5, false, S>(d.IA[i], d.U[i], Di, d.pA[i], ui, d.cbias[i], Ia, pa);
    if (m.root_rev[p]) {
      // the parent turns on the world (see the header): of IA_p only its column on S_p is
      // used (U_p, D_p), and of pA_p only S_p' pA_p. With s = X S_p (S_p seen from body i):
      // IA_p S_p += X^T Ia s, whose entry on S_p is s' Ia s and whose linear part is
      // E (Ia s)_lin; S_p' pA_p += s' pa
      V3T<S> sa, sl;
      parent_axis_motion(m, d, i, sa, sl);
      S sv[6] = {sa[0], sa[1], sa[2], sl[0], sl[1], sl[2]};
      S g[6], sg(0), sp(0);
      for (int a = 0; a < 6; ++a) {
        S t(0);
        for (int b = 0; b < 6; ++b) {
          if (k == 2 && kz && (a == 2 || b == 2)) continue;
          t += (a <= b ? Ia(a, b) : Ia(b, a)) * sv[b];
        }
        g[a] = t;
        if (!(k == 2 && kz && a == 2)) sg += sv[a] * g[a];
        sp += sv[a] * pa[a];
      }
      const V3T<S> gl = Xup<S>(m, d, i).E(V3T<S>(g[3], g[4], g[5]));
      M6& IAp = d.IA[p];
      IAp(2, 2) += sg;
      for (int j = 0; j < 3; ++j) IAp(2, 3 + j) += gl[j];
      d.pA[p][2] += sp;
      continue;
    }
    if (k == 2 && kz)
      detail::add_articulated_to_parent<true, S>(m, d, i, Ia, d.IA[p]);
    else
      detail::add_articulated_to_parent<false, S>(m, d, i, Ia, d.IA[p]);
    V3T<S> np = d.pA[p].template head<3>(), fp = d.pA[p].template tail<3>();
    Xup<S>(m, d, i).apply_transpose(V3T<S>(pa.template head<3>()),
                                    V3T<S>(pa.template tail<3>()), np, fp);
    d.pA[p] << np, fp;
  }
  // pass 3, base to tip: a' = X a_p + c, qdd = D^-1 (u - U' a'), a = a' + S qdd
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const V6& c = d.cbias[i];
    S* x = qdd + m.iv[i];
    V3T<S> wd, a;
    if (p == 0 && m.type[i] == JointType::Revolute) {
      // on the world (see the header): wd = 0, a' = E^T a_0 (the constant Rc^T a_0 turned)
      wd.setZero();
      a = gravity_in_root(m, d, i);
      const V6& U = d.U[i];
      x[0] = (d.u[i] - (U[3] * a[0] + U[4] * a[1] + U[5] * a[2])) / d.D[i];
      wd[2] = x[0];
    } else {
      Xup<S>(m, d, i).apply(d.wd[p], d.al[p], wd, a);
      wd += c.template head<3>();
      a += c.template tail<3>();
      if (m.type[i] == JointType::FreeFlyer) {
        // U = D = IA: qdd = IA^-1 (u - IA a') = IA^-1 u - a'
        V6 ab = d.uf;
        detail::ldlt6_solve<S>(d.Uf, ab);
        for (int j = 0; j < 3; ++j) {
          x[j] = ab[j] - wd[j];
          x[3 + j] = ab[3 + j] - a[j];
        }
        wd = ab.template head<3>();
        a = ab.template tail<3>();
      } else {
        const V6& U = d.U[i];
        x[0] = (d.u[i] - (U[0] * wd[0] + U[1] * wd[1] + U[2] * wd[2] + U[3] * a[0] +
                          U[4] * a[1] + U[5] * a[2])) / d.D[i];
        add_joint_motion(m.type[i], x, wd, a);
      }
    }
    d.wd[i] = wd;
    d.al[i] = a;
  }
  return true;
}

}  // namespace robodyn
