// Composite-rigid-body algorithm (Featherstone 2008, RBDA Table 6.2): the joint-space inertia
// matrix H(q) = M(q) + diag(armature), and forward dynamics by H qdd = tau - C qd - g with a
// Cholesky factorisation.
//
// Table 6.2 in body coordinates, its two loops merged into one pass from the tips to the base
// and its inner loop turned inside out: the book carries each column's force F = IC_i S_i down
// the path to the base one column after the other; here all the forces of body i's subtree
// move to the parent together, one body at a time:
//
//   IC_i = I_i                                          (i = 1..N)
//   for i = N to 1:
//     F_i = IC_i S_i;  H_ii = S_i^T F_i                 (IC_i is complete)
//     if λ(i) != 0:
//       IC_λ(i) = IC_λ(i) + λ(i)X_i^* IC_i iX_λ(i)
//       F_c = λ(i)X_i^* F_c;  H_λ(i),c = S_λ(i)^T F_c   (every column c of i's subtree)
//
// (H_ij = H_ji^T: each entry is also stored at its mirror while in a register.) The products are
// the book's, one for one. Where the speed comes from, each inside its type: the link
// transform X (link.hpp's Xup) knows its kind at compile time (one dispatch per body,
// with_link) and moves a run of columns two at a time through the lanes of a D2, a signed
// permutation relabelling the components for free (forces_to_parent); S's columns are unit
// axes, so IC S and S^T F pick components (inertia.hpp); a free-flyer's block is IC itself
// (free_flyer_block); a subtree's columns are runs of consecutive indices
// (Model::subtree_runs); H's structural zeros are stored once (a memset), not at all when H is
// d.M and holds them already (DataTpl::M_pattern).
#pragma once

#include <cmath>
#include <cstddef>

#include "robodyn/data.hpp"
#include "robodyn/inertia.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/link.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"

namespace robodyn {

namespace detail {

// A free-flyer's block of H, at B (column-major, column k at B + k nv): the composite inertia
// IC = (mass, h, Ibar) of its subtree as the 6x6 matrix [[Ibar, [h]x], [-[h]x, mass 1]] ([angular;
// linear]; S = 1, so entry (l, k) is component k of IC e_l: inertia_times_axis's values, entry
// for entry), the armature added on the diagonal; the strict upper triangle too with kBoth
template <bool kBoth, class S>
ROBODYN_INLINE void free_flyer_block(const S& mass, const V3T<S>& h, const M3T<S>& Ibar,
                                     const S& armature, S* B, std::ptrdiff_t nv) {
  const S z(0);
  const S e[6][6] = {{Ibar(0, 0), Ibar(1, 0), Ibar(2, 0), z, S(-h[2]), h[1]},  // IC e_0
                     {Ibar(0, 1), Ibar(1, 1), Ibar(2, 1), h[2], z, S(-h[0])},
                     {Ibar(0, 2), Ibar(1, 2), Ibar(2, 2), S(-h[1]), h[0], z},
                     {z, h[2], S(-h[1]), mass, z, z},
                     {S(-h[2]), z, h[0], z, mass, z},
                     {h[1], S(-h[0]), z, z, z, mass}};  // IC e_5
  for (int k = 0; k < 6; ++k) {
    B[k * nv + k] = e[k][k] + armature;
    for (int l = k + 1; l < 6; ++l) {
      B[k * nv + l] = e[l][k];
      if (kBoth) B[l * nv + k] = e[l][k];
    }
  }
}

// F_i = IC_i S_i into F's columns ci + k (F[j][c]: component j of column c's force) and
// H_ii = S_i^T F_i (+ armature) into H's block at (ci, ci), for a joint of type t. A free-flyer
// (body 1 on the world: its forces go no further) writes its block as IC itself, without F.
template <bool kBoth, JointType t, class S>
ROBODYN_INLINE void joint_block(const InertiaRef<S>& IC, const S& armature, S* const* F, S* H,
                                std::ptrdiff_t nv, std::ptrdiff_t ci) {
  if constexpr (t == JointType::FreeFlyer) {
    free_flyer_block<kBoth>(IC.mass, IC.h, IC.Ibar, armature, H + ci * nv + ci, nv);
  } else {
    // (1 DOF) F = IC e_s for S's axis s; H_ii = F[s]
    const int s = joint_axis(t, 0);
    V3T<S> n, f;
    inertia_times_axis<S>(IC.mass, IC.h, IC.Ibar, s, n, f);
    for (int j = 0; j < 3; ++j) {
      F[j][ci] = n[j];
      F[3 + j][ci] = f[j];
    }
    H[ci * nv + ci] = (s < 3 ? n[s] : f[s - 3]) + armature;  // (+ 0 changes no positive entry)
  }
}

// H_λ,c = S_λ^T F_c for the columns c of a subtree as their forces reach its parent λ (in F,
// parent coordinates), and with kBoth the mirrors H_c,λ. S_λ's column k is the unit axis
// joint_axis(t, k), so an entry is a component of F_c: the first (of a free-flyer's six, the
// others in rest()) as each force arrives (forces_to_parent's sink).
template <bool kBoth, class S>
struct ParentRows {
  S* H;
  std::ptrdiff_t nv, j0;  // H (nv, nv), the parent's first column j0
  S* const* F;
  JointType t;            // the parent's joint
  const S* Fa;            // F's component joint_axis(t, 0)
  ROBODYN_INLINE ParentRows(S* H_, std::ptrdiff_t nv_, std::ptrdiff_t j0_, JointType t_,
                            S* const* F_)
      : H(H_), nv(nv_), j0(j0_), F(F_), t(t_), Fa(F_[joint_axis(t_, 0)]) {}
  ROBODYN_INLINE void operator()(std::ptrdiff_t c) const {
    const S h = Fa[c];
    H[j0 * nv + c] = h;
    if (kBoth) H[c * nv + j0] = h;
  }
#if ROBODYN_HAVE_D2
  // columns c and c + 1 (S = double)
  ROBODYN_INLINE void pair(std::ptrdiff_t c) const {
    const D2 h = load_pair(Fa + c);
    store_pair(H + j0 * nv + c, h);
    if (kBoth) store_lanes(H + c * nv + j0, H + (c + 1) * nv + j0, h);
  }
#endif
  // a free-flyer parent's other five rows for the columns [lo, hi)
  void rest(int lo, int hi) const {
    if (t != JointType::FreeFlyer) return;
    for (int k = 1; k < 6; ++k)
      for (std::ptrdiff_t c = lo; c < hi; ++c) {
        const S h = F[k][c];
        H[(j0 + k) * nv + c] = h;
        if (kBoth) H[c * nv + j0 + k] = h;
      }
  }
};

// Table 6.2 into H, column-major (nv, nv), column j at H + j nv: H zeroed unless `zeroed` says
// its entries off the pattern are zero already (DataTpl::M_pattern), then in each column j of
// joint i the rows c >= j of i's subtree (the lower triangle) and, with kBoth, their mirrors
// (the upper triangle; without kBoth it is not written). Leaves IC_i in d (composite_inertia).
template <bool kBoth, class S>
void crba_sweep(const Model& m, DataTpl<S>& d, const S* q, S* H, bool zeroed = false) {
  update_kinematics(m, d, q, 1);
  const std::ptrdiff_t nv = m.nv;
  if (!zeroed) Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>(H, nv * nv).setZero();
  S* F[6];  // F[j][c]: component j of column c's force ([moment; force], d.F's columns)
  for (int j = 0; j < 6; ++j) F[j] = d.F.col(j).data();
  set_rigid_inertias(m, d);  // IC_i = I_i
  for (int i = m.n; i >= 1; --i)
    with_link(m, i, [&](auto K) ROBODYN_INLINE_LAMBDA {
      const Xup<S> X(m, d, i, K);  // λ(i)X_i, its kind a compile-time constant
      const InertiaRef<S> IC = composite_inertia(d, i);
      // F_i = IC_i S_i, H_ii = S_i^T F_i (+ armature)
      joint_block<kBoth, joint_of(decltype(K)::value)>(IC, S(m.armature[i]), F, H, nv, m.iv[i]);
      const int p = m.parent[i];
      if (p == 0) return;
      // IC_λ(i) = IC_λ(i) + λ(i)X_i^* IC_i iX_λ(i)
      X.transport_inertia(IC, composite_inertia(d, p));
      // F_c = λ(i)X_i^* F_c, H_λ(i),c = S_λ(i)^T F_c for every column c of i's subtree
      const ParentRows<kBoth, S> Hp(H, nv, m.iv[p], m.type[p], F);
      for (int e = m.subtree_begin[i]; e < m.subtree_begin[i + 1]; ++e) {
        const auto& run = m.subtree_runs[e];
        X.forces_to_parent(F, run[0], run[1], Hp);
        Hp.rest(run[0], run[1]);
      }
    });
}

// Table 6.2 into the lower triangle of d.M (see crba_sweep); the strict upper triangle is not
// written (zero, or what an earlier crba left there)
template <class S>
void crba_lower(const Model& m, DataTpl<S>& d, const S* q) {
  d.size_mass_matrix();
  crba_sweep<false>(m, d, q, d.M.data(), d.M_pattern);
  d.M_pattern = true;
}

}  // namespace detail

// Joint-space inertia matrix H(q) = M(q) + diag(armature) into d.M, (nv, nv), both triangles.
// q (nq,). Also leaves the composite inertias IC_i = (d.Im, d.Ih, d.II) of every subtree (body
// axes, about body i's origin). Only H's pattern is written when d.M holds zeros off it
// (DataTpl::M_pattern: after an earlier crba), else all of d.M. d.M is the algorithms'
// workspace: a caller that changes it in place (factorises it, adds to it) must clear
// d.M_pattern or work on a copy, or the next crba keeps what it left off the pattern.
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q) {
  d.size_mass_matrix();
  detail::crba_sweep<true>(m, d, q, d.M.data(), d.M_pattern);
  d.M_pattern = true;
}

// H(q) as above into out, (nv, nv) (symmetric: row- and column-major alike), both triangles
// written by the sweep. d.M is not used (nor sized).
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q, S* out) {
  detail::crba_sweep<true>(m, d, q, out);
}

// In-place Cholesky H = L L^T on the lower triangle of d.M, then solves L L^T x = b (in b),
// b (nv,). Returns false when H is not positive definite.
template <class S>
bool cholesky_solve(DataTpl<S>& d, S* b) {
  using std::sqrt;
  auto& M = d.M;
  d.M_pattern = false;  // the factor fills in
  const int n = d.nv;
  for (int j = 0; j < n; ++j) {
    S djj = M(j, j);
    for (int k = 0; k < j; ++k) djj -= M(j, k) * M(j, k);
    if (!(djj > S(0))) return false;
    const S ljj = sqrt(djj);
    M(j, j) = ljj;
    const S inv = S(1) / ljj;
    for (int i = j + 1; i < n; ++i) {
      S x = M(i, j);
      for (int k = 0; k < j; ++k) x -= M(i, k) * M(j, k);
      M(i, j) = x * inv;
    }
  }
  for (int i = 0; i < n; ++i) {
    S x = b[i];
    for (int k = 0; k < i; ++k) x -= M(i, k) * b[k];
    b[i] = x / M(i, i);
  }
  for (int i = n - 1; i >= 0; --i) {
    S x = b[i];
    for (int k = i + 1; k < n; ++k) x -= M(k, i) * b[k];
    b[i] = x / M(i, i);
  }
  return true;
}

// Forward dynamics by H(q) qdd = tau - C(q, qd) qd - g(q) - damping qd - friction sign(qd).
// q (nq,), qd, tau, qdd (nv,); qdd may alias the inputs. Returns false when H is not positive
// definite.
template <class S>
bool forward_dynamics_crba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau,
                           S* qdd) {
  // the bias first: inputs are read before qdd is written
  bias_torques(m, d, q, qd, d.tmp.data());
  detail::crba_lower(m, d, q);
  forward_dynamics_rhs(m, qd, tau, d.tmp.data());
  for (int k = 0; k < m.nv; ++k) qdd[k] = d.tmp[k];
  return cholesky_solve(d, qdd);
}

}  // namespace robodyn
