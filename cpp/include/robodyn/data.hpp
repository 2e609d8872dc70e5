// The per-call workspace of the algorithms, sized once from a Model.
//
// Data also caches the per-configuration quantities (sin/cos of the joint angles, the
// parent-to-body transforms, the base-to-body poses) so that a second algorithm called at the
// same q reuses them. The cache key is the last q seen; any other q invalidates everything.
#pragma once

#include <Eigen/Core>
#include <Eigen/StdVector>
#include <vector>

#include "robodyn/model.hpp"

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
  // a free-flyer's E and r are computed at level 1)
  VecX q_key;            // the q the cache holds, (nq + 1,): entry nq stays 0 (the angle of
                         // a joint that is not revolute: Model::angle_src)
  int level = 0;         // highest level valid for q_key (0: nothing cached)
  long cache_hits = 0;   // calls that found q_key == q
  long cache_misses = 0;  // calls that recomputed
  AVec<S> s, c;          // sin, cos of q_i + qoff_i (revolute; prismatic: 0, 1), (n+2,): entry
                         // n+1 pads the angles to pairs (update_kinematics)
  AVec<V3> r;            // parent-to-body translation, parent internal frame (level >= 1; a
                         // revolute joint's constant pc is written when the Data is made)
  AVec<M3> E;            // parent-to-body rotation Rc * Rz(q)               (level 2)
  AVec<M3> oR;           // base-to-body rotation                            (level 3)
  AVec<V3> op;           // base-to-body translation                         (level 3)

  // velocities and accelerations in body coordinates, [angular; linear] split in two
  AVec<V3> w, vl;        // spatial velocity of body i
  AVec<V3> wd, al;       // acceleration of body i: angular; classical acceleration of the
                         // body origin (rnea, aba, kane; al[0] = -gravity)
  AVec<V3> fn, ff;       // spatial force on body i: moment about the origin, force
  AVec<M3> W;            // rnea: [wd] + [w][w], maps a body offset to its relative acceleration

  // composite and articulated inertias
  AVec<S> Im;            // composite inertia IC_i of body i's subtree (crba, kane): mass,
  AVec<V3> Ih;           // first moment and rotational inertia about body i's origin, body
  AVec<M3> II;           // axes (complete for every body after crba)
  AVec<M6> IA;           // aba: articulated inertia, 6x6 [angular; linear] about the body
                         // origin, body axes; upper triangle only
  AVec<V6> pA;           // aba: articulated bias force
  AVec<V6> U;            // IA S
  AVec<S> D, u;          // S' IA S (+ armature), joint force minus projected bias
  AVec<V6> cbias;        // aba: Featherstone's c, the velocity-product term of the (classical)
                         // acceleration, body axes
  AVec<S> w2;            // aba: |w_i|^2

  // world-frame quantities for the Coriolis matrix (its joint axes and their rates are sc and
  // scd below)
  AVec<V6> vw;           // body velocities (base frame)
  AVec<M6> Iw, Bw;       // world inertias and the skew Coriolis operators, then composites

  // world-frame quantities of the derivatives and the regressor (rnea_derivatives.hpp,
  // regressor.hpp), vw above shared: per velocity coordinate c (nv), its joint axis S_c (a
  // column of the body's motion subspace), S'_c = v_parent x S_c, psi_c = a_parent x S_c +
  // v_parent x S'_c (the q-derivative of the velocity-product terms) and X_c = (v_body +
  // v_parent) x S_c (= 2 S'_c for a 1-DOF joint: the qd-derivative of the accelerations,
  // less S_c x v), all base frame; per body the rest. coriolis_matrix writes S_c into sc too
  AVec<V6> sc, scd, psi, scx;
  AVec<V6> Sdot_world;   // coriolis_matrix: per velocity coordinate c (nv), the rate of its
                         // axis v_body x S_c (equal to S'_c for a 1-DOF joint), base frame
  AVec<V6> v_ref_world;  // regressor_slotine_li: per body (n+1), the reference velocity J_i v,
                         // base frame
  AVec<V6> aw;           // spatial accelerations of the bodies (base: -gravity), base frame
  AVec<V6> Fw;           // net spatial forces I a + v x* I v, then subtree sums (base frame)
  AVec<S> cm;            // subtree mass
  AVec<V3> cc;           // subtree first moment about the base origin, base frame
  AVec<M3> cI;           // subtree rotational inertia about the base origin, base frame
  AVec<M3> cT;           // subtree sum of the angular block of B(v) = v x* I - I v x + (I v) x-bar
  AVec<V3> cP;           // subtree sum of -2 (linear momentum): B's lower-left block is [cP]

  MatX M;                // mass matrix workspace (nv, nv); sized when the Data is made for
                         // nv <= kEagerMassMatrix, else by the first algorithm that needs it
                         // (a long chain's Data stays O(n) unless M is asked for)
  static constexpr int kEagerMassMatrix = 128;
  // true while every entry of M off H's structural pattern is zero (entry (r, c) with neither
  // of the joints of r and c an ancestor of, or the same as, the other: the mass matrix of a
  // tree is zero there): then crba into M writes the pattern only, as Pinocchio's crba writes
  // data.M, instead of zeroing all of M first (for Talos, 38 x 38, that memset is about 7% of
  // the call). Set when M is sized and by crba; cleared by every other algorithm that writes
  // M (the Cholesky factor fills in). M is the algorithms' workspace: read it, write a copy.
  bool M_pattern = false;
  void size_mass_matrix() {
    if (M.rows() != nv) {
      M.setZero(nv, nv);
      M_pattern = true;
    }
  }
  Eigen::Matrix<S, Eigen::Dynamic, 6> F;  // crba: (nv, 6), row c the force F = IC_k S_k of
                         // column c of M (joint k), [moment; force], in the coordinates of the
                         // body the sweep has reached (one column per component: they vectorise)
  VecX tmp;              // (nv,) scratch
  VecX Linv;             // (nv,) forward_dynamics_derivatives: 1 / L(i, i) of M's Cholesky factor
  M6 Uf;                 // aba, free-flyer: D = IA factorised as L diag L' (L unit lower:
                         // below the diagonal; diag on it; diag L' above it)
  V6 uf;                 // aba, free-flyer: tau - pA, then qdd
};

template <class S>
DataTpl<S>::DataTpl(const Model& m)
    : n(m.n), nq(m.nq), nv(m.nv),
      q_key(VecX::Zero(m.nq + 1)),
      s(m.n + 2, S(0)), c(m.n + 2, S(1)),
      r(m.n + 1, V3::Zero()), E(m.n + 1, M3::Identity()),
      oR(m.n + 1, M3::Identity()), op(m.n + 1, V3::Zero()),
      w(m.n + 1, V3::Zero()), vl(m.n + 1, V3::Zero()),
      wd(m.n + 1, V3::Zero()), al(m.n + 1, V3::Zero()),
      fn(m.n + 1, V3::Zero()), ff(m.n + 1, V3::Zero()), W(m.n + 1, M3::Zero()),
      Im(m.n + 1, S(0)), Ih(m.n + 1, V3::Zero()), II(m.n + 1, M3::Zero()),
      IA(m.n + 1, M6::Zero()), pA(m.n + 1, V6::Zero()), U(m.n + 1, V6::Zero()),
      D(m.n + 1, S(0)), u(m.n + 1, S(0)), cbias(m.n + 1, V6::Zero()), w2(m.n + 1, S(0)),
      vw(m.n + 1, V6::Zero()),
      Iw(m.n + 1, M6::Zero()), Bw(m.n + 1, M6::Zero()),
      sc(m.nv, V6::Zero()), scd(m.nv, V6::Zero()), psi(m.nv, V6::Zero()),
      scx(m.nv, V6::Zero()), Sdot_world(m.nv, V6::Zero()), v_ref_world(m.n + 1, V6::Zero()),
      aw(m.n + 1, V6::Zero()), Fw(m.n + 1, V6::Zero()),
      cm(m.n + 1, S(0)), cc(m.n + 1, V3::Zero()), cI(m.n + 1, M3::Zero()),
      cT(m.n + 1, M3::Zero()), cP(m.n + 1, V3::Zero()),
      M(m.nv <= kEagerMassMatrix ? MatX::Zero(m.nv, m.nv) : MatX()),
      F(Eigen::Matrix<S, Eigen::Dynamic, 6>::Zero(m.nv, 6)), tmp(VecX::Zero(m.nv)),
      Linv(VecX::Zero(m.nv)),
      Uf(M6::Zero()), uf(V6::Zero()) {
  M_pattern = M.rows() == m.nv;  // zeroed above
  // the parent-to-body translation of a revolute joint is the constant pc: valid at every
  // cache level (prismatic joints and a free-flyer write theirs at level 1)
  for (int i = 1; i <= m.n; ++i)
    if (m.type[i] == JointType::Revolute) r[i] = m.pc[i].template cast<S>();
}

using Data = DataTpl<double>;

}  // namespace robodyn
