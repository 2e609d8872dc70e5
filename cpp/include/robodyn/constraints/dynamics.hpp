// Constrained forward dynamics and the operational-space inverse inertia of loop constraints
// (constraints/loop.hpp).
//
//   M qdd + h = tau + J' lam,   J qdd = -gamma - kd J v - kp phi = rhs
// through M's tree-sparse factor M = L' L (factorization.hpp's ltl_factor, here on the
// row-major upper triangle: ltl_factor_rows) and the Schur complement
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

// M = L' L (factorization.hpp's ltl_factor: the same operations on each entry, in the same
// order) on M's upper triangle seen row-major: L(i, j), j an ancestor coordinate of i, at
// U[i n + j], so the ancestors, runs of consecutive indices (cm.runs), are contiguous in
// memory. crba_lower's lower triangle is mirrored first. false when M is not positive
// definite.
template <class S>
bool ltl_factor_rows(const Model& m, const ConstraintModel& cm, DataTpl<S>& d) {
  using std::sqrt;
  const int n = m.nv;
  S* U = d.H.data();
  d.H_pattern = false;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) U[i * n + j] = U[i + j * n];
  for (int k = n - 1; k >= 0; --k) {
    S* Lk = U + k * n;
    if (!(Lk[k] > S(0))) return false;
    const S lkk = sqrt(Lk[k]);
    Lk[k] = lkk;
    const S inv = S(1) / lkk;
    const int* r0 = cm.runs.data() + 2 * cm.run_start[k];
    const int* r1 = cm.runs.data() + 2 * cm.run_start[k + 1];
    for (const int* r = r0; r != r1; r += 2)
      for (int j = r[0]; j <= r[1]; ++j) Lk[j] *= inv;
    // row i of every ancestor i: its ancestors and itself, the runs of k up to i
    for (const int* r = r0; r != r1; r += 2)
      for (int i = r[0]; i <= r[1]; ++i) {
        const S lki = Lk[i];
        S* Li = U + i * n;
        for (int j = r[0]; j <= i; ++j) Li[j] -= lki * Lk[j];
        for (const int* s = r + 2; s != r1; s += 2)
          for (int j = s[0]; j <= s[1]; ++j) Li[j] -= lki * Lk[j];
      }
  }
  return true;
}

// X := X L^-1 for the nr rows of one loop (stride n, row-major; L' y = x from the tips to the
// root on each row): the rows share their non-zero columns (the bodies' paths to the root,
// which L^-T keeps), so each column is tested once. inv[i] = 1 / L(i, i).
template <class S>
void ltl_solve_t_rows(const Model& m, const ConstraintModel& cm, const DataTpl<S>& d,
                      const S* inv, S* X, int nr) {
  const int n = m.nv;
  const S* U = d.H.data();
  for (int i = n - 1; i >= 0; --i) {
    bool zero = true;
    for (int r = 0; r < nr; ++r) zero = zero && X[r * n + i] == S(0);
    if (zero) continue;
    const S* Li = U + i * n;
    const int* r0 = cm.runs.data() + 2 * cm.run_start[i];
    const int* r1 = cm.runs.data() + 2 * cm.run_start[i + 1];
    for (int r = 0; r < nr; ++r) {
      S* x = X + r * n;
      const S xi = x[i] * inv[i];
      x[i] = xi;
      for (const int* s = r0; s != r1; s += 2)
        for (int j = s[0]; j <= s[1]; ++j) x[j] -= Li[j] * xi;
    }
  }
}

// x := L^-1 x (root to tips) for ltl_factor_rows' L
template <class S>
void ltl_solve_l_rows(const Model& m, const ConstraintModel& cm, const DataTpl<S>& d,
                      const S* inv, S* x) {
  const int n = m.nv;
  const S* U = d.H.data();
  for (int i = 0; i < n; ++i) {
    const S* Li = U + i * n;
    const int* r0 = cm.runs.data() + 2 * cm.run_start[i];
    const int* r1 = cm.runs.data() + 2 * cm.run_start[i + 1];
    S xi = x[i];
    for (const int* s = r0; s != r1; s += 2)
      for (int j = s[0]; j <= s[1]; ++j) xi -= Li[j] * x[j];
    x[i] = xi * inv[i];
  }
}

// M's factor into d.H, cd.Y = rows L^-T J' and cd.A = Y Y' (both triangles); false when M is
// not positive definite
template <class S>
bool schur_complement(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                      ConstraintDataTpl<S>& cd, const S* q) {
  crba_lower(m, d, q);
  if (!ltl_factor_rows(m, cm, d)) return false;
  constraint_jacobian(m, cm, d, cd, q);
  const int nv = m.nv, nc = cm.m;
  S* inv = d.L_inv_diag.data();  // 1 / L(i, i)
  for (int i = 0; i < nv; ++i) inv[i] = S(1) / d.H.data()[i * nv + i];
  cd.Y = cd.J;
  for (size_t l = 0; l < cm.loops.size(); ++l)
    ltl_solve_t_rows(m, cm, d, inv, cd.Y.data() + cm.start[l] * nv, cm.loops[l].nrows);
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
  detail::ltl_solve_t_rows(m, cm, d, d.L_inv_diag.data(), z, 1);
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
  detail::ltl_solve_l_rows(m, cm, d, d.L_inv_diag.data(), z);
  for (int i = 0; i < nv; ++i) qdd[i] = z[i];
  for (int k = 0; k < nc; ++k) lam[k] = cd.lam[k];
  return ConstraintStatus::Ok;
}

}  // namespace robodyn
