// Composite-rigid-body algorithm (Featherstone 2008, RBDA Table 6.2): the joint-space inertia
// matrix H(q) = M(q) + diag(armature), and forward dynamics by H qdd = tau - C qd - g with a
// Cholesky factorisation.
//
// Table 6.2 in body coordinates, its two passes merged into one sweep from the tips to the base
// and its inner loop turned inside out. The book carries each column's force F = IC_i S_i down
// the path to the base, one column after the other; here every column's force moves one body
// at a time, all the forces of body i's subtree together:
//
//   IC_i = I_i                                  (i = 1..N)
//   for i = N to 1:
//     F_c = IC_i S_i                            (the columns c of joint i; IC_i is complete)
//     H_ci = S_i^T F_c,  H_ic = H_ci^T          (every column c of i's subtree, its F_c in
//                                                body i's coordinates)
//     if λ(i) != 0:
//       IC_λ(i) += λX_i^* IC_i iX_λ(i)
//       F_c = λX_i^* F_c                        (every column c of i's subtree)
//
// The products are the book's, one for one (the same operation count); the columns' moves are
// independent of each other, so they pipeline (and, for double, go two columns at a time
// through the lanes of a D2: Xup::forces_to_parent) instead of forming one dependent chain per
// column. A subtree's columns are runs of consecutive indices (Model::subtree_runs; one run in
// depth-first order). S_i's columns are unit axes in body coordinates for every joint kind
// (revolute e_z, prismatic the linear e_z, a free-flyer all six), so S_i^T F picks components
// of F: the entries H_cj of joint i's columns j are stored as the forces of its subtree arrive
// in body i's coordinates (ParentEntries, handed to the move), those of joint i's own block when
// its F_c are made.
//
// Where the speed comes from, each inside a type or a build-time kind, not in the pass: the
// link transform X (link.hpp's Xup) knows its kind at compile time and moves a run of columns
// two at a time through the lanes of a D2, a signed permutation relabelling the components in
// registers (forces_to_parent); S's columns are unit axes, so IC S and S^T F pick components
// (joint_block, ParentEntries); a free-flyer's block is IC_1 itself (free_flyer_block); H's
// structural zeros are stored once (a memset), not at all when H is d.H and holds them
// already (DataTpl::M_pattern); each entry is stored at its mirror while in a register.
//
// One dispatch per body (Model::step: its link kind, the relabelling of a signed permutation,
// its parent's joint type; with_step) makes the step's kinds compile-time constants. The cases
// of a revolute link on a revolute joint or on the world (every body of an arm) and of a
// free-flyer (body 1: its block alone) are inlined into the sweep; the others (a prismatic
// link or parent, the free-flyer's children) are calls, one small function per case: the 54
// cases inlined into one function were most of the build's time (docs/build.md).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

// the out-of-line steps of crba's sweep (crba_step_call)
#if !defined(ROBODYN_STEP)
#if defined(__GNUC__)
#define ROBODYN_STEP __attribute__((noinline))
#else
#define ROBODYN_STEP
#endif
#endif

namespace robodyn {

namespace detail {

// index in [angular; linear] of the unit axis that is column k of body i's S
inline int joint_axis(JointType t, int k) {
  switch (t) {
    case JointType::Revolute: return 2;
    case JointType::Prismatic: return 5;
    default: return k;
  }
}

// IC e_s for the composite inertia (mass, h, Ibar) and the unit axis e_s of a 6-vector:
// (Ibar e, e x h) for an angular axis, (h x e, mass e) for a linear one (no arithmetic)
template <class S>
ROBODYN_INLINE void inertia_times_axis(const S& mass, const V3T<S>& h, const M3T<S>& Ibar, int s,
                                       V3T<S>& n, V3T<S>& f) {
  const S z(0);
  switch (s) {
    case 0: n = Ibar.col(0); f = V3T<S>(z, S(-h[2]), h[1]); break;
    case 1: n = Ibar.col(1); f = V3T<S>(h[2], z, S(-h[0])); break;
    case 2: n = Ibar.col(2); f = V3T<S>(S(-h[1]), h[0], z); break;
    case 3: n = V3T<S>(z, h[2], S(-h[1])); f = V3T<S>(mass, z, z); break;
    case 4: n = V3T<S>(S(-h[2]), z, h[0]); f = V3T<S>(z, mass, z); break;
    default: n = V3T<S>(h[1], S(-h[0]), z); f = V3T<S>(z, z, mass); break;
  }
}

// The entries of H in the columns j0 + k of a parent joint from a force v (parent
// coordinates) of a column c of its subtree: H_c,j0+k = S_k^T v = v[joint_axis(t, k)], and with
// kBoth the mirrors H_j0+k,c. Handed to Xup::forces_to_parent as the forces move.
template <bool kBoth, JointType t, class S>
struct ParentEntries {
  S* H;
  std::ptrdiff_t nv, j0;
  ROBODYN_INLINE void operator()(std::ptrdiff_t c, const S (&v)[6]) const {
    for (int k = 0; k < joint_nv(t); ++k) {
      const S h = v[joint_axis(t, k)];
      H[(j0 + k) * nv + c] = h;
      if (kBoth) H[c * nv + j0 + k] = h;
    }
  }
#if ROBODYN_HAVE_D2
  // columns c and c + 1 in the lanes of v (S = double)
  ROBODYN_INLINE void pair(std::ptrdiff_t c, const D2 (&v)[6]) const {
    for (int k = 0; k < joint_nv(t); ++k) store_pair(H + (j0 + k) * nv + c, v[joint_axis(t, k)]);
    if (!kBoth) return;
    if constexpr (t == JointType::FreeFlyer) {
      // rows c and c + 1 of the six columns: (v0, v1), (v2, v3), (v4, v5) turned into lanes
      for (int k = 0; k < 6; k += 2) {
        D2 a = v[k], b = v[k + 1];
        transpose_pair(a, b);
        store_pair(H + c * nv + j0 + k, a);
        store_pair(H + (c + 1) * nv + j0 + k, b);
      }
    } else {
      const D2& h = v[joint_axis(t, 0)];
      store_lanes(H + c * nv + j0, H + (c + 1) * nv + j0, h);
    }
  }
#endif
};

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

// F = IC_i S_i into F's columns ci + k (F[j][c]: component j of column c's force) and joint i's
// own block H_ii = S_i^T F (+ armature) into H at (ci, ci), for a joint of type t: S's columns
// are unit axes (joint_axis), so both pick components of IC_i. A free-flyer (body 1 on the
// world: its forces go no further) writes its block as IC_1 itself, without F.
template <bool kBoth, JointType t, class S>
ROBODYN_INLINE void joint_block(const S& mass, const V3T<S>& h, const M3T<S>& Ibar,
                                const S& armature, S* const* F, S* H, std::ptrdiff_t nv,
                                std::ptrdiff_t ci) {
  if constexpr (t == JointType::FreeFlyer) {
    free_flyer_block<kBoth>(mass, h, Ibar, armature, H + ci * nv + ci, nv);
  } else {
    const int s = joint_axis(t, 0);
    V3T<S> n, f;
    inertia_times_axis<S>(mass, h, Ibar, s, n, f);
    for (int j = 0; j < 3; ++j) {
      F[j][ci] = n[j];
      F[3 + j][ci] = f[j];
    }
    H[ci * nv + ci] = (s < 3 ? n[s] : f[s - 3]) + armature;  // (+ 0 changes no positive entry)
  }
}

// IC_i = I_i for every body (for double a copy of the model's arrays, bytes for bytes)
template <class S>
void set_rigid_inertias(const Model& m, DataTpl<S>& d) {
  if constexpr (std::is_same<S, double>::value) {
    const std::size_t n = std::size_t(m.n);
    std::memcpy(d.IC_m.data() + 1, m.mass.data() + 1, n * sizeof(double));
    std::memcpy(static_cast<void*>(d.IC_h.data() + 1), m.h.data() + 1, n * sizeof(Vec3));
    std::memcpy(static_cast<void*>(d.IC_I.data() + 1), m.Ibar.data() + 1, n * sizeof(Mat3));
  } else {
    for (int i = 1; i <= m.n; ++i) {
      d.IC_m[i] = S(m.mass[i]);
      d.IC_h[i] = m.h[i].template cast<S>();
      d.IC_I[i] = m.Ibar[i].template cast<S>();
    }
  }
}

// What the steps of one sweep share: H (nv, nv), column j at H + j nv, and F[j][c]
template <class S>
struct CrbaPass {
  const Model& m;
  DataTpl<S>& d;
  S* H;
  S* F[6];
};

// Table 6.2's loop body for body i, its link kind, the relabelling of a signed-permutation
// link and its parent's joint type the compile-time constants of its case C (Model::step)
template <bool kBoth, int C, class S>
ROBODYN_INLINE void crba_step(const CrbaPass<S>& pass, int i) {
  const Model& m = pass.m;
  DataTpl<S>& d = pass.d;
  // F_i = IC_i S_i ;  H_ii = S_i^T F_i
  joint_block<kBoth, joint_of(step_kind(C))>(d.IC_m[i], d.IC_h[i], d.IC_I[i], S(m.armature[i]),
                                             pass.F, pass.H, m.nv, m.iv[i]);
  // (a free-flyer joins body 1 to the world, a Model invariant: its forces go no further)
  if constexpr (joint_of(step_kind(C)) == JointType::FreeFlyer) return;
  const int p = m.parent[i];
  if (p == 0) return;
  const Xup<S, step_relabel(C)> X(m, d, i, std::integral_constant<LinkKind, step_kind(C)>());
  // IC_λ(i) = IC_λ(i) + λ(i)X_i^* IC_i iX_λ(i)
  X.transport_inertia(d.IC_m[i], d.IC_h[i], d.IC_I[i], d.IC_m[p], d.IC_h[p], d.IC_I[p]);
  // F_c = λ(i)X_i^* F_c ;  H_λ(i),c = S_λ(i)^T F_c   (every column c of i's subtree)
  const ParentEntries<kBoth, step_parent(C), S> Hp{pass.H, m.nv, m.iv[p]};
  for (int e = m.subtree_begin[i]; e < m.subtree_begin[i + 1]; ++e)
    X.forces_to_parent(pass.F, m.subtree_runs[e][0], m.subtree_runs[e][1], Hp);
}

// the same, out of line: one small function per case
template <bool kBoth, int C, class S>
ROBODYN_STEP void crba_step_call(const Model& m, DataTpl<S>& d, S* H, int i) {
  const CrbaPass<S> pass{m, d, H, {d.F.col(0).data(), d.F.col(1).data(), d.F.col(2).data(),
                                   d.F.col(3).data(), d.F.col(4).data(), d.F.col(5).data()}};
  crba_step<kBoth, C>(pass, i);
}

// The cases inlined into the sweep: a revolute link on a revolute joint or on the world
// (every body of an arm) and a free-flyer (its block alone). The others (a prismatic link or
// parent, the free-flyer's children) are calls: inlining all 54 cases into one function was
// most of the build's time.
constexpr bool crba_step_inlined(int c) {
  return joint_of(step_kind(c)) == JointType::FreeFlyer ||
         (joint_of(step_kind(c)) == JointType::Revolute &&
          step_parent(c) == JointType::Revolute);
}

// Table 6.2 into H, column-major (nv, nv), column j at H + j nv: H zeroed unless `zeroed` says
// its entries off the pattern are zero already (DataTpl::M_pattern), then in each column j of
// joint i the rows c >= j of i's subtree (the lower triangle) and, with kBoth, their mirrors
// (the upper triangle; without kBoth it is not written)
template <bool kBoth, class S>
void crba_sweep(const Model& m, DataTpl<S>& d, const S* q, S* H, bool zeroed = false) {
  update_kinematics(m, d, q, 1);
  if (!zeroed)  // the structural zeros (the rows outside each column's subtree), all at once
    Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>(H, std::ptrdiff_t(m.nv) * m.nv).setZero();
  const CrbaPass<S> pass{m, d, H, {d.F.col(0).data(), d.F.col(1).data(), d.F.col(2).data(),
                                   d.F.col(3).data(), d.F.col(4).data(), d.F.col(5).data()}};
  set_rigid_inertias(m, d);  // IC_i = I_i
  for (int i = m.n; i >= 1; --i)
    with_step(m, i, [&](auto C) ROBODYN_INLINE_LAMBDA {
      constexpr int c = decltype(C)::value;
      if constexpr (crba_step_inlined(c))
        crba_step<kBoth, c>(pass, i);
      else  // (unlikely: the inlined steps keep the sweep's values in registers)
        [[unlikely]] crba_step_call<kBoth, c>(m, d, H, i);
    });
}

// Table 6.2 into the lower triangle of d.H (see crba_sweep); the strict upper triangle is not
// written (zero, or what an earlier crba left there)
template <class S>
void crba_lower(const Model& m, DataTpl<S>& d, const S* q) {
  d.size_mass_matrix();
  crba_sweep<false>(m, d, q, d.H.data(), d.H_pattern);
  d.H_pattern = true;
}

}  // namespace detail

// Joint-space inertia matrix H(q) = M(q) + diag(armature) into d.H, (nv, nv), both triangles.
// q (nq,). Also leaves the composite inertias IC_i = (d.IC_m, d.IC_h, d.IC_I) of every subtree (body
// axes, about body i's origin). Only H's pattern is written when d.H holds zeros off it
// (DataTpl::M_pattern: after an earlier crba), else all of d.H. d.H is the algorithms'
// workspace: a caller that changes it in place (factorises it, adds to it) must clear
// d.H_pattern or work on a copy, or the next crba keeps what it left off the pattern.
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q) {
  d.size_mass_matrix();
  detail::crba_sweep<true>(m, d, q, d.H.data(), d.H_pattern);
  d.H_pattern = true;
}

// H(q) as above into out, (nv, nv) (symmetric: row- and column-major alike), both triangles
// written by the sweep. d.H is not used (nor sized).
template <class S>
void crba(const Model& m, DataTpl<S>& d, const S* q, S* out) {
  detail::crba_sweep<true>(m, d, q, out);
}

// Forward dynamics by H(q) qdd = tau - C(q, qd) qd - g(q) - damping qd - friction sign(qd).
// q (nq,), qd, tau, qdd (nv,); qdd may alias the inputs. Returns false when H is not positive
// definite.
template <class S>
bool forward_dynamics_crba(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau,
                           S* qdd) {
  // the bias first: inputs are read before qdd is written
  bias_torques(m, d, q, qd, d.scratch.data());
  detail::crba_lower(m, d, q);
  forward_dynamics_rhs(m, qd, tau, d.scratch.data());
  for (int k = 0; k < m.nv; ++k) qdd[k] = d.scratch[k];
  return cholesky_solve(d, qdd);
}

}  // namespace robodyn
