// The per-call workspace of the algorithms, sized once from a Model.
//
// Data also caches the per-configuration quantities (sin/cos of the joint angles, the
// parent-to-body transforms, the base-to-body poses) so that a second algorithm called at the
// same q reuses them. The cache key is the last q seen; any other q invalidates everything.
//
// Names follow RBDA (Featherstone 2008) where a table has one (v, a, f, IC, F, H, IA, pA, U, D,
// u, c); docs/notation.md maps every field to the book. Per-body arrays are indexed by body,
// (n+1,) with body 0 the world; per-coordinate arrays by velocity coordinate, (nv,). "Body
// axes": body i's frame; "base frame": the world (fixed base) frame, about its origin. Spatial
// vectors are [angular; linear], held as two 3-vectors (_ang, _lin) in the body-frame passes
// and as one 6-vector in the base-frame ones.
#pragma once

#include <Eigen/Core>
#include <Eigen/StdVector>
#include <vector>

#include "robodyn/model/model.hpp"

namespace robodyn {

template <class S>
using AVec = std::vector<S, Eigen::aligned_allocator<S>>;

template <class S>
struct DataTpl {
  using V3 = Eigen::Matrix<S, 3, 1>;
  using M3 = Eigen::Matrix<S, 3, 3>;
  using V6 = Eigen::Matrix<S, 6, 1>;
  using M6 = Eigen::Matrix<S, 6, 6>;
  using MatX = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using VecX = Eigen::Matrix<S, Eigen::Dynamic, 1>;

  explicit DataTpl(const Model& m);

  int n;                 // moving bodies (Model::n)
  int nq, nv;            // configuration and velocity sizes (Model::nq, Model::nv)

  // configuration cache (levels: 1 = sin/cos and translations, 2 = rotations, 3 = poses;
  // a free-flyer's Xup_E and Xup_r are computed at level 1)
  VecX q_key;            // the q the cache holds, (nq + 1,): entry nq stays 0 (the angle of
                         // a joint that is not revolute: Model::angle_src)
  int cache_level = 0;   // highest level valid for q_key (0: nothing cached)
  long cache_hits = 0;   // calls that found q_key == q
  long cache_misses = 0;  // calls that recomputed
  AVec<S> sin_q, cos_q;  // sin, cos of q_i + qoff_i (revolute; prismatic: 0, 1), (n+2,): entry
                         // n+1 pads the angles to pairs (update_kinematics)
  AVec<V3> Xup_r;        // link transform Xup[i]: the body origin in parent axes, (n+1,)
                         // (level >= 1; a revolute joint's constant pc is written when the Data
                         // is made)
  AVec<M3> Xup_E;        // link transform Xup[i]: the rotation Rc Rz(q) from body axes to parent
                         // axes, (n+1,)                                     (level 2)
  AVec<M3> world_R;      // body i's pose in the base frame: rotation (body to base), (n+1,)
                         //                                                  (level 3)
  AVec<V3> world_p;      // body i's pose in the base frame: origin, base axes, (n+1,) (level 3)

  // body-frame motion and force of the passes (rnea, aba, kane, kinematics), body axes, (n+1,)
  AVec<V3> v_ang, v_lin;  // v[i]: angular velocity; velocity of the body origin (kinematics,
                          // momentum: the passes of rnea, aba and kane need no v_lin)
  AVec<V3> a_ang, a_lin;  // a[i] in the classical form: angular acceleration; classical
                          // acceleration of the body origin (a[0] = (0, -gravity))
  AVec<V3> f_ang, f_lin;  // f[i]: net force on body i, then (rnea, kane) with its subtree's:
                          // moment about the body origin; force
  AVec<M3> W_acc;        // rnea: [a_ang] + [v_ang][v_ang], maps a body-fixed offset to its
                         // acceleration relative to the origin, body axes, (n+1,)

  // composite and articulated inertias, body axes about the body origin, (n+1,)
  AVec<S> IC_m;          // IC[i], the composite inertia of body i's subtree (crba, kane): mass,
  AVec<V3> IC_h;         // first moment,
  AVec<M3> IC_I;         // rotational inertia (complete for every body after crba)
  AVec<M6> IA;           // aba: IA[i], articulated inertia, 6x6, upper triangle only
  AVec<V6> pA;           // aba: pA[i], articulated bias force
  AVec<V6> U;            // aba: U[i] = IA S
  AVec<S> D, u;          // aba: D[i] = S' IA S + armature; u[i] = tau - S' pA - joint friction
  AVec<V6> c_bias;       // aba: c[i], the velocity-product acceleration in the classical form
  AVec<S> w_sq;          // aba: |v_ang[i]|^2

  // base-frame quantities (coriolis.hpp, rnea_derivatives.hpp, regressor.hpp, centroidal.hpp)
  AVec<V6> v_world;      // body velocities v[i], (n+1,)
  AVec<V6> a_world;      // body accelerations a[i] (a[0] = (0, -gravity)), (n+1,)
  AVec<V6> f_world;      // derivatives: net forces I a + v x* I v, then subtree sums, (n+1,)
  AVec<M6> I_world;      // coriolis: body inertias, then subtree sums (composites), (n+1,)
  AVec<M6> B_world;      // coriolis: Coriolis operators (v x* I - I v x + (I v) x-bar) / 2,
                         // then subtree sums, (n+1,)
  AVec<V6> S_world;      // per velocity coordinate c (nv,): its joint axis S_c (a column of
                         // the body's motion subspace)
  AVec<V6> S_prime_world;  // derivatives: S'_c = v_parent x S_c, (nv,)
  AVec<V6> psi_world;    // derivatives: psi_c = a_parent x S_c + v_parent x S'_c (the
                         // q-derivative of the velocity-product terms), (nv,)
  AVec<V6> S_cross_world;  // derivatives: (v_body + v_parent) x S_c (= 2 S'_c for a 1-DOF
                           // joint: the qd-derivative of the accelerations, less S_c x v), (nv,)
  AVec<V6> Sdot_world;   // coriolis: the rate of the axis, v_body x S_c (equal to S'_c for a
                         // 1-DOF joint), (nv,)
  AVec<V6> v_ref_world;  // regressor_slotine_li: the reference velocity J_i v, (n+1,)
  AVec<S> IC_world_m;    // derivatives, centroidal: the subtree's composite inertia about the
  AVec<V3> IC_world_h;   // base origin: mass, first moment,
  AVec<M3> IC_world_I;   // rotational inertia (centroidal: body 0 holds the whole tree's)
  AVec<M3> BC_world_T;   // derivatives: subtree sum of the angular block of
                         // B(v) = v x* I - I v x + (I v) x-bar, (n+1,)
  AVec<V3> BC_world_P;   // derivatives: subtree sum of -2 (linear momentum): B's lower-left
                         // block is [BC_world_P], (n+1,)

  MatX H;                // the joint-space inertia H (the mass matrix), (nv, nv); forward
                         // dynamics factorises it in place. Sized when the Data is made for
                         // nv <= kEagerMassMatrix, else by the first algorithm that needs it
                         // (a long chain's Data stays O(n) unless H is asked for)
  static constexpr int kEagerMassMatrix = 128;
  // true while every entry of H off its structural pattern is zero (entry (r, c) with neither
  // of the joints of r and c an ancestor of, or the same as, the other: the mass matrix of a
  // tree is zero there): then crba into H writes the pattern only, as Pinocchio's crba writes
  // data.M, instead of zeroing all of H first (for Talos, 38 x 38, that memset is about 7% of
  // the call). Set when H is sized and by crba; cleared by every other algorithm that writes
  // H (the Cholesky factor fills in). H is the algorithms' workspace: read it, write a copy.
  bool H_pattern = false;
  void size_mass_matrix() {
    if (H.rows() != nv) {
      H.setZero(nv, nv);
      H_pattern = true;
    }
  }
  Eigen::Matrix<S, Eigen::Dynamic, 6> F;  // crba: F = IC_k S_k, (nv, 6): row c the force of
                         // column c of H (joint k), [moment; force], in the coordinates of the
                         // body the pass has reached (one column per component: they vectorise)
  VecX scratch;          // (nv,) scratch (bias torques, right-hand sides, accelerations)
  TreeFactorPattern L_pattern;  // where L's entries are (model.hpp); made with L
  VecX L;                // M = L' L, the tree-sparse factor of H (factorization.hpp's ltl_factor),
                         // its rows packed (L_pattern), (L_pattern.size(),). Sized when the Data
                         // is made for nv <= kEagerMassMatrix, else by the first ltl_factor
  VecX L_inv_diag;       // (nv,) 1 / L(i, i)
  void size_factor(const Model& m) {
    if (L_pattern.row_start.empty()) {
      L_pattern = tree_factor_pattern(m);
      L.setZero(L_pattern.size());
    }
  }
  M6 D_free;             // aba, free-flyer: its D = IA factorised as L diag L' (L unit lower:
                         // below the diagonal; diag on it; diag L' above it)
  V6 u_free;             // aba, free-flyer: its u = tau - pA, then qdd
};

template <class S>
DataTpl<S>::DataTpl(const Model& m)
    : n(m.n), nq(m.nq), nv(m.nv),
      q_key(VecX::Zero(m.nq + 1)),
      sin_q(m.n + 2, S(0)), cos_q(m.n + 2, S(1)),
      Xup_r(m.n + 1, V3::Zero()), Xup_E(m.n + 1, M3::Identity()),
      world_R(m.n + 1, M3::Identity()), world_p(m.n + 1, V3::Zero()),
      v_ang(m.n + 1, V3::Zero()), v_lin(m.n + 1, V3::Zero()),
      a_ang(m.n + 1, V3::Zero()), a_lin(m.n + 1, V3::Zero()),
      f_ang(m.n + 1, V3::Zero()), f_lin(m.n + 1, V3::Zero()), W_acc(m.n + 1, M3::Zero()),
      IC_m(m.n + 1, S(0)), IC_h(m.n + 1, V3::Zero()), IC_I(m.n + 1, M3::Zero()),
      IA(m.n + 1, M6::Zero()), pA(m.n + 1, V6::Zero()), U(m.n + 1, V6::Zero()),
      D(m.n + 1, S(0)), u(m.n + 1, S(0)), c_bias(m.n + 1, V6::Zero()), w_sq(m.n + 1, S(0)),
      v_world(m.n + 1, V6::Zero()), a_world(m.n + 1, V6::Zero()),
      f_world(m.n + 1, V6::Zero()),
      I_world(m.n + 1, M6::Zero()), B_world(m.n + 1, M6::Zero()),
      S_world(m.nv, V6::Zero()), S_prime_world(m.nv, V6::Zero()), psi_world(m.nv, V6::Zero()),
      S_cross_world(m.nv, V6::Zero()), Sdot_world(m.nv, V6::Zero()),
      v_ref_world(m.n + 1, V6::Zero()),
      IC_world_m(m.n + 1, S(0)), IC_world_h(m.n + 1, V3::Zero()),
      IC_world_I(m.n + 1, M3::Zero()),
      BC_world_T(m.n + 1, M3::Zero()), BC_world_P(m.n + 1, V3::Zero()),
      H(m.nv <= kEagerMassMatrix ? MatX::Zero(m.nv, m.nv) : MatX()),
      F(Eigen::Matrix<S, Eigen::Dynamic, 6>::Zero(m.nv, 6)), scratch(VecX::Zero(m.nv)),
      L_inv_diag(VecX::Zero(m.nv)),
      D_free(M6::Zero()), u_free(V6::Zero()) {
  H_pattern = H.rows() == m.nv;  // zeroed above
  if (m.nv <= kEagerMassMatrix) size_factor(m);
  // the parent-to-body translation of a revolute joint is the constant pc: valid at every
  // cache level (prismatic joints and a free-flyer write theirs at level 1)
  for (int i = 1; i <= m.n; ++i)
    if (m.type[i] == JointType::Revolute) Xup_r[i] = m.pc[i].template cast<S>();
}

using Data = DataTpl<double>;

}  // namespace robodyn
