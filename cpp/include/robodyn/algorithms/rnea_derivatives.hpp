// Analytical first-order derivatives of inverse dynamics (Carpentier & Mansard, RSS 2018:
// "Analytical derivatives of rigid body dynamics algorithms"), and of forward dynamics from
// them: dqdd/dx = -M^-1 dtau/dx at qdd = FD(q, qd, tau), by M's sparse L'L factor.
//
// Everything runs in base-frame coordinates about the base origin (spatial vectors
// [angular; linear]). With S_j the joint axis, v_j, a_j the body velocity and acceleration
// (a_0 = -gravity), S'_j = v_j x S_j and psi_j = a_p x S_j + v_p x S'_j (p the parent of j), a
// change of q_j moves the subtree of j rigidly about S_j, which gives, for every body i in the
// subtree of j (I_i the base-frame inertia, f_i = I_i a_i + v_i x* I_i v_i),
//   df_i/dq_j  = S_j x* f_i + I_i psi_j + B_i S'_j
//   df_i/dqd_j = B_i S_j + 2 I_i S'_j,        B_i = v_i x* I_i - I_i v_i x + (I_i v_i) x-bar
// ((h x-bar) y = y x* h). B_i only reads the angular part of what it multiplies:
//   B_i = [[T_i, 0], [-2 [p_i], 0]],  T_i = [w] Ib + ([w] Ib)' - ([l][c] + [c][l]) - [Ib w + c x l]
// (v = (w, l), I = (m, c = first moment, Ib = rotational inertia about the base origin),
// p_i = m l - c x w the linear momentum). Summed over subtrees (Ic, Bc, F composites), with
// tau_k = S_k' F_k and d(S_k)/dq_j = S_j x S_k cancelling S_j x* F_k:
//   j ancestor of k or k:  dtau_k/dq_j  = (Ic_k S_k)'psi_j + (Bc_k' S_k)'S'_j
//                          dtau_k/dqd_j = (Bc_k' S_k)'S_j  + 2 (Ic_k S_k)'S'_j
//   k a strict ancestor of j: dtau_k/dq_j = S_k'(S_j x* F_j + Ic_j psi_j + Bc_j S'_j)
//                          dtau_k/dqd_j = S_k'(Bc_j S_j + 2 Ic_j S'_j)
// Joint terms: damping adds to the diagonal of dtau/dqd; Coulomb friction (sign(qd)) and
// armature (times qdd) have no q or qd derivative (away from qd = 0).
//
// A joint of several velocity coordinates (the free-flyer) has one axis S_c per coordinate,
// each fixed in its body, and a tangent change of q along c moves the subtree rigidly about
// S_c: every formula above holds per axis, with the axes of one body paired by the first pair
// of formulas, except that 2 S'_j in dtau/dqd becomes X_c = (v_j + v_p) x S_c (the axes' own
// rates v_j x S_c no longer vanish: d a_i/d qd_c = S_c x v_i + X_c). For a 1-DOF joint
// X = 2 S'. Pinocchio's computeRNEADerivatives takes the same tangent (its free-flyer v is
// [linear; angular]).
#pragma once

#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// B = [[T, 0], [[P], 0]] times y: (T y_w, P x y_w)
template <class S>
ROBODYN_INLINE V6T<S> b_mul(const M3T<S>& T, const V3T<S>& P, const V6T<S>& y) {
  const V3T<S> yw = y.template head<3>();
  V6T<S> r;
  r << V3T<S>(T * yw), cross<S>(P, yw);
  return r;
}

// Forward sweep in base coordinates: per velocity coordinate c the joint axis S_c (d.S_world),
// S'_c = v_p x S_c (d.S_prime_world) and, if kPsi, psi_c (d.psi_world) and
// X_c = (v_i + v_p) x S_c (d.S_cross_world); per body the velocity (d.v_world) and the
// acceleration (d.a_world, base -gravity) with reference velocity qr and acceleration qa
// (qr = qd, qa = qdd for inverse dynamics). The axes of a joint move with its body: their
// rates are v_i x S_c, which for a 1-DOF joint (S x S = 0) is S'_c. A free-flyer's axes are its body axes, so the tangent of q along a velocity
// coordinate (robot.integrate(q, dv)) moves the subtree rigidly about S_c like any joint.
template <bool kPsi, class S>
void world_sweep(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qr,
                 const S* qa) {
  using V6 = V6T<S>;
  update_kinematics(m, d, q, 3);
  V6 a0;
  a0 << V3T<S>::Zero(), V3T<S>(-m.gravity.template cast<S>());
  for (int i = 1; i <= m.n; ++i) {
    const int p = m.parent[i];
    const int k0 = m.iv[i], nj = joint_nv(m.type[i]);
    V6* s = &d.S_world[k0];
    joint_axes_world<S>(m.type[i], d.world_R[i], d.world_p[i], s);
    const V6 vp = p > 0 ? d.v_world[p] : V6::Zero();
    const V6 ap = p > 0 ? d.a_world[p] : a0;
    V6 v = vp, a = ap;
    for (int c = 0; c < nj; ++c) {
      const int k = k0 + c;
      d.S_prime_world[k] = p > 0 ? crm<S>(vp, s[c]) : V6::Zero();
      v += s[c] * qd[k];
      a += s[c] * qa[k];
      if (kPsi)
        d.psi_world[k] =
            p > 0 ? V6(crm<S>(ap, s[c]) + crm<S>(vp, d.S_prime_world[k])) : crm<S>(ap, s[c]);
    }
    d.v_world[i] = v;
    if (nj == 1) {
      // S's rate v_i x S = S'
      a += d.S_prime_world[k0] * qr[k0];
      if (kPsi) d.S_cross_world[k0] = d.S_prime_world[k0] + d.S_prime_world[k0];
    } else {
      // sum_c (v_i x S_c) qr_c = v_i x (S qr)
      V6 sr = V6::Zero();
      for (int c = 0; c < nj; ++c) sr += s[c] * qr[k0 + c];
      a += crm<S>(v, sr);
      if (kPsi)
        for (int c = 0; c < nj; ++c)
          d.S_cross_world[k0 + c] = d.S_prime_world[k0 + c] + crm<S>(v, s[c]);
    }
    d.a_world[i] = a;
  }
}

}  // namespace detail

// dtau/dq and dtau/dqd of rnea (all its terms: rigid body, armature, damping, Coulomb
// friction) at (q, qd, qdd). dq, dqd: (nv, nv) row-major, entry (k, j) = dtau_k / dx_j; with a
// free-flyer, dx of q is a tangent vector (the derivative along robot.integrate(q, dx) at
// dx = 0) in v's coordinates. Each velocity coordinate is one axis: a free-flyer's six pair
// with each other as the axes of one body (the first formula of the header for all of them).
template <class S>
void rnea_derivatives(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd,
                      S* dq, S* dqd) {
  using V6 = V6T<S>;
  const int n = m.n, nv = m.nv;
  detail::world_sweep<true>(m, d, q, qd, qd, qdd);
  // entries between bodies on different branches stay zero
  for (int k = 0; k < nv * nv; ++k) {
    dq[k] = S(0);
    dqd[k] = S(0);
  }
  // per body: inertia, net force, B blocks (T, P)
  for (int i = 1; i <= n; ++i) {
    V3T<S> c;
    M3T<S> Ib;
    detail::world_inertia(m, d, i, c, Ib);
    const S mass(m.mass[i]);
    const V6& v = d.v_world[i];
    const V3T<S> w = v.template head<3>(), l = v.template tail<3>();
    const V6 h = detail::inertia_mul<S>(mass, c, Ib, v);  // momentum (hn, hf)
    d.f_world[i] = detail::inertia_mul<S>(mass, c, Ib, d.a_world[i]) + detail::crf<S>(v, h);
    const M3T<S> WA = skew<S>(w) * Ib;
    const S cl = c.dot(l);
    M3T<S> T = WA + WA.transpose() - (c * l.transpose() + l * c.transpose());
    T.diagonal().array() += cl + cl;
    T -= skew<S>(V3T<S>(h.template head<3>()));
    d.IC_world_m[i] = mass;
    d.IC_world_h[i] = c;
    d.IC_world_I[i] = Ib;
    d.BC_world_T[i] = T;
    d.BC_world_P[i] = S(-2) * V3T<S>(h.template tail<3>());
  }
  // subtree sums, tip to base (base coordinates: plain sums)
  sum_subtrees<false>(m, d.IC_world_m, d.IC_world_h, d.IC_world_I, d.BC_world_T, d.BC_world_P,
                      d.f_world);
  // the pairs (axis a of body k, axes of k and of its ancestors)
  for (int k = 1; k <= n; ++k) {
    const bool has_ancestors = m.parent[k] > 0;
    for (int a = m.iv[k]; a < m.iv[k] + joint_nv(m.type[k]); ++a) {
      const V6& sk = d.S_world[a];
      // Ic_k S_a
      const V6 U = detail::inertia_mul<S>(d.IC_world_m[k], d.IC_world_h[k], d.IC_world_I[k], sk);
      // Bc_k' S_a (angular part only): T' s_w + [P]' s_l = T' s_w - P x s_l
      const V3T<S> Z = d.BC_world_T[k].transpose() * sk.template head<3>() -
                       cross<S>(d.BC_world_P[k], V3T<S>(sk.template tail<3>()));
      // columns a of the rows of k's strict ancestors
      V6 G = V6::Zero(), H = V6::Zero();
      if (has_ancestors) {
        G = detail::crf<S>(sk, d.f_world[k]) +
            detail::inertia_mul<S>(d.IC_world_m[k], d.IC_world_h[k], d.IC_world_I[k],
                                   d.psi_world[a]) +
            detail::b_mul<S>(d.BC_world_T[k], d.BC_world_P[k], d.S_prime_world[a]);
        H = detail::b_mul<S>(d.BC_world_T[k], d.BC_world_P[k], sk) +
            detail::inertia_mul<S>(d.IC_world_m[k], d.IC_world_h[k], d.IC_world_I[k],
                                   d.S_cross_world[a]);
      }
      for (int j = k; j > 0; j = m.parent[j]) {
        for (int c = m.iv[j]; c < m.iv[j] + joint_nv(m.type[j]); ++c) {
          dq[a * nv + c] = U.dot(d.psi_world[c]) + Z.dot(d.S_prime_world[c].template head<3>());
          dqd[a * nv + c] = Z.dot(d.S_world[c].template head<3>()) + U.dot(d.S_cross_world[c]);
          if (j != k) {
            dq[c * nv + a] = d.S_world[c].dot(G);
            dqd[c * nv + a] = d.S_world[c].dot(H);
          }
        }
      }
    }
  }
  for (int k = 1; k <= n; ++k) add_joint_friction_rate(m, k, dqd[m.iv[k] * (nv + 1)]);
}

// Derivatives of forward dynamics qdd = FD(q, qd, tau) (all terms of rnea):
//   dqdd/dq = -M^-1 dtau/dq, dqdd/dqd = -M^-1 dtau/dqd at qdd = FD(q, qd, tau), dqdd/dtau = M^-1
// (M with armature; dq a tangent vector with a free-flyer, as in rnea_derivatives), all by the
// tree-sparse factor M = L' L (factorization.hpp's ltl_factor, into d.L). dq, dqd, dtau:
// (nv, nv) row-major; qdd: (nv,) the accelerations (may be d.scratch). Returns false when M
// is not positive definite.
template <class S>
bool forward_dynamics_derivatives(const Model& m, DataTpl<S>& d, const S* q, const S* qd,
                                  const S* tau, S* qdd, S* dq, S* dqd, S* dtau) {
  const int n = m.nv;
  // qdd = M^-1 (tau - bias - damping qd - friction sign(qd)): the inputs are read first
  bias_torques(m, d, q, qd, d.scratch.data());
  detail::crba_lower(m, d, q);
  forward_dynamics_rhs(m, qd, tau, d.scratch.data());
  for (int k = 0; k < n; ++k) qdd[k] = d.scratch[k];
  if (!detail::ltl_factor(m, d)) return false;
  detail::ltl_solve(d, qdd);
  rnea_derivatives(m, d, q, qd, qdd, dq, dqd);
  for (int k = 0; k < n * n; ++k) {
    dq[k] = -dq[k];
    dqd[k] = -dqd[k];
    dtau[k] = S(0);
  }
  for (int k = 0; k < n; ++k) dtau[k * n + k] = S(1);
  S* const blocks[3] = {dq, dqd, dtau};
  detail::ltl_solve_columns(d, blocks);
  return true;
}

}  // namespace robodyn
