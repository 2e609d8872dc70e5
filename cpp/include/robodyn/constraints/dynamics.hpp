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

#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

enum class ConstraintStatus { Ok, MassNotPositive, RankDeficient };

// a pivot of A's Cholesky factor at most this times its diagonal entry: A is rank deficient
constexpr double kConstraintRankRtol = 1e-10;

namespace detail {

// M = L' L (factorization.hpp's ltl_factor: the same operations on each entry, in the same
// order) on M's upper triangle seen row-major: L(i, j), j an ancestor coordinate of i, at
// U[i n + j], so the ancestors, runs of consecutive indices (cm.runs), are contiguous in
// memory. d.H holds both triangles (crba). false when M is not positive definite. The factor
// has M's pattern (no fill-in): d.H stays zero off the pattern (DataTpl::M_pattern, which crba
// left set), so the next crba writes the pattern alone.
template <class S>
bool ltl_factor_rows(const Model& m, const ConstraintModel& cm, DataTpl<S>& d) {
  using std::sqrt;
  const int n = m.nv;
  S* U = d.H.data();
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
    // row i of every ancestor i: its ancestors and itself, the runs of k up to i (rows i and
    // k are distinct)
    const S* __restrict lk = Lk;
    for (const int* r = r0; r != r1; r += 2)
      for (int i = r[0]; i <= r[1]; ++i) {
        const S lki = lk[i];
        S* __restrict Li = U + i * n;
        for (int j = r[0]; j <= i; ++j) Li[j] -= lki * lk[j];
        for (const int* s = r + 2; s != r1; s += 2)
          for (int j = s[0]; j <= s[1]; ++j) Li[j] -= lki * lk[j];
      }
  }
  return true;
}

// f(k) for every velocity coordinate k of the loop's support, the bodies on the paths of its
// two bodies to the root (the common part once), from the tips to the root (k decreasing:
// parent[i] < i, so the larger of the two bodies is never an ancestor of the other). A row of
// J is zero outside the support, and so is its row of Y = J L^-1 (L's row k is non-zero only
// on the ancestors of k).
template <class F>
ROBODYN_INLINE void for_each_support_coordinate(const Model& m, const LoopModel& c, F&& f) {
  auto body = [&](int j) {
    for (int k = m.iv[j] + joint_nv(m.type[j]) - 1; k >= m.iv[j]; --k) f(k);
  };
  int a = c.body1, b = c.body2;
  while (a != b) {
    if (a > b) {
      body(a);
      a = m.parent[a];
    } else {
      body(b);
      b = m.parent[b];
    }
  }
  for (; a > 0; a = m.parent[a]) body(a);
}

// f(lo, hi) for the runs of consecutive coordinates lo..hi of the loop's support, from the
// tips to the root
template <class F>
ROBODYN_INLINE void for_each_support_run(const Model& m, const LoopModel& c, F&& f) {
  int lo = -1, hi = -1;
  for_each_support_coordinate(m, c, [&](int k) {
    if (k == lo - 1) {
      lo = k;
      return;
    }
    if (hi >= 0) f(lo, hi);
    lo = hi = k;
  });
  if (hi >= 0) f(lo, hi);
}

// X := X L^-1 for NR rows (stride n, row-major; L' y = x from the tips to the root on each
// row) of ltl_factor_rows' L, over the coordinates `each` visits in decreasing order (the rows
// zero elsewhere); inv[i] = 1 / L(i, i). Each L(i, j) is loaded once for the NR rows.
template <int NR, class S, class Each>
ROBODYN_INLINE void ltl_solve_t_fixed(const Model& m, const ConstraintModel& cm,
                                      const DataTpl<S>& d, const S* inv, S* X, Each&& each) {
  const int n = m.nv;
  const S* U = d.H.data();
  each([&](int i) {
    const S* Li = U + i * n;
    const int* r0 = cm.runs.data() + 2 * cm.run_start[i];
    const int* r1 = cm.runs.data() + 2 * cm.run_start[i + 1];
    S xi[NR];
    for (int r = 0; r < NR; ++r) {
      xi[r] = X[r * n + i] * inv[i];
      X[r * n + i] = xi[r];
    }
    for (const int* s = r0; s != r1; s += 2)
      for (int j = s[0]; j <= s[1]; ++j) {
        const S lij = Li[j];
        for (int r = 0; r < NR; ++r) X[r * n + j] -= lij * xi[r];
      }
  });
}

// ltl_solve_t_fixed for nr = 1..6 rows (a loop's)
template <class S, class Each>
ROBODYN_INLINE void ltl_solve_t_over(const Model& m, const ConstraintModel& cm,
                                     const DataTpl<S>& d, const S* inv, S* X, int nr,
                                     Each&& each) {
  switch (nr) {
    case 1: return ltl_solve_t_fixed<1>(m, cm, d, inv, X, each);
    case 2: return ltl_solve_t_fixed<2>(m, cm, d, inv, X, each);
    case 3: return ltl_solve_t_fixed<3>(m, cm, d, inv, X, each);
    case 4: return ltl_solve_t_fixed<4>(m, cm, d, inv, X, each);
    case 5: return ltl_solve_t_fixed<5>(m, cm, d, inv, X, each);
    default: return ltl_solve_t_fixed<6>(m, cm, d, inv, X, each);
  }
}

// x := L^-T x over every coordinate (x (nv,), dense)
template <class S>
void ltl_solve_t_rows(const Model& m, const ConstraintModel& cm, const DataTpl<S>& d,
                      const S* inv, S* x) {
  ltl_solve_t_over(m, cm, d, inv, x, 1, [&](auto f) {
    for (int i = m.nv - 1; i >= 0; --i) f(i);
  });
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
// not positive definite. A loop's rows of J and Y are zero outside its support
// (for_each_support_coordinate): the solves and products run over the supports alone.
template <class S>
bool schur_complement(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                      ConstraintDataTpl<S>& cd, const S* q) {
  crba(m, d, q);
  if (!ltl_factor_rows(m, cm, d)) return false;
  constraint_jacobian(m, cm, d, cd, q);
  const int nv = m.nv, nc = cm.m;
  S* inv = d.L_inv_diag.data();  // 1 / L(i, i)
  for (int i = 0; i < nv; ++i) inv[i] = S(1) / d.H.data()[i * nv + i];
  // (Y's entries off the supports are the zeros it was made with: never written)
  const S* J = cd.J.data();
  S* Y = cd.Y.data();
  S* A = cd.A.data();
  for (int k = 0; k < nc * nc; ++k) A[k] = S(0);
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const int r0 = cm.start[l], r1 = cm.start[l + 1];
    auto support = [&](auto f) { for_each_support_coordinate(m, c, f); };
    support([&](int k) {
      for (int i = r0; i < r1; ++i) Y[i * nv + k] = J[i * nv + k];
    });
    ltl_solve_t_over(m, cm, d, inv, Y + r0 * nv, r1 - r0, support);
    // this loop's rows of A = Y Y' left of the diagonal (a row of an earlier loop is zero
    // outside that loop's support: summing over this one's gives the whole product)
    for_each_support_run(m, c, [&](int lo, int hi) {
      for (int i = r0; i < r1; ++i) {
        const S* yi = Y + i * nv;
        for (int j = 0; j <= i; ++j) {
          const S* yj = Y + j * nv;
          S x = A[i * nc + j];
          for (int k = lo; k <= hi; ++k) x += yi[k] * yj[k];
          A[i * nc + j] = x;
        }
      }
    });
  }
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j < i; ++j) A[j * nc + i] = A[i * nc + j];
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
  detail::ltl_solve_t_rows(m, cm, d, d.L_inv_diag.data(), z);
  // r = -gamma - kd J v - kp phi - Y z
  // (the frames and axes of schur_complement's constraint_jacobian)
  detail::loop_bias(m, cm, cd, v);
  if (cm.baumgarte) detail::loop_residual(cm, cd, cd.phi.data());
  const S* Y = cd.Y.data();
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const int r0 = cm.start[l], r1 = cm.start[l + 1];
    for (int k = r0; k < r1; ++k) {
      S x = -cd.gamma[k];
      if (c.kd != 0) x -= S(c.kd) * cd.Jv[k];
      if (c.kp != 0) x -= S(c.kp) * cd.phi[k];
      cd.r[k] = x;
    }
    detail::for_each_support_coordinate(m, c, [&](int i) {
      for (int k = r0; k < r1; ++k) cd.r[k] -= Y[k * nv + i] * z[i];
    });
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
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const int r0 = cm.start[l], r1 = cm.start[l + 1];
    detail::for_each_support_coordinate(m, cm.loops[l], [&](int i) {
      for (int k = r0; k < r1; ++k) z[i] += Y[k * nv + i] * cd.lam[k];
    });
  }
  detail::ltl_solve_l_rows(m, cm, d, d.L_inv_diag.data(), z);
  for (int i = 0; i < nv; ++i) qdd[i] = z[i];
  for (int k = 0; k < nc; ++k) lam[k] = cd.lam[k];
  return ConstraintStatus::Ok;
}

}  // namespace robodyn
