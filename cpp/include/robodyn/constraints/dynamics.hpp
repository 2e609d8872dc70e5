// Constrained forward dynamics and the operational-space inverse inertia of loop constraints
// (constraints/loop.hpp).
//
//   M qdd + h = tau + J' lam,   J qdd = -gamma - kd J v - kp phi = rhs
// through M's tree-sparse factor M = L' L (factorization.hpp) and the Schur complement
// A = J M^-1 J' = Y Y', Y = J L^-1 (rows L^-T J'): with z = L^-T (tau - h), the unconstrained
// acceleration gives J qdd_free = Y z, and A lam = rhs - Y z = r; then
// qdd = L^-1 (z + Y' lam). mu = 0 solves A lam = r by A's Cholesky factor and refuses a
// rank-deficient A; mu > 0 runs the proximal point iterations on the multipliers
// (Carpentier, Budhiraja & Mansard, RSS 2021), (A + mu I) lam_k+1 = r + mu lam_k from lam_0 = 0,
// until |A lam - r| (the constraint acceleration error) is below tol or max_iter: for a
// consistent singular A they converge to the minimum-norm multipliers.
#pragma once

#include <algorithm>
#include <cmath>

#include "robodyn/constraints/loop.hpp"
#include "robodyn/crba.hpp"
#include "robodyn/data.hpp"
#include "robodyn/factorization.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/model.hpp"
#include "robodyn/rnea.hpp"

namespace robodyn {

enum class ConstraintStatus { Ok, MassNotPositive, RankDeficient };

// a pivot of A's Cholesky factor at most this times its diagonal entry: A is rank deficient
constexpr double kConstraintRankRtol = 1e-10;

namespace detail {

// ltl_factor (factorization.hpp), the same operations in the same order, with each
// coordinate's ancestors read from cm.anc instead of followed through Model::vparent (the
// loads no longer wait on each other)
template <class S>
bool ltl_factor_listed(const Model& m, const ConstraintModel& cm, DataTpl<S>& d) {
  using std::sqrt;
  const int n = m.nv;
  S* M = d.M.data();  // column-major: M(i, j) = M[i + j n]
  d.M_pattern = false;
  for (int k = n - 1; k >= 0; --k) {
    S& mkk = M[k + k * n];
    if (!(mkk > S(0))) return false;
    const S lkk = sqrt(mkk);
    mkk = lkk;
    const S inv = S(1) / lkk;
    const int* a = cm.anc.data() + cm.anc_start[k];
    const int na = cm.anc_start[k + 1] - cm.anc_start[k];
    for (int p = 0; p < na; ++p) M[k + a[p] * n] *= inv;
    for (int p = 0; p < na; ++p) {
      const int i = a[p];
      const S lki = M[k + i * n];
      for (int r = p; r < na; ++r) M[i + a[r] * n] -= lki * M[k + a[r] * n];
    }
  }
  return true;
}

// x := L^-T x for a sparse x (a constraint row: zero off its bodies' paths to the root, which
// L^-T keeps), tips to root: a zero entry passes nothing on. inv[i] = 1 / L(i, i).
template <class S>
void ltl_solve_t_sparse(const Model& m, const ConstraintModel& cm, const DataTpl<S>& d,
                        const S* inv, S* x) {
  const int n = m.nv;
  const S* L = d.M.data();
  for (int i = n - 1; i >= 0; --i) {
    if (x[i] == S(0)) continue;
    const S xi = x[i] * inv[i];
    x[i] = xi;
    const int* a = cm.anc.data() + cm.anc_start[i];
    const int na = cm.anc_start[i + 1] - cm.anc_start[i];
    for (int p = 0; p < na; ++p) x[a[p]] -= L[i + a[p] * n] * xi;
  }
}

// x := L^-1 x (ltl_solve_l, root to tips) with the ancestors read from cm.anc
template <class S>
void ltl_solve_l_listed(const Model& m, const ConstraintModel& cm, const DataTpl<S>& d,
                        const S* inv, S* x) {
  const int n = m.nv;
  const S* L = d.M.data();
  for (int i = 0; i < n; ++i) {
    const int* a = cm.anc.data() + cm.anc_start[i];
    const int na = cm.anc_start[i + 1] - cm.anc_start[i];
    S xi = x[i];
    for (int p = 0; p < na; ++p) xi -= L[i + a[p] * n] * x[a[p]];
    x[i] = xi * inv[i];
  }
}

// M's factor into d.M, cd.Y = rows L^-T J' and cd.A = Y Y' (both triangles); false when M is
// not positive definite
template <class S>
bool schur_complement(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                      ConstraintDataTpl<S>& cd, const S* q) {
  crba_lower(m, d, q);
  if (!ltl_factor_listed(m, cm, d)) return false;
  constraint_jacobian(m, cm, d, cd, q);
  const int nv = m.nv, nc = cm.m;
  S* inv = d.Linv.data();  // 1 / L(i, i)
  for (int i = 0; i < nv; ++i) inv[i] = S(1) / d.M(i, i);
  cd.Y = cd.J;
  for (int r = 0; r < nc; ++r) ltl_solve_t_sparse(m, cm, d, inv, cd.Y.data() + r * nv);
  // A = Y Y' (lower triangle, mirrored)
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j <= i; ++j) {
      const S x = cd.Y.row(i).dot(cd.Y.row(j));
      cd.A(i, j) = x;
      cd.A(j, i) = x;
    }
  return true;
}

}  // namespace detail

// J M^-1 J' at q, (m, m) into out (row-major; symmetric). false when M is not positive
// definite.
template <class S>
bool operational_space_inverse_inertia(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                                       ConstraintDataTpl<S>& cd, const S* q, S* out) {
  if (!detail::schur_complement(m, cm, d, cd, q)) return false;
  for (int k = 0; k < cm.m * cm.m; ++k) out[k] = cd.A.data()[k];
  return true;
}

// qdd (nv,) and lam (m,) of the constrained dynamics at (q, v, tau) (see the top of this file);
// lam per loop: the wrench on body 1, its rows in frame 1 axes. mu >= 0, max_iter >= 1.
// Leaves the iterations run and the final constraint acceleration error in cd. RankDeficient
// (mu = 0): cd.bad_row is the first row found dependent on the rows before it.
template <class S>
ConstraintStatus constrained_forward_dynamics(const Model& m, const ConstraintModel& cm,
                                              DataTpl<S>& d, ConstraintDataTpl<S>& cd,
                                              const S* q, const S* v, const S* tau, double mu,
                                              int max_iter, double tol, S* qdd, S* lam) {
  using std::abs;
  const int nv = m.nv, nc = cm.m;
  // z = L^-T (tau - h): the bias first (the inputs are read before the outputs are written)
  S* z = cd.z.data();
  bias_torques(m, d, q, v, z);
  forward_dynamics_rhs(m, v, tau, z);
  if (!detail::schur_complement(m, cm, d, cd, q)) return ConstraintStatus::MassNotPositive;
  detail::ltl_solve_t_sparse(m, cm, d, d.Linv.data(), z);
  // r = -gamma - kd J v - kp phi - Y z
  // (the frames and axes of schur_complement's constraint_jacobian)
  detail::loop_bias(m, cm, cd, v);
  if (cm.baumgarte) detail::loop_residual(cm, cd, cd.phi.data());
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    for (int k = cm.start[l]; k < cm.start[l + 1]; ++k) {
      S x = -cd.gamma[k];
      if (c.kd != 0) x -= S(c.kd) * cd.Jv[k];
      if (c.kp != 0) x -= S(c.kp) * cd.phi[k];
      const S* y = cd.Y.data() + k * nv;
      for (int i = 0; i < nv; ++i) x -= y[i] * z[i];
      cd.r[k] = x;
    }
  }
  // the multipliers
  cd.F = cd.A;
  for (int k = 0; k < nc; ++k) cd.F(k, k) += S(mu);
  cd.bad_row = llt_factor(cd.F.data(), nc, mu > 0 ? 0.0 : kConstraintRankRtol);
  if (cd.bad_row >= 0) return ConstraintStatus::RankDeficient;
  cd.lam.setZero();
  cd.iterations = 0;
  for (int it = 0; it < max_iter; ++it) {
    for (int k = 0; k < nc; ++k) cd.b[k] = cd.r[k] + S(mu) * cd.lam[k];
    llt_solve(cd.F.data(), nc, cd.b.data());
    cd.lam = cd.b;
    ++cd.iterations;
    // the constraint acceleration error A lam - r
    S err(0);
    for (int i = 0; i < nc; ++i) {
      S x = -cd.r[i];
      for (int j = 0; j < nc; ++j) x += cd.A(i, j) * cd.lam[j];
      if (abs(x) > err) err = abs(x);
    }
    cd.error = static_cast<double>(err);
    if (mu == 0 || err < S(tol)) break;
  }
  // qdd = L^-1 (z + Y' lam)
  for (int k = 0; k < nc; ++k) {
    const S* y = cd.Y.data() + k * nv;
    for (int i = 0; i < nv; ++i) z[i] += y[i] * cd.lam[k];
  }
  detail::ltl_solve_l_listed(m, cm, d, d.Linv.data(), z);
  for (int i = 0; i < nv; ++i) qdd[i] = z[i];
  for (int k = 0; k < nc; ++k) lam[k] = cd.lam[k];
  return ConstraintStatus::Ok;
}

}  // namespace robodyn
