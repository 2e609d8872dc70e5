// Kane's method: recursive O(n) inverse dynamics and forward dynamics by the generalized inertia
// matrix (Kane & Levinson 1985; Nie 1988, Ch. III; docs/notation.md maps Kane's terms to
// Featherstone's and derives this recursive form).
//
// Generalized speeds u = qd (u = v with a free base). Body k has its frame k (z = n3, the
// joint-k axis; origin o_k on that axis), mass m_k, mass centre c_k and central inertia I_k
// (both in frame k). For every joint r on the path from the base to body k, the partial
// velocities are
//   revolute r:   w^k_r = n3^r,  v^k_r = n3^r x (c_k - o_r)      (3.12, 3.26)
//   prismatic r:  w^k_r = 0,     v^k_r = n3^r                     (3.28)
// and zero for the other joints. A free base (body 1, frame 1 its own axes) has six speeds,
// its twist (w, v) in its own axes (Kane's body-fixed generalized speeds), with
//   w_1..3:       w^k_r = e_r,   v^k_r = e_r x (c_k - o_1)
//   v_1..3:       w^k_r = 0,     v^k_r = e_r
// and ud their derivatives (of the components in frame 1), so a_o^1 = vd + w x v. With
// W^k = sum_r w^k_r u_r (angular velocity) and the accelerations alpha^k = sum_r w^k_r ud_r
// + E^k, a^k = sum_r v^k_r ud_r + D^k of body k and of its mass centre (3.38, 3.44), and
// H^k = I_k alpha^k + W^k x I_k W^k (3.45, about c_k):
//   generalized inertia forces  K*_r = -sum_k (v^k_r . m_k a^k + w^k_r . H^k)
//                                    = -(sum_m F_rm ud_m + Z_r)                (3.47, 3.57)
//   generalized active forces of gravity  K'_r = sum_k m_k g . v^k_r             (3.60)
//   Kane's equations  f_r + K'_r + K*_r = 0  =>  f_r = F ud + Z - K'            (3.62)
// Every partial velocity for u_r is a rigid rotation about (translation along) the joint-r
// axis, so sum_k over the subtree of r collapses to n3^r . (moment about o_r) of the subtree's
// forces R_k = m_k (a^k - g) at the c_k and couples H^k (n3^r . resultant for prismatic r;
// for the free base the whole moment about o_1 and the whole resultant, in frame 1).
// These resultants are accumulated from the tips inwards, so the triple sums of the thesis are
// never formed. Joint terms as in rnea.hpp: + armature ud + damping u + friction sign(u).
#pragma once

#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// H = I alpha + W x (I W), Euler's equations about the mass centre
template <class S>
inline V3T<S> euler_moment(const Mat3& I, bool principal, const V3T<S>& al, const V3T<S>& W) {
  if (principal) {
    // (3.45): H_1 = I_1 alpha_1 + W_2 W_3 (I_3 - I_2), cyclic; 9 mul, 3 add (fewer if I_i = I_j)
    auto comp = [&](int a, int b, int c) {
      const double dI = I(c, c) - I(b, b);
      const S t = S(I(a, a)) * al[a];
      return dI == 0 ? t : S(t + W[b] * W[c] * S(dI));
    };
    return V3T<S>(comp(0, 1, 2), comp(1, 2, 0), comp(2, 0, 1));
  }
  // general central inertia: 24 mul, 15 add
  return sym_mul<S>(I, al) + cross<S>(W, sym_mul<S>(I, W));
}

// One Kane sweep. kAcc: ud on (else ud = 0, giving Z - K'); kJoint: armature, viscous and
// Coulomb friction added to the driving forces. u, ud, f: (nv,), f the driving forces
// f_r = -K*_r - K'_r.
template <bool kAcc, bool kJoint, class S>
void kane_sweep(const Model& m, DataTpl<S>& d, const S* q, const S* u, const S* ud, S* f) {
  update_kinematics(m, d, q, 1);
  // base: at rest (W^0 = alpha^0 = 0); gravity enters as the base accelerating at -g
  // (Featherstone 5.3), so every a_o^k and a^k below is the acceleration minus g, and
  // R_k = m_k (a^k - g) (the weight, K'_r of 3.60, comes with the inertia force)
  d.a_lin[0] = -m.gravity.template cast<S>();
  // outward pass: W^k, alpha^k, mass-centre acceleration a^k, then R_k and H^k
  for (int k = 1; k <= m.n; ++k) {
    const int p = m.parent[k];
    const int v = m.iv[k];
    const Xup<S> X(m, d, k);
    // the parent's motion in frame k: W^p, alpha^p and the acceleration of the point of the
    // parent at o_k (thesis s^k), a_o^p + alpha^p x r + W^p x (W^p x r)
    V3T<S> W = X.ET(d.v_ang[p]);
    V3T<S> al = X.ET(d.a_ang[p]);
    const V3T<S> Wr = X.cross_r(d.v_ang[p]);
    V3T<S> ao = X.ET(V3T<S>(d.a_lin[p] + X.cross_r(d.a_ang[p]) + cross<S>(d.v_ang[p], Wr)));
    // + the joint's: W^k = W^p + n3 u_k, alpha^k = alpha^p + W^p x n3 u_k + n3 ud_k (3.7,
    // 3.13); a prismatic joint adds 2 W^k x n3 u_k + n3 ud_k to a_o (3.33); the free base
    // its twist (w, v) and (wd, vd + w x v) (joint.hpp)
    add_joint_classical<kAcc, S>(m.type[k], p > 0, u + v, kAcc ? ud + v : nullptr, W, al, ao);
    // mass centre: V^k = V_o^k + W x c; a^k = sum_r v^k_r ud_r + D^k (3.38), D^k holding the
    // thesis' B^k = W x V^k (3.36-3.37), here as a_o + alpha x c + W x (W x c)
    const Vec3& c = m.kane.c[k];
    const auto& cnz = m.kane.c_nz[k];
    const V3T<S> Wc = cross_const<S>(W, c, cnz);
    const V3T<S> a = ao + cross_const<S>(al, c, cnz) + cross<S>(W, Wc);
    // R_k = m_k (a^k - g) (a holds a^k - g): minus the inertia force and the weight of body
    // k, at c_k
    const V3T<S> R = S(m.mass[k]) * a;
    // H^k: minus the inertia torque about c_k (3.45)
    const V3T<S> H = euler_moment<S>(m.kane.I[k], m.kane.principal[k] != 0, al, W);
    d.v_ang[k] = W;
    d.a_ang[k] = al;
    d.a_lin[k] = ao;
    d.f_lin[k] = R;
    d.f_ang[k] = H - cross_const<S>(R, c, cnz);  // moment about o_k: H + c x R
  }
  // inward pass: f_r = n3 . (subtree moment about o_r) or n3 . (subtree resultant), i.e.
  // -(K*_r + K'_r), for the free base the whole moment and resultant; then the subtree
  // resultants move to the parent's origin
  for (int k = m.n; k >= 1; --k) {
    const JointType t = m.type[k];
    const int v = m.iv[k];
    // u, ud are read before f is written (f may alias them)
    S fk[6];
    joint_force(t, d.f_ang[k], d.f_lin[k], fk);
    if (kJoint) add_joint_terms<kAcc, S>(m, k, u, ud, fk[0]);
    for (int j = 0; j < joint_nv(t); ++j) f[v + j] = fk[j];
    const int p = m.parent[k];
    if (p > 0) {
      // resultant: E R; moment about o_p: E N + r x E R
      Xup<S>(m, d, k).apply_transpose(d.f_ang[k], d.f_lin[k], d.f_ang[p], d.f_lin[p]);
    }
  }
}

// Lower triangle of F + diag(armature) into d.H, F_rm = sum_k (w^k_m . I_k w^k_r +
// m_k v^k_m . v^k_r) (3.59). F_rm is non-zero only when m is on the path from the base to r
// (index m <= r, the lower triangle); then sum_k runs over the subtree of r. That subtree moving
// with u_r = 1 has the momentum P_r = sum_k m_k v^k_r and the moment of momentum G about o_r;
// F_rm is their projection on joint m's partial velocity: n3^m . (G about o_m) (revolute m)
// or n3^m . P_r (prismatic m), the components of (G, P) for the free base's six speeds.
// Subtree composites make each (P_r, G_r) O(1), each F_rm O(1).
template <class S>
void kane_inertia(const Model& m, DataTpl<S>& d) {
  // subtree composites in frame k: mass IC_m, first moment IC_h = sum m_j (c_j - o_k),
  // inertia IC_I about o_k
  for (int k = 1; k <= m.n; ++k) {
    d.IC_m[k] = S(m.mass[k]);
    d.IC_h[k] = m.h[k].template cast<S>();
    d.IC_I[k] = m.Ibar[k].template cast<S>();
  }
  for (int k = m.n; k >= 1; --k) {
    const int p = m.parent[k];
    if (p == 0) continue;
    // X^T Ic X: the composite moved to o_p in frame p (link.hpp)
    Xup<S>(m, d, k).transport_inertia(d.IC_m[k], d.IC_h[k], d.IC_I[k], d.IC_m[p], d.IC_h[p],
                                      d.IC_I[p]);
  }
  d.size_mass_matrix();
  d.H_pattern = false;  // the lower triangle only
  for (int i = 0; i < m.nv; ++i)
    for (int j = 0; j < i; ++j) d.H(i, j) = S(0);
  // component s of (G, P), [angular; linear]: joint m's partial velocity e_s (crba.hpp's
  // joint_axis) dotted with the subtree's momentum
  auto comp = [](const V3T<S>& G, const V3T<S>& P, int s) -> const S& {
    return s < 3 ? G[s] : P[s - 3];
  };
  // column c of joint r: momentum P and moment of momentum G of the subtree for u_c = 1 (no
  // arithmetic: crba.hpp's inertia_times_axis), carried to the origins of the joints on the
  // path to the base
  for (int r = 1; r <= m.n; ++r) {
    const JointType t = m.type[r];
    for (int k = 0; k < joint_nv(t); ++k) {
      const int c = m.iv[r] + k;
      V3T<S> G, P;
      inertia_times_axis<S>(d.IC_m[r], d.IC_h[r], d.IC_I[r], joint_axis(t, k), G, P);
      for (int j = k; j < joint_nv(t); ++j) d.H(m.iv[r] + j, c) = comp(G, P, joint_axis(t, j));
      add_armature(m, r, d.H(c, c));
      for (int j = r; m.parent[j] > 0; j = m.parent[j]) {
        // X_j^T (G, P): E P; moment about o_p: E G + r x E P
        Xup<S>(m, d, j).force_to_parent(G, P, G, P);
        const int pj = m.parent[j];
        const JointType tp = m.type[pj];
        for (int i = 0; i < joint_nv(tp); ++i)
          d.H(c, m.iv[pj] + i) = comp(G, P, joint_axis(tp, i));
      }
    }
  }
}

}  // namespace detail

// Inverse dynamics by Kane's equations: tau = F(q) ud + Z(q, u) - K'(q) + armature ud
// + damping u + friction sign(u). q (nq,); u = qd, ud = qdd, tau (nv,). With a free base
// (body 1) its six speeds are the base twist in base axes [angular; linear] and its block of
// tau the wrench on the base in base axes [moment about the base origin; force]. Same result
// as rnea().
template <class S>
void kane(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  detail::kane_sweep<true, true, S>(m, d, q, qd, qdd, tau);
}

// Forward dynamics by Kane's equations: (F + diag(armature)) ud = tau + K' - Z - damping u
// - friction sign(u) (3.56), F (lower triangle) by kane_inertia, Z - K' by one sweep with
// ud = 0, solved by Cholesky. q (nq,); qd, tau, qdd (nv,). Returns false when F is not
// positive definite.
template <class S>
bool kane_forward(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  // inputs are read before qdd is written: qdd may alias q, qd or tau
  detail::kane_sweep<false, false, S>(m, d, q, qd, nullptr, d.scratch.data());
  // right-hand side K_r - Z_r with K_r = f_r + K'_r (3.61), joint friction moved over
  forward_dynamics_rhs(m, qd, tau, d.scratch.data());
  detail::kane_inertia(m, d);
  for (int k = 0; k < m.nv; ++k) qdd[k] = d.scratch[k];
  return cholesky_solve(d, qdd);
}

}  // namespace robodyn
